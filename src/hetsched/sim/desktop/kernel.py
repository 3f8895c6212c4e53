"""Compiled replication kernel of the desktop-grid model (see :mod:`hetsched.sim.desktop`).

Compiled, no checks, no allocation in the hot loop. Every entry point takes
the named tuples of :mod:`.layout`: parameters ``p``, state ``s``, LP state
``lp``, event lists ``ev``, streams ``st``, outputs ``out``. :func:`init` draws
the initial state; :func:`run` simulates until the horizon. The kernel is
*resumable*: all state lives in those arrays, and :func:`run` returns
``NEED_SUPPORT`` when the robust (central) LP support of the current capacity
vector is not in its hash table; the Python side solves that LP, stores the
support and calls :func:`run` again (it resumes in :func:`resume`).

The named tuples are unpacked once, in :func:`run`: task timers (a
completion, or a CPU-chain state change) and arrivals -- nearly every event --
are handled in its loop on local arrays with scalar counters, calling short
functions that take a few arrays (:func:`start_task`,
:func:`~.idle.find_machine`, the class selection on the small views of
:func:`views`); an availability event (a failure or a repair, with the LP
update) is :func:`on_avail`, which takes the tuples (it is rarer and does more).
The expanded vertex's idle lists are handed small views (``XLists``,
``Machines`` of :mod:`.layout`) made once.

A kernel per policy family
--------------------------
The class selection :func:`_select` reads the bound global ``_FAMILY``:
:func:`kernels` compiles :func:`run` and the functions that call the selection
again with it bound to the family -- ``sel_plain`` (FCFS, Gcmu), ``sel_lp``
(LPAS_DG and its robust variant, reading the LP support), or ``sel_user`` (a
user's compiled pull policy, bound as ``_user_pull``) -- through
:func:`hetsched.sim.core.kernels.specialise`, which caches each on disk. The
other families' branches fold away: no policy switch runs per event.

Built on the core: three event lists of :mod:`hetsched.sim.core.events`
(:class:`Events`: task timers, slot ``j`` per machine, priority 0; availability
timers, slot ``j``, priority 1; arrivals, slot ``i`` per class, priority 2; the
next event is the earliest of the three first events, equal times in priority
order, so the order is ``(time, priority, sequence)`` as in one list), the
streams, the variates, the task pool (:mod:`hetsched.sim.core.pool`, one FCFS
queue per class), the tie chooser (:mod:`hetsched.sim.core.ties`), the LP
tableau (:mod:`hetsched.lp.tableau`, kept up in :mod:`.lpkeep`) and the
instability segments. The class rule is :mod:`hetsched.policies.pull`'s,
compiled here.

Performance notes (named where made):

* three event lists instead of one: an arrival (half the events) sifts
  through a heap of ``N`` entries, not ``2M + N`` (3.F: 4 instead of 6,004);
  the handled event's slot is rescheduled in place (one sift-down from the
  root), never popped and pushed; a completion followed by a new start on
  the same machine reschedules its slot once;
* no named tuple is passed per task timer or arrival: each array of a tuple
  handed to a function -- inlined or not -- costs an atomic reference-count
  update, and a first version of the kernel contract with one inlined
  function per event taking the tuples (about a hundred arrays) ran at a
  quarter of the speed; the event functions take the few arrays they need;
* no array views in the hot loop: the class selection reads ``muT[j, i]``
  and ``E[e, i]`` in place; the numbers waiting and busy are kept
  incrementally;
* CPU chains (:mod:`.chain`) are simulated only while a machine runs a task;
* waiting tasks live in one pool of linked FCFS lists sized by the
  instability bound, so a run can never exhaust memory.
"""

