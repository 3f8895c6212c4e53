"""Compiled replication kernel of the immediate-mode mapping model (thesis §1.3.1, §2.2.2).

The kernel contract (every model of :mod:`hetsched.sim` follows it):
:mod:`.model` validates once and builds :class:`Params` (arrays and scalars
of the system and policy); :func:`new_state` and :func:`new_out` allocate a
replication's :class:`State` and :class:`Out`; :func:`run` ``(p, s, o, st)``
simulates one replication, compiled, no checks, writing ``o``; :mod:`.run`
summarises. ``st`` are the xoshiro streams of :mod:`hetsched.sim.core.rng`.

One kernel per policy family (and tie rule)
-------------------------------------------
:func:`run` calls ``_view`` once and ``_select`` for every arrival; both are
*bound at compile time* (:func:`kernel_for`, through
:func:`hetsched.sim.core.kernels.specialise`) to one of the family selections
below (or a user's compiled policy), so the kernel carries no switch over
policies per event. The family of least-ECT policies (MCT, KPB, LPAS: most
runs) also has its tie rule bound (the constant ``_TIE``): its scan differs
by rule (branch-free first minimum for ``lowest``, collected ties otherwise).
The other families read the rule from ``Params.tie``: binding it there was
measured to change nothing (LPAS-2/k, Guided-LPAS, MET: within 1.5 %), and
each bound rule is one more kernel to compile. So there are 8 built-in
kernels, each cached on disk; ``hetsched warmup`` compiles them ahead of time.

Built on the simulation core: the event list of
:mod:`hetsched.sim.core.events` (slot ``i`` = next arrival of class ``i``,
priority 1; slot ``N + j`` = completion at machine ``j``, priority 0, so at
equal times completions come first), the streams, the variates of
:mod:`hetsched.sim.core.variates`, the task pool of
:mod:`hetsched.sim.core.pool`, the tie chooser of :mod:`hetsched.sim.core.ties`
and the segment averages of :mod:`hetsched.sim.core.instability`.

Design (the performance tricks, named where they are made):

* **FCFS queues** -- one queue per machine in one pool of task records
  (class, unit size, arrival time, id): memory proportional to the
  instability bound, not to bound x machines.
* **Expected completion time** ``ECT_ij = work_j + w_ij``, ``work_j = sum_i'
  Q_i'j w_i'j`` with ``w_ij = 1/mu_ij`` in a time unit ``1/L`` chosen so that,
  for rates that are small decimals (every thesis system but 2.C2-2.H), the
  weights ``w_ij = L/mu_ij`` are integers: sums are exact and ties are exact
  ties. A user policy receives ``mu_pol = mu / L`` and this same ``work``
  array, so its ``work[j] + 1.0 / mu[i, j]`` is the built-in ECT bit for bit.
  Otherwise (``L = 1``) ``work_j`` is recomputed from the integer counts
  ``Q_.j`` in a fixed order whenever they change, so machines with equal
  counts have bit-equal workloads; when every sum is exact (integer weights,
  or ``1/mu`` short binary fractions) the running sum is updated in place
  instead (``incremental``).
* **Ties** -- machines whose ``ECT`` values are equal (bit-equal) are tied:
  they are collected during the scan and the tie rule picks one
  (:func:`~hetsched.sim.core.ties.tie_pick`; one draw from the tie stream for
  ``random``); with ``lowest`` the scan keeps the first minimum, branch-free.
* **Common random numbers** -- the size ``X`` (unit mean) of the ``k``-th task
  of class ``i`` comes from class ``i``'s own execution stream and is drawn at
  arrival; its execution time on machine ``j`` is ``X / mu_ij``. Arrivals of
  class ``i`` use stream ``i``; the policy's draws and tie-breaking have their
  own streams. So two policies see the same arrivals and the same task sizes.
* **Time averages** per class are sums of the tasks' times in system within
  ``[warmup, end]`` (added at completion, and for the tasks left at the end),
  so an event costs no per-class bookkeeping; the total number in system goes
  into the segment averages of the instability rule.
* **Progress** -- the event count is published to ``o.ints[O_EVENTS]`` at
  every event (:func:`hetsched.sim.core.guard.publish`), so a run of a user
  policy in a watched child can be stopped when it stops moving.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from ..core.events import ev_cancel, ev_new, ev_schedule
from ..core.guard import publish, readonly
from ..core.instability import NSEG, seg_close, seg_new, seg_observe
from ..core.pool import pool_alloc, pool_append, pool_new_jit, pool_pop
from ..core.rng import expo, uniform
from ..core.ties import TIE_LOWEST, TIE_NAMES, TIE_RANDOM, tie_pick
from ..core.variates import DET, EXP, draw

# families of built-in policies (policies.py maps each policy to its family)
F_ARGMIN, F_MET, F_STATIC, F_TWO, F_GUIDED, F_GUIDED_TWO, F_USER = range(7)
FAMILY_NAMES = {F_ARGMIN: "argmin", F_MET: "met", F_STATIC: "static", F_TWO: "two-choices", F_GUIDED: "guided",
                F_GUIDED_TWO: "guided-two-choices", F_USER: "user"}
# status
ST_OK, ST_BOUND, ST_EXHAUSTED, ST_BAD_CHOICE, ST_RECORDS_FULL = 0, 1, 2, 3, 4
# o.ints layout
O_STATUS, O_EVENTS, O_ARRIVALS, O_COMPLETIONS, O_CONTACTED, O_BINDS, O_PEAK, O_BAD_CLASS, O_BAD_VALUE = range(9)
O_DONE = 9  # completions per class start here
PRIO_COMPLETION, PRIO_ARRIVAL = 0, 1

#: the model, made once per (system, policy, options) by :func:`hetsched.sim.mapping.model.prepare`
Params = namedtuple("Params", [
    "alpha",          # (N,) arrival rates
    "mu",             # (N, M) rates
    "mu_pol",         # (N, M) read-only: mu / L, what a user policy sees
    "w",              # (N, M) ECT weights (inf where mu = 0)
    "winv",           # (N, M) w, 0 where mu = 0
    "cand",           # (N, M) candidate machines of class i in cand[i, :ncand[i]] (ascending)
    "ncand",          # (N,)
    "wc",             # (N, M) wc[i, k] = w[i, cand[i, k]]
    "pw",             # (N, M) sampling weights delta* mu (LP-Static, two choices)
    "pi",             # (N, M) p_ij of (2.6) (Guided-LPAS)
    "cmat",           # (N, M) Guided-LPAS constants C_ij
    "dist",           # execution-time code (variates)
    "dpar",           # (4,) its parameters
    "gen",            # (N, K) pre-drawn general sizes (dist GENERAL)
    "incremental",    # running workload sums are exact
    "horizon",
    "warmup",
    "max_in_system",  # instability bound
    "tie",            # tie rule (read where the kernel does not bind one: _TIE < 0)
    "tr_t",           # trace replay: arrival times (empty: Poisson arrivals)
    "tr_x",           # sizes
    "tr_c",           # classes
])
#: one replication's state (allocated inside the kernel by :func:`new_state`: the compiler then knows its arrays
#: alias nothing else)
State = namedtuple("State", ["pool", "qc", "qx", "qa", "qid", "Q", "W", "assigned", "arrived", "area", "done",
                             "gpos"])
#: one replication's outputs (see :func:`run`); records arrays are empty unless asked for
Out = namedtuple("Out", ["q", "resp", "seg", "ints", "assigned", "tend", "work",
                         "rec_a", "rec_s", "rec_e", "rec_m", "rec_c"])


def n_streams(N: int) -> int:
    """Streams of a replication: arrivals of class i (0..N-1), sizes of class i (N..2N-1), policy, ties."""
    return 2 * N + 2


@njit(cache=True, inline="always")
def new_state(N, M, max_in_system):
    """A replication's state (compiled, inlined into the kernel)."""
    cap = max_in_system + 2
    return State(pool_new_jit(cap, M), np.empty(cap, np.int64), np.empty(cap), np.empty(cap),
                 np.empty(cap, np.int64), np.zeros((N, M), np.int64), np.zeros(M), np.zeros((N, M), np.int64),
                 np.zeros(N, np.int64), np.zeros(N), np.zeros(N, np.int64), np.zeros(N, np.int64))


