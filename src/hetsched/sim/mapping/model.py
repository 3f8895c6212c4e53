"""Layer 1 of the mapping model: validate a system and a policy once, build the kernel's arrays."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from ...errors import ModelError
from ..core.instability import default_bound as _bound
from ..core.variates import GENERAL, ExecDist, exec_dist
from .policies import DEFAULT_TIE, resolve, tie_code

__all__ = ["prepare", "ect_weights", "integer_weights", "default_bound"]


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
        if np.all(np.abs(scaled - np.round(scaled)) < 1e-9 * np.maximum(1, scaled)):
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
) -> dict:
    """Validate and turn ``system`` + ``policy`` into the kernel's arrays (a picklable dict).

    ``policy`` is a built-in name or a :class:`~.policies.MappingPolicy`.
    """
    pol, user = resolve(policy)
    if system.alpha_matrix is not None:
        raise ModelError("the mapping model has one arrival stream per class; 'alpha_matrix' is not supported here")
    if not (isinstance(horizon, (int, float)) and math.isfinite(horizon) and horizon > 0):
        raise ModelError(f"horizon must be a finite positive time, got {horizon!r}")
    if not (isinstance(warmup, (int, float)) and 0 <= warmup < horizon):
        raise ModelError(f"warmup must lie in [0, horizon), got {warmup!r}")
    d: ExecDist = exec_dist(system.exec_dist if dist is None else dist, scv=scv)
    mu = np.ascontiguousarray(system.mu_effective, dtype=float)
    alpha = np.ascontiguousarray(system.alpha_array, dtype=float)
    N, M = mu.shape
    can = mu > 0
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
        if not (isinstance(k, (int, np.integer)) and 1 <= k <= M):
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
    if not (isinstance(max_in_system, (int, np.integer)) and max_in_system >= 1):
        raise ModelError(f"max_in_system must be a positive integer, got {max_in_system!r}")
    w, incremental, scale = ect_weights(mu, int(max_in_system))
    tcode = tie_code(tie)
    if user is not None:
        user.compiled()  # compile and check the user's function once, here: errors name the policy
        ns_formula = None
    else:
        ns_formula = float((alpha / alpha.sum()) @ {
            "met": np.zeros(N), "lp-static": np.zeros(N),
            "lpas-2k": np.minimum(ncand, 2), "guided-lpas-2k": np.minimum(ncand, 2),
        }.get(pol.name, ncand))
    return {
        "policy": pol.name,
        "code": pol.code,
        "user": user,
        "alpha": alpha,
        "mu": mu,
        "w": w,
        "incremental": incremental,
        "time_scale": scale,
        "mu_policy": np.ascontiguousarray(mu / scale),
        "cand": cand,
        "ncand": ncand,
        "pw": pw,
        "pi": pi,
        "C": C_arr,
        "dist": d,
        "tie": tcode,
        "tie_name": "user-defined" if user is not None else str(tie).strip().lower(),
        "horizon": float(horizon),
        "warmup": float(warmup),
        "max_in_system": int(max_in_system),
        "k": k,
        "ns_formula": ns_formula,
        "lam": None if lp is None else float(lp.lam),
        "stabilizable": None if lp is None else bool(lp.stabilizable),
        "general": d.code == GENERAL,
    }
