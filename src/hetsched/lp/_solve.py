"""The front end of the allocation LP: :func:`solve_allocation` (arrays) and
:func:`allocation_lp` (a :class:`~hetsched.system.System`).

It cleans the arrays (errors name the field and the value), scales the rates
per unit of arrival rate, picks the route (:mod:`._prices` or :mod:`._highs`),
certifies the answer (:mod:`._certify`) and wraps it in an
:class:`~hetsched.lp.AllocationResult`.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ..errors import ModelError
from ._certify import certify
from ._highs import highs_full
from ._prices import price_route
from ._result import AllocationResult

__all__ = ["solve_allocation", "allocation_lp", "SOLUTIONS", "METHODS", "AUTO_PAIRS"]

SOLUTIONS = ("vertex", "central")
METHODS = ("auto", "highs", "prices")
# "auto" solves vertex LPs with more than this many runnable pairs (mu_ij > 0)
# by the price route or HiGHS IPM with crossover, chosen by shape; below it one
# HiGHS simplex solve is as fast and returns the basic solution the thesis's
# printed delta* come from.
AUTO_PAIRS = 4_000
# Beyond this ratio between the classes' best rates per unit of arrival rate, an
# uncertified answer is reported as a solver failure (status 3) naming mu/alpha:
# HiGHS's absolute tolerances (1e-7) then swallow the smallest class's demand.
_MAX_SPREAD = 1e6

def solve_allocation(
    mu: Any,
    alpha: Any,
    a: Any = None,
    *,
    solution: str = "vertex",
    counts: Any = None,
    method: str = "auto",
    class_names: Any = None,
    machine_names: Any = None,
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
        module docstring (vertex only). ``auto`` (default): for vertex
        solutions with more than ``AUTO_PAIRS`` runnable pairs, the price
        route where the shape favours it (:func:`prices_pay`: at least as many
        distinct machines as classes) and HiGHS interior point with crossover
        otherwise; HiGHS simplex below ``AUTO_PAIRS`` (the vertices the
        thesis prints) and for central solutions IPM without crossover. A
        price-route answer that fails its certificate is replaced by HiGHS's
        (``solver`` says so).
    class_names, machine_names : sequences of str, optional
        Names of the rows and columns, carried by the result (its frame, JSON
        and display); default ``c1 ..`` and ``m1 ..``.

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
    N, M = mu.shape
    class_names = _names("class_names", class_names, N, "class (row of mu)")
    machine_names = _names("machine_names", machine_names, M, "machine (column of mu)")
    t0 = time.perf_counter()
    cap = a.copy()
    grouped = bool((counts > 1).any())
    mu_agg = mu * counts[None, :] if grouped else mu  # column j offers counts_j members' capacity
    zero_tol = 1e-9 if solution == "vertex" else 1e-7

    def result(status, msg, lam, d, w, solver, iters, residuals):
        return AllocationResult(
            status=status, message=msg, lam=lam, delta=d, alpha=alpha, mu=mu_agg, a=a,
            solution=solution, grouped=grouped, w=w, residuals=residuals, solver=solver, iterations=iters,
            seconds=time.perf_counter() - t0, zero_tol=zero_tol, class_names=class_names,
            machine_names=machine_names,
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
    large = method == "auto" and solution == "vertex" and pairs > AUTO_PAIRS
    pay, distinct, live = prices_pay(nu, cap) if large else (False, 0, 0)
    use_prices = method == "prices" or pay
    ipm = large  # a large vertex by HiGHS: interior point and crossover (simplex takes minutes on them)
    algo = "IPM with crossover" if ipm else "simplex"
    fallback = "" if use_prices or not large else (
        f" (chosen by shape: {N} classes, {distinct:,} distinct among {live:,} machines that can serve)")
    if use_prices:
        d, lam_n, y, info = price_route(nu, cap)
        iters = info["master_iterations"]
        solver = (f"price route: {info['newton_steps']} Newton steps on the smoothed dual, master LP over "
                  f"{info['contested']} contested machines in {info['rounds']} rounds (HiGHS simplex)")
        if d is not None:
            ok, msg, residuals, w, lam = certify(d, lam_n * s, y / alpha, mu_agg, alpha, cap, solution, zero_tol)
            if ok:
                return result(0, msg, lam, d, w, solver, iters, residuals)
            fallback = f" (fallback: the price route was not certified: {msg})"
        else:
            fallback = f" (fallback: the price route failed: {info.get('failure', '')})"
    # HiGHS on the LP as written (the vertex hetsched has always returned); if that
    # fails or is not certified, on the rescaled LP, carefully
    ok, d, lam_h, w, iters, st = highs_full(mu_agg, alpha, cap, solution, careful=False, ipm=ipm)
    solver = "HiGHS " + (algo if solution == "vertex" else "IPM (no crossover)") + fallback
    if ok:
        cert = certify(d, lam_h, w, mu_agg, alpha, cap, solution, zero_tol)
        if cert[0]:
            return result(0, cert[1], cert[4], d, cert[3], solver, iters, cert[2])
    ok, d, lam_n, y, it2, st = highs_full(nu, np.ones(N), cap, solution, careful=True, ipm=ipm)
    iters += it2
    solver += ", then on the LP rescaled per unit of arrival rate"
    if not ok:
        return result(3, f"allocation LP: HiGHS returned {st!r} ({solver}); mu/alpha: {spread}",
                      float("nan"), np.zeros((N, M)), None, solver, iters, {})
    ok, msg, residuals, w, lam = certify(d, lam_n * s, y / alpha, mu_agg, alpha, cap, solution, zero_tol)
    if not ok:
        bad = uncertified(msg, solver, iters)
        if bad is not None:
            return bad
    return result(0 if ok else 1, msg, lam, d, w, solver, iters, residuals)


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


def prices_pay(nu: np.ndarray, cap: np.ndarray) -> tuple[bool, int, int]:
    """Whether the price route beats HiGHS interior point on this shape (measured,
    ``docs/lp.md``): at least as many distinct machines as classes, and at most
    half of the machines copies of others. With fewer machines than classes
    the master needs many rounds of column generation (200 x 50: 4x slower
    than IPM), and copies of one machine are all tied at the optimum, so they
    are all contested (3.F per machine: 0.5-0.7x). Distinct machines are
    counted by a random projection of their (rates, availability) columns.
    Returns ``(verdict, distinct machines, machines that can serve)``."""
    N = nu.shape[0]
    live = (cap > 0) & (nu > 0).any(axis=0)
    L = int(np.count_nonzero(live))
    if L < N:
        return False, L, L
    r = np.random.default_rng(2009).uniform(1.0, 2.0, N + 1)
    key = r[:N] @ (nu if L == nu.shape[1] else nu[:, live]) + r[N] * cap[live]
    D = int(np.unique(key).size)
    return D >= max(N, L // 2), D, L


def _names(field: str, names: Any, n: int, what: str) -> tuple[str, ...] | None:
    """``n`` unique non-empty names, or None (the defaults)."""
    if names is None:
        return None
    from ..fields import duplicate, show

    if isinstance(names, (str, bytes)) or not hasattr(names, "__len__"):
        raise ModelError(f"{field}: expected a list of {n} names, got {show(names)}")
    if len(names) != n:
        raise ModelError(f"{field}: expected {n} names (one per {what}), got {len(names)}")
    out = tuple(names)
    bad = next((k for k, x in enumerate(out) if not isinstance(x, str) or not x), None)
    if bad is not None:
        raise ModelError(f"{field}[{bad}]: expected a non-empty string, got {show(out[bad])}")
    dup = duplicate(out)
    if dup:
        raise ModelError(f"{field}[{dup[0]}]: names must be unique, got {dup[1]!r} twice")
    return out


def allocation_lp(system, solution: str = "vertex", grouped: bool = True, method: str = "auto") -> AllocationResult:
    """Allocation LP of a :class:`~hetsched.system.System`.

    With ``grouped`` (default) interchangeable machines (same rate column and
    availability) are aggregated and the group-symmetric solution is returned,
    expanded per machine; ``delta_groups`` holds the per-group fractions.
    Availabilities ``a_j`` of the system enter constraint (3.2). The result
    carries the system's class and machine names.
    """
    mu = system.mu
    a = system.a
    res = None
    if grouped:
        labels, counts = system.lp_groups()
        if len(counts) < system.M:
            first = np.unique(labels, return_index=True)[1]  # labels number groups by first appearance
            res = solve_allocation(mu[:, first], system.alpha_array, a[first], solution=solution,
                                   counts=counts, method=method)
            dg = res.delta
            res.delta_groups = dg.copy()
            res.group_labels = labels
            res.delta = dg[:, labels]
            res.mu, res.a = mu, a  # nominal rates and availabilities per machine (the system's arrays)
            res.grouped = True
    if res is None:
        res = solve_allocation(mu, system.alpha_array, a, solution=solution, method=method)
        res.grouped = False
    res.class_names, res.machine_names = tuple(system.class_names), tuple(system.machine_names)
    return res