def new_out(N: int, M: int, n_records: int = 0, zeros=np.zeros) -> Out:
    """Output arrays (``zeros``: e.g. :func:`hetsched.sim.core.guard.shared_zeros` for a watched child)."""
    rec = [zeros(n_records), zeros(n_records), zeros(n_records), zeros(n_records, np.int64),
           zeros(n_records, np.int64)]
    if n_records:
        for a in rec[:3]:
            a[:] = np.nan
        for a in rec[3:]:
            a[:] = -1
    return Out(zeros(N), zeros(N), zeros(NSEG), zeros(O_DONE + N, np.int64), zeros((N, M), np.int64), zeros(1),
               zeros(M), *rec)


# ----------------------------------------------------------------------------- selections
@njit(cache=True, inline="always")
def _argmin_ect(i, lst, row, cnt, W, w, use_state, tie, st, s_tie, buf):
    """Machine of ``lst[row, :cnt]`` (ascending indices) with least ``W[j] + w[i, j]`` (``w`` alone without state).

    (2-D list + row index rather than a row slice: a slice would cost a
    reference-count update per call in the hot loop.) Ties: equal values.
    """
    best = lst[row, 0]
    bv = w[i, best]
    if use_state:
        bv = W[best] + bv
    nt = 1
    buf[0] = best
    for k in range(1, cnt):
        j = lst[row, k]
        v = w[i, j]
        if use_state:
            v = W[j] + v
        if v < bv:
            best = j
            bv = v
            nt = 1
            buf[0] = j
        elif v == bv and tie != TIE_LOWEST:
            buf[nt] = j
            nt += 1
    return tie_pick(tie, buf, nt, st, s_tie)


