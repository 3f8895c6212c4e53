"""The price route of the allocation LP (see :mod:`hetsched.lp`): class prices from
the entropy-smoothed dual by Newton's method, decided and contested machines,
and a restricted master LP grown by column generation until nothing prices
out. Arrays in (rates normalised per unit of arrival rate, ``nu``), arrays out;
the compiled sweeps are in :mod:`hetsched.lp._kernels`.
"""

from __future__ import annotations

import numpy as np

from . import _kernels as K
from ._highs import Master

# Stages of the smoothed dual: temperature tau relative to the mean best score,
# and the sample of machines each stage looks at (coarse stages need few).
_TAUS = (1e-1, 1e-2, 1e-3, 1e-4)
_SAMPLE_PER_TAU = 5.0  # machines per class per unit 1/tau in a stage's sample
_MARGIN = 2e-4  # machines whose two best scores are this close (relative) start contested
_MIN_CONTESTED = 4  # per class
_MAX_ENTER = 10  # machines per class that may enter the master per round
_MAX_ROUNDS = 200
_CUT = 30.0  # exp(-30) ~ 1e-13: classes further below a machine's best score add nothing


def _smoothed_prices(nu: np.ndarray, cap: np.ndarray, seed: int = 12345) -> tuple[np.ndarray, int, int]:
    """Near-optimal class prices by minimising the entropy-smoothed dual.

    ``f_tau(y) = sum_j cap_j tau log sum_i exp(y_i nu_ij / tau)`` is smooth, convex
    and within ``tau log N sum_j cap_j`` of the dual ``sum_j cap_j max_i y_i nu_ij``;
    it is minimised over ``{y >= 0, sum y = 1}`` by Newton's method with the
    equality constraint (direction by a compiled Cholesky solve,
    :func:`~hetsched.lp._kernels.newton_direction`, or a compiled LU solve of the
    whole KKT system where the Hessian is nearly singular, least squares where
    that is singular; single-threaded, since a multi-threaded LAPACK call
    spends most of its time waiting for cores on a loaded machine; backtracking line search, steps kept inside
    ``y >= 0``; stop when the Newton decrement is below 1e-11 of the value, or
    30 steps)
    for each temperature of ``_TAUS`` (relative to the mean best score), from
    prices that make every class's best machine score the same, each stage
    starting from the previous one's prices. A machine whose classes
    other than its best score more than ``_CUT tau`` lower contributes only its
    best score (weight ``exp(-30)``), so only near-tied machines go through the
    exp/Hessian kernel. Coarse stages use a fixed random sample of the machines
    (capacities scaled to the full total). Returns (y, Newton steps, function evaluations).
    """
    N, M = nu.shape
    # start where every class's best machine scores the same: y_i ~ 1 / max_j nu_ij
    y = 1.0 / nu.max(axis=1)
    y /= y.sum()
    perm = np.random.default_rng(seed).permutation(M)
    steps = evals = 0
    total = float(cap.sum())
    for rel in _TAUS:
        m = int(min(M, max(50 * N, _SAMPLE_PER_TAU * N / rel)))
        if m < M:
            idx = np.sort(perm[:m])
            nS, cS = np.ascontiguousarray(nu[:, idx]), cap[idx] * (total / max(float(cap[idx].sum()), 1e-300))
        else:
            nS, cS = nu, cap
        mS = nS.shape[1]
        best = np.empty(mS, dtype=np.int64)
        top = np.empty(mS)
        sec = np.empty(mS)
        arS = np.arange(mS)

        def evaluate(yv, tau):
            K.top_two(yv, nS, best, top, sec)
            near = np.flatnonzero(sec >= top - _CUT * tau)
            single = np.ones(mS, dtype=bool)
            single[near] = False
            g = np.bincount(best[single], weights=(cS * nS[best, arS])[single], minlength=N).astype(float)
            H = np.zeros((N, N))
            val = float(cS @ top)
            if len(near):
                val += K.smooth_terms(yv, np.ascontiguousarray(nS[:, near].T), cS[near], tau, top[near], _CUT,
                                      g, H)
            return val, g, H

        K.top_two(y, nS, best, top, sec)
        scale = float(cS @ np.clip(top, 0, None)) / total
        if scale <= 0:
            break
        tau = rel * scale
        val, g, H = evaluate(y, tau)
        evals += 1
        for _ in range(30):
            steps += 1
            ridge = 1e-12 * max(float(np.trace(H)), 1e-300) / N
            dy = np.empty(N)
            if not K.newton_direction(H, g, ridge, dy):  # H nearly singular: the whole KKT system
                kkt = np.zeros((N + 1, N + 1))
                kkt[:N, :N] = H + ridge * np.eye(N)
                kkt[:N, N] = kkt[N, :N] = 1.0
                rhs = np.concatenate([-g, [0.0]])
                sol = np.empty(N + 1)
                if K.lu_solve(kkt, rhs, sol):
                    dy = sol[:N]
                else:  # singular: the least-squares direction
                    dy = np.linalg.lstsq(kkt, rhs, rcond=None)[0][:N]
            dec = float(-g @ dy)
            if not np.isfinite(dec) or dec <= 1e-11 * abs(val):
                break
            t = 1.0
            neg = dy < 0
            if neg.any():
                t = min(1.0, 0.99 * float(np.min(-y[neg] / dy[neg])))
            while t > 1e-6:
                evals += 1
                yn = y + t * dy
                vn, gn, Hn = evaluate(yn, tau)
                if vn <= val - 0.25 * t * dec:
                    break
                t *= 0.5
            else:
                break
            y, val, g, H = yn, vn, gn, Hn
    return y, steps, evals


