"""Steady-state and transient solution of the tangible CTMC, and reward measures.

Steady state solves ``pi Q = 0, sum(pi) = 1`` on each closed (bottom strongly
connected) class of the chain; transient states get probability 0. With one
closed class that is the stationary distribution; with several (or absorbing
markings) it is the long-run distribution from the initial marking: each class's
stationary distribution weighted by the probability of ending in it
(:func:`_absorption`, one sparse solve), as Storm computes it. Per class:

* ``direct``: sparse LU (SuperLU, COLAMD ordering) of the system with one
  unknown fixed, ``Q[-k,-k]^T x = -Q[k,-k]^T`` - no dense normalisation row, so
  no extra fill-in.
* ``iad``: iterative aggregation-disaggregation (Koury-McAllister-Stewart)
  over several partitions: each iteration visits, in turn, the partition of
  the states by the value of each of the (up to ``max_partitions`` = 3) places
  with the most distinct values - the slow, queue-like directions; for each it
  solves the aggregated chain exactly (GTH elimination) to fix the probability
  mass of each aggregate, then smooths with ``sweeps`` compiled Gauss-Seidel
  sweeps. The states arrive in lexicographic order of their markings (see
  :func:`hetsched.srn.reach.to_ctmc`), so a sweep follows those directions.
  ``aggregate_by`` gives one partition by the joint marking of chosen places.
* ``sor``: plain compiled Gauss-Seidel/SOR sweeps.
* ``auto`` (default): ``direct`` up to ``direct_limit`` states, else ``iad``,
  and ``sor`` if ``iad`` stalls.

Sparse LU fill-in grows fast on multi-dimensional state spaces, which is why
large chains go to ``iad``: its cost per iteration is a few passes over the
non-zeros of Q per partition (18 iterations on the 10^6-state gang GSPN of
``benchmarks/bench_srn.py``).

Stopping rule of the iterative methods: the normalised residual
``||pi Q||_1 / max_i |q_ii|`` is at most ``tol``; the reached residual is
re-checked for every method and a failure is reported (``success=False``, ``status``
1 = not converged, 2 = non-finite values), never returned silently; NumPy/SciPy
warnings inside the solvers are turned into these statuses.
"""

from __future__ import annotations

import time
import warnings
import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ..errors import ModelError, SolverError
from ..results import Result, jsonable
from .net import MarkingView, Reward
from .reach import CTMC

__all__ = ["SteadyState", "steady_state", "transient", "expect"]

METHODS = ("auto", "direct", "iad", "sor")


@dataclass(repr=False)
class SteadyState(Result):
    """Result of a steady-state solve (the result protocol of :mod:`hetsched.results`).

    ``pi`` is the long-run distribution over the tangible states (the solver's
    vector, also when ``success`` is False); :meth:`to_frame` marks it untrusted then.
    ``closed_classes``: closed (bottom) classes of the chain; with more than one, ``pi``
    is the long-run distribution from the initial marking (``absorbing`` of them are
    single absorbing markings).
    """

    STATUS: ClassVar[dict[int, str]] = {0: "converged", 1: "not converged", 2: "numerical failure"}

    pi: np.ndarray
    status: int
    message: str
    method: str
    residual: float
    iterations: int
    seconds: float
    transient_states: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    closed_classes: int = 1
    absorbing: int = 0

    @property
    def states(self) -> int:
        return int(self.pi.size)

    def as_dict(self) -> dict[str, Any]:
        return jsonable({"status": int(self.status), "success": self.success, "message": self.message,
                         "seconds": self.seconds, "states": self.states, "method": self.method,
                         "residual": self.residual, "iterations": self.iterations,
                         "transient_states": self.transient_states, "closed_classes": self.closed_classes,
                         "absorbing": self.absorbing, **self.extra})

    def _frame_rows(self):
        ok = self.success
        for i, v in enumerate(self.pi):
            yield {"state": i, "measure": "probability", "value": float(v) if ok else math.nan,
                   "value_untrusted": math.nan if ok else float(v)}

    def _headline(self) -> str:
        return (f"steady state of {self.states} tangible states by {self.method}: residual "
                f"{self.residual:.2g} after {self.iterations} iterations")


def _residual(Q: sp.csr_matrix, pi: np.ndarray) -> float:
    d = np.abs(Q.diagonal()).max()
    return float(np.abs(Q.T @ pi).sum() / (d if d > 0 else 1.0))


