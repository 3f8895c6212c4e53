"""The allocation LP (thesis (2.1)-(2.3), with CPU availabilities (3.1)-(3.3)).

.. math::

    \\max \\lambda \\quad\\text{s.t.}\\quad
    \\sum_j \\delta_{ij}\\mu'_{ij} \\ge \\lambda\\alpha_i \\;(\\forall i),\\qquad
    \\sum_i \\delta_{ij} \\le a_j \\;(\\forall j),\\qquad \\delta_{ij} \\ge 0.

``lambda*`` is the system's maximum capacity: the system can be stabilized iff
``lambda* > 1`` (Theorems 2.2.1-2.2.2) and ``1/lambda*`` is the long-run
utilisation of the busiest machine; ``delta*[i, j]`` is the long-run fraction of
machine ``j`` given to class ``i`` at maximum capacity.

Solutions (HiGHS, through ``highspy``):

* ``vertex`` — a basic optimal solution from the simplex method; it has at least
  ``N*M + 1 - N - M`` zeros (Proposition 2.2.1). Where the system has groups of
  interchangeable machines (same rate column and availability), the default is
  the **group-symmetric** vertex the thesis uses for 2.C1/2.C2: each group is
  aggregated into one machine of ``count`` times the capacity, the aggregate LP
  is solved, and every member gets the group's fraction.
* ``central`` — the interior-point solution without crossover (a point in the
  relative interior of the optimal face), used by the robust variants of §3.4.6.

Large dense systems (many machines, few classes) can go through the dual
(``method="dual"``, opt-in), which has only ``N`` free variables:
``lambda* = min_{w>=0, alpha.w=1} sum_j a_j max_i w_i mu_ij``. Prices ``w``
from a chain of growing random subsamples seed an exact recovery: machines with
a clear best class are dedicated to it, the contested ones go to a small LP,
and the loop ends when primal and dual feasibility certify optimality.

Every result is re-checked after solving (primal residuals and a weak-duality
bound from the dual prices) and its ``status`` downgraded if the check fails.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from .errors import ModelError, SolverError

__all__ = ["AllocationResult", "solve_allocation", "allocation_lp", "SOLUTIONS"]

SOLUTIONS = ("vertex", "central")



@dataclass
class AllocationResult:
    """Result of the allocation LP, in the style of ``scipy.optimize.OptimizeResult``.

    Attributes
    ----------
    success, status, message
        ``status`` 0 = optimal and re-checked; 1 = solved but the re-check failed
        (residuals too large); 2 = solver failure.
    lam : float
        ``lambda*``, the maximum capacity.
    delta : ndarray (N, M)
        ``delta*`` per machine.
    w : ndarray (N,)
        Optimal dual prices of the class constraints, normalised to ``alpha.w = 1``.
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
    try:
        mu = np.array(mu, dtype=float, ndmin=2)
        alpha = np.array(alpha, dtype=float, ndmin=1)
    except (TypeError, ValueError) as exc:
        raise ModelError(f"mu/alpha: expected numeric arrays ({exc})") from None
    if mu.ndim != 2:
        raise ModelError(f"mu: expected an N x M matrix, got an array of shape {mu.shape}")
    N, M = mu.shape
    if alpha.shape != (N,):
        raise ModelError(f"alpha: expected {N} arrival rates (one per row of mu), got shape {alpha.shape}")
    if not np.isfinite(mu).all() or (mu < 0).any():
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
    if counts.shape != (M,) or (counts <= 0).any():
        raise ModelError(f"counts: expected {M} positive machine counts, got {counts!r}")
    rowcap = (mu * (a * counts)[None, :]).sum(axis=1)
    if (rowcap <= 0).any():
        i = int(np.flatnonzero(rowcap <= 0)[0])
        raise ModelError(f"mu: class {i + 1} cannot run on any available machine (all rates or availabilities are 0)")
    return mu, alpha, a, counts