# long-file: one compiled event loop (numba) with the functions it calls and the per-family selections
# bound at compile time; task timers and arrivals stay in run's loop on unpacked arrays because per-event
# functions taking the named tuples cost 3.5-4x in events/s (docs/desktop-grid.md, "Kernel speed").

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ...policies.pull import choose as _choose_py
from ...policies.pull import qualifies as _qualifies_py
from ...lp import tableau as lptab
from ..core.events import ev_cancel, ev_new, ev_schedule
from ..core.instability import seg_observe
from ..core.pool import pool_alloc, pool_append, pool_insert_sorted, pool_pop
from ..core.rng import uniform
from ..core.variates import draw
from .chain import chain_catch_up, chain_segment_end, chain_step
from .expand import fen_add, fen_prefix, x_add, x_init, x_pick, x_remove, x_update
from .idle import find_machine, find_machine_x, idle_add, idle_remove, idle_view, pick_in_column
from .layout import (AEST, BAD_CHOICE, BOUND, BUSY, CK, CST, DONE, FCFS, GCMU, IDLE_SINCE, INIT, LEVEL, LP_FAILED,
                     LPAS_DG, LPAS_DG_ROBUST, NEED_SUPPORT, NEXT, PREV, PRIO_ARRIVAL, PRIO_AVAIL, PRIO_TASK, REM,
                     S_ARR, S_CHAIN, S_EST, S_EXEC, S_FAIL, S_RESTART, S_TIE, S_USER, SEGEND, SEGT, TARR, TIE_HIGHEST,
                     TIE_RANDOM, TKIND, UP, UPSINCE, USER, Events, Machines, XLists)
from .lpkeep import copy_support, table_lookup, vertex_update

__all__ = ["init", "run", "kernels", "new_event_list", "FAMILIES", "family"]

INF = np.inf

_choose = njit(cache=True)(_choose_py)
_qualifies = njit(cache=True)(_qualifies_py)


# ----------------------------------------------------------------------------- class queues (core pool)
@njit(cache=True, inline="always")
def q_push(qv, i, tarr, size, front):
    """A task of class ``i`` that arrived at ``tarr`` with unit-mean size ``size`` joins its queue: at the
    tail, or (a resubmitted task, ``front``) in arrival order. False when the pool is full.
    ``qv`` is the queue view ``(pool, p_arr, p_size, head_arr)`` of :func:`views`."""
    pool, p_arr, p_size, head_arr = qv
    k = pool_alloc(pool)
    if k < 0:
        return False
    p_arr[k] = tarr
    p_size[k] = size
    if front:
        pool_insert_sorted(pool, i, k, p_arr)
    else:
        pool_append(pool, i, k)
    head_arr[i] = p_arr[pool.head[i]]
    return True


@njit(cache=True, inline="always")
def q_pop(qv, i):
    """Remove class ``i``'s head-of-line task; ``(arrival time, size)``."""
    pool, p_arr, p_size, head_arr = qv
    k = pool_pop(pool, i)
    h = pool.head[i]
    if h >= 0:
        head_arr[i] = p_arr[h]
    return p_arr[k], p_size[k]


# ----------------------------------------------------------------------------- small views
@njit(cache=True, inline="always")
def views(p, s, out):
    """The small views the per-event functions take instead of the named tuples (a call passing a tuple of
    ~20 arrays costs a reference-count update per array, more than the event's work): the queues
    ``(pool, p_arr, p_size, head_arr)``, the idle lists (:func:`~.idle.idle_view`), the CPU chains
    ``(chain_id, Pm, Ppow, logstay, levels)``, a user policy's error registers ``(err_machine, err_value)``,
    the per-class sums ``(cls_n, cls_w)`` and the policy scalars ``(policy, tie, uses_lp, machine_rule)``."""
    qv = (s.pool, s.p_arr, s.p_size, s.head_arr)
    chn = (p.chain_id, p.Pm, p.Ppow, p.logstay, p.levels)
    err = (s.ctl.err_machine, s.ctl.err_value)
    cls = (out.cls_n, out.cls_w)
    sel = (p.policy, p.tie, p.uses_lp, p.machine_rule)
    return qv, idle_view(s), chn, err, cls, sel


# ----------------------------------------------------------------------------- class selection
@njit(cache=True)
def _no_user_policy(t, qlen, head_arrival, rate, eligible, u):
    return -1


_user_pull = _no_user_policy  # bound to the user's compiled function in a user kernel


@njit(cache=True, inline="always")
def sel_plain(sel, qv, muT, j, e, E, t, st):
    """FCFS / Gcmu (``sel[0]``): the class machine ``j`` takes at ``t``, or -1."""
    tie = sel[1]
    u = 0.0
    if tie == TIE_RANDOM:
        u = 1.0 - uniform(st, S_TIE)
    return _choose(sel[0], tie, t, qv[0].qlen, qv[3], muT, j, E, e, u)


