"""Compiled replication kernel of the desktop-grid model (see :mod:`hetsched.sim.desktop`).

Compiled, no checks, no allocation in the hot loop. The entry points take five
arguments: the model ``m`` (:class:`Model`, arrays made once by
:func:`hetsched.sim.desktop.model.prepare`), the replication state ``s``
(:class:`State`), the LP state ``lp`` (:class:`LPState`), the event list
``ev`` (:mod:`hetsched.sim.core.events`) and the xoshiro streams ``st``
(:mod:`hetsched.sim.core.rng`). :func:`init` draws the initial state,
:func:`run` simulates. The kernel is *resumable*: all state lives in those
arrays, and :func:`run` returns ``NEED_SUPPORT`` when the robust (central) LP
support of the current capacity vector is not in its hash table; the Python
side solves that LP, stores the support and calls :func:`run` again.

Built on the core: the event list (three lists of :mod:`hetsched.sim.core.events`,
:class:`Events`: task timers, slot ``j`` per machine, priority 0;
availability timers, slot ``j``, priority 1; arrivals, slot ``i`` per class,
priority 2; the next event is the earliest of the three first events, equal
times in priority order, so the order is ``(time, priority, sequence)`` as in
one list),
the streams, the variates (:func:`hetsched.sim.core.variates.draw`), the LP
tableau (:mod:`hetsched.sim.core.lptab`) and the instability segments.
The class selection is :func:`hetsched.policies.pull.choose` compiled here.

Performance notes (named where made):

* three event lists instead of one: an arrival (half the events) sifts
  through a heap of ``N`` entries, not ``2M + N`` (3.F: 4 instead of 6,004);
  the handled event's slot is rescheduled in place (one sift-down from the
  root), never popped and pushed; a completion followed by a new start on
  the same machine reschedules its slot once;
* the helpers called per event take arrays, not the namedtuples: a call
  passing tuples of ~20 arrays costs more than the work it does;
* no array views in the hot loop: the class selection reads ``muT[j, i]``
  and ``E[c, i]`` in place; the number waiting is kept incrementally;
* the vertex LP of LPAS_DG is re-optimised in place by the dual simplex of
  :mod:`hetsched.sim.core.lptab` (an availability event changes one
  right-hand side: typically 0-2 pivots), refactored every ``REFACTOR``
  pivots to bound round-off;
* CPU-availability chains are simulated only while a machine runs a task, by
  jumping over geometric sojourns; an idle machine's chain is caught up with
  precomputed powers ``P^(2^b)`` when it next starts a task;
* waiting tasks live in one pool of linked FCFS lists (one per class) sized
  by the instability bound, so a run can never exhaust memory.
"""

from __future__ import annotations

import math
import types as _pytypes
from collections import namedtuple

import numpy as np
from numba import njit

from ...policies.pull import choose as _choose_py
from ...policies.pull import qualifies as _qualifies_py
from ...lp import tableau as lptab
from ..core.events import ev_cancel, ev_new, ev_schedule
from ..core.instability import seg_observe
from ..core.rng import uniform
from ..core.variates import draw

# ----------------------------------------------------------------------------- layouts
#: the model: arrays made once per (system, policy, options); ``iopt``/``fopt`` scalars below
Model = namedtuple("Model", ["col", "muT", "mu_colT", "a_true", "a_est0", "chain_id", "Pm", "Ppow", "logstay",
                             "levels", "stat", "alpha", "up_par", "down_par", "exec_par", "iopt", "fopt"])
#: the replication state
State = namedtuple("State", ["mi", "mf", "p_arr", "p_next", "free", "qhead", "qtail", "ql", "head_arr",
                             "chead", "ctail", "cidle", "ninit", "ist", "fst", "sg", "cls_n", "cls_w", "up_time"])
#: the LP state (vertex tableau, robust support table)
LPState = namedtuple("LPState", ["T", "obj", "basis", "cap", "support", "elig_static", "keys_cap", "key_used",
                                 "sup_table"])

#: three event lists of the core, one per kind of event (see the module docstring)
Events = namedtuple("Events", ["task", "avail", "arrival"])