def _closed_classes(Q: sp.csr_matrix) -> list[np.ndarray]:
    """The closed (bottom) strongly connected classes of the chain, as index arrays
    (an absorbing state is a class of its own)."""
    from scipy.sparse.csgraph import connected_components

    n = Q.shape[0]
    ncomp, lab = connected_components(Q, directed=True, connection="strong")
    if ncomp == 1:
        return [np.arange(n)]
    coo = Q.tocoo()
    leaving = (lab[coo.row] != lab[coo.col]) & (coo.data != 0)
    has_exit = np.zeros(ncomp, bool)
    has_exit[lab[coo.row[leaving]]] = True
    order = np.argsort(lab, kind="stable")
    starts = np.searchsorted(lab[order], np.arange(ncomp + 1))
    return [order[starts[c]:starts[c + 1]] for c in np.flatnonzero(~has_exit)]


def _absorption(Q: sp.csr_matrix, p0: np.ndarray, classes: list[np.ndarray]) -> np.ndarray:
    """Probability that the chain started in ``p0`` ends in each closed class.

    With ``T`` the states outside every closed class: the expected time spent in each
    of them is ``y = p0_T (-Q_TT)^{-1}`` (one sparse solve), and the mass that enters
    class ``b`` is ``p0(b) + y Q_{T,b} 1``.
    """
    n = Q.shape[0]
    cls = np.full(n, -1, np.int64)
    for k, c in enumerate(classes):
        cls[c] = k
    T = np.flatnonzero(cls < 0)
    mass = np.bincount(cls[cls >= 0], weights=p0[cls >= 0], minlength=len(classes))
    if T.size:
        QT = Q[T].tocsr()
        A = (-QT[:, T]).T.tocsc()
        y = spla.splu(A, permc_spec="COLAMD").solve(np.ascontiguousarray(p0[T], dtype=float))
        out = (QT.multiply(y[:, None])).tocsr().sum(axis=0).A1     # y Q_{T,.}
        inside = cls >= 0
        mass += np.bincount(cls[inside], weights=out[inside], minlength=len(classes))
    return mass


def _direct(Q: sp.csr_matrix) -> np.ndarray:
    n = Q.shape[0]
    if n == 1:
        return np.ones(1)
    k = int(np.argmax(np.abs(Q.diagonal())))
    keep = np.r_[0:k, k + 1:n]
    A = Q.T.tocsc()
    Ar = A[keep][:, keep].tocsc()
    b = -np.asarray(A[keep][:, [k]].todense()).ravel()
    lu = spla.splu(Ar, permc_spec="COLAMD")
    x = lu.solve(b)
    pi = np.empty(n)
    pi[keep] = x
    pi[k] = 1.0
    return pi / pi.sum()


def _rank(col: np.ndarray, max_aggregates: int) -> tuple[np.ndarray, int]:
    """Aggregate index of each state by the value of one place (contiguous bins beyond ``max_aggregates``)."""
    if col.size == 0:
        return np.zeros(0, np.int64), 1
    lo = int(col.min())
    v = col.astype(np.int64) - lo
    present = np.bincount(v) > 0  # token counts are small integers: O(n), no sort
    code = np.cumsum(present) - 1
    inv = code[v]
    k = int(code[-1]) + 1
    if k > max_aggregates:
        inv = inv * max_aggregates // k
        k = max_aggregates
    return inv, k


