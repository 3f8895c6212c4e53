"""Idle machines of the desktop-grid kernel: one list per LP column (compiled, no checks).

An idle, available machine waits in the list of its LP column (machines that
the LP cannot tell apart, or the machine alone), in the order it became idle,
so a column's head is its longest-idle machine. Machines idle since time 0 are
tied; they enter their lists in the tie rule's order at the start
(``ninit[c]`` of them at the head of column ``c``'s list). The expanded
per-machine vertex keeps lists per (group, class) instead (:mod:`.expand`).
"""

from __future__ import annotations

from numba import njit

from ..core.rng import uniform
from ..core.ties import tie_keep
from .layout import AEST, IDLE_SINCE, INIT, NEXT, PREV, R_FASTEST, R_LOWEST_INDEX, R_RANDOM, S_TIE

__all__ = ["idle_view", "idle_add", "idle_remove", "pick_in_column", "find_machine", "find_machine_x"]


@njit(cache=True, inline="always")
def idle_view(s):
    """The idle lists of a :class:`~.layout.State`: ``(chead, ctail, cidle, ninit)`` (head, tail and length
    of each column's list, machines idle since time 0 in it). The functions below take this small view,
    not the state: a call passing the whole state costs a reference count per array."""
    return s.chead, s.ctail, s.cidle, s.ninit


@njit(cache=True, inline="always")
def idle_add(mi, idl, c, j):
    """Machine ``j`` joins the tail of column ``c``'s idle list (``idl``: :func:`idle_view`)."""
    chead, ctail, cidle, _ = idl
    mi[j, NEXT] = -1
    mi[j, PREV] = ctail[c]
    if ctail[c] >= 0:
        mi[ctail[c], NEXT] = j
    else:
        chead[c] = j
    ctail[c] = j
    cidle[c] += 1


@njit(cache=True, inline="always")
def idle_remove(mi, idl, c, j):
    """Machine ``j`` leaves column ``c``'s idle list (it starts a task or fails)."""
    chead, ctail, cidle, ninit = idl
    p = mi[j, PREV]
    n = mi[j, NEXT]
    if p >= 0:
        mi[p, NEXT] = n
    else:
        chead[c] = n
    if n >= 0:
        mi[n, PREV] = p
    else:
        ctail[c] = p
    cidle[c] -= 1
    mi[j, PREV] = -1
    mi[j, NEXT] = -1
    if mi[j, INIT] == 1:
        mi[j, INIT] = 0
        ninit[c] -= 1


@njit(cache=True, inline="always")
def pick_in_column(mi, idl, c, mrule, st):
    """Machine of column ``c`` that pulls first: list head (longest idle; the machines idle
    since time 0 are in tie-rule order), lowest index, or uniform."""
    chead, _, cidle, _ = idl
    j = chead[c]
    if mrule == R_LOWEST_INDEX:
        k = mi[j, NEXT]
        while k >= 0:
            if k < j:
                j = k
            k = mi[k, NEXT]
    elif mrule == R_RANDOM:
        u = int((1.0 - uniform(st, S_TIE)) * cidle[c])
        for _ in range(u):
            j = mi[j, NEXT]
    return j


@njit(cache=True)
def find_machine(mrule, tie, muT, mi, mf, idl, i, E, st):
    """Idle available machine that receives an arriving class-``i`` task, or -1.

    ``machine_rule`` ranks machines (longest idle; fastest, then longest idle;
    lowest index; uniform); machines equal under it are tied and the core's
    tie chooser (:func:`~hetsched.sim.core.ties.tie_keep`) picks one. The only
    ties of positive probability are machines idle since time 0 (``ninit[c]`` of
    them at the head of column ``c``'s list, already in tie-rule order) and, for
    ``fastest``, identical machines: a column's head then stands for
    ``ninit[c]`` tied machines (its weight).
    """
    chead, _, cidle, ninit = idl
    C = chead.shape[0]
    if mrule == R_RANDOM:  # uniform over eligible idle machines
        tot = 0
        for c in range(C):
            if cidle[c] > 0 and E[c, i] and muT[chead[c], i] > 0.0:
                tot += cidle[c]
        if tot == 0:
            return -1
        u = int((1.0 - uniform(st, S_TIE)) * tot)
        for c in range(C):
            if cidle[c] > 0 and E[c, i] and muT[chead[c], i] > 0.0:
                if u < cidle[c]:
                    j = chead[c]
                    for _ in range(u):
                        j = mi[j, NEXT]
                    return j
                u -= cidle[c]
        return -1
    best = -1
    best_r = 0.0
    best_idle = 0.0
    wtot = 0.0
    for c in range(C):
        if cidle[c] == 0 or not E[c, i]:
            continue
        j = chead[c]
        r = muT[j, i]
        if r <= 0.0:
            continue
        if mrule == R_LOWEST_INDEX:
            k = mi[j, NEXT]
            while k >= 0:
                if k < j:
                    j = k
                k = mi[k, NEXT]
            if best < 0 or j < best:
                best = j
            continue
        key = r * mf[j, AEST] if mrule == R_FASTEST else 0.0
        idle = mf[j, IDLE_SINCE]
        w = float(ninit[c]) if mi[j, INIT] == 1 else 1.0
        if best < 0 or key > best_r or (key == best_r and idle < best_idle):
            best = j
            best_r = key
            best_idle = idle
            wtot = w
        elif key == best_r and idle == best_idle:
            wtot += w
            if tie_keep(tie, j, best, w, wtot, st, S_TIE):
                best = j
    return best


@njit(cache=True, inline="always")
def find_machine_x(mrule, tie, muT, s, lp, i, st):
    """:func:`find_machine` for the expanded per-machine vertex: the candidates are the heads of
    the idle lists ``(c, i)`` of the groups (their members share rates and ``a``)."""
    C = lp.xcnt.shape[0]
    if mrule == R_RANDOM:
        tot = 0
        for c in range(C):
            tot += lp.xcnt[c, i]
        if tot == 0:
            return -1
        u = int((1.0 - uniform(st, S_TIE)) * tot)
        for c in range(C):
            if u < lp.xcnt[c, i]:
                j = lp.xhead[c, i]
                for _ in range(u):
                    j = lp.xnext[j, i]
                return j
            u -= lp.xcnt[c, i]
        return -1
    best = -1
    best_r = 0.0
    best_idle = 0.0
    wtot = 0.0
    for c in range(C):
        if lp.xcnt[c, i] == 0:
            continue
        j = lp.xhead[c, i]
        if mrule == R_LOWEST_INDEX:
            k = lp.xnext[j, i]
            while k >= 0:
                if k < j:
                    j = k
                k = lp.xnext[k, i]
            if best < 0 or j < best:
                best = j
            continue
        key = muT[j, i] * s.mf[j, AEST] if mrule == R_FASTEST else 0.0
        idle = s.mf[j, IDLE_SINCE]
        w = float(lp.xninit[c, i]) if s.mi[j, INIT] == 1 else 1.0
        if best < 0 or key > best_r or (key == best_r and idle < best_idle):
            best = j
            best_r = key
            best_idle = idle
            wtot = w
        elif key == best_r and idle == best_idle:
            wtot += w
            if tie_keep(tie, j, best, w, wtot, st, S_TIE):
                best = j
    return best
