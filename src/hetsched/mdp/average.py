"""Long-run average cost: policy evaluation (unichain and multichain), relative value iteration, policy iteration.

Criterion: ``lim_T (1/T) E int_0^T c(x_t, u_t) dt`` (no killing rates). For a
stationary policy ``pi`` with generator ``Q_pi`` the gain ``g`` and bias ``h``
solve the *multichain evaluation equations*

    Q_pi g = 0,        c_pi + Q_pi h = g,

normalized by ``pi_C h = 0`` on each recurrent class ``C`` (the bias). On a unichain policy
``g`` is a constant; on a multichain one it is constant on each recurrent class
and, on a transient state, the mixture of the classes it is absorbed in.

* :func:`average_policy_iteration` — multichain policy iteration (Howard 1960;
  Puterman 1994, §9.2, Algorithm 9.2.1, for costs): evaluate exactly (above;
  recurrent classes from the strongly connected components of the policy's
  graph, one sparse LU for all recurrent states and one for the transient ones);
  improve the *gain* first (``min_a (Q_a g)(s)``), and where no action improves
  the gain, the *bias* among the gain-optimal actions (``min_a c + Q_a h - g``),
  keeping the current action unless another is better by more than a tolerance.
  It ends when neither step changes the policy, and the result is checked
  against the *multichain optimality equations* (``min_a Q_a g = 0`` and
  ``min_{a gain-optimal} c + Q_a h = g``); a solution of them is optimal in every
  state (Puterman 1994, Thm 9.1.2 and §9.2.3). Any starting policy works.
* :func:`relative_value_iteration` — RVI on the uniformized chain; correct only
  for unichain or communicating models (it reports non-convergence otherwise).
* :func:`evaluate_policy` / :func:`stationary_distribution` — a fixed policy.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import ModelError, SolverError
from .model import CTMDP
from .operators import _check_beta, _segment_min, linsolve
from .result import MDPResult

__all__ = [
    "stationary_distribution",
    "evaluate_policy",
    "recurrent_classes",
    "relative_value_iteration",
    "average_policy_iteration",
]


def stationary_distribution(Q: sp.spmatrix) -> np.ndarray:
    """Stationary distribution of an irreducible CTMC generator ``Q`` (``pi Q = 0``, ``sum pi = 1``).

    Fixes ``pi`` of the last state to 1 and solves the other ``n - 1`` balance
    equations (no dense row: sparse LU or preconditioned GMRES,
    :func:`~hetsched.mdp.operators.linsolve`), then normalizes; the answer is
    re-checked (residual) and clipped at 0.
    """
    Q = sp.csr_matrix(Q, dtype=float)
    n = Q.shape[0]
    if Q.shape != (n, n):
        raise ModelError(f"Q: expected a square generator, got shape {Q.shape}")
    if n == 1:
        return np.ones(1)
    QT = Q.T.tocsc()
    A = QT[: n - 1][:, : n - 1]
    rhs = -np.asarray(QT[: n - 1, n - 1].todense()).ravel()
    try:
        x = linsolve(A, rhs, "stationary distribution")
    except SolverError as exc:
        raise SolverError(f"{exc}; is the chain irreducible?") from None
    pi = np.append(x, 1.0)
    pi = pi / pi.sum()
    resid = float(np.abs(Q.T @ pi).max())
    scale = float(np.abs(Q.diagonal()).max()) or 1.0
    if not np.all(np.isfinite(pi)) or resid > 1e-8 * scale or pi.min() < -1e-9:
        raise SolverError(f"stationary distribution: residual {resid:.3g}, min {pi.min():.3g}; chain not irreducible?")
    pi = np.clip(pi, 0.0, None)
    return pi / pi.sum()


def recurrent_classes(R: sp.spmatrix) -> np.ndarray:
    """Recurrent class of every state of the chain with off-diagonal rates ``R`` (``-1``: transient).

    The recurrent classes are the *closed* strongly connected components (no
    rate leaves them); classes are numbered ``0..C-1`` in order of their
    smallest state.
    """
    from scipy.sparse.csgraph import connected_components

    R = sp.csr_matrix(R)
    n = R.shape[0]
    _, comp = connected_components(R, directed=True, connection="strong")
    coo = R.tocoo()
    pos = coo.data > 0
    leaves = comp[coo.row[pos]] != comp[coo.col[pos]]
    open_ = np.zeros(comp.max() + 1 if n else 0, bool)
    open_[comp[coo.row[pos][leaves]]] = True
    closed = ~open_[comp]
    out = np.full(n, -1, dtype=np.int64)
    if closed.any():
        _, first = np.unique(comp[closed], return_index=True)  # order classes by their smallest state
        states = np.flatnonzero(closed)
        order = np.argsort(states[first])
        relabel = np.empty(order.size, dtype=np.int64)
        relabel[order] = np.arange(order.size)
        _, inv = np.unique(comp[closed], return_inverse=True)
        out[closed] = relabel[inv]
    return out


def _evaluate_multichain(model: CTMDP, k: np.ndarray, cls: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Gain ``g`` and bias ``h`` of the pairs ``k`` (``pi_C h = 0`` on each recurrent class ``C``); any number of classes.

    Recurrent states: with ``pi`` fixed to 1 at each class's reference state (its
    smallest) the other balance equations give every class's stationary law (one
    block-diagonal system), hence ``g_C = pi_C c_C``; then ``Q_RR h = g - c`` with
    ``h = 0`` at each class's most likely state (its row dropped: it is implied), and
    ``h`` shifted by ``pi_C h_C``. Transient states: ``Q_TT g_T = -Q_TR g_R`` and
    ``Q_TT h_T = g_T - c_T - Q_TR h_R``. Every system is sparse without a dense row or
    column (:func:`~hetsched.mdp.operators.linsolve`).
    """
    S = model.n_states
    Rk = model.R[k].tocsr()
    out = model.out[k]
    c = model.cost[k]
    rec = np.flatnonzero(cls >= 0)
    tra = np.flatnonzero(cls < 0)
    n_cls = int(cls.max()) + 1 if rec.size else 0
    ref = np.full(n_cls, S, dtype=np.int64)
    np.minimum.at(ref, cls[rec], rec)
    g = np.zeros(S)
    h = np.zeros(S)
    Q_RR = (Rk[rec][:, rec] - sp.diags(out[rec])).tocsc()
    loc = np.full(S, -1, dtype=np.int64)
    loc[rec] = np.arange(rec.size)
    is_ref = np.zeros(rec.size, bool)
    is_ref[loc[ref]] = True
    keep = np.flatnonzero(~is_ref)  # recurrent states other than the references (local indices)
    pi = np.zeros(rec.size)
    pi[loc[ref]] = 1.0
    if keep.size:
        QT = Q_RR.T.tocsc()
        # balance equations of the non-reference states, pi(ref) = 1 moved to the right-hand side
        rhs = -np.asarray(QT[keep][:, loc[ref]].sum(axis=1)).ravel()
        pi[keep] = linsolve(QT[keep][:, keep], rhs, "average-cost evaluation (stationary laws)")
    pi = np.clip(pi, 0.0, None)
    mass = np.bincount(cls[rec], weights=pi, minlength=n_cls)
    pi = pi / mass[cls[rec]]
    gc = np.bincount(cls[rec], weights=pi * c[rec], minlength=n_cls)
    g[rec] = gc[cls[rec]]
    # the bias: h = 0 at each class's most likely state, whose (dropped) equation is then implied without
    # amplifying rounding by 1 / pi(ref)
    order = np.lexsort((-pi, cls[rec]))  # by class, most likely first
    first = np.ones(order.size, bool)
    first[1:] = cls[rec][order][1:] != cls[rec][order][:-1]
    href = np.zeros(rec.size, bool)
    href[order[first]] = True
    keep_h = np.flatnonzero(~href)
    hr = np.zeros(rec.size)
    if keep_h.size:
        hr[keep_h] = linsolve(Q_RR[keep_h][:, keep_h], (g[rec] - c[rec])[keep_h], "average-cost evaluation (bias)",
                              ilu_of_transpose=True)
    shift = np.bincount(cls[rec], weights=pi * hr, minlength=n_cls)
    h[rec] = hr - shift[cls[rec]]
    if tra.size:
        Q_TT = (Rk[tra][:, tra] - sp.diags(out[tra])).tocsc()
        Q_TR = Rk[tra][:, rec]
        g[tra] = linsolve(Q_TT, -(Q_TR @ g[rec]), "average-cost evaluation (transient gains)", ilu_of_transpose=True)
        h[tra] = linsolve(Q_TT, g[tra] - c[tra] - Q_TR @ h[rec], "average-cost evaluation (transient bias)",
                          ilu_of_transpose=True)
    return g, h