# iopt fields
I_POLICY, I_MRULE, I_RESUB, I_LPMODE, I_TIE, I_FAIL, I_UPK, I_DOWNK, I_EXECK, I_BOUND, I_USES_LP = range(11)
N_IOPT = 11
# fopt fields
F_HORIZON, F_WARMUP, F_INACC, F_STEP = range(4)
N_FOPT = 4
# machine int fields (mi[j, .])
UP, BUSY, CST, CK, PREV, NEXT, TKIND, INIT = range(8)
N_MI = 8
# machine float fields (mf[j, .])
TARR, REM, SEGT, LEVEL, IDLE_SINCE, AEST, SEGEND, UPSINCE = range(8)
N_MF = 8
# ist fields
(EVENTS, PENDING, MISS_SLOT, LP_SOLVES, PIVOTS, AVAIL_EVENTS, RESUB, STATUS, ARRIVALS, PIV_SINCE, SUP_CHANGES,
 LP_FAIL, PEND_MACHINE, TABLE_COUNT, STARTS, LOOKUPS, NFREE, ERR_MACHINE, ERR_VALUE, PEAK, HW) = range(21)
N_IST = 21
# fst fields
T_NOW, LAM = 0, 1
N_FST = 2

# policy codes (hetsched.policies.pull), machine rules, tie rules
FCFS, GCMU, LPAS_DG, LPAS_DG_ROBUST, USER = 0, 1, 2, 3, 4
R_LONGEST_IDLE, R_FASTEST, R_LOWEST_INDEX, R_RANDOM = 0, 1, 2, 3
TIE_LOWEST, TIE_HIGHEST, TIE_RANDOM = 0, 1, 2
TIE_RULES_CODE = {"lowest": TIE_LOWEST, "highest": TIE_HIGHEST, "random": TIE_RANDOM}
# streams
S_ARR, S_EXEC, S_FAIL, S_CHAIN, S_TIE, S_EST, S_USER = range(7)
N_STREAMS = 7
# event priorities
PRIO_TASK, PRIO_AVAIL, PRIO_ARRIVAL = 0, 1, 2

# return codes / status
DONE = 0
NEED_SUPPORT = 1
BOUND = 2
BAD_CHOICE = 3
LP_FAILED = 4

REFACTOR = 200
INF = np.inf

_choose = njit(cache=True)(_choose_py)
_qualifies = njit(cache=True)(_qualifies_py)


# ----------------------------------------------------------------------------- support hash table (robust variant)
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


# ----------------------------------------------------------------------------- class queues (one pool)
@njit(cache=True, inline="always")
def q_slot(s):
    """A free pool slot (recycled first, then never used ones), or -1 when the pool is full."""
    nf = s.ist[NFREE]
    if nf > 0:
        s.ist[NFREE] = nf - 1
        return s.free[nf - 1]
    k = s.ist[HW]
    if k >= s.free.shape[0]:
        return -1
    s.ist[HW] = k + 1
    return k


@njit(cache=True, inline="always")
def q_push_back(s, i, tarr):
    k = q_slot(s)
    if k < 0:
        return False
    s.p_arr[k] = tarr
    s.p_next[k] = -1
    if s.qtail[i] >= 0:
        s.p_next[s.qtail[i]] = k
    else:
        s.qhead[i] = k
        s.head_arr[i] = tarr
    s.qtail[i] = k
    s.ql[i] += 1
    return True


@njit(cache=True, inline="always")
def q_push_sorted(s, i, tarr):
    """Insert keeping arrival order (before the first task that arrived at or after ``tarr``)."""
    k = q_slot(s)
    if k < 0:
        return False
    s.p_arr[k] = tarr
    h = s.qhead[i]
    if h < 0 or s.p_arr[h] >= tarr:
        s.p_next[k] = h
        s.qhead[i] = k
        if h < 0:
            s.qtail[i] = k
        s.head_arr[i] = tarr
    else:
        prev = h
        nxt = s.p_next[prev]
        while nxt >= 0 and s.p_arr[nxt] < tarr:
            prev = nxt
            nxt = s.p_next[prev]
        s.p_next[k] = nxt
        s.p_next[prev] = k
        if nxt < 0:
            s.qtail[i] = k
    s.ql[i] += 1
    return True


