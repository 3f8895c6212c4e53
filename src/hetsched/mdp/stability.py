r"""Stability of the two-cluster co-allocation system (seed 000) for given loads.

The MDP is solved on a truncated state space (``q1, q2 <= Delta``), which always
has a finite discounted cost, so an "optimal policy" is printed even for loads
that no policy can carry. This module says which loads those are; the
simulator (:mod:`hetsched.sim.coalloc`) reports the same verdicts.

Necessary for any policy (fluid bound, :func:`fluid_max_rho1`)
    Let ``f`` be the fraction of two-node cluster-1 jobs that are co-allocated.
    Cluster 1 needs node-time ``lambda1 [p / mu1 + (1-p)(1-f) 2 / mu1 + (1-p) f / mu3] < 2``
    per unit time and cluster 2 (whose node a co-allocated job takes, preempting)
    ``lambda2 / mu2 + lambda1 (1-p) f / mu3 < 1``. If no ``f`` in ``[0, 1]``
    satisfies both, every policy is unstable (in particular ``rho2 >= 1``).

Sufficient: the Local policy (never co-allocate), exactly (:func:`local_capacity`)
    Under Local (never co-allocate) the clusters decouple. Cluster 2 is an M/M/1
    queue: stable iff ``rho2 = lambda2 / mu2 < 1``. Cluster 1 — two nodes, one FCFS
    queue, a job needing one node (probability ``p``) or both, exponential
    service at rate ``mu1`` whatever its size — is a quasi-birth-death process
    once the queue is long:
    
    * level: ``q1`` (jobs waiting, the head included);
    * phase: ``(g, x1, x2)`` — size of the head job and the one- and two-node jobs
      in service (``x1 + 2 x2 <= 2``): 8 phases;
    * events: an arrival (rate ``lambda1``), a completion (``mu1 x1`` or
      ``mu1 x2``); after each event the decision epoch starts the head job if it
      fits — at most one job per epoch in the paper's model (``max_starts=1``,
      §2: "at most 1 job from queue at cluster 1 can start execution at each
      decision epoch"), or as many as fit (``max_starts=0``, a plain FCFS queue).
      A start reveals the size of the next head (``p`` / ``1 - p``).
    
    With ``max_starts=1`` the level moves by -1, 0 or +1 per event (a QBD); with
    ``max_starts=0`` by up to -2, so we use the general skip-free-to-the-right
    drift. Neuts' criterion: with ``pi`` the stationary law of the phase process
    ``A = sum_k A_k``, the queue is stable iff the mean drift
    ``sum_k k pi A_k 1 < 0`` (Neuts 1981, Thm 1.7.1; Latouche and Ramaswami 1999,
    Thm 7.2.3). The capacity is the root of the drift in ``lambda1`` (Brent's
    method), reported as ``rho1 = lambda1 m / (2 mu1)`` with ``m = p + 2(1-p)``.
    
    Closed forms that check it: ``p = 0`` (every job takes both nodes: M/M/1 at
    ``mu1``) and ``p = 1`` with ``max_starts=0`` (M/M/2) both give ``rho1 = 1``.

Between the two, some co-allocating policy may or may not be stable; the
verdict is then ``None`` (not established; the simulation's instability rule
decides for a given policy).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from ..errors import ModelError

__all__ = ["local_capacity", "local_drift", "local_stability", "fluid_max_rho1", "coalloc_stability"]

_PHASES = tuple((g, x1, x2) for g in (1, 2) for (x1, x2) in ((0, 0), (1, 0), (2, 0), (0, 1)))
_INDEX = {ph: k for k, ph in enumerate(_PHASES)}


def _starts(g: int, x1: int, x2: int, p: float, max_starts: int, started: int = 0):
    """Post-decision outcomes ``[(jobs started, (g, x1, x2), probability)]``."""
    theta = 2 - x1 - 2 * x2
    fits = (g == 1 and theta >= 1) or (g == 2 and theta == 2)
    if not fits or (max_starts and started >= max_starts):
        return [(started, (g, x1, x2), 1.0)]
    nx1, nx2 = (x1 + 1, x2) if g == 1 else (x1, x2 + 1)
    out = []
    for g2, pr in ((1, p), (2, 1.0 - p)):
        if pr > 0:
            out += [(s, ph, pr * q) for s, ph, q in _starts(g2, nx1, nx2, p, max_starts, started + 1)]
    return out


def _blocks(lam1: float, p: float, mu1: float, max_starts: int) -> dict[int, np.ndarray]:
    """Rate matrices ``A[k]`` (level change ``k``) between phases, for a long queue."""
    A: dict[int, np.ndarray] = {}
    for ph in _PHASES:
        g, x1, x2 = ph
        events = [(lam1, 1, ph)]
        if x1 > 0:
            events.append((mu1 * x1, 0, (g, x1 - 1, x2)))
        if x2 > 0:
            events.append((mu1 * x2, 0, (g, x1, x2 - 1)))
        for rate, up, pre in events:
            for started, post, pr in _starts(*pre, p, max_starts):
                k = up - started
                A.setdefault(k, np.zeros((len(_PHASES), len(_PHASES))))[_INDEX[ph], _INDEX[post]] += rate * pr
    return A


def local_drift(lam1: float, p: float, mu1: float = 1.0, max_starts: int = 1) -> float:
    """Mean rate of change of ``q1`` for a long queue (jobs per time unit; < 0: stable)."""
    A = _blocks(lam1, p, mu1, max_starts)
    Q = sum(A.values())
    Q = Q - np.diag(Q.sum(axis=1))
    n = Q.shape[0]
    # stationary law of the phase process (phases unreachable at this p get mass 0)
    M = np.vstack([Q.T, np.ones(n)])
    b = np.zeros(n + 1)
    b[-1] = 1.0
    pi = np.linalg.lstsq(M, b, rcond=None)[0]
    return float(sum(k * (pi @ Ak.sum(axis=1)) for k, Ak in A.items()))


@lru_cache(maxsize=256)
def local_capacity(p: float, mu1: float = 1.0, max_starts: int = 1) -> float:
    """Largest ``rho1 = lambda1 m / (2 mu1)`` cluster 1 sustains under Local (see module docstring)."""
    if not 0.0 <= p <= 1.0:
        raise ModelError(f"p: must lie in [0, 1], got {p!r}")
    if not mu1 > 0:
        raise ModelError(f"mu1: must be > 0, got {mu1!r}")
    if max_starts not in (0, 1):
        raise ModelError(f"max_starts: the capacity is computed for 1 (one start per epoch) or 0 (as many as fit), "
                         f"got {max_starts!r}")
    m = p + 2.0 * (1.0 - p)
    hi = 2.0 * mu1 / m * 1.0000001  # rho1 = 1: every node busy all the time
    if local_drift(hi, p, mu1, max_starts) <= 0:  # pragma: no cover - the nodes cannot do better than busy
        return 1.0
    lam = _bisect(lambda x: local_drift(x, p, mu1, max_starts), 1e-9 * hi, hi, xtol=1e-13, rtol=1e-12)
    return float(lam * m / (2.0 * mu1))


def _bisect(f, lo: float, hi: float, xtol: float, rtol: float) -> float:
    """A root of ``f`` in ``[lo, hi]`` (``f(lo) < 0 < f(hi)``) by bisection to ``xtol + rtol |x|``.

    Bisection rather than ``scipy.optimize.brentq``: importing ``scipy.optimize`` costs ~0.3 s,
    a tenth of ``hetsched mdp coalloc --delta 200``, and the ~45 halvings here take ~10 ms.
    """
    f_lo = f(lo)
    if f_lo >= 0:  # pragma: no cover - the drift of an almost empty system is negative
        return lo
    while hi - lo > xtol + rtol * abs(hi):
        mid = 0.5 * (lo + hi)
        if f(mid) < 0:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def fluid_max_rho1(rho2: float, p: float, mu1: float, mu3: float) -> float:
    """Largest ``rho1`` the fluid bound allows for this ``rho2`` (``0`` if ``rho2 >= 1``)."""
    if rho2 >= 1:
        return 0.0
    m = p + 2 * (1 - p)
    # cluster-1 node-time per job as a function of f is linear; co-allocate as much as cluster 2 allows
    # when that lowers it (1/mu3 < 2/mu1), else not at all
    per_job = lambda f: p / mu1 + (1 - p) * (1 - f) * 2 / mu1 + (1 - p) * f / mu3  # noqa: E731
    if 1 / mu3 < 2 / mu1 and p < 1:
        # lambda1 (1-p) f / mu3 <= 1 - rho2 and lambda1 per_job(f) <= 2: the best lambda1 solves both
        lam_a = 2 / per_job(1.0)                                  # f = 1 fits in cluster 2?
        if lam_a * (1 - p) / mu3 <= 1 - rho2:
            lam = lam_a
        else:                                                     # cluster 2 binds: f = (1-rho2) mu3 / (lam (1-p))
            # lam * per_job(f) = lam (p + 2(1-p))/mu1 - (1-rho2) mu3 (2/mu1 - 1/mu3) = 2
            lam = (2 + (1 - rho2) * mu3 * (2 / mu1 - 1 / mu3)) / (m / mu1)
    else:
        lam = 2 / per_job(0.0)
    return lam * m / (2 * mu1)


def local_stability(lam1: float, lam2: float, mu1: float, mu2: float, p: float,
                    max_starts: int = 1) -> dict:
    """Whether Local is stable: ``rho1`` against :func:`local_capacity` and ``rho2 < 1``."""
    m = p + 2.0 * (1.0 - p)
    rho1, rho2 = lam1 * m / (2.0 * mu1), lam2 / mu2
    cap1 = local_capacity(float(p), float(mu1), int(max_starts))
    stable = rho1 < cap1 and rho2 < 1.0
    why = []
    if rho1 >= cap1:
        why.append(f"cluster 1 load rho1 = {rho1:.4g} >= its capacity {cap1:.4g}")
    if rho2 >= 1.0:
        why.append(f"cluster 2 load rho2 = {rho2:.4g} >= 1")
    return {"stable": bool(stable), "rho1": rho1, "rho2": rho2, "capacity_rho1": cap1,
            "reason": "; ".join(why) or "both clusters below capacity"}


def coalloc_stability(prm, max_starts: int = 1) -> dict[str, Any]:
    """Verdict for :class:`~hetsched.mdp.coalloc.CoallocParams`: ``stable`` is ``True`` (Local is stable),
    ``False`` (no policy is) or ``None`` (not established), with the capacities and a message.

    ``max_starts=1`` is the model's rule (one job start per decision epoch)."""
    cap_local = local_capacity(float(prm.p), float(prm.mu1), int(max_starts))
    cap_any = fluid_max_rho1(prm.rho2, prm.p, prm.mu1, prm.mu3)
    r1, r2 = prm.rho1, prm.rho2
    if r2 >= 1 or r1 >= cap_any:
        stable = False
        why = (f"rho2 = {r2:.4g} >= 1: cluster 2 is overloaded under every policy" if r2 >= 1 else
               f"cluster 1 load rho1 = {r1:.4g} >= {cap_any:.4g}, the most any policy can carry at rho2 = {r2:.4g} "
               f"(fluid bound, co-allocating as much as cluster 2 allows)")
        msg = f"unstable under every policy: {why}; the policy below is for the truncated model only"
    elif r1 < cap_local:
        stable = True
        msg = f"stable: Local alone carries rho1 < {cap_local:.4g} (exact capacity of cluster 1) and rho2 < 1"
    else:
        stable = None
        msg = (f"stability not established: Local is unstable (rho1 = {r1:.4g} >= {cap_local:.4g}) and "
               f"rho1 < {cap_any:.4g} (fluid bound); whether the optimal policy is stable is not checked")
    return {"stable": stable, "message": msg, "rho1": r1, "rho2": r2, "local_capacity_rho1": cap_local,
            "fluid_max_rho1": cap_any}