def evaluate_policy(model: CTMDP, policy: np.ndarray, beta: float | None = None) -> dict[str, Any]:
    """Cost of a stationary policy from the CTMC it induces.

    With ``beta``: ``{"values": J_pi}`` (exact solve). Without: the long-run
    average: ``gains`` (per state), ``classes`` (recurrent class of each state,
    ``-1`` transient) and, when the policy has a single recurrent class, ``gain``
    (a number) and ``pi`` (its stationary distribution); on a multichain policy
    ``gain`` and ``pi`` are ``None``. Killing rates are not allowed.
    """
    from .discounted import _evaluate_discounted

    k = model.pair_index(policy)
    if beta is not None:
        return {"values": _evaluate_discounted(model, k, _check_beta(beta))}
    if np.any(model.kill[k] > 0):
        raise ModelError("average cost is undefined for a model with killing rates")
    cls = recurrent_classes(model.R[k])
    if cls.max(initial=-1) == 0:
        pi = stationary_distribution(model.generator(policy))
        g = float(pi @ model.cost[k])
        return {"gain": g, "pi": pi, "gains": np.full(model.n_states, g), "classes": cls}
    gains, _ = _evaluate_multichain(model, k, cls)
    return {"gain": None, "pi": None, "gains": gains, "classes": cls}