# ----------------------------------------------------------------------------- HiGHS core
def _highs_lp(mu: np.ndarray, alpha: np.ndarray, cap: np.ndarray, method: str, base: np.ndarray | None = None):
    """Solve max lam s.t. base_i + sum_j d_ij mu_ij >= lam alpha_i, sum_i d_ij <= cap_j, d >= 0.

    ``base`` (default 0) is capacity already given to each class by machines
    outside the LP. Only pairs with ``mu_ij > 0`` are columns, then lam.
    Returns (d, lam, w, v, iterations): ``w``, ``v`` are the class-row and
    machine-row duals (absolute values; ``alpha.w = 1`` at an optimum).
    """
    import highspy

    N, M = mu.shape
    nz_i, nz_j = np.nonzero(mu > 0)  # only pairs that can run: smaller LP
    K = len(nz_i)
    # Class rows 0..N-1:  lam*alpha_i - sum_j mu_ij d_ij <= 0 ; machine rows N..N+M-1: sum_i d_ij <= cap_j
    rows = np.concatenate([nz_i, N + nz_j, np.arange(N)])
    cols = np.concatenate([np.arange(K), np.arange(K), np.full(N, K)])
    vals = np.concatenate([-mu[nz_i, nz_j], np.ones(K), alpha])
    A = sp.csc_matrix((vals, (rows, cols)), shape=(N + M, K + 1))
    lp = highspy.HighsLp()
    lp.num_col_ = K + 1
    lp.num_row_ = N + M
    lp.col_cost_ = np.concatenate([np.zeros(K), [1.0]])
    lp.col_lower_ = np.concatenate([np.zeros(K), [-highspy.kHighsInf]])
    lp.col_upper_ = np.full(K + 1, highspy.kHighsInf)
    lp.row_lower_ = np.full(N + M, -highspy.kHighsInf)
    lp.row_upper_ = np.concatenate([np.zeros(N) if base is None else base, cap])
    lp.sense_ = highspy.ObjSense.kMaximize
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = A.indptr
    lp.a_matrix_.index_ = A.indices
    lp.a_matrix_.value_ = A.data
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    if method == "central":
        h.setOptionValue("solver", "ipm")
        h.setOptionValue("run_crossover", "off")
        h.setOptionValue("ipm_optimality_tolerance", 1e-10)
    else:
        h.setOptionValue("solver", "simplex")
    h.passModel(lp)
    h.run()
    status = h.getModelStatus()
    if status != highspy.HighsModelStatus.kOptimal:
        raise SolverError(f"allocation LP: HiGHS returned {h.modelStatusToString(status)}")
    sol = h.getSolution()
    x = np.asarray(sol.col_value)
    d = np.zeros((N, M))
    d[nz_i, nz_j] = np.clip(x[:K], 0, None)
    lam = float(x[K])
    duals = np.abs(np.asarray(sol.row_dual))
    info = h.getInfo()
    iters = int(info.simplex_iteration_count if method != "central" else info.ipm_iteration_count)
    return d, lam, duals[:N], duals[N:], iters