def _choose_partitions(markings: np.ndarray, names, aggregate_by, max_aggregates: int,
                       max_partitions: int) -> list[np.ndarray]:
    """The IAD partitions: one per place with the most distinct values (or the joint ``aggregate_by``).

    Automatic choice: the places with the most distinct values (the slow, queue-like
    directions), at most ``max_partitions`` of them, skipping a place whose values
    determine and are determined by an earlier one's (e.g. ``#N`` and ``#LQ`` when
    ``#N + #LQ`` is constant: the same partition).
    """
    if aggregate_by is not None:
        if isinstance(aggregate_by, str):
            aggregate_by = [aggregate_by]
        cols = []
        for p in aggregate_by:
            if p not in names:
                raise ModelError(f"aggregate_by: unknown place {p!r}; known: {', '.join(names)}")
            cols.append(list(names).index(p))
        if not cols:
            raise ModelError("aggregate_by: name at least one place")
        key = np.zeros(markings.shape[0], np.int64)
        for j in cols:
            inv, k = _rank(markings[:, j], np.iinfo(np.int32).max)
            key = key * k + inv
        _, agg = np.unique(key, return_inverse=True)
        return [agg.ravel().astype(np.int64)]
    P = markings.shape[1]
    ranks = [_rank(markings[:, j], max_aggregates) for j in range(P)]
    order = sorted(range(P), key=lambda j: -ranks[j][1])
    parts: list[np.ndarray] = []
    kept: list[int] = []
    for j in order:
        inv, k = ranks[j]
        if k < 2 or len(parts) >= max_partitions:
            continue
        same = False
        for i in kept:
            if ranks[i][1] == k and np.count_nonzero(np.bincount(ranks[i][0] * k + inv)) == k:
                same = True
                break
        if not same:
            parts.append(inv)
            kept.append(j)
    if not parts:  # a single tangible state, or every place constant
        parts.append(np.zeros(markings.shape[0], np.int64))
    return parts


def _iad(Q: sp.csr_matrix, parts: list[np.ndarray], tol: float, maxiter: int, sweeps: int = 2,
         x0: np.ndarray | None = None) -> tuple[np.ndarray, int, float]:
    """Iterative aggregation-disaggregation over several partitions (Koury-McAllister-Stewart).

    One iteration visits every partition in turn: aggregate with the current
    conditional probabilities, solve the small chain exactly (GTH), rescale each
    aggregate to its mass, then ``sweeps`` Gauss-Seidel sweeps. Several partitions
    (one per slow direction) correct the marginal of each direction in one iteration.
    """
    from ._kernels import aggregate, disaggregate, gauss_seidel, gth, residual

    n = Q.shape[0]
    C = Q.tocsc()
    diag = -C.diagonal()
    dmax = float(diag.max()) if n else 1.0
    dmax = dmax if dmax > 0 else 1.0
    x = np.full(n, 1.0 / n) if x0 is None else x0.copy()
    bufs = [np.empty((int(a.max()) + 1,) * 2) for a in parts]
    masses = [np.empty(b.shape[0]) for b in bufs]
    res = np.inf
    it = 0
    best = np.inf
    stall = 0
    while it < maxiter:
        it += 1
        for agg, Qc, mass in zip(parts, bufs, masses):
            aggregate(Q.indptr, Q.indices, Q.data, agg, x, mass, Qc)
            disaggregate(x, agg, mass, gth(Qc))
            gauss_seidel(C.indptr, C.indices, C.data, diag, x, 1.0, sweeps)
            x /= x.sum()
        res = residual(C.indptr, C.indices, C.data, x) / dmax
        if not np.isfinite(res) or res <= tol:
            break
        if res < 0.9 * best:
            best, stall = res, 0
        else:
            stall += 1
            if stall >= 50:
                break
    return x, it, res