@njit(cache=True, inline="always")
def q_pop(s, i):
    k = s.qhead[i]
    v = s.p_arr[k]
    h = s.p_next[k]
    s.qhead[i] = h
    if h < 0:
        s.qtail[i] = -1
    else:
        s.head_arr[i] = s.p_arr[h]
    s.free[s.ist[NFREE]] = k
    s.ist[NFREE] += 1
    s.ql[i] -= 1
    return v


# ----------------------------------------------------------------------------- idle lists (one per LP column)
@njit(cache=True, inline="always")
def idle_add(s, c, j):
    mi = s.mi
    mi[j, NEXT] = -1
    mi[j, PREV] = s.ctail[c]
    if s.ctail[c] >= 0:
        mi[s.ctail[c], NEXT] = j
    else:
        s.chead[c] = j
    s.ctail[c] = j
    s.cidle[c] += 1


@njit(cache=True, inline="always")
def idle_remove(s, c, j):
    mi = s.mi
    p = mi[j, PREV]
    n = mi[j, NEXT]
    if p >= 0:
        mi[p, NEXT] = n
    else:
        s.chead[c] = n
    if n >= 0:
        mi[n, PREV] = p
    else:
        s.ctail[c] = p
    s.cidle[c] -= 1
    mi[j, PREV] = -1
    mi[j, NEXT] = -1
    if mi[j, INIT] == 1:
        mi[j, INIT] = 0
        s.ninit[c] -= 1


@njit(cache=True)
def pick_in_column(s, c, mrule, st):
    """Machine of column ``c`` that pulls first: list head (longest idle; the machines idle
    since time 0 are in tie-rule order), lowest index, or uniform."""
    mi = s.mi
    j = s.chead[c]
    if mrule == R_LOWEST_INDEX:
        k = mi[j, NEXT]
        while k >= 0:
            if k < j:
                j = k
            k = mi[k, NEXT]
    elif mrule == R_RANDOM:
        u = int((1.0 - uniform(st, S_TIE)) * s.cidle[c])
        for _ in range(u):
            j = mi[j, NEXT]
    return j


@njit(cache=True)
def find_machine(mrule, tie, muT, mi, mf, chead, cidle, ninit, i, E, st):
    """Idle available machine that receives an arriving class-``i`` task, or -1.

    ``machine_rule`` ranks machines (longest idle; fastest, then longest idle;
    lowest index; uniform); machines equal under it are tied and the tie rule
    picks one. The only ties of positive probability are machines idle since
    time 0 (``ninit[c]`` of them at the head of column ``c``'s list, already in
    tie-rule order) and, for ``fastest``, identical machines: a column's head
    then stands for ``ninit[c]`` tied machines (weight in the uniform choice).
    """
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
            if tie == TIE_LOWEST:
                if j < best:
                    best = j
            elif tie == TIE_HIGHEST:
                if j > best:
                    best = j
            elif uniform(st, S_TIE) * wtot <= w:
                best = j
    return best


# ----------------------------------------------------------------------------- class selection
@njit(cache=True)
def _no_user_policy(t, qlen, head_arrival, rate, eligible, u):
    return -1


_user_pull = _no_user_policy  # replaced by the user's compiled function in a specialised kernel


@njit(cache=True)
def select(policy, tie, uses_lp, ql, head_arr, muT, ist, j, c, E, t, st):
    """Class machine ``j`` (column ``c``) takes at ``t``; -1 none; -2 a user policy broke its contract.

    (Arrays, not the State tuple, as arguments: a call passing whole tuples of
    arrays costs more than the selection itself.)"""
    if policy == USER:
        ok = False
        for i in range(ql.shape[0]):
            if ql[i] > 0 and muT[j, i] > 0.0 and (not uses_lp or E[c, i]):
                ok = True
                break
        if not ok:
            return -1
        i = _user_pull(t, ql, head_arr, muT[j], E[c], 1.0 - uniform(st, S_USER))
        if not _qualifies(i, ql, muT, j, E, c, uses_lp):
            ist[ERR_MACHINE] = j
            ist[ERR_VALUE] = i
            return -2
        return i
    u = 0.0
    if tie == TIE_RANDOM:
        u = 1.0 - uniform(st, S_TIE)
    return _choose(policy, tie, t, ql, head_arr, muT, j, E, c, u)