@njit(cache=True, inline="always")
def sel_lp(sel, qv, muT, j, e, E, t, st):
    """LPAS_DG (either LP reading): the Gcmu rule over the classes of machine ``j``'s support row ``E[e]``."""
    tie = sel[1]
    u = 0.0
    if tie == TIE_RANDOM:
        u = 1.0 - uniform(st, S_TIE)
    return _choose(LPAS_DG, tie, t, qv[0].qlen, qv[3], muT, j, E, e, u)


@njit(cache=True)
def sel_user(sel, qv, muT, err, j, e, E, t, st):
    """A user pull policy: its class, -1 when no class qualifies, -2 when it broke the contract."""
    uses_lp = sel[2] == 1
    qlen = qv[0].qlen
    ok = False
    for i in range(qlen.shape[0]):
        if qlen[i] > 0 and muT[j, i] > 0.0 and (not uses_lp or E[e, i]):
            ok = True
            break
    if not ok:
        return -1
    i = _user_pull(t, qlen, qv[3], muT[j], E[e], 1.0 - uniform(st, S_USER))
    if not _qualifies(i, qlen, muT, j, E, e, uses_lp):
        err[0][0] = j
        err[1][0] = i
        return -2
    return i


#: the kernel's family: ``ANY`` (every policy through one switch: the unspecialised module-level kernel),
#: or one bound at compile time by :func:`kernels`
ANY, PLAIN, LP, USER_FAMILY = -1, 0, 1, 2
_FAMILY = ANY


@njit(cache=True, inline="always")
def _select(sel, qv, muT, err, j, e, E, t, st):
    """The class machine ``j`` takes at ``t`` (-1: none; -2: a user policy broke its contract), by the
    family's rule; ``_FAMILY`` is a compile-time constant, so the other branches fold away."""
    if _FAMILY == PLAIN:
        return sel_plain(sel, qv, muT, j, e, E, t, st)
    if _FAMILY == LP:
        return sel_lp(sel, qv, muT, j, e, E, t, st)
    if _FAMILY == USER_FAMILY:
        return sel_user(sel, qv, muT, err, j, e, E, t, st)
    policy = sel[0]
    if policy == USER:
        return sel_user(sel, qv, muT, err, j, e, E, t, st)
    if policy == LPAS_DG or policy == LPAS_DG_ROBUST:
        return sel_lp(sel, qv, muT, j, e, E, t, st)
    return sel_plain(sel, qv, muT, j, e, E, t, st)


# ----------------------------------------------------------------------------- task start
@njit(cache=True, inline="always")
def schedule_task(mf, mi, j, evT):
    tc = mf[j, SEGT] + mf[j, REM] / mf[j, LEVEL] if mf[j, LEVEL] > 0.0 else INF
    if tc <= mf[j, SEGEND]:
        mi[j, TKIND] = 0
        ev_schedule(evT, j, tc, PRIO_TASK)
    else:
        mi[j, TKIND] = 1
        ev_schedule(evT, j, mf[j, SEGEND], PRIO_TASK)


@njit(cache=True)
def start_task(mi, mf, muT, a_true, chn, step, evT, st, starts, j, i, tarr, size, t):
    """Machine ``j`` starts a class-``i`` task that arrived at ``tarr``, of unit-mean size ``size`` (its
    execution time at full speed is ``size / mu'_ij``)."""
    chain_id, _, Ppow, logstay, levels = chn
    mi[j, BUSY] = i
    mf[j, TARR] = tarr
    mf[j, REM] = size / muT[j, i]
    mf[j, SEGT] = t
    cid = chain_id[j]
    if cid >= 0:
        k = int(math.floor(t / step))
        chain_catch_up(mi, Ppow, j, cid, k, st)
        cs = mi[j, CST]
        mf[j, LEVEL] = levels[cs]
        mf[j, SEGEND] = chain_segment_end(logstay, step, k, cs, cid, st)
    else:
        mf[j, LEVEL] = a_true[j]
        mf[j, SEGEND] = INF
    starts[0] += 1
    schedule_task(mf, mi, j, evT)


