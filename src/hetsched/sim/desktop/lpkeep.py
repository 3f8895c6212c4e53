"""LPAS_DG's LP kept up to date at availability events (compiled, no checks).

``lp_mode`` 1 (``lpas-dg``, and FCFS/Gcmu with ``track_lp``): the vertex
tableau of :mod:`hetsched.lp.tableau` is re-optimised in place by the dual
simplex after one column's capacity changed (typically 0-2 pivots), refactored
every ``REFACTOR`` pivots to bound round-off, rebuilt if the dual simplex fails.
``lp_mode`` 2 (``lpas-dg-robust``): supports of the central (interior-point)
solution, solved in Python, are cached in an open-addressing hash table keyed
by the capacity vector; a miss returns to Python (``NEED_SUPPORT``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ...lp import tableau as lptab

__all__ = ["REFACTOR", "key_hash", "table_lookup", "vertex_update", "copy_support"]

REFACTOR = 200


@njit(cache=True)
def key_hash(cap):
    h = np.int64(1469598103934665603)
    for c in range(cap.shape[0]):
        v = np.int64(round(cap[c] * 1e9))
        h = (h ^ v) * np.int64(1099511628211)
    return h


@njit(cache=True)
def table_lookup(cap, keys_cap, key_used):
    """Slot holding ``cap`` (hit) or the free slot where it goes (miss): (slot, hit)."""
    K = key_used.shape[0]
    s = key_hash(cap) & (K - 1)
    while True:
        if not key_used[s]:
            return s, False
        same = True
        for c in range(cap.shape[0]):
            if keys_cap[s, c] != cap[c]:
                same = False
                break
        if same:
            return s, True
        s = (s + 1) & (K - 1)


@njit(cache=True)
def vertex_update(p, lp, out, ctl, c, newcap):
    """Column ``c``'s capacity becomes ``newcap``: re-optimise; True when the support changed."""
    N = p.alpha.shape[0]
    lptab.set_cap(lp.T, lp.obj, lp.cap, N, c, newcap)
    it = lptab.dual(lp.T, lp.obj, lp.basis)
    out.lp_solves[0] += 1
    if it < 0:
        out.lp_failures[0] += 1
        lptab.build(lp.T, lp.obj, lp.basis, p.mu_colT, p.alpha, lp.cap)
        lptab.primal(lp.T, lp.obj, lp.basis)
        ctl.piv_since[0] = 0
    else:
        out.pivots[0] += it
        ctl.piv_since[0] += it
        if ctl.piv_since[0] > REFACTOR:
            if not lptab.refactor(lp.T, lp.obj, lp.basis, p.mu_colT, p.alpha, lp.cap):
                lptab.build(lp.T, lp.obj, lp.basis, p.mu_colT, p.alpha, lp.cap)
                lptab.primal(lp.T, lp.obj, lp.basis)
            ctl.piv_since[0] = 0
    changed, lam = lptab.support(lp.T, lp.basis, p.mu_colT, lp.support)
    out.lam[0] = lam
    return changed


@njit(cache=True)
def copy_support(lp, slot):
    """The current support becomes the cached central support ``slot``; True when it changed."""
    C, N = lp.support.shape
    changed = False
    for cc in range(C):
        for i in range(N):
            if lp.support[cc, i] != lp.sup_table[slot, cc, i]:
                changed = True
                lp.support[cc, i] = lp.sup_table[slot, cc, i]
    return changed
