"""The allocation LP (thesis (2.1)-(2.3), with CPU availabilities (3.1)-(3.3)).

.. math::

    \\max \\lambda \\quad\\text{s.t.}\\quad
    \\sum_j \\delta_{ij}\\mu'_{ij} \\ge \\lambda\\alpha_i \\;(\\forall i),\\qquad
    \\sum_i \\delta_{ij} \\le a_j \\;(\\forall j),\\qquad \\delta_{ij} \\ge 0.

``lambda*`` is the system's maximum capacity: the system can be stabilized iff
``lambda* > 1`` (Theorems 2.2.1-2.2.2) and ``1/lambda*`` is the long-run
utilisation of the busiest machine; ``delta*[i, j]`` is the long-run fraction of
machine ``j`` given to class ``i`` at maximum capacity.

Solutions (HiGHS, through ``highspy``, for the LPs themselves):

* ``vertex`` — a basic optimal solution from the simplex method; it has at least
  ``N*M + 1 - N - M`` zeros (Proposition 2.2.1). Where the system has groups of
  interchangeable machines (same rate column and availability), the default is
  the **group-symmetric** vertex the thesis uses for 2.C1/2.C2: each group is
  aggregated into one machine of ``count`` times the capacity, the aggregate LP
  is solved, and every member gets the group's fraction.
* ``central`` — the interior-point solution without crossover (a point in the
  relative interior of the optimal face), used by the robust variants of §3.4.6.

Large systems (``method="auto"`` with more than ``AUTO_PAIRS`` runnable pairs,
vertex solutions) take the **price route**, which uses the structure of the LP.
Its dual has only ``N`` free variables: with machine prices
``v_j = max_i y_i mu_ij / alpha_i`` eliminated,

.. math::

    \\lambda^* = \\min_{y \\ge 0,\\ \\sum_i y_i = 1} \\; f(y), \\qquad
    f(y) = \\sum_j a_j \\max_i y_i \\mu_{ij} / \\alpha_i ,

a convex piecewise-linear function on the simplex (``w_i = y_i / alpha_i`` are
the class prices in the units of (2.1), ``alpha.w = 1``). The route:

1. *prices*: minimise the entropy-smoothed ``f_tau`` (log-sum-exp over the
   classes of each machine) by Newton's method for decreasing ``tau``, on
   growing samples of the machines, then on all of them;
2. *decided machines*: a machine whose best score ``y_i mu_ij / alpha_i`` beats
   its second by a clear margin gives all its capacity to that class
   (complementary slackness at the optimum); their capacity is summed per
   class into one right-hand side, so
3. *master*: only the contested machines (near-ties) are LP rows and columns;
   the master is solved by HiGHS simplex, its class duals re-price every pair
   of the full LP (one compiled pass), and machines or pairs that price out
   enter the master, which is re-solved warm (column generation) until none
   does. The result is a basic optimal solution of the full LP (a vertex).

Every result is certified after solving: the primal residuals (class rows
(2.1), machine rows) and the weak-duality bound ``f(w)`` of the reported prices
against the capacity ``min_i sum_j delta_ij mu_ij / alpha_i`` that ``delta``
actually gives; a price-route answer that fails is replaced by HiGHS on the
whole LP. HiGHS solves the LP as written (the vertices hetsched has always
returned) and, if that answer fails, once more rescaled per unit of arrival
rate with tight tolerances. An LP without positive capacity or a solver
failure is a ``status`` of the result, not an exception (see
:class:`AllocationResult`). Layers: :func:`solve_allocation` validates and
scales; ``_price_route`` / ``_highs_full`` work on arrays; the compiled kernels
are in ``hetsched._lp_kernel``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from .errors import ModelError, SolverError

__all__ = ["AllocationResult", "solve_allocation", "allocation_lp", "SOLUTIONS", "METHODS"]

SOLUTIONS = ("vertex", "central")



@dataclass
class AllocationResult:
    """Result of the allocation LP, in the style of ``scipy.optimize.OptimizeResult``.

    Attributes
    ----------
    success, status, message
        ``status`` 0 = optimal and certified (residuals and duality gap
        re-checked); 1 = solved, but the certificate failed (the answer is the
        solver's, use with care); 2 = no positive capacity: some class cannot
        run on any available machine, so ``lambda* = 0`` (``delta`` all zero,
        ``w`` the price vector that proves it); 3 = the LP solver failed
        (``lam`` is NaN). ``success`` is ``status == 0``; ``message`` names the
        field at fault.
    lam : float
        ``lambda*``, the maximum capacity.
    delta : ndarray (N, M)
        ``delta*`` per machine.
    w : ndarray (N,)
        Optimal dual prices of the class constraints, normalised to ``alpha.w = 1``.
    residuals : dict
        ``class_rows``, ``machine_rows`` (primal infeasibility), ``duality_gap``
        (relative), ``dual_bound`` and ``primal_bound`` on ``lambda*``.
    solver : str
        The route taken (HiGHS simplex / IPM, or the price route with its
        Newton steps, contested machines and master rounds).
    """

    success: bool
    status: int
    message: str
    lam: float
    delta: np.ndarray
    alpha: np.ndarray
    mu: np.ndarray
    a: np.ndarray
    solution: str
    grouped: bool
    w: np.ndarray | None = None
    delta_groups: np.ndarray | None = None
    group_labels: np.ndarray | None = None
    residuals: dict[str, float] = field(default_factory=dict)
    solver: str = ""
    iterations: int = 0
    wall_seconds: float = 0.0
    zero_tol: float = 1e-9

    def raise_for_status(self) -> "AllocationResult":
        """Raise :class:`~hetsched.errors.SolverError` with ``message`` if there is
        no usable answer (status 2 or 3); return ``self`` otherwise."""
        if self.status >= 2:
            raise SolverError(self.message)
        return self

    # ---- derived quantities (thesis §2.2.1, §2.3.1) ---------------------------
    @property
    def N(self) -> int:
        return self.delta.shape[0]

    @property
    def M(self) -> int:
        return self.delta.shape[1]

    @property
    def support(self) -> np.ndarray:
        """Boolean ``N x M``: ``delta*[i, j] != 0`` (after the zero tolerance)."""
        return self.delta > self.zero_tol

    @property
    def zeros(self) -> int:
        return int((~self.support).sum())

    @property
    def target_zeros(self) -> int:
        """``N*M + 1 - N - M`` (Proposition 2.2.1)."""
        return self.N * self.M + 1 - self.N - self.M

    @property
    def stabilizable(self) -> bool:
        """``lambda* > 1`` (Theorem 2.2.1); ``lambda* < 1`` cannot be stabilized (2.2.2)."""
        return bool(self.lam > 1.0 + 1e-12)

    @property
    def utilization(self) -> float:
        """Long-run utilisation of the busiest machine, ``1/lambda*``."""
        return 1.0 / self.lam if self.lam > 0 else float("inf")

    @property
    def S(self) -> list[np.ndarray]:
        """``S_i = {j : delta*[i, j] != 0}`` (0-based machine indices)."""
        return [np.flatnonzero(row) for row in self.support]

    @property
    def p_static(self) -> np.ndarray:
        """LP-Static probabilities ``p_ij = delta*_ij mu_ij / (lambda* alpha_i)`` (2.6).

        ``mu`` here is the effective rate the LP uses (nominal rate times the
        capacity the constraint gives it); rows are renormalised so they sum to
        exactly 1 (they do up to solver tolerance at an optimum with tight (2.1)).
        """
        cap = self.delta * self.mu
        return cap / cap.sum(axis=1, keepdims=True)

    def ns_lpas(self) -> float:
        """Mean machines contacted per arrival under LPAS, ``sum_i alpha_i/alpha~ |S_i|`` (2.5)."""
        sizes = self.support.sum(axis=1)
        return float((self.alpha / self.alpha.sum()) @ sizes)

    def ns_lpas2k(self) -> float:
        """Mean machines contacted under LPAS-2/k: 2 for classes with ``|S_i| > 1``, else 1."""
        sizes = self.support.sum(axis=1)
        return float((self.alpha / self.alpha.sum()) @ np.minimum(sizes, 2))

    def discount(self, ns: float) -> float:
        """State-information discount ``(1 - N_s/M) * 100 %`` (2.4)."""
        return (1.0 - ns / self.M) * 100.0

    def as_dict(self) -> dict[str, Any]:
        """The JSON form of ``hetsched lp --json`` (keys fixed by DESIGN.md)."""
        return {
            "lambda": self.lam,
            "delta": self.delta.tolist(),
            "zeros": self.zeros,
            "target_zeros": self.target_zeros,
            "stabilizable": self.stabilizable,
            "utilization": self.utilization,
            "solution": self.solution,
            "grouped": self.grouped,
            "delta_groups": None if self.delta_groups is None else self.delta_groups.tolist(),
            "S": [[int(j) + 1 for j in s] for s in self.S],
            "p_static": self.p_static.tolist(),
            "Ns": {"lpas": self.ns_lpas(), "lpas-2k": self.ns_lpas2k(), "mct": float(self.M)},
            "discount_percent": {
                "lpas": self.discount(self.ns_lpas()),
                "lpas-2k": self.discount(self.ns_lpas2k()),
            },
            "success": self.success,
            "status": self.status,
            "message": self.message,
            "residuals": self.residuals,
            "solver": self.solver,
            "iterations": self.iterations,
            "wall_seconds": self.wall_seconds,
        }


# ----------------------------------------------------------------------------- validation
def _clean(mu: Any, alpha: Any, a: Any, counts: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Validated float arrays (no copy of a float64 ``mu``); errors name the field and value."""
    try:
        mu = np.asarray(mu, dtype=float)
        alpha = np.array(alpha, dtype=float, ndmin=1)
    except (TypeError, ValueError) as exc:
        raise ModelError(f"mu/alpha: expected numeric arrays ({exc})") from None
    if mu.ndim == 1:
        mu = mu[None, :]
    if mu.ndim != 2:
        raise ModelError(f"mu: expected an N x M matrix, got an array of shape {mu.shape}")
    N, M = mu.shape
    if N == 0:
        raise ModelError("mu: expected at least one class (row), got shape (0, M)")
    if alpha.shape != (N,):
        raise ModelError(f"alpha: expected {N} arrival rates (one per row of mu), got shape {alpha.shape}")
    if not (np.isfinite(mu).all() and mu.min(initial=0.0) >= 0):
        bad = mu[~np.isfinite(mu) | (mu < 0)][0]
        raise ModelError(f"mu: execution rates must be finite and >= 0, got {float(bad):g}")
    if not np.isfinite(alpha).all() or (alpha <= 0).any():
        bad = alpha[~np.isfinite(alpha) | (alpha <= 0)][0]
        raise ModelError(f"alpha: arrival rates must be finite and > 0, got {float(bad):g}")
    a = np.ones(M) if a is None else np.array(a, dtype=float, ndmin=1)
    if a.shape != (M,):
        raise ModelError(f"a: expected {M} availabilities (one per machine), got shape {a.shape}")
    if not ((a >= 0) & (a <= 1)).all():
        raise ModelError(f"a: availabilities must lie in [0, 1], got {float(a[~((a >= 0) & (a <= 1))][0]):g}")
    counts = np.ones(M) if counts is None else np.array(counts, dtype=float, ndmin=1)
    if counts.shape != (M,):
        raise ModelError(f"counts: expected {M} machine counts (one per column of mu), got shape {counts.shape}")
    if not (np.isfinite(counts) & (counts > 0)).all():
        bad = counts[~(np.isfinite(counts) & (counts > 0))][0]
        raise ModelError(f"counts: machine counts must be finite and > 0, got {float(bad):g}")
    return mu, alpha, a, counts


# ----------------------------------------------------------------------------- HiGHS core
_INF = float("inf")


def _highs():
    import highspy

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    return h


def _tight(h) -> None:
    """Simplex feasibility tolerances 1e-10 instead of HiGHS's 1e-7, so that a class
    whose demand is small beside the others' (best rates per unit of arrival rate
    differing by up to 1e7) stays resolved and certified."""
    h.setOptionValue("primal_feasibility_tolerance", 1e-10)
    h.setOptionValue("dual_feasibility_tolerance", 1e-10)


def _highs_full(rates: np.ndarray, alpha: np.ndarray, cap: np.ndarray, solution: str, careful: bool):
    """The whole LP by HiGHS: max lam s.t. sum_j rates_ij d_ij >= lam alpha_i, sum_i d_ij <= cap_j.

    Only pairs with ``rates_ij > 0`` are columns (then lam). ``careful`` (the
    retry): simplex feasibility tolerances 1e-10 (:func:`_tight`), and IPM
    without presolve (which leaves HiGHS's IPM without an answer on LPs it
    reduces to nothing, e.g. one class). Returns ``(ok, d, lam, w,
    iters, status_text)``; ``w`` are the class-row duals (``alpha.w = 1`` at an
    optimum).
    """
    import highspy

    N, M = rates.shape
    nz_i, nz_j = np.nonzero(rates > 0)
    K = len(nz_i)
    # class rows 0..N-1: lam alpha_i - sum_j rates_ij d_ij <= 0; machine rows N..N+M-1: sum_i d_ij <= cap_j
    rows = np.concatenate([nz_i, N + nz_j, np.arange(N)])
    cols = np.concatenate([np.arange(K), np.arange(K), np.full(N, K)])
    vals = np.concatenate([-rates[nz_i, nz_j], np.ones(K), alpha])
    A = sp.csc_matrix((vals, (rows, cols)), shape=(N + M, K + 1))
    lp = highspy.HighsLp()
    lp.num_col_ = K + 1
    lp.num_row_ = N + M
    lp.col_cost_ = np.concatenate([np.zeros(K), [1.0]])
    lp.col_lower_ = np.concatenate([np.zeros(K), [-highspy.kHighsInf]])
    lp.col_upper_ = np.full(K + 1, highspy.kHighsInf)
    lp.row_lower_ = np.full(N + M, -highspy.kHighsInf)
    lp.row_upper_ = np.concatenate([np.zeros(N), cap])
    lp.sense_ = highspy.ObjSense.kMaximize
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = A.indptr
    lp.a_matrix_.index_ = A.indices
    lp.a_matrix_.value_ = A.data
    h = _highs()
    if solution == "central":
        h.setOptionValue("solver", "ipm")
        h.setOptionValue("run_crossover", "off")
        h.setOptionValue("ipm_optimality_tolerance", 1e-10)
        if careful:
            h.setOptionValue("presolve", "off")
    else:
        h.setOptionValue("solver", "simplex")
        if careful:
            _tight(h)
    h.passModel(lp)
    h.run()
    status = h.getModelStatus()
    info = h.getInfo()
    iters = int(info.simplex_iteration_count if solution != "central" else info.ipm_iteration_count)
    if status != highspy.HighsModelStatus.kOptimal:
        return False, None, float("nan"), None, iters, h.modelStatusToString(status)
    sol = h.getSolution()
    x = np.asarray(sol.col_value)
    d = np.zeros((N, M))
    d[nz_i, nz_j] = np.clip(x[:K], 0, None)
    y = np.clip(np.asarray(sol.row_dual)[:N], 0, None)
    return True, d, float(x[K]), y, iters, "Optimal"


class _Master:
    """Restricted master LP of the price route, kept in one HiGHS instance.

    ``max lam`` s.t. ``lam - sum_(i,j) in pairs nu_ij d_ij <= base_i`` (class rows
    ``0..N-1``) and ``sum_i d_ij <= cap_j`` for the contested machines (rows
    ``N..``). ``base_i`` is the capacity the decided machines give class ``i``.
    Rows and columns are appended between solves; HiGHS keeps its basis, so
    each re-solve starts from the previous optimum (warm start).
    """

    def __init__(self, base: np.ndarray):
        import highspy

        self._hs = highspy
        N = len(base)
        self.N = N
        self.h = h = _highs()
        h.setOptionValue("solver", "simplex")
        _tight(h)
        lp = highspy.HighsLp()
        lp.num_col_, lp.num_row_ = 1, N
        lp.col_cost_ = np.array([1.0])
        lp.col_lower_ = np.array([-highspy.kHighsInf])
        lp.col_upper_ = np.array([highspy.kHighsInf])
        lp.row_lower_ = np.full(N, -highspy.kHighsInf)
        lp.row_upper_ = np.asarray(base, dtype=float)
        lp.sense_ = highspy.ObjSense.kMaximize
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.start_ = np.array([0, N], dtype=np.int32)
        lp.a_matrix_.index_ = np.arange(N, dtype=np.int32)
        lp.a_matrix_.value_ = np.ones(N)
        h.passModel(lp)
        self.base = np.asarray(base, dtype=float).copy()
        self.machines = np.empty(0, dtype=np.int64)  # machine of each row N + k
        self.pi = np.empty(0, dtype=np.int64)  # class of each pair column
        self.pj = np.empty(0, dtype=np.int64)  # machine of each pair column
        self.iterations = 0

    def add_machines(self, js: np.ndarray, cap: np.ndarray) -> np.ndarray:
        """Append rows for machines ``js``; returns their row indices."""
        n = len(js)
        first = self.N + len(self.machines)
        if n:
            self.h.addRows(n, np.full(n, -self._hs.kHighsInf), cap[js].astype(float), 0,
                           np.zeros(n, dtype=np.int32), np.empty(0, dtype=np.int32), np.empty(0))
            self.machines = np.concatenate([self.machines, js])
        return first + np.arange(n)

    def add_pairs(self, ii: np.ndarray, rows: np.ndarray, jj: np.ndarray, vals: np.ndarray) -> None:
        n = len(ii)
        if n == 0:
            return
        idx = np.empty(2 * n, dtype=np.int32)
        idx[0::2], idx[1::2] = ii, rows
        val = np.empty(2 * n)
        val[0::2], val[1::2] = -vals, 1.0
        self.h.addCols(n, np.zeros(n), np.zeros(n), np.full(n, self._hs.kHighsInf), 2 * n,
                       np.arange(0, 2 * n, 2, dtype=np.int32), idx, val)
        self.pi = np.concatenate([self.pi, ii])
        self.pj = np.concatenate([self.pj, jj])

    def set_base(self, base: np.ndarray) -> None:
        self.base = np.asarray(base, dtype=float).copy()
        self.h.changeRowsBounds(self.N, np.arange(self.N, dtype=np.int32), np.full(self.N, -self._hs.kHighsInf),
                                self.base)

    def solve(self):
        """Returns (status text, lam, pair values, class duals y, machine duals v)."""
        h = self.h
        h.run()
        st = h.getModelStatus()
        self.iterations += int(h.getInfo().simplex_iteration_count)
        if st != self._hs.HighsModelStatus.kOptimal:
            return h.modelStatusToString(st), None, None, None, None
        sol = h.getSolution()
        x = np.asarray(sol.col_value)
        rd = np.asarray(sol.row_dual)
        return "Optimal", float(x[0]), np.clip(x[1:], 0, None), np.clip(rd[: self.N], 0, None), \
            np.clip(rd[self.N:], 0, None)


# ----------------------------------------------------------------------------- price route
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
    equality constraint (backtracking line search, steps kept inside ``y >= 0``;
    stop when the Newton decrement is below 1e-11 of the value, or 30 steps)
    for each temperature of ``_TAUS`` (relative to the mean best score), from
    prices that make every class's best machine score the same, each stage
    starting from the previous one's prices. A machine whose classes
    other than its best score more than ``_CUT tau`` lower contributes only its
    best score (weight ``exp(-30)``), so only near-tied machines go through the
    exp/Hessian kernel. Coarse stages use a fixed random sample of the machines
    (capacities scaled to the full total). Returns (y, Newton steps, function evaluations).
    """
    from . import _lp_kernel as K

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
            kkt = np.zeros((N + 1, N + 1))
            ridge = 1e-12 * max(float(np.trace(H)), 1e-300) / N
            kkt[:N, :N] = H + ridge * np.eye(N)
            kkt[:N, N] = kkt[N, :N] = 1.0
            dy = np.linalg.lstsq(kkt, np.concatenate([-g, [0.0]]), rcond=None)[0][:N]
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


def _price_route(nu: np.ndarray, cap: np.ndarray):
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
    from . import _lp_kernel as K

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
    ms = _Master(base)
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


# ----------------------------------------------------------------------------- public API
METHODS = ("auto", "highs", "prices")
# "auto" takes the price route for vertex solutions with more than this many
# runnable pairs (mu_ij > 0); below it one HiGHS simplex solve is as fast and
# returns the basic solution the thesis's printed delta* come from.
AUTO_PAIRS = 4_000
# Beyond this ratio between the classes' best rates per unit of arrival rate, an
# uncertified answer is reported as a solver failure (status 3) naming mu/alpha:
# HiGHS's absolute tolerances (1e-7) then swallow the smallest class's demand.
_MAX_SPREAD = 1e6

_CERTIFIED = "optimal; certified by a dual price vector and the residuals"


def solve_allocation(
    mu: Any,
    alpha: Any,
    a: Any = None,
    *,
    solution: str = "vertex",
    counts: Any = None,
    method: str = "auto",
) -> AllocationResult:
    """Solve the allocation LP (thesis eq. 2.1, with 3.2) on arrays.

    Parameters
    ----------
    mu : (N, M) array
        Nominal execution rates ``mu'[i, j]`` (0 = cannot run).
    alpha : (N,) array
        Arrival rates, all > 0.
    a : (M,) array, optional
        CPU availabilities in [0, 1] (3.2); default all 1.
    solution : {"vertex", "central"}
        Basic (simplex) or interior-point (no crossover) optimal solution.
    counts : (M,) array, optional
        Treat column ``j`` as ``counts[j]`` identical machines (group-symmetric
        solution); ``delta`` is then the per-member fraction.
    method : {"auto", "highs", "prices"}
        ``highs``: HiGHS on the whole LP. ``prices``: the price route of the
        module docstring (vertex only). ``auto`` (default): the price route
        for vertex solutions with more than ``AUTO_PAIRS`` runnable pairs,
        HiGHS otherwise. A price-route answer that fails its certificate is
        replaced by HiGHS's (``solver`` says so).

    Returns
    -------
    AllocationResult
        Never raises for an LP that has no positive capacity or that the solver
        cannot solve: those are ``status`` 2 and 3 (see :class:`AllocationResult`).
    """
    if solution not in SOLUTIONS:
        raise ModelError(f"solution: expected one of {SOLUTIONS}, got {solution!r}")
    if method not in METHODS:
        raise ModelError(f"method: expected one of {METHODS}, got {method!r}")
    if method == "prices" and solution != "vertex":
        raise ModelError("method: 'prices' gives vertex solutions only; use solution='vertex' or method='highs'")
    mu, alpha, a, counts = _clean(mu, alpha, a, counts)
    t0 = time.perf_counter()
    N, M = mu.shape
    cap = a.copy()
    grouped = bool((counts > 1).any())
    mu_agg = mu * counts[None, :] if grouped else mu  # column j offers counts_j members' capacity
    zero_tol = 1e-9 if solution == "vertex" else 1e-7

    def result(status, msg, lam, d, w, solver, iters, residuals):
        return AllocationResult(
            success=status == 0, status=status, message=msg, lam=lam, delta=d, alpha=alpha, mu=mu_agg, a=a,
            solution=solution, grouped=grouped, w=w, residuals=residuals, solver=solver, iterations=iters,
            wall_seconds=time.perf_counter() - t0, zero_tol=zero_tol,
        )

    # ---- a class with no capacity: lambda* = 0, certified by the price vector e_i / alpha_i
    rowcap = mu_agg @ cap
    if not (rowcap > 0).all():
        i = int(np.flatnonzero(~(rowcap > 0))[0])
        if np.isnan(rowcap[i]) or np.isinf(rowcap[i]):
            raise ModelError(f"mu: the capacity of class {i + 1} overflows (rates x counts too large)")
        w = np.zeros(N)
        w[i] = 1.0 / alpha[i]
        return result(2, f"mu: class {i + 1} cannot run on any available machine (its rates, or the availabilities "
                         f"a of the machines that can run it, are all 0): lambda* = 0, no allocation serves it",
                      0.0, np.zeros((N, M)), w, "none (no positive capacity)", 0,
                      {"class_rows": 0.0, "machine_rows": 0.0, "duality_gap": 0.0})
    if not np.isfinite(rowcap).all():
        i = int(np.flatnonzero(~np.isfinite(rowcap))[0])
        raise ModelError(f"mu: the capacity of class {i + 1} overflows (rates x counts too large)")

    # ---- scale: rates per unit of arrival rate, largest 1 (lambda* scales by s)
    best_rate = mu_agg.max(axis=1) / alpha  # each class's best rate per unit of arrival rate
    s = float(best_rate.max())
    nu = mu_agg / (alpha * s)[:, None]
    lo, hi = int(best_rate.argmin()), int(best_rate.argmax())
    spread = f"max_j mu_ij/alpha_i spans a factor {best_rate[hi] / best_rate[lo]:.3g} over the classes " \
             f"(class {lo + 1}: {best_rate[lo]:.3g}, class {hi + 1}: {best_rate[hi]:.3g})"

    def uncertified(msg, solver, iters):
        """Status 1, or 3 where the classes' scales differ beyond the solver's precision."""
        if best_rate[hi] > _MAX_SPREAD * best_rate[lo]:
            return result(3, f"allocation LP: mu/alpha: {spread}, more than the LP solver resolves "
                             f"(about {_MAX_SPREAD:.0e}); {msg}", float("nan"), np.zeros((N, M)), None,
                          solver, iters, {})
        return None
    pairs = int(np.count_nonzero(nu))
    use_prices = solution == "vertex" and (method == "prices" or (method == "auto" and pairs > AUTO_PAIRS))
    fallback = ""
    if use_prices:
        d, lam_n, y, info = _price_route(nu, cap)
        iters = info["master_iterations"]
        solver = (f"price route: {info['newton_steps']} Newton steps on the smoothed dual, master LP over "
                  f"{info['contested']} contested machines in {info['rounds']} rounds (HiGHS simplex)")
        if d is not None:
            ok, msg, residuals, w, lam = _certify(d, lam_n * s, y / alpha, mu_agg, alpha, cap, solution, zero_tol)
            if ok:
                return result(0, msg, lam, d, w, solver, iters, residuals)
            fallback = f" (fallback: the price route was not certified: {msg})"
        else:
            fallback = f" (fallback: the price route failed: {info.get('failure', '')})"
    # HiGHS on the LP as written (the vertex hetsched has always returned); if that
    # fails or is not certified, on the rescaled LP, carefully
    ok, d, lam_h, w, iters, st = _highs_full(mu_agg, alpha, cap, solution, careful=False)
    solver = "HiGHS " + ("simplex" if solution == "vertex" else "IPM (no crossover)") + fallback
    if ok:
        cert = _certify(d, lam_h, w, mu_agg, alpha, cap, solution, zero_tol)
        if cert[0]:
            return result(0, cert[1], cert[4], d, cert[3], solver, iters, cert[2])
    ok, d, lam_n, y, it2, st = _highs_full(nu, np.ones(N), cap, solution, careful=True)
    iters += it2
    solver += ", then on the LP rescaled per unit of arrival rate"
    if not ok:
        return result(3, f"allocation LP: HiGHS returned {st!r} ({solver}); mu/alpha: {spread}",
                      float("nan"), np.zeros((N, M)), None, solver, iters, {})
    ok, msg, residuals, w, lam = _certify(d, lam_n * s, y / alpha, mu_agg, alpha, cap, solution, zero_tol)
    if not ok:
        bad = uncertified(msg, solver, iters)
        if bad is not None:
            return bad
    return result(0 if ok else 1, msg, lam, d, w, solver, iters, residuals)


def _certify(d, lam_solver, w, mu, alpha, cap, solution, zero_tol):
    """Clean an answer and certify it: primal feasibility and a weak-duality bound.

    ``d`` is cleaned in place: entries below ``zero_tol`` become 0 and a machine
    whose fractions exceed its availability (by the solver's tolerance) has
    its column scaled down to it, so ``d`` is exactly feasible for (2.2)-(2.3).
    The reported ``lambda`` is the capacity it gives,
    ``min_i sum_j d_ij mu_ij / alpha_i``, a lower bound on ``lambda*``. For any
    ``w >= 0`` with ``alpha.w = 1``, ``sum_j cap_j max_i w_i mu_ij`` bounds
    ``lambda*`` from above (the dual objective with the best machine prices
    ``v_j = max_i w_i mu_ij``). Certified when the two bounds agree and the
    capacity reaches the solver's ``lambda``, within ``tol`` relative to
    ``lambda`` (1e-6 for vertices, 1e-5 for central solutions).
    Returns ``(ok, message, residuals, normalised w, lambda)``.
    """
    d[d <= zero_tol] = 0.0
    used = d.sum(axis=0)
    res_mach = float(np.max(np.clip(used - cap, 0, None), initial=0.0))
    over = used > cap
    if over.any():
        d[:, over] *= cap[over] / used[over]
    capacity = np.einsum("ij,ij->i", d, mu)
    lam = float((capacity / alpha).min())
    res_class = max(0.0, (lam_solver - lam) / abs(lam_solver)) if lam_solver != 0 else float(lam < 0)
    w = np.clip(w, 0, None)
    ws = float(alpha @ w)
    if ws > 0 and np.isfinite(ws):
        wn = w / ws
        dual_bound = float(cap @ (wn[:, None] * mu).max(axis=0))
    else:
        wn, dual_bound = w, float("inf")
    gap = (dual_bound - lam) / lam if lam > 0 else (0.0 if dual_bound == 0 else float("inf"))
    residuals = {"class_rows": res_class, "machine_rows": res_mach, "duality_gap": gap,
                 "dual_bound": dual_bound, "primal_bound": lam}
    tol = 1e-6 if solution == "vertex" else 1e-5
    ok = res_class <= tol and res_mach <= tol and abs(gap) <= tol
    msg = _CERTIFIED if ok else (
        f"solved, but the certificate failed (class rows {res_class:.2e}, machine rows {res_mach:.2e}, "
        f"relative duality gap {gap:.2e})")
    return ok, msg, residuals, wn, lam


def allocation_lp(system, solution: str = "vertex", grouped: bool = True, method: str = "auto") -> AllocationResult:
    """Allocation LP of a :class:`~hetsched.system.System`.

    With ``grouped`` (default) interchangeable machines (same rate column and
    availability) are aggregated and the group-symmetric solution is returned,
    expanded per machine; ``delta_groups`` holds the per-group fractions.
    Availabilities ``a_j`` of the system enter constraint (3.2).
    """
    mu = system.mu
    a = system.a
    if grouped:
        labels, counts = system.lp_groups()
        if len(counts) < system.M:
            first = np.array([np.flatnonzero(labels == g)[0] for g in range(len(counts))])
            res = solve_allocation(mu[:, first], system.alpha_array, a[first], solution=solution,
                                   counts=counts, method=method)
            dg = res.delta
            res.delta_groups = dg.copy()
            res.group_labels = labels
            res.delta = dg[:, labels]
            res.mu = mu.copy()  # nominal rates per machine
            res.a = a.copy()
            res.grouped = True
            return res
    res = solve_allocation(mu, system.alpha_array, a, solution=solution, method=method)
    res.grouped = False
    return res