# ----------------------------------------------------------------------------- initial state
@njit(cache=True)
def init(p, s, lp, ev, st, out):
    """Initial state of one replication: all machines up and idle, chains from their stationary
    laws, estimates, idle lists in tie-rule order, first events, the LP. Returns a status."""
    M = p.col.shape[0]
    N = p.alpha.shape[0]
    mi, mf = s.mi, s.mf
    inacc = p.inaccuracy
    for j in range(M):
        mi[j, UP] = 1
        mi[j, BUSY] = -1
        mi[j, PREV] = -1
        mi[j, NEXT] = -1
        mi[j, INIT] = 1
        cid = p.chain_id[j]
        if cid >= 0:
            u = 1.0 - uniform(st, S_CHAIN)
            cs = 0
            acc = p.stat[cid, 0]
            while cs < 2 and u >= acc:
                cs += 1
                acc += p.stat[cid, cs]
            mi[j, CST] = cs
        a = p.a_est0[j]
        if inacc > 0.0:
            a = a * (1.0 + inacc * (2.0 * (1.0 - uniform(st, S_EST)) - 1.0))
            a = min(max(a, 0.0), 1.0)
        mf[j, AEST] = a
        mf[j, IDLE_SINCE] = 0.0
    # idle lists: machines idle since time 0 are tied; their list order is the tie rule's
    order = np.arange(M)
    if p.tie == TIE_HIGHEST:
        order = order[::-1].copy()
    elif p.tie == TIE_RANDOM:
        for k in range(M - 1, 0, -1):  # Fisher-Yates
            r = int((1.0 - uniform(st, S_TIE)) * (k + 1))
            tmp = order[k]
            order[k] = order[r]
            order[r] = tmp
    expand = p.expand == 1
    if not expand:
        idl = idle_view(s)
        for k in range(M):
            j = order[k]
            c = p.col[j]
            idle_add(mi, idl, c, j)
            s.ninit[c] += 1
    for j in range(M):
        lp.cap[p.col[j]] += mf[j, AEST]
    # first events
    if p.failures == 1:
        for j in range(M):
            ev_schedule(ev.avail, j, draw(st, S_FAIL, p.up_kind, p.up_par[j]), PRIO_AVAIL)
    for i in range(N):
        if p.alpha[i] > 0.0:
            ev_schedule(ev.arrival, i, -math.log(uniform(st, S_ARR)) / p.alpha[i], PRIO_ARRIVAL)
    s.ctl.pend_machine[0] = -1
    if p.lp_mode == 1:
        lptab.build(lp.T, lp.obj, lp.basis, p.mu_colT, p.alpha, lp.cap)
        if lptab.primal(lp.T, lp.obj, lp.basis) < 0:
            return LP_FAILED
        _, lam = lptab.support(lp.T, lp.basis, p.mu_colT, lp.support)
        out.lam[0] = lam
        out.lp_solves[0] = 1
        if expand:  # per-machine supports and idle lists (machines in tie-rule order)
            x_init(lp, p, s, order)
    elif p.lp_mode == 2:
        s.ctl.pending[0] = 1
    return DONE


# ----------------------------------------------------------------------------- pulls after a support change
@njit(cache=True)
def scan(p, s, ev, st, out, E, t):
    """After a support change: idle machines pull (column order) until nothing qualifies.

    Returns the number of tasks started, or -1 when a user policy broke its contract."""
    qv, idl, chn, err, _, sel = views(p, s, out)
    mi, mf, muT = s.mi, s.mf, p.muT
    ql = qv[0].qlen
    qtot = 0
    for i in range(ql.shape[0]):
        qtot += ql[i]
    if qtot == 0:
        return 0
    started = 0
    cidle = idl[2]
    for c in range(cidle.shape[0]):
        while cidle[c] > 0:
            j = pick_in_column(mi, idl, c, sel[3], st)
            i = _select(sel, qv, muT, err, j, c, E, t, st)
            if i == -2:
                return -1
            if i < 0:
                break
            idle_remove(mi, idl, c, j)
            tarr, size = q_pop(qv, i)
            started += 1
            start_task(mi, mf, muT, p.a_true, chn, p.step, ev.task, st, out.starts, j, i, tarr, size, t)
    return started


