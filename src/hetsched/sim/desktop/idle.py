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

__all__ = ["idle_add", "idle_remove", "pick_in_column", "find_machine", "find_machine_x"]


@njit(cache=True, inline="always")
def idle_add(s, c, j):
    """Machine ``j`` joins the tail of column ``c``'s idle list."""
    s.mi[j, NEXT] = -1
    s.mi[j, PREV] = s.ctail[c]
    if s.ctail[c] >= 0:
        s.mi[s.ctail[c], NEXT] = j
    else:
        s.chead[c] = j
    s.ctail[c] = j
    s.cidle[c] += 1


@njit(cache=True, inline="always")
def idle_remove(s, c, j):
    """Machine ``j`` leaves column ``c``'s idle list (it starts a task or fails)."""
    p = s.mi[j, PREV]
    n = s.mi[j, NEXT]
    if p >= 0:
        s.mi[p, NEXT] = n
    else:
        s.chead[c] = n
    if n >= 0:
        s.mi[n, PREV] = p
    else:
        s.ctail[c] = p
    s.cidle[c] -= 1
    s.mi[j, PREV] = -1
    s.mi[j, NEXT] = -1
    if s.mi[j, INIT] == 1:
        s.mi[j, INIT] = 0
        s.ninit[c] -= 1


@njit(cache=True, inline="always")
def pick_in_column(s, c, mrule, st):
    """Machine of column ``c`` that pulls first: list head (longest idle; the machines idle
    since time 0 are in tie-rule order), lowest index, or uniform."""
    j = s.chead[c]
    if mrule == R_LOWEST_INDEX:
        k = s.mi[j, NEXT]
        while k >= 0:
            if k < j:
                j = k
            k = s.mi[k, NEXT]
    elif mrule == R_RANDOM:
        u = int((1.0 - uniform(st, S_TIE)) * s.cidle[c])
        for _ in range(u):
            j = s.mi[j, NEXT]
    return j


@njit(cache=True, inline="always")
def find_machine(mrule, tie, muT, s, i, E, st):
    """Idle available machine that receives an arriving class-``i`` task, or -1.

    ``machine_rule`` ranks machines (longest idle; fastest, then longest idle;
    lowest index; uniform); machines equal under it are tied and the core's
    tie chooser (:func:`~hetsched.sim.core.ties.tie_keep`) picks one. The only
    ties of positive probability are machines idle since time 0 (``s.ninit[c]`` of
    them at the head of column ``c``'s list, already in tie-rule order) and, for
    ``fastest``, identical machines: a column's head then stands for
    ``s.ninit[c]`` tied machines (its weight).
    """
    C = s.chead.shape[0]
    if mrule == R_RANDOM:  # uniform over eligible idle machines
        tot = 0
        for c in range(C):
            if s.cidle[c] > 0 and E[c, i] and muT[s.chead[c], i] > 0.0:
                tot += s.cidle[c]
        if tot == 0:
            return -1
        u = int((1.0 - uniform(st, S_TIE)) * tot)
        for c in range(C):
            if s.cidle[c] > 0 and E[c, i] and muT[s.chead[c], i] > 0.0:
                if u < s.cidle[c]:
                    j = s.chead[c]
                    for _ in range(u):
                        j = s.mi[j, NEXT]
                    return j
                u -= s.cidle[c]
        return -1
    best = -1
    best_r = 0.0
    best_idle = 0.0
    wtot = 0.0
    for c in range(C):
        if s.cidle[c] == 0 or not E[c, i]:
            continue
        j = s.chead[c]
        r = muT[j, i]
        if r <= 0.0:
            continue
        if mrule == R_LOWEST_INDEX:
            k = s.mi[j, NEXT]
            while k >= 0:
                if k < j:
                    j = k
                k = s.mi[k, NEXT]
            if best < 0 or j < best:
                best = j
            continue
        key = r * s.mf[j, AEST] if mrule == R_FASTEST else 0.0
        idle = s.mf[j, IDLE_SINCE]
        w = float(s.ninit[c]) if s.mi[j, INIT] == 1 else 1.0
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