@njit(cache=True, inline="always")
def _argmin_fast(i, lst, cnt, W, wc):
    """Least ``W[j] + wc[i, k]`` over ``j = lst[i, k]``, lowest index on ties (``wc`` gathered once:
    one indirect load per candidate)."""
    best = lst[i, 0]
    bv = W[best] + wc[i, 0]
    for k in range(1, cnt):
        j = lst[i, k]
        v = W[j] + wc[i, k]
        less = v < bv  # selects, no branch (see _argmin_fast_ties)
        best = j if less else best
        bv = v if less else bv
    return best


@njit(cache=True, inline="always")
def _argmin_fast_ties(i, lst, cnt, W, wc, tie, st, s_tie, buf):
    """:func:`_argmin_fast` with ``random`` or ``highest`` ties: the tied machines are collected in ``buf``."""
    # branch-free body (selects, an unconditional store): ties are data-dependent, so a
    # branchy three-way compare would be mispredicted on most arrivals
    bv = W[lst[i, 0]] + wc[i, 0]
    nt = 1
    buf[0] = lst[i, 0]
    for k in range(1, cnt):
        j = lst[i, k]
        v = W[j] + wc[i, k]
        less = v < bv
        bv = v if less else bv
        nt = 0 if less else nt
        buf[nt] = j  # kept only if j is (one of) the best so far
        nt += 1 if v == bv else 0
    return tie_pick(tie, buf, nt, st, s_tie)


@njit(cache=True)
def _sample(i, lst, row, cnt, pw, total, skip, st, s_pol):
    """One machine of ``lst[row, :cnt]`` with probability ``pw[i, j] / total`` (``skip`` excluded)."""
    u = uniform(st, s_pol) * total
    acc = 0.0
    last = -1
    for k in range(cnt):
        j = lst[row, k]
        if j == skip:
            continue
        last = j
        acc += pw[i, j]
        if u <= acc:
            return j
    return last  # rounding at the end of the cumulative sum


@njit(cache=True)
def _two_choices(i, lst, row, cnt, pw, W, w, tie, st, s_pol, s_tie, pair, buf):
    """Power of two choices among ``lst[row, :cnt]`` with weights ``pw`` (LPAS-2/k, §2.3.1)."""
    if cnt <= 2:
        return _argmin_ect(i, lst, row, cnt, W, w, True, tie, st, s_tie, buf)
    total = 0.0
    for k in range(cnt):
        total += pw[i, lst[row, k]]
    j1 = _sample(i, lst, row, cnt, pw, total, -1, st, s_pol)
    j2 = _sample(i, lst, row, cnt, pw, total - pw[i, j1], j1, st, s_pol)
    if j1 < j2:
        pair[0, 0] = j1
        pair[0, 1] = j2
    else:
        pair[0, 0] = j2
        pair[0, 1] = j1
    return _argmin_ect(i, pair, 0, 2, W, w, True, tie, st, s_tie, buf)