@njit(cache=True)
def scan_x(p, s, lp, ev, st, out, t):
    """:func:`scan` for the expanded per-machine vertex: while a class waits and one of its idle
    lists ``(c, i)`` is not empty, that list's machine pulls (groups, then classes, in order)."""
    qv, _, chn, err, _, sel = views(p, s, out)
    mi, mf, muT = s.mi, s.mf, p.muT
    ql = qv[0].qlen
    N = ql.shape[0]
    C = lp.xcnt.shape[0]
    started = 0
    for c in range(C):
        for i in range(N):
            while lp.xcnt[c, i] > 0 and ql[i] > 0:
                j = x_pick(lp, c, i, sel[3], st)
                k = _select(sel, qv, muT, err, j, j, lp.msup, t, st)
                if k == -2:
                    return -1
                if k < 0:  # pragma: no cover - class i qualifies
                    break
                x_remove(lp, s, c, j)
                tarr, size = q_pop(qv, k)
                started += 1
                start_task(mi, mf, muT, p.a_true, chn, p.step, ev.task, st, out.starts, j, k, tarr, size, t)
    return started


# ----------------------------------------------------------------------------- the expanded vertex's idle lists
@njit(cache=True)
def x_take(p, s, lp, i, st):
    """Expanded vertex: the idle machine that receives an arriving class-``i`` task, taken out of its
    lists, or -1."""
    jj = find_machine_x(p.machine_rule, p.tie, p.muT, s, lp, i, st)
    if jj >= 0:
        x_remove(lp, s, p.col[jj], jj)
    return jj


# ----------------------------------------------------------------------------- one function per event
@njit(cache=True)
def on_avail(p, s, lp, ev, st, out, E, j, t):
    """Availability timer of machine ``j``: a failure (its task goes back to the scheduler) or a
    repair (it pulls); then the LP and the supports follow.

    Returns ``(status, change of the number waiting, change of the number busy)``."""
    qv, idl, chn, err, _, sel = views(p, s, out)
    mi, mf, muT, evT, starts = s.mi, s.mf, p.muT, ev.task, out.starts
    N = p.alpha.shape[0]
    c = p.col[j]
    expand = p.expand == 1
    out.avail_events[0] += 1
    dq = 0
    db = 0
    repaired = -1
    p0 = 0  # expanded vertex: the machine's position among the up members of its group
    shift = 0
    if mi[j, UP] == 1:
        mi[j, UP] = 0
        out.up_time[j] += t - mf[j, UPSINCE]
        if mi[j, BUSY] >= 0:
            i = mi[j, BUSY]
            mi[j, BUSY] = -1
            db -= 1
            ev_cancel(evT, j)
            if p.chain_id[j] >= 0:
                mi[j, CK] = int(math.floor(t / p.step))
            out.resubmissions[0] += 1
            was = qv[0].qlen[i]
            # a restart is a fresh execution (the lost work is not reused): its size is the
            # policy's own draw (stream S_RESTART), so the common streams stay common
            if not q_push(qv, i, mf[j, TARR], draw(st, S_RESTART, p.exec_kind, p.exec_par), p.resubmit == 0):
                s.ctl.status[0] = BOUND
                return BOUND, dq, db
            dq += 1
            if was == 0:
                if expand:
                    jj = x_take(p, s, lp, i, st)
                else:
                    jj = find_machine(p.machine_rule, p.tie, muT, mi, mf, idl, i, E, st)
                    if jj >= 0:
                        idle_remove(mi, idl, p.col[jj], jj)
                if jj >= 0:
                    tarr, size = q_pop(qv, i)
                    dq -= 1
                    db += 1
                    start_task(mi, mf, muT, p.a_true, chn, p.step, evT, st, starts, jj, i, tarr, size, t)
        elif expand:
            x_remove(lp, s, c, j)
        else:
            idle_remove(mi, idl, c, j)
        if expand:
            for i in range(N):
                lp.msup[j, i] = False
            p0 = fen_prefix(lp.fen, c + p.goff[c], p.mpos[j])
            fen_add(lp.fen, c + p.goff[c], p.goff[c + 1] - p.goff[c], p.mpos[j], -1)
            lp.nup[c] -= 1
            shift = 1
        newcap = lp.cap[c] - mf[j, AEST]
        if newcap < 1e-12:
            newcap = 0.0
        ev_schedule(ev.avail, j, t + draw(st, S_FAIL, p.down_kind, p.down_par), PRIO_AVAIL)
    else:
        mi[j, UP] = 1
        mf[j, UPSINCE] = t
        a = p.a_est0[j]
        if p.inaccuracy > 0.0:
            a = a * (1.0 + p.inaccuracy * (2.0 * (1.0 - uniform(st, S_EST)) - 1.0))
            a = min(max(a, 0.0), 1.0)
        mf[j, AEST] = a
        newcap = lp.cap[c] + a
        repaired = j
        if expand:
            fen_add(lp.fen, c + p.goff[c], p.goff[c + 1] - p.goff[c], p.mpos[j], 1)
            lp.nup[c] += 1
            p0 = fen_prefix(lp.fen, c + p.goff[c], p.mpos[j])
            shift = -1
        ev_schedule(ev.avail, j, t + draw(st, S_FAIL, p.up_kind, p.up_par[j]), PRIO_AVAIL)
    # ---- LP: re-optimise (vertex) or look up (central) the support
    changed = False
    if p.lp_mode == 1:
        changed = vertex_update(p, lp, out, s.ctl, c, newcap)
        if expand:
            changed = x_update(lp, p, s, c, p0, shift, repaired)
        elif p.policy != LPAS_DG and not (p.policy == USER and p.uses_lp == 1):
            changed = False  # tracked, not read
    elif p.lp_mode == 2:
        lp.cap[c] = newcap
        out.lookups[0] += 1
        slot, hit = table_lookup(lp.cap, lp.keys_cap, lp.key_used)
        if not hit:
            s.ctl.pending[0] = 1
            s.ctl.miss_slot[0] = slot
            s.ctl.pend_machine[0] = repaired
            return NEED_SUPPORT, dq, db
        changed = copy_support(lp, slot)
    else:
        lp.cap[c] = newcap
    if changed:
        out.support_changes[0] += 1
    if repaired >= 0:
        i = _select(sel, qv, muT, err, j, j if expand else c, E, t, st)
        if i == -2:
            return BAD_CHOICE, dq, db
        if i >= 0:
            tarr, size = q_pop(qv, i)
            dq -= 1
            db += 1
            start_task(mi, mf, muT, p.a_true, chn, p.step, evT, st, starts, j, i, tarr, size, t)
        else:
            mf[j, IDLE_SINCE] = t
            if expand:
                x_add(lp, s, c, j)
            else:
                idle_add(mi, idl, c, j)
    if changed:
        n = scan_x(p, s, lp, ev, st, out, t) if expand else scan(p, s, ev, st, out, E, t)
        if n < 0:
            return BAD_CHOICE, dq, db
        dq -= n
        db += n
    return DONE, dq, db