def _dual_prices(mu: np.ndarray, alpha: np.ndarray, cap: np.ndarray, base_size: int = 500,
                 factor: int = 4) -> tuple[np.ndarray, int]:
    """Near-optimal class prices ``w`` of the allocation LP, by solving subsamples.

    ``lambda* = min_{w >= 0, alpha.w = 1} sum_j cap_j max_i w_i mu_ij`` (LP duality:
    once each machine price is eliminated as ``v_j = max_i w_i mu_ij``, the dual has
    only the N class prices as variables). The optimal prices of a random
    subsample of the machines, with capacities scaled up to the full total,
    approximate ``w*`` (a sample-average approximation); samples grow by
    ``factor`` from ``base_size`` machines, each level solved exactly by
    :func:`_exact_from_prices` from the prices of the level below, the smallest
    by plain HiGHS simplex. The sample is drawn from a fixed seed, so the result
    is deterministic. Returns (w, levels).
    """
    N, M = mu.shape
    if M <= 2 * base_size:
        _d, _lam, w, _v, _it = _highs_lp(mu, alpha, cap, "vertex")
        ws = float(alpha @ w)
        return (w / ws if ws > 0 else w), 1
    rng = np.random.default_rng(12345)
    size = max(base_size, M // factor)
    idx = np.sort(rng.choice(M, size=size, replace=False))
    scale = cap.sum() / cap[idx].sum()
    w_sub, levels = _dual_prices(mu[:, idx], alpha, cap[idx] * scale, base_size, factor)
    rec = _exact_from_prices(mu[:, idx], alpha, cap[idx] * scale, w_sub)
    if rec is None:
        return w_sub, levels + 1
    return rec[2], levels + 1


def _exact_from_prices(mu, alpha, cap, w, margin: float = 0.02, max_rounds: int = 100):
    """Exact optimal vertex of the allocation LP from near-optimal dual prices ``w``.

    Machines whose best class under ``w`` wins by more than ``margin`` (relative)
    are dedicated to it (fixed); the others ("contested") enter a small LP over
    their two best classes, with the fixed capacity as a constant. The small
    LP's duals give new prices; every fixed machine must still prefer its class
    and no contested pair may have a positive reduced cost ``w_i mu_ij - v_j``,
    otherwise the machine is released or the pair added, and the small LP
    re-solved. On exit the primal solution and the prices satisfy primal and
    dual feasibility and complementary slackness for the *full* LP: optimal.
    Returns (d, lam, w, rounds) or None.
    """
    N, M = mu.shape
    scores = w[:, None] * mu
    order = np.argsort(-scores, axis=0)
    best = order[0]
    top = scores[best, np.arange(M)]
    second = scores[order[1], np.arange(M)] if N > 1 else np.zeros(M)
    contested = (top <= second * (1 + margin)) | (top <= 0)
    active = np.zeros((N, M), dtype=bool)
    active[order[: min(2, N)], np.arange(M)[None, :]] = True
    active &= mu > 0
    for rnd in range(1, max_rounds + 1):
        fixed = np.flatnonzero(~contested)
        d = np.zeros((N, M))
        d[best[fixed], fixed] = cap[fixed]
        base = (d * mu).sum(axis=1)
        free = np.flatnonzero(contested)
        sub_mu = np.where(active[:, free], mu[:, free], 0.0)
        lam, dsub, wn, vsub = _tied_lp(sub_mu, alpha, cap[free], base)
        d[:, free] = dsub
        sc = wn[:, None] * mu
        vmax = sc.max(axis=0)
        tol = 1e-12 * max(1.0, float(vmax.max()))
        changed = False
        # fixed machines must still prefer (weakly) their class
        bad = fixed[sc[best[fixed], fixed] < vmax[fixed] - tol]
        if len(bad):
            contested[bad] = True
            active[:, bad] |= sc[:, bad] >= vmax[bad][None, :] - tol
            changed = True
        # contested pairs priced against the machine duals
        if len(free) and len(vsub):
            red = sc[:, free] - vsub[None, :]
            add = (red > tol) & ~active[:, free] & (mu[:, free] > 0)
            if add.any():
                active[:, free] |= add
                changed = True
        if not changed:
            return d, lam, wn, rnd
    return None


def _tied_lp(sub_mu, alpha, cap, base):
    """max lam s.t. base_i + sum_j d_ij mu_ij >= lam alpha_i, sum_i d_ij <= cap_j (simplex).

    Returns (lam, d, w, v): w are the class-row duals (``alpha.w = 1``), v the
    machine-row duals.
    """
    d, lam, w, v, _ = _highs_lp(sub_mu, alpha, cap, "vertex", base=base)
    return lam, d, w, v


# ----------------------------------------------------------------------------- public API
def solve_allocation(
    mu: Any,
    alpha: Any,
    a: Any = None,
    *,
    solution: str = "vertex",
    counts: Any = None,
    method: str = "auto",
) -> AllocationResult:
    """Solve the allocation LP on arrays.

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
    method : {"auto", "highs", "dual"}
        ``dual``: the dual route for large dense systems (vertex only; see the
        module docstring); ``auto`` and ``highs``: HiGHS on the whole LP.
    """
    if solution not in SOLUTIONS:
        raise ModelError(f"solution: expected one of {SOLUTIONS}, got {solution!r}")
    if method not in ("auto", "highs", "dual"):
        raise ModelError(f"method: expected 'auto', 'highs' or 'dual', got {method!r}")
    mu, alpha, a, counts = _clean(mu, alpha, a, counts)
    t0 = time.perf_counter()
    N, M = mu.shape
    # Column j offers capacity counts_j * a_j per member-fraction unit: scale rates.
    cap = a.copy()
    mu_agg = mu * counts[None, :]
    # The dual route is opt-in: it is exact, but not yet faster than HiGHS on
    # every large instance (benchmarks/bench_lp.py measures both).
    use_dual = method == "dual"
    d = None
    if use_dual:
        if solution != "vertex":
            raise ModelError("method 'dual' gives vertex solutions only")
        w, levels = _dual_prices(mu_agg, alpha, cap)
        rec = _exact_from_prices(mu_agg, alpha, cap, w)
        if rec is not None:
            d, lam, w_dual, rounds = rec
            iters = rounds
            solver = f"dual prices from {levels} subsample levels + contested-machine LP ({rounds} rounds), HiGHS"
    if d is None:
        d, lam, w_raw, _v, iters = _highs_lp(mu_agg, alpha, cap, solution)
        solver = "HiGHS " + ("simplex" if solution == "vertex" else "IPM (no crossover)")
        w_dual = w_raw
    wall = time.perf_counter() - t0
    zero_tol = 1e-9 if solution == "vertex" else 1e-7
    d[d <= zero_tol] = 0.0
    # ---- re-check: primal residuals and a weak-duality bound ----------------------
    capacity = (d * mu_agg).sum(axis=1)
    res_class = float(np.max(np.clip(lam * alpha - capacity, 0, None) / alpha))
    res_mach = float(np.max(np.clip(d.sum(axis=0) - cap, 0, None)))
    lam_feasible = float((capacity / alpha).min())
    ws = float(alpha @ w_dual)
    if ws > 0:
        wn = w_dual / ws
        dual_bound = float((cap * (wn[:, None] * mu_agg).max(axis=0)).sum())
    else:
        wn, dual_bound = w_dual, float("inf")
    gap = dual_bound - lam_feasible
    residuals = {"class_rows": res_class, "machine_rows": res_mach, "duality_gap": gap}
    tol = 1e-6 if solution == "vertex" else 1e-5
    ok = res_class <= tol and res_mach <= tol and abs(gap) <= tol * max(1.0, lam)
    status = 0 if ok else 1
    msg = "optimal; residuals and duality gap re-checked" if ok else (
        f"solved, but the re-check failed (class {res_class:.2e}, machine {res_mach:.2e}, gap {gap:.2e})"
    )
    return AllocationResult(
        success=ok, status=status, message=msg, lam=lam, delta=d, alpha=alpha, mu=mu_agg, a=a,
        solution=solution, grouped=bool((counts > 1).any()), w=wn, residuals=residuals,
        solver=solver, iterations=iters, wall_seconds=wall, zero_tol=zero_tol,
    )


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
