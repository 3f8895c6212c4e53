r"""Stability of the two-cluster co-allocation system (seed 000) for given loads.

The MDP is solved on a truncated state space (``q1, q2 <= Delta``), which always
has a finite discounted cost, so an "optimal policy" is printed even for loads
that no policy can carry. This module says which loads those are.

Necessary for any policy (fluid bound)
    Let ``f`` be the fraction of two-node cluster-1 jobs that are co-allocated.
    Cluster 1 needs node-time ``lambda1 [p / mu1 + (1-p)(1-f) 2 / mu1 + (1-p) f / mu3] < 2``
    per unit time and cluster 2 (whose node a co-allocated job takes, preempting)
    ``lambda2 / mu2 + lambda1 (1-p) f / mu3 < 1``. If no ``f`` in ``[0, 1]``
    satisfies both, every policy is unstable (in particular ``rho2 >= 1``).

Sufficient (the Local policy, never co-allocate)
    Cluster 2 is then M/M/1 (stable iff ``rho2 < 1``) and cluster 1 a two-node
    FCFS queue with head-of-line blocking. Its capacity is the throughput of the
    *saturated* cluster (a head job always waiting): a small CTMC over the
    blocked configurations ``(x1, x2, g)``, after each completion starting head
    jobs while they fit (next head: one node w.p. ``p``). Local is stable iff
    ``lambda1`` is below that throughput and ``rho2 < 1`` (Loynes-type argument for
    a saturated work-conserving FCFS system). With ``p = 0.6, mu1 = 1`` this is
    ``rho1 < 0.8537`` (throughput 1.2195 jobs per unit time): two-node jobs waiting behind
    a busy node waste capacity.

Between the two, some co-allocating policy may or may not be stable; the
verdict is then ``None`` (not established).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["local_capacity", "fluid_max_rho1", "coalloc_stability"]


def local_capacity(p: float, mu1: float) -> float:
    """Saturation throughput (jobs per unit time) of cluster 1 under FCFS without co-allocation."""
    # blocked states (x1, x2, g): the head job of size g does not fit in 2 - x1 - 2 x2 free nodes
    blocked = [(x1, x2, g) for x1 in range(3) for x2 in range(2) for g in (1, 2)
               if x1 + 2 * x2 <= 2 and 2 - x1 - 2 * x2 < g]
    idx = {s: i for i, s in enumerate(blocked)}
    n = len(blocked)

    def fill(x1, x2, g, prob, out):
        # start head jobs while they fit; each start reveals the next head's size
        if 2 - x1 - 2 * x2 >= g:
            nx1, nx2 = (x1 + 1, x2) if g == 1 else (x1, x2 + 1)
            if p > 0:
                fill(nx1, nx2, 1, prob * p, out)
            if p < 1:
                fill(nx1, nx2, 2, prob * (1 - p), out)
        else:
            out[idx[(x1, x2, g)]] += prob

    Q = np.zeros((n, n))
    for (x1, x2, g), i in idx.items():
        for rate, nx1, nx2 in ((x1 * mu1, x1 - 1, x2), (x2 * mu1, x1, x2 - 1)):
            if rate > 0:
                row = np.zeros(n)
                fill(nx1, nx2, g, 1.0, row)
                Q[i] += rate * row
        Q[i, i] -= Q[i].sum()
    A = np.vstack([Q.T, np.ones(n)])
    b = np.zeros(n + 1)
    b[-1] = 1.0
    pi = np.linalg.lstsq(A, b, rcond=None)[0]
    busy_jobs = np.array([x1 + x2 for x1, x2, _ in blocked], float)
    return float(pi @ busy_jobs * mu1)


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


def coalloc_stability(prm) -> dict[str, Any]:
    """Verdict for :class:`~hetsched.mdp.coalloc.CoallocParams`: ``stable`` is ``True`` (Local is stable),
    ``False`` (no policy is) or ``None`` (not established), with the capacities and a message."""
    m = prm.m
    cap_local = local_capacity(prm.p, prm.mu1) * m / (2 * prm.mu1)
    cap_any = fluid_max_rho1(prm.rho2, prm.p, prm.mu1, prm.mu3)
    r1, r2 = prm.rho1, prm.rho2
    if r2 >= 1 or r1 >= cap_any:
        stable = False
        why = (f"rho2 = {r2:.4g} >= 1: cluster 2 is overloaded under every policy" if r2 >= 1 else
               f"rho1 = {r1:.4g} >= {cap_any:.4g}, the most any policy can carry at rho2 = {r2:.4g} "
               f"(fluid bound, co-allocating as much as cluster 2 allows)")
        msg = f"unstable under every policy: {why}; the policy below is for the truncated model only"
    elif r1 < cap_local:
        stable = True
        msg = f"stable: Local alone carries rho1 < {cap_local:.4g} (saturated cluster 1) and rho2 < 1"
    else:
        stable = None
        msg = (f"stability not established: Local is unstable (rho1 = {r1:.4g} >= {cap_local:.4g}) and "
               f"rho1 < {cap_any:.4g} (fluid bound); whether the optimal policy is stable is not checked")
    return {"stable": stable, "message": msg, "rho1": r1, "rho2": r2, "local_capacity_rho1": cap_local,
            "fluid_max_rho1": cap_any}