# ----------------------------------------------------------------------------- resume and the event loop
@njit(cache=True)
def resume(p, s, lp, ev, st, out, E):
    """Back from Python after a robust-support miss: install the support, let the pending machine
    pull, rescan. Returns a status."""
    ctl = s.ctl
    slot, hit = table_lookup(lp.cap, lp.keys_cap, lp.key_used)
    if not hit:
        ctl.miss_slot[0] = slot
        return NEED_SUPPORT
    ctl.pending[0] = 0
    changed = copy_support(lp, slot)
    jp = ctl.pend_machine[0]
    ctl.pend_machine[0] = -1
    t = out.t_now[0]
    if jp >= 0:
        qv, idl, chn, err, _, sel = views(p, s, out)
        c = p.col[jp]
        i = _select(sel, qv, p.muT, err, jp, c, E, t, st)
        if i == -2:
            return BAD_CHOICE
        if i >= 0:
            tarr, size = q_pop(qv, i)
            start_task(s.mi, s.mf, p.muT, p.a_true, chn, p.step, ev.task, st, out.starts, jp, i, tarr, size, t)
        else:
            s.mf[jp, IDLE_SINCE] = t
            idle_add(s.mi, idl, c, jp)
    if changed and scan(p, s, ev, st, out, E, t) < 0:
        return BAD_CHOICE
    return DONE


