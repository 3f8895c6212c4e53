"""Layer 1 of the mapping model: validate a system and a policy once, build the kernel's arrays."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...errors import ModelError
from ..core.instability import default_bound as _bound
from ..core.variates import GENERAL, ExecDist, exec_dist
from .policies import DEFAULT_TIE, resolve, tie_code

__all__ = ["prepare", "ect_weights", "default_bound"]


def ect_weights(mu: np.ndarray, bound: int) -> tuple[np.ndarray, bool]:
    """``(w, incremental)``: ``w_ij = 1/mu_ij`` (``inf`` where ``mu_ij = 0``) and whether sums are exact.

    ``incremental`` is true when every finite ``w_ij`` is a binary fraction
    ``k / 2^p`` and any sum of up to ``bound`` of them stays below ``2^53 /
    2^p``: every workload sum is then exact in floating point, so the kernel
    may update it in place instead of recomputing it from the counts.
    """
    w = np.full(mu.shape, np.inf)
    pos = mu > 0
    w[pos] = 1.0 / mu[pos]
    fin = w[pos]
    for p in range(0, 41):
        scaled = fin * 2.0**p
        if np.all(scaled == np.floor(scaled)):
            return w, bool(fin.max() * bound * 2.0**p < 2.0**53)
    return w, False


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

        lp = allocation_lp(system, solution=lp_solution)
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
    w, incremental = ect_weights(mu, int(max_in_system))
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