# ----------------------------------------------------------------------------- CPU chain
@njit(cache=True)
def chain_catch_up(mi, Ppow, j, cid, k, st):
    d = k - mi[j, CK]
    if d <= 0:
        return
    st_ = mi[j, CST]
    # distribution after d steps, v P^d, in three scalars (no allocation)
    v0 = 1.0 if st_ == 0 else 0.0
    v1 = 1.0 if st_ == 1 else 0.0
    v2 = 1.0 if st_ == 2 else 0.0
    b = 0
    while d > 0:
        if d & 1:
            w0 = v0 * Ppow[cid, b, 0, 0] + v1 * Ppow[cid, b, 1, 0] + v2 * Ppow[cid, b, 2, 0]
            w1 = v0 * Ppow[cid, b, 0, 1] + v1 * Ppow[cid, b, 1, 1] + v2 * Ppow[cid, b, 2, 1]
            w2 = v0 * Ppow[cid, b, 0, 2] + v1 * Ppow[cid, b, 1, 2] + v2 * Ppow[cid, b, 2, 2]
            v0 = w0
            v1 = w1
            v2 = w2
        d >>= 1
        b += 1
    u = 1.0 - uniform(st, S_CHAIN)
    if u < v0:
        st_ = 0
    elif u < v0 + v1:
        st_ = 1
    else:
        st_ = 2
    mi[j, CST] = st_
    mi[j, CK] = k


@njit(cache=True)
def chain_segment_end(logstay, step, k, state, cid, st):
    """End time of the sojourn in ``state`` that covers step ``k`` (geometric extra steps)."""
    ls = logstay[cid, state]
    if ls >= 0.0:
        return INF
    L = math.floor(math.log(uniform(st, S_CHAIN)) / ls)
    return (k + 1 + L) * step


# ----------------------------------------------------------------------------- task start / timer
@njit(cache=True, inline="always")
def schedule_task(mi, mf, j, ev):
    tc = mf[j, SEGT] + mf[j, REM] / mf[j, LEVEL] if mf[j, LEVEL] > 0.0 else INF
    if tc <= mf[j, SEGEND]:
        mi[j, TKIND] = 0
        ev_schedule(ev, j, tc, PRIO_TASK)
    else:
        mi[j, TKIND] = 1
        ev_schedule(ev, j, mf[j, SEGEND], PRIO_TASK)


@njit(cache=True)
def start_task(mi, mf, ist, muT, a_true, chain_id, Ppow, logstay, levels, exec_k, exec_par, step, ev, st,
               j, i, tarr, t):
    mi[j, BUSY] = i
    mf[j, TARR] = tarr
    mf[j, REM] = draw(st, S_EXEC, exec_k, exec_par) / muT[j, i]
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
    ist[STARTS] += 1
    schedule_task(mi, mf, j, ev)