# A family is two compiled functions, bound into the kernel together:
#   view_F(p, s, buf, tmp, pair) -> a small tuple of the arrays the family reads, made once per replication;
#   select_F(v, st, i, t, tie, s_pol, s_tie) -> (machine, contacted, binds) for a class-i arrival at t.
# (A selection takes that small tuple, not the Params/State tuples: passing a tuple of twenty arrays to a
# function per event costs a reference-count update per array -- measured: 25 % of the kernel's speed.)
# ``buf`` (M), ``tmp`` (1 x M) and ``pair`` (1 x 2) are scratch. The contract of each policy: policies.py.
@njit(cache=True, inline="always")
def view_argmin(p, s, buf, tmp, pair):
    return p.cand, p.ncand, p.wc, s.W, buf


@njit(cache=True, inline="always")
def select_argmin(v, st, i, t, tie, s_pol, s_tie):
    """MCT, KPB, LPAS: least ECT over the candidates."""
    cand, ncand, wc, W, buf = v
    if tie == TIE_LOWEST:
        return _argmin_fast(i, cand, ncand[i], W, wc), ncand[i], 0
    return _argmin_fast_ties(i, cand, ncand[i], W, wc, tie, st, s_tie, buf), ncand[i], 0


@njit(cache=True, inline="always")
def view_met(p, s, buf, tmp, pair):
    return p.cand, p.ncand, p.w, s.W, buf


@njit(cache=True, inline="always")
def select_met(v, st, i, t, tie, s_pol, s_tie):
    """MET: least ``1/mu_ij`` (no state)."""
    cand, ncand, w, W, buf = v
    return _argmin_ect(i, cand, i, ncand[i], W, w, False, tie, st, s_tie, buf), 0, 0


@njit(cache=True, inline="always")
def view_static(p, s, buf, tmp, pair):
    return p.cand, p.ncand, p.pw


@njit(cache=True, inline="always")
def select_static(v, st, i, t, tie, s_pol, s_tie):
    """LP-Static: machine ``j`` with probability ``p_ij``."""
    cand, ncand, pw = v
    total = 0.0
    for k in range(ncand[i]):
        total += pw[i, cand[i, k]]
    return _sample(i, cand, i, ncand[i], pw, total, -1, st, s_pol), 0, 0


@njit(cache=True, inline="always")
def view_two(p, s, buf, tmp, pair):
    return p.cand, p.ncand, p.pw, p.w, s.W, pair, buf


@njit(cache=True, inline="always")
def select_two(v, st, i, t, tie, s_pol, s_tie):
    """LPAS-2/k: two machines of ``S_i`` drawn with weights ``p_ij``, the one with least ECT."""
    cand, ncand, pw, w, W, pair, buf = v
    j = _two_choices(i, cand, i, ncand[i], pw, W, w, tie, st, s_pol, s_tie, pair, buf)
    return j, min(ncand[i], 2), 0


@njit(cache=True, inline="always")
def view_guided(p, s, buf, tmp, pair):
    return p.cand, p.ncand, p.pi, p.cmat, p.pw, p.w, s.W, s.assigned, s.arrived, tmp, pair, buf


@njit(cache=True, inline="always")
def _guided_set(i, t, cand, ncand, pi, cmat, assigned, arrived, tmp):
    """``T_i(t) = {j in S_i : a_ij(t-) < pi_ij a_i(t) + C_ij sqrt(t)}`` (§2.4) into ``tmp[0, :cnt]``; ``cnt``.

    (``arrived[i]`` already counts this arrival: ``a_i(t)``; ``assigned`` is ``a_ij(t-)``.)
    """
    rt = np.sqrt(t)
    cnt = 0
    for k in range(ncand[i]):
        jj = cand[i, k]
        if assigned[i, jj] < pi[i, jj] * arrived[i] + cmat[i, jj] * rt:
            tmp[0, cnt] = jj
            cnt += 1
    if cnt == 0:  # cannot happen in exact arithmetic (sum_j pi_ij = 1); guard rounding
        for k in range(ncand[i]):
            tmp[0, k] = cand[i, k]
        cnt = ncand[i]
    return cnt