@njit(cache=True)
def run(p, s, lp, ev, st, out):
    """Compiled, no checks; runs until the horizon, a robust-support miss, the bound or a bad
    user choice; returns ``DONE``, ``NEED_SUPPORT``, ``BOUND`` or ``BAD_CHOICE``.

    The named tuples are unpacked here, once. Task timers and arrivals (nearly every event) are
    handled in the loop on those local arrays, with scalar counters written to ``out`` when the
    run returns; they call functions that take a few arrays (:func:`start_task`,
    :func:`~.idle.find_machine`, the inlined selection on :func:`views`). Availability events
    (:func:`on_avail`) take the tuples."""
    M = p.col.shape[0]
    use_lp_sup = (p.policy == LPAS_DG or p.policy == LPAS_DG_ROBUST or (p.policy == USER and p.uses_lp == 1))
    # E[e, i]: may the machine take class i; row e = its LP column, or the machine itself (expanded vertex)
    E = (lp.msup if p.expand == 1 else lp.support) if use_lp_sup else lp.elig_static
    if s.ctl.pending[0] == 1:
        rc = resume(p, s, lp, ev, st, out, E)
        if rc != DONE:
            return rc
    qv, idl, chn, err, cls, sel = views(p, s, out)
    cls_n, cls_w = cls
    chain_id, Pm, _, logstay, levels = chn
    mi, mf, muT, a_true, col, alpha, exec_par = s.mi, s.mf, p.muT, p.a_true, p.col, p.alpha, p.exec_par
    step, warmup, horizon, bound, exec_kind = p.step, p.warmup, p.horizon, p.bound, p.exec_kind
    mrule, tie = p.machine_rule, p.tie
    expand = p.expand == 1
    xl = XLists(lp.msup, lp.xprev, lp.xnext, lp.xhead, lp.xtail, lp.xcnt, lp.xninit, lp.irank)
    xm = Machines(mi, mf)
    evT, evV, evA = ev.task, ev.avail, ev.arrival
    starts, t_now, sg = out.starts, out.t_now, out.sg
    events = 0
    arrivals = 0
    size_sum = out.size_sum[0]  # (added to in the same order as before: bit-identical sums)
    peak = out.peak[0]
    ql = qv[0].qlen
    qtot = 0  # tasks waiting and machines busy, kept up to date by the events
    for i in range(ql.shape[0]):
        qtot += ql[i]
    nbusy = 0
    for j in range(M):
        if mi[j, BUSY] >= 0:
            nbusy += 1
    rc = DONE
    while True:
        # earliest of the three lists' first events; equal times in priority order (tasks, availability,
        # arrivals), as one list would order them
        t = evT.ht[0] if evT.meta[0] > 0 else INF
        sl = evT.hs[0]
        if evV.meta[0] > 0 and evV.ht[0] < t:
            t = evV.ht[0]
            sl = M + evV.hs[0]
        if evA.meta[0] > 0 and evA.ht[0] < t:
            t = evA.ht[0]
            sl = 2 * M + evA.hs[0]
        if t > horizon:
            break
        seg_observe(sg, t, qtot + nbusy)
        t_now[0] = t
        events += 1
        if sl < M:
            # ---------------- task timer of machine j: a CPU-chain state change of its task, or its completion
            j = sl
            if mi[j, TKIND] == 1:
                # CPU-chain state change while running: bank progress, draw the next sojourn
                cid = chain_id[j]
                mf[j, REM] -= mf[j, LEVEL] * (t - mf[j, SEGT])
                if mf[j, REM] < 0.0:
                    mf[j, REM] = 0.0
                mf[j, SEGT] = t
                sn = chain_step(mi, Pm, j, cid, st)
                k = int(round(t / step))
                mi[j, CST] = sn
                mi[j, CK] = k
                mf[j, LEVEL] = levels[sn]
                mf[j, SEGEND] = chain_segment_end(logstay, step, k, sn, cid, st)
                schedule_task(mf, mi, j, evT)
                continue
            i = mi[j, BUSY]
            ta = mf[j, TARR]
            if ta >= warmup:
                cls_n[i] += 1
                cls_w[i] += t - ta
            mi[j, BUSY] = -1
            if chain_id[j] >= 0:
                mi[j, CK] = int(math.floor(t / step))
            c = col[j]
            i = _select(sel, qv, muT, err, j, j if expand else c, E, t, st) if qtot > 0 else -1
            if i == -2:
                nbusy -= 1
                rc = BAD_CHOICE
                break
            if i >= 0:
                # the new start reschedules slot j: one sift instead of a cancel and a push
                tarr, size = q_pop(qv, i)
                start_task(mi, mf, muT, a_true, chn, step, evT, st, starts, j, i, tarr, size, t)
                qtot -= 1
                continue
            ev_cancel(evT, j)
            mf[j, IDLE_SINCE] = t
            if expand:
                x_add(xl, xm, c, j)
            else:
                idle_add(mi, idl, c, j)
            nbusy -= 1
        elif sl < 2 * M:
            rc, dq, db = on_avail(p, s, lp, ev, st, out, E, sl - M, t)
            qtot += dq
            nbusy += db
            if rc != DONE:
                break
        else:
            # ---------------- arrival of a class-i task: an idle machine that may take it (chosen by
            # machine_rule) starts it, else it waits
            i = sl - 2 * M
            arrivals += 1
            ev_schedule(evA, i, t - math.log(uniform(st, S_ARR)) / alpha[i], PRIO_ARRIVAL)
            size = draw(st, S_EXEC, exec_kind, exec_par)  # at arrival: common to every policy
            size_sum += size
            jj = -1
            if ql[i] == 0:  # invariant: a non-empty queue has no eligible idle machine
                if expand:
                    jj = find_machine_x(mrule, tie, muT, xm, xl, i, st)
                    if jj >= 0:
                        x_remove(xl, xm, col[jj], jj)
                else:
                    jj = find_machine(mrule, tie, muT, mi, mf, idl, i, E, st)
                    if jj >= 0:
                        idle_remove(mi, idl, col[jj], jj)
            if jj >= 0:
                start_task(mi, mf, muT, a_true, chn, step, evT, st, starts, jj, i, t, size, t)
                nbusy += 1
                continue
            if qtot + nbusy >= bound or not q_push(qv, i, t, size, False):
                s.ctl.status[0] = BOUND
                rc = BOUND
                break
            if qtot + nbusy + 1 > peak:
                peak = qtot + nbusy + 1
            qtot += 1
    out.events[0] += events
    out.arrivals[0] += arrivals
    out.size_sum[0] = size_sum
    out.peak[0] = peak
    return rc