def _sor(Q: sp.csr_matrix, tol: float, maxiter: int, omega: float = 1.0,
         x0: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    from ._kernels import gauss_seidel

    n = Q.shape[0]
    C = Q.tocsc()
    diag = -C.diagonal()
    x = np.full(n, 1.0 / n) if x0 is None else x0.copy()
    it = 0
    while it < maxiter:
        gauss_seidel(C.indptr, C.indices, C.data, diag, x, omega, 10)
        it += 10
        x /= x.sum()
        if _residual(Q, x) <= tol:
            break
    return x, it


def steady_state(ctmc: CTMC, *, method: str = "auto", tol: float = 1e-13, maxiter: int = 2000,
                 direct_limit: int = 5000, aggregate_by=None, max_aggregates: int = 400,
                 max_partitions: int = 3, sweeps: int = 2, x0: np.ndarray | None = None) -> SteadyState:
    """Steady-state distribution of the tangible CTMC.

    Parameters
    ----------
    ctmc : CTMC
        From :func:`hetsched.srn.reach.to_ctmc`.
    method : {"auto", "direct", "iad", "sor"}
    tol : float
        Stopping rule of the iterative methods: normalised residual
        ``||pi Q||_1 / max|q_ii| <= tol``. Every answer is re-checked and flagged
        ``success=False`` above ``100 * tol``.
    maxiter : int
        Iteration cap (IAD iterations; SOR uses ``10 * maxiter`` sweeps).
    direct_limit : int
        ``auto`` uses the direct solver up to this many states.
    aggregate_by : sequence of place names, optional
        Places whose joint marking defines the IAD aggregates (one partition).
        Default: one partition per place with the most distinct values.
    max_aggregates : int
        Cap on the number of aggregates of an automatic partition (a place with more
        values is binned into contiguous ranges).
    max_partitions : int
        Number of automatic partitions (places) visited per IAD iteration.
    sweeps : int
        Gauss-Seidel sweeps after each partition's correction.
    x0 : array, optional
        Starting vector of the iterative methods (e.g. the solution at a nearby
        parameter value).
    """
    if method not in METHODS:
        raise ModelError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if not (isinstance(tol, float) and 0 < tol < 1):
        raise ModelError(f"tol must be a float in (0, 1), got {tol!r}")
    t0 = time.perf_counter()
    Q = ctmc.Q
    n = Q.shape[0]
    names = ctmc.space.net.place_names
    classes = _closed_classes(Q) if n > 1 else [np.arange(n)]
    opts = dict(method=method, tol=tol, maxiter=maxiter, direct_limit=direct_limit, aggregate_by=aggregate_by,
                max_aggregates=max_aggregates, max_partitions=max_partitions, sweeps=sweeps)
    # numerical trouble (a singular factor, an iteration that blows up) becomes a status, never a
    # NumPy/SciPy warning or exception at the user
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if len(classes) == 1:
            comp = classes[0]
            pic, chosen, its, res, extra = _solve_class(Q, comp, ctmc.markings, names, x0, opts)
            weights = [1.0]
            parts = [(comp, pic)]
        else:
            try:
                weights = _absorption(Q, ctmc.p0, classes)
            except (MemoryError, RuntimeError, ValueError) as exc:
                raise SolverError(f"absorption probabilities failed ({type(exc).__name__}: {exc})") from exc
            parts, chosen, its, res, extra = [], "direct", 0, 0.0, {}
            for comp, w in zip(classes, weights):
                if w <= 0:
                    continue
                pic, ch, it, r, ex = _solve_class(Q, comp, ctmc.markings, names, None, opts)
                parts.append((comp, w * pic))
                chosen = ch if comp.size > 1 and ch != "direct" else chosen
                its, res = its + it, max(res, r)
        pi = np.zeros(n)
        for comp, v in parts:
            pi[comp] = v
        finite = bool(np.all(np.isfinite(pi)) and np.isfinite(res))
        if not finite:
            pi[:] = 0.0
        ok = bool(finite and res <= max(tol * 100, 1e-14) and pi.min() > -1e-10)
        if ok:
            status, msg = 0, "converged"
        elif finite:
            status, msg = 1, f"not converged: residual {res:.3g} (target {tol:.3g}) after {its} iterations"
        else:
            status, msg = 2, f"numerical failure: the {chosen} solver produced non-finite values"
        absorbing = sum(1 for c in classes if c.size == 1 and Q[c[0]].nnz == 0)
        if len(classes) > 1 and ok:
            msg = (f"long-run distribution from the initial marking over {len(classes)} closed classes "
                   f"({absorbing} absorbing marking(s))")
        pi = np.clip(pi, 0.0, None)
        tot = pi.sum()
        pi = pi / tot if tot > 0 else np.full(n, np.nan)
    in_closed = sum(c.size for c in classes)
    return SteadyState(pi=pi, status=status, message=msg, method=chosen,
                       residual=float(res), iterations=its, seconds=time.perf_counter() - t0,
                       transient_states=n - in_closed, extra=extra, closed_classes=len(classes),
                       absorbing=absorbing)


def _solve_class(Q, comp, markings, names, x0, o) -> tuple[np.ndarray, str, int, float, dict]:
    """Stationary distribution of the closed class ``comp`` (indices into ``Q``)."""
    n = Q.shape[0]
    Qc = Q if comp.size == n else Q[comp][:, comp].tocsr()
    method, tol, maxiter = o["method"], o["tol"], o["maxiter"]
    chosen = method
    if method == "auto":
        chosen = "direct" if Qc.shape[0] <= o["direct_limit"] else "iad"
    its = 0
    extra: dict[str, Any] = {}
    if chosen == "direct":
        try:
            pic = _direct(Qc)
        except (MemoryError, RuntimeError, ValueError) as exc:
            raise SolverError(f"direct steady-state solver failed ({type(exc).__name__}: {exc}); "
                              f"try method='iad'") from exc
        res = _residual(Qc, pic)
    elif chosen == "iad":
        parts = _choose_partitions(markings[comp], names, o["aggregate_by"], o["max_aggregates"],
                                   o["max_partitions"])
        extra["aggregates"] = [int(a.max()) + 1 for a in parts]
        start = None
        if x0 is not None and np.shape(x0) == (n,) and np.all(np.isfinite(x0)):
            start = np.clip(np.asarray(x0, float)[comp], 1e-300, None)
            start /= start.sum()
        pic, its, res = _iad(Qc, parts, tol, maxiter, o["sweeps"], x0=start)
        if not res <= tol and method == "auto":
            chosen = "iad+sor"
            pic, it2 = _sor(Qc, tol, 10 * maxiter, x0=pic if np.all(np.isfinite(pic)) else None)
            its += it2
            res = _residual(Qc, pic)
    else:
        pic, its = _sor(Qc, tol, 10 * maxiter)
        res = _residual(Qc, pic)
    return pic, chosen, its, float(res), extra


def transient(ctmc: CTMC, times, *, p0: np.ndarray | None = None, eps: float = 1e-12) -> np.ndarray:
    """Transient distributions ``p(t)`` at the given times (rows), by uniformisation.

    Stopping rule: the Poisson series is truncated where its remaining mass is
    below ``eps`` (per step of length at most ``20/q`` to avoid underflow).
    """
    from scipy.stats import poisson

    times = np.atleast_1d(np.asarray(times, dtype=float))
    if (times < 0).any() or not np.all(np.isfinite(times)):
        raise ModelError(f"times must be finite and >= 0, got {times.tolist()}")
    Q = ctmc.Q
    q = float(np.abs(Q.diagonal()).max()) * 1.02 or 1.0
    Pt = (sp.eye(Q.shape[0]) + Q / q).T.tocsr()
    p = (ctmc.p0 if p0 is None else np.asarray(p0, float)).copy()
    order = np.argsort(times)
    out = np.empty((times.size, Q.shape[0]))
    tcur = 0.0
    for i in order:
        dt = times[i] - tcur
        while dt > 0:
            h = min(dt, 200.0 / q)
            lam = q * h
            kmax = int(poisson.isf(eps, lam)) + 1
            w = poisson.pmf(np.arange(kmax + 1), lam)
            v = p.copy()
            acc = w[0] * v
            for k in range(1, kmax + 1):
                v = Pt @ v
                acc += w[k] * v
            p = acc / acc.sum()
            dt -= h
        tcur = times[i]
        out[i] = p
    return out


def reward_vector(ctmc: CTMC, r: Reward) -> np.ndarray:
    """The reward rate of each tangible state."""
    if not isinstance(r, Reward):
        raise ModelError(f"expected a reward (mark(p), rate(t), reward(f) or a combination), got {r!r}")
    names = ctmc.space.net.place_names
    v = np.full(ctmc.n, r.const)
    for kind, arg, c in r.terms:
        if kind == "mark":
            if arg not in names:
                raise ModelError(f"mark(): unknown place {arg!r}; known: {', '.join(names)}")
            v += c * ctmc.markings[:, names.index(arg)]
        elif kind == "rate":
            v += c * ctmc.rate_vector(arg)
        else:
            idx = {p: j for j, p in enumerate(names)}
            X = ctmc.markings.astype(np.int64)
            try:
                f = np.asarray(arg(MarkingView(X, idx)), dtype=float)
                if f.shape == ():
                    f = np.full(ctmc.n, float(f))
                if f.shape != (ctmc.n,):
                    raise ValueError("shape")
            except ModelError:
                raise
            except Exception:  # noqa: BLE001 - scalar function
                try:
                    f = np.array([float(arg(MarkingView(x, idx))) for x in X])
                except Exception as exc:  # noqa: BLE001
                    raise ModelError(f"reward function raised {type(exc).__name__}: {exc}") from exc
            v += c * f
    return v


def expect(ctmc: CTMC, dist: np.ndarray, r: Reward) -> float:
    """Expected reward rate ``sum_s dist[s] r(s)``."""
    return float(dist @ reward_vector(ctmc, r))