# ----------------------------------------------------------------------------- initial state
@njit(cache=True)
def init(m, s, lp, ev, st):
    """Initial state of one replication: all machines up and idle, chains from their stationary
    laws, estimates, idle lists in tie-rule order, first events, the LP. Returns a status."""
    M = m.col.shape[0]
    N = m.alpha.shape[0]
    mi = s.mi
    mf = s.mf
    tie = m.iopt[I_TIE]
    inacc = m.fopt[F_INACC]
    for j in range(M):
        mi[j, UP] = 1
        mi[j, BUSY] = -1
        mi[j, PREV] = -1
        mi[j, NEXT] = -1
        mi[j, INIT] = 1
        cid = m.chain_id[j]
        if cid >= 0:
            u = 1.0 - uniform(st, S_CHAIN)
            cs = 0
            acc = m.stat[cid, 0]
            while cs < 2 and u >= acc:
                cs += 1
                acc += m.stat[cid, cs]
            mi[j, CST] = cs
        a = m.a_est0[j]
        if inacc > 0.0:
            a = a * (1.0 + inacc * (2.0 * (1.0 - uniform(st, S_EST)) - 1.0))
            a = min(max(a, 0.0), 1.0)
        mf[j, AEST] = a
        mf[j, IDLE_SINCE] = 0.0
    # idle lists: machines idle since time 0 are tied; their list order is the tie rule's
    order = np.arange(M)
    if tie == TIE_HIGHEST:
        order = order[::-1].copy()
    elif tie == TIE_RANDOM:
        for k in range(M - 1, 0, -1):  # Fisher-Yates
            r = int((1.0 - uniform(st, S_TIE)) * (k + 1))
            tmp = order[k]
            order[k] = order[r]
            order[r] = tmp
    for k in range(M):
        j = order[k]
        c = m.col[j]
        idle_add(s, c, j)
        s.ninit[c] += 1
    for j in range(M):
        lp.cap[m.col[j]] += mf[j, AEST]
    # first events
    if m.iopt[I_FAIL] == 1:
        for j in range(M):
            ev_schedule(ev.avail, j, draw(st, S_FAIL, m.iopt[I_UPK], m.up_par[j]), PRIO_AVAIL)
    for i in range(N):
        if m.alpha[i] > 0.0:
            ev_schedule(ev.arrival, i, -math.log(uniform(st, S_ARR)) / m.alpha[i], PRIO_ARRIVAL)
    # the pool of waiting tasks
    s.ist[NFREE] = 0  # pool slots are taken from the high-water mark HW, then recycled
    s.ist[HW] = 0
    s.qhead[:] = -1
    s.qtail[:] = -1
    s.ist[PEND_MACHINE] = -1
    if m.iopt[I_LPMODE] == 1:
        lptab.build(lp.T, lp.obj, lp.basis, m.mu_colT, m.alpha, lp.cap)
        if lptab.primal(lp.T, lp.obj, lp.basis) < 0:
            return LP_FAILED
        _, lam = lptab.support(lp.T, lp.basis, m.mu_colT, lp.support)
        s.fst[LAM] = lam
        s.ist[LP_SOLVES] = 1
    elif m.iopt[I_LPMODE] == 2:
        s.ist[PENDING] = 1
    return DONE


# ----------------------------------------------------------------------------- pulls after a support change
@njit(cache=True)
def scan(m, s, ev, st, E, t):
    """After a support change: idle machines pull (column order) until nothing qualifies.

    Returns the number of tasks started, or -1 when a user policy broke its contract."""
    N = s.ql.shape[0]
    qtot = 0
    for i in range(N):
        qtot += s.ql[i]
    if qtot == 0:
        return 0
    started = 0
    C = s.chead.shape[0]
    mrule = m.iopt[I_MRULE]
    # unpacked once: the helpers take arrays, not tuples of arrays
    policy = m.iopt[I_POLICY]
    tie = m.iopt[I_TIE]
    uses_lp = m.iopt[I_USES_LP] == 1
    exec_k = m.iopt[I_EXECK]
    exec_par = m.exec_par
    step = m.fopt[F_STEP]
    muT = m.muT
    a_true = m.a_true
    chain_id = m.chain_id
    Ppow = m.Ppow
    logstay = m.logstay
    levels = m.levels
    mi = s.mi
    mf = s.mf
    ql = s.ql
    ist = s.ist
    head_arr = s.head_arr
    chead = s.chead
    cidle = s.cidle
    ninit = s.ninit
    for c in range(C):
        while s.cidle[c] > 0:
            j = pick_in_column(s, c, mrule, st)
            i = select(policy, tie, uses_lp, ql, head_arr, muT, ist, j, c, E, t, st)
            if i == -2:
                return -1
            if i < 0:
                break
            idle_remove(s, c, j)
            tarr = q_pop(s, i)
            started += 1
            start_task(mi, mf, ist, muT, a_true, chain_id, Ppow, logstay, levels, exec_k, exec_par, step, ev.task, st, j, i, tarr, t)
    return started