# --------------------------------------------------------------------------- average cost


def _average_checks(model: CTMDP, tau: float) -> None:
    if np.any(model.kill > 0):
        raise ModelError("average cost is undefined for a model with killing rates")
    if not 0 < tau < 1:
        raise ModelError(f"tau: aperiodicity fraction must be in (0, 1), got {tau}")


def relative_value_iteration(
    model: CTMDP,
    eps: float | None = None,
    max_iter: int = 1_000_000,
    tau: float = 0.01,
    ref: int = 0,
    h0: np.ndarray | None = None,
) -> MDPResult:
    """Long-run average cost by relative value iteration on the uniformized chain.

    ``nu = max q / (1 - tau)``; ``h <- T h - (T h)(ref)`` with stage cost ``c / nu``.
    Stopping rule (Odoni 1969; Puterman 1994, Thm 8.5.5): with ``w = T h - h``,
    ``nu min w <= g* <= nu max w`` and the greedy policy's gain is within
    ``nu sp(w)`` of ``g*``; stop when ``nu sp(w) < eps`` (default ``1e-9 max|c|``).
    Assumes a unichain or communicating model: on a multichain one the bounds do
    not close and the result says so (use :func:`average_policy_iteration`).
    """
    _average_checks(model, tau)
    nu = model.max_rate / (1 - tau) if model.max_rate > 0 else 1.0
    eps = 1e-9 * max(float(np.abs(model.cost).max()), 1.0) if eps is None else float(eps)
    t0 = time.perf_counter()
    h = np.zeros(model.n_states) if h0 is None else np.array(h0, dtype=float)
    # uniformized, unscaled: T h = min [c/nu + (R h + (nu - q) h(s)) / nu]
    cost = model.cost / nu
    it = 0
    while True:
        qv = cost + (model.R @ h + (nu - model.out) * h[model.sa_state]) / nu
        th, k = _segment_min(model, qv)
        w = th - h
        it += 1
        lo, hi = nu * float(w.min()), nu * float(w.max())
        h = th - th[ref]
        if hi - lo < eps or it >= max_iter or not np.isfinite(hi - lo):
            break
    ok = np.isfinite(hi - lo)
    status = 0 if hi - lo < eps else (2 if not ok else 1)
    msg = (
        f"converged: gain in [{lo:.10g}, {hi:.10g}]" if status == 0
        else f"not converged after {it} iterations: gain bounds [{lo:.6g}, {hi:.6g}] (relative value iteration "
             "needs a unichain or communicating model; use average_policy_iteration for a multichain one)"
    )
    return MDPResult(
        status=status, message=msg, policy=model.sa_action[k], values=h,
        method="relative-value-iteration", criterion="average", iterations=it,
        seconds=time.perf_counter() - t0, error_bound=hi - lo, lower=lo, upper=hi,
        gain=0.5 * (lo + hi), nu=nu, extra={"eps": eps},
    )


def _tolerances(model: CTMDP, g: np.ndarray, h: np.ndarray, rtol: float) -> tuple[float, float]:
    """Tolerances of the gain test ``Q_a g`` and of the bias test ``c + Q_a h - g`` (above rounding)."""
    rate = max(model.max_rate, 1e-300)
    cscale = float(np.abs(model.cost).max()) if model.n_pairs else 0.0
    gscale = max(float(np.abs(g).max()), cscale, 1e-300)
    hscale = float(np.abs(h).max()) if h.size else 0.0
    return rtol * rate * gscale, rtol * (gscale + rate * hscale)