def price_route(nu: np.ndarray, cap: np.ndarray):
    """Exact optimal vertex of the normalised LP by prices and a growing master.

    1. Prices ``y`` from the smoothed dual (:func:`_smoothed_prices`).
    2. Each machine whose best score ``y_i nu_ij`` beats its second best by more
       than ``_MARGIN`` (relative) is *decided*: all its capacity goes to its
       best class, summed per class into the master's right-hand side ``base``.
       The others are *contested* and enter the master with a row and a column
       for each class within the margin of their best.
    3. Solve the master (HiGHS simplex, warm-started after the first round);
       its class duals are new prices. Price every pair of the full LP against
       them (one compiled pass): a decided machine whose best class is no longer
       its class, or a contested machine with a pair of positive reduced cost
       ``y_i nu_ij - v_j``, enters the master (column generation).
    4. Stop when nothing prices out: the master's solution with the decided
       machines is primal feasible, the prices with ``v_j = max_i y_i nu_ij`` are
       dual feasible and complementary slackness holds, so both are optimal.

    Returns ``(d, lam, y, info)`` or ``(None, nan, None, info)`` if the master
    failed or did not converge in ``_MAX_ROUNDS`` rounds (the caller falls back).
    """
    N, M = nu.shape
    live = np.flatnonzero((cap > 0) & (nu > 0).any(axis=0))
    muL = nu if len(live) == M else np.ascontiguousarray(nu[:, live])
    cL = cap[live]
    ML = len(live)
    y, steps, evals = _smoothed_prices(muL, cL)
    info = {"newton_steps": steps, "evaluations": evals, "rounds": 0, "contested": 0, "master_iterations": 0}
    best = np.empty(ML, dtype=np.int64)
    top = np.empty(ML)
    sec = np.empty(ML)
    K.top_two(y, muL, best, top, sec)
    ar = np.arange(ML)
    # contested: within the margin of a tie, and at least the _MIN_CONTESTED * N
    # machines closest to one (the optimum splits about N - 1 machines)
    gap = np.where(top > 0, (top - sec) / np.where(top > 0, top, 1.0), np.inf)
    k = min(ML, _MIN_CONTESTED * N)
    margin = max(_MARGIN, float(np.partition(gap, k - 1)[k - 1])) if k else _MARGIN
    contested = (gap <= margin) & (top > 0)
    decided = ~contested
    base = np.bincount(best[decided], weights=(cL * muL[best, ar])[decided], minlength=N)
    ms = Master(base)
    row_of = np.full(ML, -1, dtype=np.int64)
    in_master = np.zeros((N, ML), dtype=bool)

    def enter(js: np.ndarray, floor: np.ndarray) -> None:
        """Machines ``js`` become contested, with columns for classes scoring >= floor."""
        row_of[js] = ms.add_machines(js, cL)
        sc = y[:, None] * muL[:, js]
        c = (sc >= floor[None, :]) & (muL[:, js] > 0)
        c[best[js], np.arange(len(js))] = True
        ii, kk = np.nonzero(c)
        jj = js[kk]
        in_master[ii, jj] = True
        ms.add_pairs(ii, row_of[jj], jj, muL[ii, jj])

    cj = np.flatnonzero(contested)
    enter(cj, (1 - margin) * top[cj])
    status = "Optimal"
    now_best = np.empty(ML, dtype=np.int64)
    for rnd in range(1, _MAX_ROUNDS + 1):
        info["rounds"] = rnd
        status, lam, x, yn, v = ms.solve()
        if lam is None:
            break
        y = yn
        K.top_two(y, muL, now_best, top, sec)
        tol = 1e-10 * max(float(top.max()), 1e-300)
        dj = np.flatnonzero(decided)
        own = y[best[dj]] * muL[best[dj], dj]
        leave = dj[top[dj] > own + tol]
        if len(leave) > _MAX_ENTER * N:  # the most violated first: prices move less per round
            viol = (top[leave] - y[best[leave]] * muL[best[leave], leave]) / top[leave]
            leave = leave[np.argpartition(-viol, _MAX_ENTER * N)[: _MAX_ENTER * N]]
        cm = ms.machines
        red = y[:, None] * muL[:, cm] - v[None, :]
        pi, pk = np.nonzero((red > tol) & ~in_master[:, cm] & (muL[:, cm] > 0))
        if len(leave) == 0 and len(pi) == 0:
            d = np.zeros((N, M))
            d[best[dj], live[dj]] = cL[dj]
            d[ms.pi, live[ms.pj]] = x  # each pair is one column
            info.update(contested=len(cm), master_iterations=ms.iterations)
            return d, lam, y, info
        if len(leave):
            decided[leave] = False
            base = base - np.bincount(best[leave], weights=cL[leave] * muL[best[leave], leave], minlength=N)
            ms.set_base(base)
            enter(leave, top[leave] - tol)
        if len(pi):
            pj = cm[pk]
            in_master[pi, pj] = True
            ms.add_pairs(pi, row_of[pj], pj, muL[pi, pj])
    info.update(contested=len(ms.machines), master_iterations=ms.iterations,
                failure=f"master {status}" if status != "Optimal" else f"no convergence in {_MAX_ROUNDS} rounds")
    return None, float("nan"), None, info