# ----------------------------------------------------------------------------- the event loop
@njit(cache=True)
def run(m, s, lp, ev, st):
    """Compiled, no checks; runs until the horizon, a robust-support miss, the bound or a bad
    user choice; returns ``DONE``, ``NEED_SUPPORT``, ``BOUND`` or ``BAD_CHOICE``."""
    N = m.alpha.shape[0]
    M = m.col.shape[0]
    C = m.mu_colT.shape[0]
    policy = m.iopt[I_POLICY]
    lp_mode = m.iopt[I_LPMODE]
    resub = m.iopt[I_RESUB]
    bound = m.iopt[I_BOUND]
    horizon = m.fopt[F_HORIZON]
    warmup = m.fopt[F_WARMUP]
    inacc = m.fopt[F_INACC]
    step = m.fopt[F_STEP]
    use_lp_sup = policy == LPAS_DG or policy == LPAS_DG_ROBUST or (policy == USER and m.iopt[I_USES_LP] == 1)
    E = lp.support if use_lp_sup else lp.elig_static
    fst = s.fst
    cap = lp.cap
    mrule = m.iopt[I_MRULE]
    evT = ev.task
    evV = ev.avail
    evA = ev.arrival
    # unpacked once: the helpers take arrays, not tuples of arrays
    policy = m.iopt[I_POLICY]
    tie = m.iopt[I_TIE]
    uses_lp = m.iopt[I_USES_LP] == 1
    exec_k = m.iopt[I_EXECK]
    exec_par = m.exec_par
    step = m.fopt[F_STEP]
    muT = m.muT
    a_true = m.a_true
    chain_id = m.chain_id
    Ppow = m.Ppow
    logstay = m.logstay
    levels = m.levels
    mi = s.mi
    mf = s.mf
    ql = s.ql
    ist = s.ist
    head_arr = s.head_arr
    chead = s.chead
    cidle = s.cidle
    ninit = s.ninit

    # ---- resume after a robust-support miss: the Python side filled the table
    if ist[PENDING] == 1:
        s_, hit = table_lookup(cap, lp.keys_cap, lp.key_used)
        if not hit:
            ist[MISS_SLOT] = s_
            return NEED_SUPPORT
        ist[PENDING] = 0
        changed = False
        for c in range(C):
            for i in range(N):
                if lp.support[c, i] != lp.sup_table[s_, c, i]:
                    changed = True
                    lp.support[c, i] = lp.sup_table[s_, c, i]
        jp = ist[PEND_MACHINE]
        ist[PEND_MACHINE] = -1
        t = fst[T_NOW]
        if jp >= 0:
            c = m.col[jp]
            i = select(policy, tie, uses_lp, ql, head_arr, muT, ist, jp, c, E, t, st)
            if i == -2:
                return BAD_CHOICE
            if i >= 0:
                tarr = q_pop(s, i)
                start_task(mi, mf, ist, muT, a_true, chain_id, Ppow, logstay, levels, exec_k, exec_par, step, ev.task, st, jp, i, tarr, t)
            else:
                mf[jp, IDLE_SINCE] = t
                idle_add(s, c, jp)
        if changed and scan(m, s, ev, st, E, t) < 0:
            return BAD_CHOICE

    qtot = 0  # tasks waiting, kept up to date at every push/pop below
    for i in range(N):
        qtot += ql[i]
    nbusy = 0
    for j in range(M):
        if mi[j, BUSY] >= 0:
            nbusy += 1
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
        seg_observe(s.sg, t, qtot + nbusy)
        fst[T_NOW] = t
        ist[EVENTS] += 1

        if sl < M:
            # ------------------------------------------------ task timer of machine j
            j = sl
            if mi[j, TKIND] == 1:
                # CPU-chain state change while running: bank progress, draw next sojourn
                cid = m.chain_id[j]
                mf[j, REM] -= mf[j, LEVEL] * (t - mf[j, SEGT])
                if mf[j, REM] < 0.0:
                    mf[j, REM] = 0.0
                mf[j, SEGT] = t
                so = mi[j, CST]
                stay = m.Pm[cid, so, so]
                u = (1.0 - uniform(st, S_CHAIN)) * (1.0 - stay)
                acc = 0.0
                sn = so
                for y in range(3):
                    if y != so:
                        acc += m.Pm[cid, so, y]
                        sn = y
                        if u < acc:
                            break
                k = int(round(t / step))
                mi[j, CST] = sn
                mi[j, CK] = k
                mf[j, LEVEL] = m.levels[sn]
                mf[j, SEGEND] = chain_segment_end(logstay, step, k, sn, cid, st)
                schedule_task(mi, mf, j, evT)
                continue
            i = mi[j, BUSY]
            ta = mf[j, TARR]
            if ta >= warmup:
                s.cls_n[i] += 1
                s.cls_w[i] += t - ta
            mi[j, BUSY] = -1
            nbusy -= 1
            if m.chain_id[j] >= 0:
                mi[j, CK] = int(math.floor(t / step))
            c = m.col[j]
            i = select(policy, tie, uses_lp, ql, head_arr, muT, ist, j, c, E, t, st) if qtot > 0 else -1
            if i == -2:
                return BAD_CHOICE
            if i >= 0:
                # the new start reschedules slot j: one sift instead of a cancel and a push
                tarr = q_pop(s, i)
                qtot -= 1
                nbusy += 1
                start_task(mi, mf, ist, muT, a_true, chain_id, Ppow, logstay, levels, exec_k, exec_par, step, ev.task, st, j, i, tarr, t)
            else:
                ev_cancel(evT, j)
                mf[j, IDLE_SINCE] = t
                idle_add(s, c, j)
        elif sl < 2 * M:
            # ------------------------------------------------ availability timer of machine j
            j = sl - M
            c = m.col[j]
            ist[AVAIL_EVENTS] += 1
            repaired = -1
            if mi[j, UP] == 1:
                mi[j, UP] = 0
                s.up_time[j] += t - mf[j, UPSINCE]
                if mi[j, BUSY] >= 0:
                    i = mi[j, BUSY]
                    mi[j, BUSY] = -1
                    nbusy -= 1
                    ev_cancel(evT, j)
                    if m.chain_id[j] >= 0:
                        mi[j, CK] = int(math.floor(t / step))
                    ist[RESUB] += 1
                    was = ql[i]
                    if resub == 0:
                        ok = q_push_sorted(s, i, mf[j, TARR])
                    else:
                        ok = q_push_back(s, i, mf[j, TARR])
                    if not ok:
                        ist[STATUS] = BOUND
                        return BOUND
                    qtot += 1
                    if was == 0:
                        jj = find_machine(mrule, tie, muT, mi, mf, chead, cidle, ninit, i, E, st)
                        if jj >= 0:
                            idle_remove(s, m.col[jj], jj)
                            tarr = q_pop(s, i)
                            qtot -= 1
                            nbusy += 1
                            start_task(mi, mf, ist, muT, a_true, chain_id, Ppow, logstay, levels, exec_k, exec_par, step, ev.task, st, jj, i, tarr, t)
                else:
                    idle_remove(s, c, j)
                newcap = cap[c] - mf[j, AEST]
                if newcap < 1e-12:
                    newcap = 0.0
                ev_schedule(evV, j, t + draw(st, S_FAIL, m.iopt[I_DOWNK], m.down_par), PRIO_AVAIL)
            else:
                mi[j, UP] = 1
                mf[j, UPSINCE] = t
                a = m.a_est0[j]
                if inacc > 0.0:
                    a = a * (1.0 + inacc * (2.0 * (1.0 - uniform(st, S_EST)) - 1.0))
                    a = min(max(a, 0.0), 1.0)
                mf[j, AEST] = a
                newcap = cap[c] + a
                repaired = j
                ev_schedule(evV, j, t + draw(st, S_FAIL, m.iopt[I_UPK], m.up_par[j]), PRIO_AVAIL)
            # ---- LP: re-optimise (vertex) or look up (central) the support
            changed = False
            if lp_mode == 1:
                lptab.set_cap(lp.T, lp.obj, cap, N, c, newcap)
                it = lptab.dual(lp.T, lp.obj, lp.basis)
                ist[LP_SOLVES] += 1
                if it < 0:
                    ist[LP_FAIL] += 1
                    lptab.build(lp.T, lp.obj, lp.basis, m.mu_colT, m.alpha, cap)
                    lptab.primal(lp.T, lp.obj, lp.basis)
                    ist[PIV_SINCE] = 0
                else:
                    ist[PIVOTS] += it
                    ist[PIV_SINCE] += it
                    if ist[PIV_SINCE] > REFACTOR:
                        if not lptab.refactor(lp.T, lp.obj, lp.basis, m.mu_colT, m.alpha, cap):
                            lptab.build(lp.T, lp.obj, lp.basis, m.mu_colT, m.alpha, cap)
                            lptab.primal(lp.T, lp.obj, lp.basis)
                        ist[PIV_SINCE] = 0
                changed, lam = lptab.support(lp.T, lp.basis, m.mu_colT, lp.support)
                fst[LAM] = lam
                if not use_lp_sup:
                    changed = False
            elif lp_mode == 2:
                cap[c] = newcap
                ist[LOOKUPS] += 1
                s_, hit = table_lookup(cap, lp.keys_cap, lp.key_used)
                if not hit:
                    ist[PENDING] = 1
                    ist[MISS_SLOT] = s_
                    ist[PEND_MACHINE] = repaired
                    return NEED_SUPPORT
                for cc in range(C):
                    for i in range(N):
                        if lp.support[cc, i] != lp.sup_table[s_, cc, i]:
                            changed = True
                            lp.support[cc, i] = lp.sup_table[s_, cc, i]
            else:
                cap[c] = newcap
            if changed:
                ist[SUP_CHANGES] += 1
            if repaired >= 0:
                i = select(policy, tie, uses_lp, ql, head_arr, muT, ist, j, c, E, t, st)
                if i == -2:
                    return BAD_CHOICE
                if i >= 0:
                    tarr = q_pop(s, i)
                    qtot -= 1
                    nbusy += 1
                    start_task(mi, mf, ist, muT, a_true, chain_id, Ppow, logstay, levels, exec_k, exec_par, step, ev.task, st, j, i, tarr, t)
                else:
                    mf[j, IDLE_SINCE] = t
                    idle_add(s, c, j)
            if changed:
                n = scan(m, s, ev, st, E, t)
                if n < 0:
                    return BAD_CHOICE
                qtot -= n
                nbusy += n
        else:
            # ------------------------------------------------ arrival of class i
            i = sl - 2 * M
            ist[ARRIVALS] += 1
            ev_schedule(evA, i, t - math.log(uniform(st, S_ARR)) / m.alpha[i], PRIO_ARRIVAL)
            jj = -1
            if ql[i] == 0:  # invariant: a non-empty queue has no eligible idle machine
                jj = find_machine(mrule, tie, muT, mi, mf, chead, cidle, ninit, i, E, st)
            if jj >= 0:
                idle_remove(s, m.col[jj], jj)
                nbusy += 1
                start_task(mi, mf, ist, muT, a_true, chain_id, Ppow, logstay, levels, exec_k, exec_par, step, ev.task, st, jj, i, t, t)
            else:
                if qtot + nbusy >= bound or not q_push_back(s, i, t):
                    ist[STATUS] = BOUND
                    return BOUND
                qtot += 1
                if qtot + nbusy > ist[PEAK]:
                    ist[PEAK] = qtot + nbusy
    return DONE