@njit(cache=True, inline="always")
def select_guided(v, st, i, t, tie, s_pol, s_tie):
    """Guided-LPAS: least ECT over ``T_i(t)``; ``binds`` when condition (iii) excludes LPAS's choice."""
    cand, ncand, pi, cmat, pw, w, W, assigned, arrived, tmp, pair, buf = v
    cnt = _guided_set(i, t, cand, ncand, pi, cmat, assigned, arrived, tmp)
    j = _argmin_ect(i, tmp, 0, cnt, W, w, True, tie, st, s_tie, buf)
    binds = 0
    if cnt < ncand[i]:
        jl = _argmin_ect(i, cand, i, ncand[i], W, w, True, TIE_LOWEST, st, s_tie, buf)
        jg = _argmin_ect(i, tmp, 0, cnt, W, w, True, TIE_LOWEST, st, s_tie, buf)
        if W[jl] + w[i, jl] < W[jg] + w[i, jg]:
            binds = 1
    return j, cnt, binds


@njit(cache=True, inline="always")
def select_guided_two(v, st, i, t, tie, s_pol, s_tie):
    """Guided-LPAS-2/k: LPAS-2/k over ``T_i(t)``."""
    cand, ncand, pi, cmat, pw, w, W, assigned, arrived, tmp, pair, buf = v
    cnt = _guided_set(i, t, cand, ncand, pi, cmat, assigned, arrived, tmp)
    j = _two_choices(i, tmp, 0, cnt, pw, W, w, tie, st, s_pol, s_tie, pair, buf)
    return j, min(cnt, 2), 1 if cnt < ncand[i] else 0


#: family -> (view, select)
SELECTIONS = {F_ARGMIN: (view_argmin, select_argmin), F_MET: (view_met, select_met),
              F_STATIC: (view_static, select_static), F_TWO: (view_two, select_two),
              F_GUIDED: (view_guided, select_guided), F_GUIDED_TWO: (view_guided, select_guided_two)}


@njit(cache=True, inline="always")
def view_user(p, s, buf, tmp, pair):
    """What a user policy sees: ``mu / L`` and read-only views of ``n`` (queue lengths) and ``work``."""
    return p.mu_pol, readonly(s.pool.qlen), readonly(s.W)


def user_selection(fn, uses_u: bool = True):
    """``(view, select)`` calling the user's compiled ``fn(i, mu, n, work, u)`` with read-only state.

    ``uses_u`` false: the function never reads ``u``, so no draw is made for it.
    """
    if uses_u:
        @njit(inline="always")
        def select_user(v, st, i, t, tie, s_pol, s_tie):
            return fn(i, v[0], v[1], v[2], uniform(st, s_pol)), 0, 0
    else:
        @njit(inline="always")
        def select_user(v, st, i, t, tie, s_pol, s_tie):
            return fn(i, v[0], v[1], v[2], 0.5), 0, 0
    return view_user, select_user


# bound at compile time by kernel_for (these defaults make the module's own `run` the LPAS/MCT kernel, ties read
# from Params.tie)
_view = view_argmin
_select = select_argmin
_TIE = -1
_USER = False