def average_policy_iteration(
    model: CTMDP,
    max_iter: int = 1000,
    ref: int = 0,
    policy0: np.ndarray | None = None,
    rtol: float = 1e-12,
) -> MDPResult:
    """Average-cost policy iteration for unichain *and multichain* models (Puterman 1994, §8.6 and §9.2).

    Evaluation is exact (module docstring): the gain of each recurrent class and
    of each transient state, and the bias ``h`` (``pi_C h = 0`` on each class ``C``;
    ``ref`` is kept for compatibility and no longer used). Improvement: first the
    gain (an action with ``(Q_a g)(s) < 0`` beyond the tolerance), and only where
    no gain improves, the bias (``c + Q_a h`` among the gain-optimal actions);
    the current action is kept unless another is better by more than ``rtol``
    (relative to the cost, gain and bias scales). Any starting policy works
    (default the lowest action of each state).

    Result: ``gains`` (optimal gain of every state), ``gain`` (that constant, or
    ``None`` when the gains differ: a multichain model), ``values`` = the bias
    ``h``, ``policy``. On a unichain answer ``lower``/``upper`` are the Odoni bounds
    ``min/max_s min_a (c + Q_a h)(s)`` and ``error_bound`` their gap; on a
    multichain answer ``error_bound`` is the largest residual of the multichain
    optimality equations (``extra['residuals']``). ``status`` 0 when the policy is
    stable and the equations hold to the tolerances, 1 at ``max_iter``.
    """
    _average_checks(model, 0.5)
    t0 = time.perf_counter()
    k = model.state_ptr[:-1].copy() if policy0 is None else model.pair_index(policy0)
    if not 0 <= int(ref) < model.n_states:
        raise ModelError(f"ref: must be a state in 0..{model.n_states - 1}, got {ref}")
    s_of = model.sa_state
    it = 0
    while True:
        cls = recurrent_classes(model.R[k])
        one_class = cls.max(initial=-1) == 0
        g, h = _evaluate_multichain(model, k, cls)
        if one_class:
            g = np.full(model.n_states, float(g[cls == 0][0]))  # one number (transient states' solves round)
        it += 1
        tol_g, tol_b = _tolerances(model, g, h, rtol)
        # gain step: (Q_a g)(s) = sum_j q(s,a,j) g_j - q(s,a) g_s; zero for the current pairs
        G = model.R @ g - model.out * g[s_of]
        gmin, kg = _segment_min(model, G)
        improve_g = G[k] > gmin + tol_g
        if improve_g.any():
            k_new = np.where(improve_g, kg, k)
        else:  # bias step among the gain-optimal pairs
            qv = model.cost + model.R @ h - model.out * h[s_of]
            qv_masked = np.where(G <= gmin[s_of] + tol_g, qv, np.inf)
            vmin, kmin = _segment_min(model, qv_masked)
            keep = qv[k] <= vmin + max(tol_b, 1e-12 * max(float(np.abs(g).max()), 1e-300))
            k_new = np.where(keep, k, kmin)
        if np.array_equal(k_new, k) or it >= max_iter:
            break
        k = k_new
    converged = np.array_equal(k_new, k)
    qv = model.cost + model.R @ h - model.out * h[s_of]
    G = model.R @ g - model.out * g[s_of]
    gmin, _ = _segment_min(model, G)
    vmin, _ = _segment_min(model, np.where(G <= gmin[s_of] + tol_g, qv, np.inf))
    res_gain = float(max(-gmin.min(), 0.0)) if gmin.size else 0.0          # min_a Q_a g >= 0 (= 0 at pi)
    res_bias = float(np.abs(vmin - g).max()) if vmin.size else 0.0        # min c + Q_a h = g on A'(s)
    spread = float(g.max() - g.min()) if g.size else 0.0
    unichain = spread <= 1e-9 * max(float(np.abs(g).max()), float(np.abs(model.cost).max(initial=0.0)), 1e-300)
    ok = converged and res_gain <= 10 * tol_g and res_bias <= 1e-9 * max(float(np.abs(g).max()),
                                                                        float(np.abs(model.cost).max(initial=0.0)),
                                                                        1e-300) + 10 * tol_b
    if one_class:
        lo, hi = float(vmin.min()), float(vmin.max())
        gain, err, lower, upper = float(g[0]), hi - lo, lo, hi
    else:
        gain = float(np.mean(g)) if unichain else None
        err, lower, upper = max(res_gain, res_bias), None, None
    if not converged:
        msg = f"not converged after {it} iterations"
    elif not ok:
        msg = (f"policy stable but the optimality equations hold only to residuals {res_gain:.3g} (gain), "
               f"{res_bias:.3g} (bias)")
    elif gain is None:
        msg = (f"converged: multichain, optimal gains {g.min():.10g} .. {g.max():.10g} by state "
               f"({int(cls.max()) + 1} recurrent classes under the optimal policy)")
    else:
        msg = "converged: no action improves"
    return MDPResult(
        status=0 if ok else (1 if not converged else 2), message=msg,
        policy=model.sa_action[k], values=h, method="average-policy-iteration", criterion="average",
        iterations=it, seconds=time.perf_counter() - t0, error_bound=err, lower=lower, upper=upper, gain=gain,
        gains=g, extra={"residuals": {"gain": res_gain, "bias": res_bias}, "classes": cls},
    )