# ----------------------------------------------------------------------------- user policies
_USER_KERNELS: dict = {}
#: the functions that (transitively) call the class selection, specialised per user policy
_SPECIALISED = ("select", "scan", "run")


def kernels(user=None):
    """``(init, run)``: the cached built-in kernel, or one specialised for a user pull policy.

    A user kernel compiles :func:`select`, :func:`scan` and :func:`run` again
    with the global ``_user_pull`` bound to the user's compiled function (a
    direct call, no Python per event); once per policy per process, not cached
    on disk (the function bodies are shared by every user policy).
    """
    if user is None:
        return init, run
    k = _USER_KERNELS.get(user.token)
    if k is None:
        g = dict(globals())
        g["_user_pull"] = user.compiled()
        tag = "".join(ch if ch.isalnum() else "_" for ch in user.name)
        for name in _SPECIALISED:
            py = globals()[name].py_func
            g[name] = njit(cache=False)(_pytypes.FunctionType(py.__code__, g, f"{name}_{tag}", py.__defaults__,
                                                              py.__closure__))
        k = (init, g["run"])
        _USER_KERNELS[user.token] = k
    return k


def new_event_list(M: int, N: int):
    """The event lists of one replication (:class:`Events`): task timers (``M`` slots),
    availability timers (``M``), arrivals (``N``)."""
    return Events(ev_new(M), ev_new(M), ev_new(N))