# ----------------------------------------------------------------------------- the event loop
@njit(cache=True)
def run(p, o, st):
    """Simulate one replication; compiled, no checks, writes ``o`` (:class:`Out`).

    ``o.q[i]`` time-average number of class ``i`` on ``[warmup, horizon]``;
    ``o.resp[i]`` sum of completion times of class ``i`` tasks arrived after
    ``warmup`` and finished before ``horizon``; ``o.seg`` time-average total
    number in system on ``NSEG`` equal segments; ``o.ints`` see ``O_*``.

    Trace replay (issue 13) when ``p.tr_t`` is not empty: task ``k`` arrives
    at ``tr_t[k]`` (sorted) with class ``tr_c[k]`` and size ``tr_x[k]``; event
    slot 0 is then the next trace arrival (no Poisson stream, no size
    stream), and the run ends when the event list is empty (``horizon`` = the
    largest float). Per-task records when ``o.rec_a`` is not empty: task ``k``
    (arrival order) gets ``rec_a/rec_s/rec_e[k]`` arrival, start, end (``nan``
    until it happens) and ``rec_m[k]`` its machine; a run with more tasks than
    ``rec_a`` holds stops with ``ST_RECORDS_FULL``. ``o.tend[0]`` is the time
    the statistics were closed at; ``o.work[j]`` (trace replay only) the work
    (sum of execution times ``x / mu_ij``) the policy sent to machine ``j``.
    """
    tie = _TIE if _TIE >= 0 else p.tie  # bound at compile time, or the run's rule
    alpha, mu, winv = p.alpha, p.mu, p.winv
    s = new_state(alpha.shape[0], mu.shape[1], p.max_in_system)
    N = alpha.shape[0]
    M = mu.shape[1]
    horizon, warmup = p.horizon, p.warmup
    incremental, dist, dpar, gen = p.incremental, p.dist, p.dpar, p.gen
    tr_t, tr_x, tr_c = p.tr_t, p.tr_x, p.tr_c
    pl, qc, qx, qa, qid = s.pool, s.qc, s.qx, s.qa, s.qid
    head, qlen = pl.head, pl.qlen
    Q, W, assigned, arrived, area, done_c, gpos = s.Q, s.W, s.assigned, s.arrived, s.area, s.done, s.gpos
    ints = o.ints
    # scratch of the selections, allocated here: the compiler then knows they alias nothing else
    buf = np.empty(M, np.int64)
    tmp = np.empty((1, M), np.int64)
    pair = np.empty((1, 2), np.int64)
    s_pol = 2 * N
    s_tie = 2 * N + 1
    v = _view(p, s, buf, tmp, pair)
    ev = ev_new(N + M)
    # --- trace replay / records (issue 13)
    ntr = tr_t.shape[0]
    trace = ntr > 0
    nrec = o.rec_a.shape[0]
    rec = nrec > 0
    tpos = 0  # next trace task; also the id of the next task in either mode
    t_done = 0.0
    if trace:
        ev_schedule(ev, 0, tr_t[0], PRIO_ARRIVAL)
    else:
        for i in range(N):
            ev_schedule(ev, i, expo(st, i) / alpha[i], PRIO_ARRIVAL)
    ht = ev.ht
    hs = ev.hs
    sg = seg_new(warmup, horizon)
    n = 0
    peak = 0
    events = 0
    contacted = 0
    binds = 0
    status = ST_OK
    t = 0.0
    while True:
        t = ht[0]
        if t > horizon:
            break
        code = hs[0]
        events += 1
        publish(ints, O_EVENTS, events)
        seg_observe(sg, t, n)
        if code < N:
            # ---------------- arrival of class i
            i = code
            if trace:
                i = tr_c[tpos]
            arrived[i] += 1
            j, dc, db = _select(v, st, i, t, tie, s_pol, s_tie)
            contacted += dc
            binds += db
            if _USER:
                if j < 0 or j >= M or not mu[i, j] > 0.0:
                    status = ST_BAD_CHOICE
                    ints[O_BAD_CLASS] = i
                    ints[O_BAD_VALUE] = j
                    break
            assigned[i, j] += 1
            # task size (unit mean), from class i's execution stream
            if trace:
                x = tr_x[tpos]
            elif dist == EXP:
                x = expo(st, N + i)
            elif dist == DET:
                x = 1.0
            elif dist < 4:
                x = draw(st, N + i, dist, dpar)
            else:
                if gpos[i] >= gen.shape[1]:
                    status = ST_EXHAUSTED
                    break
                x = gen[i, gpos[i]]
                gpos[i] += 1
            if rec and tpos >= nrec:
                status = ST_RECORDS_FULL
                break
            k = pool_alloc(pl)  # never -1: n <= max_in_system < cap
            qc[k] = i
            qx[k] = x
            qa[k] = t
            qid[k] = tpos
            if rec:
                o.rec_a[tpos] = t
                o.rec_m[tpos] = j
                o.rec_c[tpos] = i
            tpos += 1
            pool_append(pl, j, k)
            n += 1
            if n > peak:
                peak = n
            Q[i, j] += 1
            if incremental:  # every sum is exact: the running sum equals the recomputed one
                W[j] += winv[i, j]
            else:  # recompute from the counts in a fixed order (bit-equal for equal counts)
                acc = 0.0
                for c in range(N):
                    acc += Q[c, j] * winv[c, j]
                W[j] = acc
            # next arrival of class i: the top slot moves down (one sift-down)
            if not trace:
                ev_schedule(ev, i, t + expo(st, i) / alpha[i], PRIO_ARRIVAL)
            elif tpos < ntr:
                ev_schedule(ev, 0, tr_t[tpos], PRIO_ARRIVAL)
            else:
                ev_cancel(ev, 0)
            if trace:
                o.work[j] += x / mu[i, j]
            if qlen[j] == 1:
                ev_schedule(ev, N + j, t + x / mu[i, j], PRIO_COMPLETION)
                if rec:
                    o.rec_s[qid[k]] = t
            if n > p.max_in_system:
                status = ST_BOUND
                break
        else:
            # ---------------- completion at machine j
            j = code - N
            k = pool_pop(pl, j)  # its fields stay readable until the next alloc
            c = qc[k]
            if qa[k] >= warmup:
                o.resp[c] += t - qa[k]
                done_c[c] += 1
            if rec:
                o.rec_e[qid[k]] = t
            t_done = t
            if t > warmup:  # time this task spent in system within [warmup, t]
                area[c] += t - max(qa[k], warmup)
            n -= 1
            Q[c, j] -= 1
            if incremental:
                W[j] -= winv[c, j]
            else:
                acc = 0.0
                for cc in range(N):
                    acc += Q[cc, j] * winv[cc, j]
                W[j] = acc
            if qlen[j] > 0:
                k = head[j]
                ev_schedule(ev, code, t + qx[k] / mu[qc[k], j], PRIO_COMPLETION)
                if rec:
                    o.rec_s[qid[k]] = t
            else:
                ev_cancel(ev, code)
    # --- close the time averages at the end (horizon, or the stopping time)
    t_end = horizon if status == ST_OK else max(t, warmup)
    if trace and status == ST_OK:  # every task done: close at the last completion
        t_end = max(t_done, warmup)
    o.tend[0] = t_end
    span = max(t_end - warmup, 1e-300)
    if t_end > warmup:  # tasks still in system at the end
        for j in range(M):
            k = head[j]
            for _ in range(qlen[j]):
                area[qc[k]] += t_end - max(qa[k], warmup)
                k = pl.nxt[k]
    for i in range(N):
        o.q[i] = area[i] / span
    if status == ST_OK and not trace:
        seg_close(sg, horizon, n, o.seg)
    ints[O_STATUS] = status
    ints[O_EVENTS] = events
    ints[O_ARRIVALS] = arrived.sum()
    ints[O_COMPLETIONS] = done_c.sum()
    ints[O_CONTACTED] = contacted
    ints[O_BINDS] = binds
    ints[O_PEAK] = peak
    for i in range(N):
        ints[O_DONE + i] = done_c[i]
        for m in range(M):
            o.assigned[i, m] = assigned[i, m]