# ----------------------------------------------------------------------------- kernels per policy family
#: the functions that (transitively) call the class selection, specialised per family, callees first
_SPECIALISED = ("sel_user", "_select", "scan", "scan_x", "resume", "on_avail", "run")
#: family name -> the value bound as ``_FAMILY``
FAMILIES = {"plain": PLAIN, "lp": LP}


def family(code: int) -> str:
    """The kernel family of a built-in policy code."""
    return "lp" if code in (LPAS_DG, LPAS_DG_ROBUST) else "plain"


def kernels(code: int, user=None):
    """``(init, run)``: the kernel of a built-in policy's family, or of a user pull policy.

    Each is :func:`run` (with :func:`scan`, :func:`scan_x`, :func:`resume`,
    :func:`on_avail` and the class selection) compiled again with ``_FAMILY`` bound to the family --
    and for a user policy ``_user_pull`` bound to the user's compiled function --
    and cached on disk by
    :func:`hetsched.sim.core.kernels.specialise` (a user policy keyed by its
    source, :func:`~hetsched.sim.core.kernels.policy_key`).
    """
    import sys

    from ..core.kernels import policy_key, specialise

    mod = sys.modules[__name__]
    if user is None:
        fam = family(code)
        fn = specialise(mod, _SPECIALISED, {"_FAMILY": FAMILIES[fam]}, key=("desktop", fam),
                        label=f"desktop-{fam}", packages=("hetsched.policies", "hetsched.sim.core"))
        return init, fn["run"]
    compiled = user.compiled()
    key = policy_key(user.fn)
    fn = specialise(mod, _SPECIALISED, {"_FAMILY": USER_FAMILY, "_user_pull": compiled},
                    key=("desktop-user", key or user.token), label=f"desktop-user-{user.name}",
                    packages=("hetsched.policies", "hetsched.sim.core"), cache=key is not None)
    return init, fn["run"]


def new_event_list(M: int, N: int):
    """The event lists of one replication (:class:`Events`): task timers (``M`` slots),
    availability timers (``M``), arrivals (``N``)."""
    return Events(ev_new(M), ev_new(M), ev_new(N))
