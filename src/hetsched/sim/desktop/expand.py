"""A per-machine vertex of LPAS_DG's LP, expanded from the grouped LP (large desktop grids).

Thesis §3.3 (end) uses an optimal solution whose ``delta*`` has exactly
``NM + 1 - N - M`` zeros: a vertex of the LP with one column per machine. For
Systems 3.F (3,000 machines) and 3.G (300) a dense per-machine tableau is too
large to re-optimise at every availability event, so the kernel keeps the LP
over *groups* of interchangeable machines (same nominal rates, same estimated
availability ``a``; column capacity = the sum of ``a`` over its available
members) and expands its vertex to machines:

*Staircase split.* In group ``c`` with ``n`` available members (in machine
index order, positions ``0 .. n-1``, each of capacity ``a``), class ``i``'s
share ``x_ic`` occupies the interval ``[B_i, B_{i+1})`` of machine units,
``B_0 = 0``, ``B_{i+1} = B_i + x_ic / a`` (classes in index order). The machine
at position ``q`` serves the classes whose interval overlaps ``[q, q + 1)``
(overlap above ``XTOL``): most machines serve one class, the machine on each
interior boundary two.

*Why it is a vertex.* A vertex of the grouped LP has at most ``N + C``
positive variables (``lam`` and ``x_ic``). The split of group ``c`` has at most
``n_c + k_c - 1`` positive ``delta_ij`` (``k_c`` classes with ``x_ic > 0``),
and its support graph is a path, so the machine-level support (plus ``lam``)
is a forest-like set of at most ``N + M`` linearly independent columns: at
most ``N + M - 1`` nonzeros of ``delta`` -- the thesis's count, exactly
``NM + 1 - N - M`` zeros when the grouped vertex is nondegenerate and every
group's capacity row is tight. The machine-level solution has the same
``lam*`` as the grouped LP (aggregating identical machines is exact), so it is
an optimal vertex. ``tests/sim/desktop/test_expand.py`` checks both on 3.F
(zero count; ``lam*`` against HiGHS on the per-machine LP; the basis matrix
nonsingular).

*Incremental upkeep.* An availability event changes one group's capacity; the
dual simplex re-optimises the grouped tableau and the boundaries move. Only
machines whose position enters or leaves some class's *cover* (first and last
position it overlaps) change support: the old and new covers are compared per
class (the old ones shifted by one position after the failed or repaired
machine, whose removal or insertion shifts the later members), and only the
positions in their symmetric difference are recomputed. Positions map to
machines through a Fenwick tree of the up members of each group (``O(log n)``).

Idle machines wait in one list per (group, class) in their support, ordered by
``(idle since, initial rank)``, so an arriving task finds the longest-idle
eligible machine of each group at a list head, as in the per-column lists of
the other LP readings.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ...lp.tableau import LP_TOL
from ..core.rng import uniform
from .layout import BUSY, IDLE_SINCE, INIT, R_LOWEST_INDEX, R_RANDOM, S_TIE

__all__ = ["XTOL", "staircase", "grouped_to_machines"]

#: a machine serves a class when the class's interval overlaps its unit interval by more than this
XTOL = 1e-9


# ----------------------------------------------------------------------------- plain Python (tests, docs)
def staircase(x: np.ndarray, n: int, a: float) -> np.ndarray:
    """Split one group's class amounts ``x`` (capacity units) over ``n`` machines of capacity ``a``.

    Returns ``(N, n)``: the capacity each machine gives each class (the staircase above, pieces at
    most ``XTOL`` machine units dropped).
    """
    N = x.shape[0]
    out = np.zeros((N, n))
    B = 0.0
    for i in range(N):
        y = x[i] / a if x[i] > LP_TOL else 0.0
        lo, hi = B, B + y
        B = hi
        qa, qb = _cover_py(lo, hi)
        for q in range(max(qa, 0), min(qb, n - 1) + 1):
            out[i, q] = a * (min(hi, q + 1.0) - max(lo, float(q)))
    return out


def _cover_py(lo: float, hi: float) -> tuple[int, int]:
    if hi - lo <= XTOL:
        return 0, -1
    qa = math.floor(lo)
    if hi > qa + 1 and qa + 1 - lo <= XTOL:
        qa += 1
    qb = math.ceil(hi) - 1
    if lo < qb and hi - qb <= XTOL:
        qb -= 1
    return qa, qb


def grouped_to_machines(x: np.ndarray, col: np.ndarray, a: np.ndarray, up: np.ndarray | None = None,
                        order: np.ndarray | None = None) -> np.ndarray:
    """``delta`` (``N x M``, capacity units) of the machines from the grouped solution ``x`` (``N x C``).

    ``col[j]`` is machine ``j``'s group, ``a[j]`` its capacity, ``up[j]`` whether it is available
    (default: all); a group's available members, in ``order`` (default: index order), take the
    staircase of its column.
    """
    N = x.shape[0]
    M = col.shape[0]
    up = np.ones(M, bool) if up is None else np.asarray(up, bool)
    order = np.arange(M) if order is None else np.asarray(order)
    out = np.zeros((N, M))
    for c in range(x.shape[1]):
        mem = order[((col == c) & up)[order]]
        if mem.size:
            out[:, mem] = staircase(x[:, c], mem.size, float(a[mem[0]]))
    return out


# ----------------------------------------------------------------------------- compiled (the kernel's)
@njit(cache=True, inline="always")
def fen_add(fen, base, n, k, d):
    """Add ``d`` at member ``k`` (0-based) of the Fenwick tree at ``fen[base + 1 .. base + n]``."""
    k += 1
    while k <= n:
        fen[base + k] += d
        k += k & (-k)


@njit(cache=True, inline="always")
def fen_prefix(fen, base, k):
    """Number of up members with member index below ``k``."""
    s = 0
    while k > 0:
        s += fen[base + k]
        k -= k & (-k)
    return s


@njit(cache=True)
def fen_kth(fen, base, n, q):
    """Member index (0-based) of the up member at position ``q`` (0-based)."""
    pos = 0
    step = 1
    while step * 2 <= n:
        step *= 2
    rem = q + 1
    while step > 0:
        nxt = pos + step
        if nxt <= n and fen[base + nxt] < rem:
            pos = nxt
            rem -= fen[base + nxt]
        step >>= 1
    return pos


@njit(cache=True, inline="always")
def cover(lo, hi):
    """First and last position whose unit interval overlaps ``[lo, hi)`` by more than ``XTOL``
    (``(0, -1)`` when none)."""
    if hi - lo <= XTOL:
        return 0, -1
    qa = math.floor(lo)
    if hi > qa + 1 and qa + 1 - lo <= XTOL:
        qa += 1
    qb = math.ceil(hi) - 1
    if lo < qb and hi - qb <= XTOL:
        qb -= 1
    return qa, qb


@njit(cache=True)
def new_covers(T, basis, muT, cap, nup, x, qa, qb):
    """Covers ``qa[c, i] .. qb[c, i]`` of the current optimal tableau (writes them; ``x`` scratch)."""
    C, N = muT.shape
    m = T.shape[0]
    nv = T.shape[1] - 1
    n0 = N * C
    x[:, :] = 0.0
    for r in range(m):
        k = basis[r]
        if k < n0 and T[r, nv] > LP_TOL:
            i = k // C
            c = k - i * C
            if muT[c, i] > 0.0:
                x[c, i] = T[r, nv]
    for c in range(C):
        B = 0.0
        n = nup[c]
        for i in range(N):
            if n == 0 or cap[c] <= 0.0:
                qa[c, i] = 0
                qb[c, i] = -1
                continue
            y = x[c, i] * n / cap[c]
            a_, b_ = cover(B, B + y)
            B += y
            if b_ > n - 1:
                b_ = n - 1
            qa[c, i] = a_
            qb[c, i] = b_


# ----------------------------------------------------------------------------- idle lists per (group, class)
@njit(cache=True, inline="always")
def _before(s, irank, k, j):
    """Machine ``k`` is ahead of ``j`` in an idle list: idle longer, or as long and earlier in the
    initial (tie-rule) order."""
    return s.mf[k, IDLE_SINCE] < s.mf[j, IDLE_SINCE] or (s.mf[k, IDLE_SINCE] == s.mf[j, IDLE_SINCE]
                                                     and irank[k] < irank[j])


@njit(cache=True, inline="always")
def x_insert(lp, s, c, i, j):
    """Put idle machine ``j`` (group ``c``) into list ``(c, i)`` at its place."""
    k = lp.xtail[c, i]
    while k >= 0 and not _before(s, lp.irank, k, j):
        k = lp.xprev[k, i]
    lp.xprev[j, i] = k
    if k >= 0:
        n = lp.xnext[k, i]
        lp.xnext[k, i] = j
    else:
        n = lp.xhead[c, i]
        lp.xhead[c, i] = j
    lp.xnext[j, i] = n
    if n >= 0:
        lp.xprev[n, i] = j
    else:
        lp.xtail[c, i] = j
    lp.xcnt[c, i] += 1
    if s.mi[j, INIT] == 1:
        lp.xninit[c, i] += 1


@njit(cache=True, inline="always")
def x_unlink(lp, s, c, i, j):
    """Take machine ``j`` out of list ``(c, i)``."""
    p = lp.xprev[j, i]
    n = lp.xnext[j, i]
    if p >= 0:
        lp.xnext[p, i] = n
    else:
        lp.xhead[c, i] = n
    if n >= 0:
        lp.xprev[n, i] = p
    else:
        lp.xtail[c, i] = p
    lp.xprev[j, i] = -1
    lp.xnext[j, i] = -1
    lp.xcnt[c, i] -= 1
    if s.mi[j, INIT] == 1:
        lp.xninit[c, i] -= 1


@njit(cache=True, inline="always")
def x_add(lp, s, c, j):
    """Idle machine ``j`` enters the lists of the classes in its support."""
    for i in range(lp.msup.shape[1]):
        if lp.msup[j, i]:
            x_insert(lp, s, c, i, j)


@njit(cache=True, inline="always")
def x_remove(lp, s, c, j):
    """Machine ``j`` leaves every idle list (it starts a task or fails); it is idle since 0 no more."""
    for i in range(lp.msup.shape[1]):
        if lp.msup[j, i]:
            x_unlink(lp, s, c, i, j)
    s.mi[j, INIT] = 0


@njit(cache=True, inline="always")
def x_pick(lp, c, i, mrule, st):
    """The machine of list ``(c, i)`` that pulls first: its head (longest idle), the lowest index, or
    a uniform one."""
    j = lp.xhead[c, i]
    if mrule == R_LOWEST_INDEX:
        k = lp.xnext[j, i]
        while k >= 0:
            if k < j:
                j = k
            k = lp.xnext[k, i]
    elif mrule == R_RANDOM:
        u = int((1.0 - uniform(st, S_TIE)) * lp.xcnt[c, i])
        for _ in range(u):
            j = lp.xnext[j, i]
    return j


# ----------------------------------------------------------------------------- support upkeep
@njit(cache=True)
def _recheck(lp, m, s, c, q, jr):
    """Recompute the support of the machine at position ``q`` of group ``c``; True if it changed.

    An idle machine (other than ``jr``, the machine just repaired, not yet in any list) moves
    between the lists of the classes it gained or lost."""
    n = m.goff[c + 1] - m.goff[c]
    j = m.gmem[m.goff[c] + fen_kth(lp.fen, m.goff[c] + c, n, q)]
    N = lp.msup.shape[1]
    changed = False
    idle = s.mi[j, BUSY] < 0 and j != jr
    for i in range(N):
        new = lp.qa[c, i] <= q <= lp.qb[c, i]
        if new != lp.msup[j, i]:
            changed = True
            if idle and not new:
                x_unlink(lp, s, c, i, j)
            lp.msup[j, i] = new
            if idle and new:
                x_insert(lp, s, c, i, j)
    return changed


@njit(cache=True)
def _recheck_range(lp, m, s, c, lo, hi, plo, phi, jr):
    changed = False
    if lo < plo:
        lo = plo
    if hi > phi:
        hi = phi
    for q in range(lo, hi + 1):
        if _recheck(lp, m, s, c, q, jr):
            changed = True
    return changed


@njit(cache=True)
def _symdiff(lp, m, s, c, a1, b1, a2, b2, plo, phi, jr):
    """Recheck the positions in the symmetric difference of covers ``[a1, b1]`` and ``[a2, b2]``."""
    if a1 > b1 and a2 > b2:
        return False
    if a1 > b1:
        return _recheck_range(lp, m, s, c, a2, b2, plo, phi, jr)
    if a2 > b2:
        return _recheck_range(lp, m, s, c, a1, b1, plo, phi, jr)
    ch = False
    if a1 != a2 and _recheck_range(lp, m, s, c, min(a1, a2), max(a1, a2) - 1, plo, phi, jr):
        ch = True
    if b1 != b2 and _recheck_range(lp, m, s, c, min(b1, b2) + 1, max(b1, b2), plo, phi, jr):
        ch = True
    return ch


@njit(cache=True)
def x_update(lp, m, s, c0, p0, shift, jr):
    """New machine supports after the grouped tableau changed; True if any support changed.

    ``c0``: the group of the machine that failed (``shift = 1``; it held position ``p0`` and is
    out of the Fenwick tree already) or was repaired (``shift = -1``; now at position ``p0``,
    ``jr``), -1 if none. Old covers are in ``lp.qa/qb``; they are replaced by the new ones.
    """
    C, N = lp.qa.shape
    # the old covers, kept while the new ones are computed into qa/qb
    oa = lp.xs_int[0]
    ob = lp.xs_int[1]
    oa[:, :] = lp.qa
    ob[:, :] = lp.qb
    new_covers(lp.T, lp.basis, m.mu_colT, lp.cap, lp.nup, lp.xs, lp.qa, lp.qb)
    changed = False
    for c in range(C):
        n = lp.nup[c]
        if n == 0:
            continue
        for i in range(N):
            a2 = lp.qa[c, i]
            b2 = lp.qb[c, i]
            if c != c0:
                if (oa[c, i] != a2 or ob[c, i] != b2) and _symdiff(lp, m, s, c, oa[c, i], ob[c, i], a2, b2,
                                                                   0, n - 1, jr):
                    changed = True
                continue
            # positions before the event keep their place; those after it moved by one
            if _symdiff(lp, m, s, c, oa[c, i], ob[c, i], a2, b2, 0, p0 - 1, jr):
                changed = True
            a1 = oa[c, i] - shift
            b1 = ob[c, i] - shift
            lo = p0 if shift == 1 else p0 + 1
            if _symdiff(lp, m, s, c, a1, b1, a2, b2, lo, n - 1, jr):
                changed = True
        if c == c0 and shift == -1 and _recheck(lp, m, s, c, p0, jr):
            changed = True
    return changed


@njit(cache=True)
def x_init(lp, m, s, order):
    """Every machine up and idle since 0: the Fenwick trees, the covers of the first optimal
    tableau, every machine's support, and the idle lists filled in the tie rule's ``order``."""
    C = lp.qa.shape[0]
    N = lp.qa.shape[1]
    M = m.col.shape[0]
    lp.fen[:] = 0
    for c in range(C):
        n = m.goff[c + 1] - m.goff[c]
        lp.nup[c] = n
        for k in range(n):
            fen_add(lp.fen, m.goff[c] + c, n, k, 1)
    new_covers(lp.T, lp.basis, m.mu_colT, lp.cap, lp.nup, lp.xs, lp.qa, lp.qb)
    for c in range(C):
        for q in range(lp.nup[c]):
            j = m.gmem[m.goff[c] + q]  # every member is up: position = member index
            for i in range(N):
                lp.msup[j, i] = lp.qa[c, i] <= q <= lp.qb[c, i]
    for k in range(M):
        lp.irank[order[k]] = k
    for k in range(M):
        j = order[k]
        x_add(lp, s, m.col[j], j)