# ----------------------------------------------------------------------------- kernels per family and tie rule
def kernel_for(family: int, tie: int, user=None):
    """The compiled :func:`run` with ``_view``/``_select`` bound to a built-in family (``F_*``) -- and, for the
    least-ECT family, ``_TIE`` to the tie rule -- or to a
    :class:`~hetsched.sim.mapping.policies.MappingPolicy` (``user``; the tie rule does not apply).

    Compiled once per process and cached on disk (:mod:`hetsched.sim.core.kernels`): a user policy by its
    content (:func:`~hetsched.sim.core.kernels.policy_key`), so a new process, or a notebook restart,
    reuses it; a policy that cannot be keyed is compiled in memory, once per process.
    """
    import sys

    from ..core.kernels import policy_key, specialise

    mod = sys.modules[__name__]
    pkgs = ("hetsched.sim.core", "hetsched.policies")
    if user is None:
        bound = int(tie) if family == F_ARGMIN else -1
        rule = TIE_NAMES[bound] if bound >= 0 else "any"
        view, select = SELECTIONS[family]
        return specialise(mod, ["run"], {"_view": view, "_select": select, "_TIE": bound, "_USER": False},
                          key=("mapping", FAMILY_NAMES[family], rule),
                          label=f"mapping-{FAMILY_NAMES[family]}-ties-{rule}", packages=pkgs)["run"]
    ukey = policy_key(user.fn)
    view, select = user_selection(user.compiled(), getattr(user, "uses_u", True))
    return specialise(mod, ["run"], {"_view": view, "_select": select, "_TIE": -1, "_USER": True},
                      key=("mapping-user", ukey, bool(getattr(user, "uses_u", True))),
                      label=f"mapping-user-{user.name}", packages=pkgs, cache=ukey is not None)["run"]


def all_builtin_kernels():
    """``(family, tie)`` of every built-in kernel (what ``hetsched warmup`` compiles): the least-ECT family
    once per tie rule, every other family once (its tie rule read at run time)."""
    out = [(F_ARGMIN, t) for t in sorted(TIE_NAMES)]
    return out + [(f, TIE_LOWEST) for f in (F_MET, F_STATIC, F_TWO, F_GUIDED, F_GUIDED_TWO)]
