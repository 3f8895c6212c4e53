"""Layer 1 of the mapping model: validate a system and a policy once, build the kernel's arrays."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import numpy as np

from ...errors import ModelError
from ..core.instability import default_bound as _bound
from ..core.variates import GENERAL, ExecDist, exec_dist
from .kernel import Params
from .policies import DEFAULT_TIE, resolve, tie_code

__all__ = ["prepare", "Prepared", "check_horizon", "ect_weights", "integer_weights", "default_bound", "MIN_SPAN"]


def integer_weights(mu: np.ndarray, max_l: float = 2.0**36) -> tuple[np.ndarray, bool]:
    """Expected-execution-time weights ``w_ij`` proportional to ``1/mu_ij``.

    When every positive rate is a decimal with at most three digits and the
    least common multiple ``L`` of the scaled rates is small, ``w_ij = L/mu_ij``
    are integers and every workload sum is exact (ties are exact); otherwise
    ``w_ij = 1/mu_ij`` in floating point (ties then use a relative tolerance).
    Returns ``(w, exact)``; ``w`` is ``inf`` where ``mu_ij = 0``.
    """
    pos = mu[mu > 0]
    for d in range(4):
        scaled = pos * 10**d
        # (a rate below 10^-d rounds to 0: not a decimal with d digits, e.g. the smallest rate 1e-12)
        if np.all(np.abs(scaled - np.round(scaled)) < 1e-9 * np.maximum(1, scaled)) and np.all(np.round(scaled) >= 1):
            ints = np.round(scaled).astype(np.int64)
            L = 1
            for r in np.unique(ints):
                L = L * int(r) // math.gcd(L, int(r))
                if L > max_l:
                    break
            if L <= max_l:
                w = np.full(mu.shape, np.inf)
                m = mu > 0
                # 1/mu = 10^d / r  ->  scaled by L / 10^d:  w = L / r, an integer
                w[m] = np.array([Fraction(L) / Fraction(int(r)) for r in np.round(mu[m] * 10**d).astype(np.int64)],
                                float)
                if np.all(w[m] == np.round(w[m])):
                    return w, True
            break
    w = np.full(mu.shape, np.inf)
    w[mu > 0] = 1.0 / mu[mu > 0]
    return w, False


def ect_weights(mu: np.ndarray, bound: int) -> tuple[np.ndarray, bool, float]:
    """``(w, incremental, L)``: expected-execution-time weights, exactness, time scale.

    When the rates are small decimals (:func:`integer_weights`), ``w_ij =
    L/mu_ij`` are integers: every workload sum is exact, so ties between
    machines are exact ties; ``L`` is the time unit in which the engine works
    (a user policy sees the rates ``mu / L`` and workloads in that unit, in
    which ``1/mu`` is exactly ``w``). Otherwise ``w_ij = 1/mu_ij``, ``L = 1``,
    and ``incremental`` is true only if every ``w_ij`` is a short binary
    fraction (sums exact). ``w`` is ``inf`` where ``mu_ij = 0``.
    """
    pos = mu > 0
    w, exact = integer_weights(mu)
    if exact:
        L = float(w[pos][0] * mu[pos][0])
        scaled = mu / L
        # the user policy computes 1.0 / (mu / L): it must give the integer weights exactly
        if np.all(1.0 / scaled[pos] == w[pos]) and float(w[pos].max()) * bound < 2.0**53:
            return w, True, L
    w = np.full(mu.shape, np.inf)
    w[pos] = 1.0 / mu[pos]
    fin = w[pos]
    for p in range(0, 41):
        scaled = fin * 2.0**p
        if np.all(scaled == np.floor(scaled)):
            return w, bool(fin.max() * bound * 2.0**p < 2.0**53), 1.0
    return w, False, 1.0


def _candidates(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    N, M = mask.shape
    cand = np.zeros((N, M), np.int64)
    ncand = np.zeros(N, np.int64)
    for i in range(N):
        js = np.flatnonzero(mask[i])
        cand[i, : len(js)] = js
        ncand[i] = len(js)
    return cand, ncand


def default_bound(system) -> int:
    """Instability bound on the number in system: ``max(10000, 1000 M)`` (:mod:`..core.instability`)."""
    return _bound(system.M)


@dataclass(frozen=True)
class Prepared:
    """A validated (system, policy, options): the kernel's :class:`~.kernel.Params` and what the summary needs.

    Made by :func:`prepare`; picklable (travels to worker processes once per
    chunk of replications). ``dataclasses.replace`` derives variants (a trace
    replay, records, a shorter warm-up run).
    """

    policy: str               #: policy name (a user policy's name)
    code: int                 #: policy code (policies.py's table)
    family: int               #: selection family (one compiled kernel per family and tie rule)
    user: Any                 #: the MappingPolicy, or None
    params: Any               #: kernel.Params
    tie: int                  #: tie-rule code
    tie_name: str
    dist: ExecDist
    time_scale: float         #: L (the engine's time unit is 1/L)
    k: int | None
    ns_formula: float | None  #: machines contacted per arrival, formula (2.5)
    lam: float | None         #: lambda* of the allocation LP (LP-based policies)
    stabilizable: bool | None
    records: bool = False     #: keep per-task records
    trace: Any = None         #: trace replay (prepare_trace), or None
    guard: bool = True        #: run a user policy in a watched child (hetsched.sim.core.guard)
    policy_timeout: float = 10.0  #: seconds without progress after which a user policy is stopped

    @property
    def general(self) -> bool:
        return self.dist.code == GENERAL

    def with_params(self, **changes) -> "Prepared":
        """A copy with some kernel parameters changed (``horizon=``, ``tr_t=``, ...)."""
        return replace(self, params=self.params._replace(**changes))


def prepare(
    system,
    policy,
    *,
    k: int | None = None,
    tie: str = DEFAULT_TIE,
    C: float | np.ndarray = 1.0,
    dist: Any = None,
    scv: float = 2.0,
    lp_solution: str = "vertex",
    horizon: float = 20_000.0,
    warmup: float = 0.0,
    max_in_system: int | None = None,
    policy_timeout: float = 10.0,
) -> Prepared:
    """Validate ``system`` + ``policy`` once and build the kernel's arrays (:class:`Prepared`).

    ``policy`` is a built-in name or a :class:`~.policies.MappingPolicy`.
    """
    pol, user = resolve(policy)
    if system.alpha_matrix is not None:
        raise ModelError("the mapping model has one arrival stream per class; 'alpha_matrix' is not supported here")
    check_horizon(horizon, warmup)
    if isinstance(policy_timeout, bool) or not isinstance(policy_timeout, (int, float)) or not (
            math.isfinite(policy_timeout) and policy_timeout > 0):
        raise ModelError(f"policy_timeout must be a positive number of seconds, got {policy_timeout!r}")
    d: ExecDist = exec_dist(system.exec_dist if dist is None else dist, scv=scv)
    mu = np.ascontiguousarray(system.mu_effective, dtype=float)
    alpha = np.ascontiguousarray(system.alpha_array, dtype=float)
    N, M = mu.shape
    can = mu > 0
    for i in range(N):
        if not can[i].any():
            raise ModelError(f"class {i + 1} ({_class_name(system, i)}): no machine can run it (every rate "
                             f"mu[{i + 1}, j] is 0 after availabilities), so its tasks can never be placed")
    pw = np.zeros((N, M))
    pi = np.zeros((N, M))
    lp = None
    if pol.uses_lp:
        from ...lp import allocation_lp

        lp = allocation_lp(system, solution=lp_solution).raise_for_status()
        mask = lp.support & can
        pw = np.ascontiguousarray(lp.delta * lp.mu, dtype=float)
        pi = np.ascontiguousarray(lp.p_static, dtype=float)
    elif pol.name == "met":
        best = np.where(can, mu, -np.inf).max(axis=1, keepdims=True)
        mask = can & (mu == best)
    elif pol.name == "kpb":
        if k is None:
            raise ModelError("policy 'kpb' needs --k (the number of machines k-bar considered per class)")
        if isinstance(k, bool) or not (isinstance(k, (int, np.integer)) and 1 <= k <= M):
            raise ModelError(f"k must be an integer in [1, {M}] (machines per class), got {k!r}")
        mask = np.zeros((N, M), bool)
        for i in range(N):
            # the k-bar fastest machines; equal rates: lower index first (documented rule)
            order = sorted((j for j in range(M) if can[i, j]), key=lambda j: (-mu[i, j], j))
            mask[i, order[:k]] = True
    else:
        mask = can.copy()
    cand, ncand = _candidates(mask)
    C_arr = np.broadcast_to(np.asarray(C, float), (N, M)).copy()
    if (C_arr < 0).any() or not np.isfinite(C_arr).all():
        raise ModelError(f"C (Guided-LPAS constants C_ij) must be finite and >= 0, got {C!r}")
    if max_in_system is None:
        max_in_system = default_bound(system)
    if isinstance(max_in_system, bool) or not (isinstance(max_in_system, (int, np.integer)) and max_in_system >= 1):
        raise ModelError(f"max_in_system must be a positive integer, got {max_in_system!r}")
    w, incremental, scale = ect_weights(mu, int(max_in_system))
    winv = np.where(can, w, 0.0)
    wc = np.zeros((N, M))
    for i in range(N):
        wc[i, :ncand[i]] = w[i, cand[i, :ncand[i]]]
    tcode = tie_code(tie)
    if user is not None:
        user.compiled()  # compile and check the user's function once, here: errors name the policy
        ns_formula = None
    else:
        ns_formula = float((alpha / alpha.sum()) @ {
            "met": np.zeros(N), "lp-static": np.zeros(N),
            "lpas-2k": np.minimum(ncand, 2), "guided-lpas-2k": np.minimum(ncand, 2),
        }.get(pol.name, ncand))
    mu_pol = np.ascontiguousarray(mu / scale)
    mu_pol.flags.writeable = False  # what a user policy sees: read-only
    empty_f, empty_i = np.zeros(0), np.zeros(0, np.int64)
    params = Params(
        alpha=alpha, mu=mu, mu_pol=mu_pol, w=w, winv=winv, cand=cand, ncand=ncand, wc=wc, pw=pw, pi=pi,
        cmat=C_arr, dist=int(d.code), dpar=np.array(d.par, float), gen=np.zeros((N, 1)),
        incremental=bool(incremental), horizon=float(horizon), warmup=float(warmup),
        max_in_system=int(max_in_system), tie=int(tcode), tr_t=empty_f, tr_x=empty_f, tr_c=empty_i,
    )
    return Prepared(
        policy=pol.name, code=pol.code, family=pol.family, user=user, params=params, tie=tcode,
        tie_name="user-defined" if user is not None else str(tie).strip().lower(), dist=d, time_scale=scale,
        k=k, ns_formula=ns_formula, lam=None if lp is None else float(lp.lam),
        stabilizable=None if lp is None else bool(lp.stabilizable), policy_timeout=float(policy_timeout),
    )


#: the shortest horizon (after the warm-up) a run accepts: below it the instability rule's segments
#: (of length (horizon - warmup) / NSEG) would be shorter than the time resolution near 0
MIN_SPAN = 1e-9


def check_horizon(horizon, warmup) -> None:
    """The one check of ``horizon`` and ``warmup`` (the same message in the API and on the command line)."""
    if isinstance(horizon, bool) or not (isinstance(horizon, (int, float, np.floating, np.integer))
                                         and math.isfinite(horizon) and horizon > 0):
        raise ModelError(f"horizon must be a finite positive time, got {horizon!r}")
    if isinstance(warmup, bool) or not (isinstance(warmup, (int, float, np.floating, np.integer))
                                        and 0 <= warmup < horizon):
        raise ModelError(f"warmup must lie in [0, horizon), got {warmup!r}")
    if horizon - warmup < MIN_SPAN:
        raise ModelError(f"horizon must exceed warmup by at least {MIN_SPAN:g} time units (the statistics need "
                         f"a span to average over), got horizon {horizon!r}, warmup {warmup!r}")


def _class_name(system, i: int) -> str:
    names = getattr(system, "class_names", None)
    return str(names[i]) if names and i < len(names) else f"class {i + 1}"
