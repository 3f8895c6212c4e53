"""Compiled replication kernel of the immediate-mode mapping model (thesis §1.3.1, §2.2.2).

Compiled, no checks: :mod:`.model` validates and builds the arrays. No Python
runs per event. Built on the simulation core: the event list of
:mod:`hetsched.sim.core.events` (slot ``i`` = next arrival of class ``i``,
priority 1; slot ``N + j`` = completion at machine ``j``, priority 0, so at
equal times completions come first), the xoshiro streams of
:mod:`hetsched.sim.core.rng`, the variates of :mod:`hetsched.sim.core.variates`
and the segment averages of :mod:`hetsched.sim.core.instability`.

Design (the performance tricks, named where they are made):

* **FCFS queues** — singly linked lists in one pool of task records (class,
  unit size, arrival time, next) with a free list: memory is proportional to
  the instability bound on the number in system, not to bound x machines.
  Arrays are never re-bound inside the loop, which keeps reference counting
  out of it.
* **Expected completion time** ``ECT_ij = work_j + w_ij``,
  ``work_j = sum_i' Q_i'j w_i'j`` with ``w_ij = 1/mu_ij`` in a time unit
  ``1/L`` chosen so that, for rates that are small decimals (every thesis
  system but 2.C2-2.H), the weights ``w_ij = L/mu_ij`` are integers: sums are
  exact and ties are exact ties. A user policy receives ``mu_pol = mu / L``
  and this same ``work`` array, so its ``work[j] + 1.0 / mu[i, j]`` is the
  built-in ECT bit for bit. Otherwise (``L = 1``) ``work_j`` is recomputed
  from the integer counts ``Q_.j`` in a fixed order whenever they change, so
  machines with equal counts have bit-equal workloads; when every sum is exact
  (integer weights, or ``1/mu`` short binary fractions) the running sum is
  updated in place instead (``incremental``).
* **Ties** — machines whose ``ECT`` values are equal (bit-equal) are tied:
  they are collected during the scan and one is drawn uniformly (one draw from
  the tie stream) for ``random``; the lowest-index case takes a plain scan over
  gathered weights.
* **Common random numbers** — the size ``X`` (unit mean) of the ``k``-th task
  of class ``i`` comes from class ``i``'s own execution stream and is drawn at
  arrival; its execution time on machine ``j`` is ``X / mu_ij``. Arrivals of
  class ``i`` use stream ``i``; the policy's draws and tie-breaking have their
  own streams. So two policies see the same arrivals and the same task sizes.
* **Policies** — the arrival's machine comes from ``_select``: in the
  built-in kernel (cached on disk) :func:`_builtin_select`, one branch per
  policy code; :func:`make_user_kernel` compiles this same loop again with
  ``_select`` bound to a selection that calls the user's compiled function
  (a direct, inlined call; the built-in policies are not compiled into it),
  once per policy per process.
* **Time averages** per class are sums of the tasks' times in system within
  ``[warmup, end]`` (added at completion, and for the tasks left at the end),
  so an event costs no per-class bookkeeping; the total number in system goes
  into the segment averages of the instability rule.
"""

from __future__ import annotations

import types as _pytypes

import numpy as np
from numba import njit

from ..core.events import ev_cancel, ev_new, ev_schedule
from ..core.instability import NSEG, seg_close, seg_new, seg_observe
from ..core.rng import below, expo, uniform
from ..core.variates import DET, EXP, draw

# policy codes (see policies.py)
MET, MCT, KPB, LPAS, LPAS2K, LPSTATIC, GLPAS, GLPAS2K, USER = 0, 1, 2, 3, 4, 5, 6, 7, 8
# tie rules
TIE_LOWEST, TIE_HIGHEST, TIE_RANDOM = 0, 1, 2
# status
ST_OK, ST_BOUND, ST_EXHAUSTED, ST_BAD_CHOICE, ST_RECORDS_FULL = 0, 1, 2, 3, 4
# out_int layout
O_STATUS, O_EVENTS, O_ARRIVALS, O_COMPLETIONS, O_CONTACTED, O_BINDS, O_PEAK, O_BAD_CLASS, O_BAD_VALUE = range(9)
O_DONE = 9  # completions per class start here
# streams
#   0..N-1 arrivals of class i, N..2N-1 sizes of class i, 2N policy, 2N+1 ties
PRIO_COMPLETION, PRIO_ARRIVAL = 0, 1


def n_streams(N: int) -> int:
    return 2 * N + 2


@njit(cache=True, inline="always")
def _argmin_ect(i, lst, row, cnt, W, w, use_state, tie, st, s_tie, buf):
    """Machine of ``lst[row, :cnt]`` (ascending indices) with least ``W[j] + w[i, j]``.

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
    if nt > 1:
        if tie == TIE_RANDOM:
            best = buf[below(st, s_tie, nt)]
        else:
            best = buf[nt - 1]
    return best


@njit(cache=True, inline="always")
def _argmin_fast(i, lst, cnt, W, wc):
    """Fast path of :func:`_argmin_ect`: lowest-index ties.

    ``wc[i, k] = w[i, lst[i, k]]`` (gathered once): one indirect load per candidate.
    """
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
    if nt > 1:
        if tie == TIE_RANDOM:
            return buf[below(st, s_tie, nt)]
        return buf[nt - 1]
    return buf[0]


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


@njit(cache=True, inline="always")
def _builtin_select(policy, i, t, fast, cand, ncand, wc, W, w, mu, qlen, tie, st, s_pol, s_tie,
                    tmp, pair, buf, assigned, arrived, pi, cmat, pw):
    """Machine for a class-``i`` arrival under a built-in policy; ``(j, contacted, binds)`` increments."""
    if policy == MCT or policy == KPB or policy == LPAS:
        if fast:
            return _argmin_fast(i, cand, ncand[i], W, wc), ncand[i], 0
        return _argmin_fast_ties(i, cand, ncand[i], W, wc, tie, st, s_tie, buf), ncand[i], 0
    if policy == MET:
        return _argmin_ect(i, cand, i, ncand[i], W, w, False, tie, st, s_tie, buf), 0, 0
    if policy == LPSTATIC:
        total = 0.0
        for k in range(ncand[i]):
            total += pw[i, cand[i, k]]
        return _sample(i, cand, i, ncand[i], pw, total, -1, st, s_pol), 0, 0
    if policy == LPAS2K:
        return _two_choices(i, cand, i, ncand[i], pw, W, w, tie, st, s_pol, s_tie, pair, buf), min(ncand[i], 2), 0
    # Guided-LPAS(-2/k), §2.4: T_i(t) = {j in S_i : a_ij(t-) < pi_ij a_i(t) + C_ij sqrt(t)}
    # (``arrived[i]`` already counts this arrival: a_i(t); ``assigned`` is a_ij(t-))
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
    binds = 0
    if policy == GLPAS:
        j = _argmin_ect(i, tmp, 0, cnt, W, w, True, tie, st, s_tie, buf)
        if cnt < ncand[i]:
            # binds when the unrestricted LPAS choice is excluded by (iii)
            jl = _argmin_ect(i, cand, i, ncand[i], W, w, True, TIE_LOWEST, st, s_tie, buf)
            jg = _argmin_ect(i, tmp, 0, cnt, W, w, True, TIE_LOWEST, st, s_tie, buf)
            if W[jl] + w[i, jl] < W[jg] + w[i, jg]:
                binds = 1
        return j, cnt, binds
    j = _two_choices(i, tmp, 0, cnt, pw, W, w, tie, st, s_pol, s_tie, pair, buf)
    return j, min(cnt, 2), 1 if cnt < ncand[i] else 0


# the selection the kernel calls; make_user_kernel compiles the kernel again with a user's
_select = _builtin_select


def _user_selector(fn, uses_u: bool = True):
    """A selection with the signature of :func:`_builtin_select` that calls the user's compiled ``fn``.

    ``uses_u`` false: the function never reads ``u``, so no draw is made for it.
    """
    if uses_u:
        @njit(inline="always")
        def select(policy, i, t, fast, cand, ncand, wc, W, w, mu, qlen, tie, st, s_pol, s_tie,
                   tmp, pair, buf, assigned, arrived, pi, cmat, pw):
            return fn(i, mu, qlen, W, uniform(st, s_pol)), 0, 0
    else:
        @njit(inline="always")
        def select(policy, i, t, fast, cand, ncand, wc, W, w, mu, qlen, tie, st, s_pol, s_tie,
                   tmp, pair, buf, assigned, arrived, pi, cmat, pw):
            return fn(i, mu, qlen, W, 0.5), 0, 0

    return select


def _run_mapping(
    policy, alpha, mu, mu_pol, w, incremental, cand, ncand, pw, pi, cmat,
    dist, dpar, gen, horizon, warmup, max_in_system, tie, st, out_q, out_resp, out_seg, out_int, out_assigned,
    tr_t, tr_x, tr_c, rec_a, rec_s, rec_e, rec_m, rec_c, out_tend, out_work,
):
    """Simulate one replication; compiled, no checks, writes the ``out_*`` arrays.

    ``out_q[i]`` time-average number of class ``i`` on ``[warmup, horizon]``;
    ``out_resp[i]`` sum of completion times of class ``i`` tasks arrived after
    ``warmup`` and finished before ``horizon``; ``out_seg`` time-average total
    number in system on ``NSEG`` equal segments; ``out_int`` see ``O_*``.

    Trace replay (issue 13) when ``tr_t`` is not empty: task ``k`` arrives at
    ``tr_t[k]`` (sorted) with class ``tr_c[k]`` and size ``tr_x[k]``; event slot
    0 is then the next trace arrival (no Poisson stream, no size stream), and
    the run ends when the event list is empty (pass ``horizon`` = the largest
    float). Per-task records when ``rec_a`` is not empty: task ``k`` (arrival
    order) gets ``rec_a/rec_s/rec_e[k]`` arrival, start, end (``nan`` until it
    happens) and ``rec_m[k]`` its machine; a run with more tasks than
    ``rec_a`` holds stops with ``ST_RECORDS_FULL``. ``out_tend[0]`` is the time
    the statistics were closed at; ``out_work[j]`` (trace replay only) the work
    (sum of execution times ``x / mu_ij``) the policy sent to machine ``j``.
    """
    N = alpha.shape[0]
    M = mu.shape[1]
    fast = tie == TIE_LOWEST
    user = policy == USER
    wc = np.zeros(cand.shape, np.float64)
    for i in range(N):
        for k in range(ncand[i]):
            wc[i, k] = w[i, cand[i, k]]
    # 1/mu with 0 where a machine cannot run a class (no task of that class is ever there)
    winv = np.zeros((N, M), np.float64)
    for i in range(N):
        for j in range(M):
            if mu[i, j] > 0.0:
                winv[i, j] = w[i, j]
    s_pol = 2 * N
    s_tie = 2 * N + 1
    ev = ev_new(N + M)
    # --- trace replay / records (issue 13)
    ntr = tr_t.shape[0]
    trace = ntr > 0
    rec = rec_a.shape[0] > 0
    nrec = rec_a.shape[0]
    tpos = 0  # next trace task; also the id of the next task in either mode
    t_done = 0.0
    if trace:
        ev_schedule(ev, 0, tr_t[0], PRIO_ARRIVAL)
    else:
        for i in range(N):
            ev_schedule(ev, i, expo(st, i) / alpha[i], PRIO_ARRIVAL)
    ht = ev.ht
    hs = ev.hs
    # --- FCFS queues: linked lists in one pool of task records, with a free list
    cap = max_in_system + 2
    qc = np.empty(cap, np.int64)
    qx = np.empty(cap, np.float64)
    qa = np.empty(cap, np.float64)
    qn = np.empty(cap, np.int64)
    qid = np.empty(cap, np.int64)  # task id (arrival order)
    for s in range(cap - 1):
        qn[s] = s + 1
    qn[cap - 1] = -1
    free = 0
    head = np.full(M, -1, np.int64)
    tail = np.full(M, -1, np.int64)
    qlen = np.zeros(M, np.int64)
    Q = np.zeros((N, M), np.int64)
    W = np.zeros(M, np.float64)  # work_j: the user policy's ``work``
    assigned = np.zeros((N, M), np.int64)
    arrived = np.zeros(N, np.int64)
    area = np.zeros(N, np.float64)
    done_c = np.zeros(N, np.int64)
    gpos = np.zeros(N, np.int64)
    tmp = np.empty((1, M), np.int64)
    pair = np.empty((1, 2), np.int64)
    buf = np.empty(M, np.int64)
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
        seg_observe(sg, t, n)
        if code < N:
            # ---------------- arrival of class i
            i = code
            if trace:
                i = tr_c[tpos]
            arrived[i] += 1
            j, dc, db = _select(policy, i, t, fast, cand, ncand, wc, W, w, mu_pol, qlen, tie, st, s_pol, s_tie,
                                tmp, pair, buf, assigned, arrived, pi, cmat, pw)
            contacted += dc
            binds += db
            if user:
                if j < 0 or j >= M or not mu[i, j] > 0.0:
                    status = ST_BAD_CHOICE
                    out_int[O_BAD_CLASS] = i
                    out_int[O_BAD_VALUE] = j
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
            p = free  # never -1: n <= max_in_system < cap
            free = qn[p]
            qc[p] = i
            qx[p] = x
            qa[p] = t
            qn[p] = -1
            qid[p] = tpos
            if rec:
                if tpos >= nrec:
                    status = ST_RECORDS_FULL
                    break
                rec_a[tpos] = t
                rec_m[tpos] = j
                rec_c[tpos] = i
            tpos += 1
            if qlen[j] == 0:
                head[j] = p
            else:
                qn[tail[j]] = p
            tail[j] = p
            qlen[j] += 1
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
                out_work[j] += x / mu[i, j]
            if qlen[j] == 1:
                ev_schedule(ev, N + j, t + x / mu[i, j], PRIO_COMPLETION)
                if rec:
                    rec_s[qid[p]] = t
            if n > max_in_system:
                status = ST_BOUND
                break
        else:
            # ---------------- completion at machine j
            j = code - N
            p = head[j]
            c = qc[p]
            if qa[p] >= warmup:
                out_resp[c] += t - qa[p]
                done_c[c] += 1
            if rec:
                rec_e[qid[p]] = t
            t_done = t
            head[j] = qn[p]
            qn[p] = free
            free = p
            qlen[j] -= 1
            if t > warmup:  # time this task spent in system within [warmup, t]
                area[c] += t - max(qa[p], warmup)
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
                p = head[j]
                ev_schedule(ev, code, t + qx[p] / mu[qc[p], j], PRIO_COMPLETION)
                if rec:
                    rec_s[qid[p]] = t
            else:
                ev_cancel(ev, code)
    # --- close the time averages at the end (horizon, or the stopping time)
    t_end = horizon if status == ST_OK else max(t, warmup)
    if trace and status == ST_OK:  # every task done: close at the last completion
        t_end = max(t_done, warmup)
    out_tend[0] = t_end
    span = max(t_end - warmup, 1e-300)
    if t_end > warmup:  # tasks still in system at the end
        for j in range(M):
            p = head[j]
            for _ in range(qlen[j]):
                area[qc[p]] += t_end - max(qa[p], warmup)
                p = qn[p]
    for i in range(N):
        out_q[i] = area[i] / span
    if status == ST_OK and not trace:
        seg_close(sg, horizon, n, out_seg)
    out_int[O_STATUS] = status
    out_int[O_EVENTS] = events
    out_int[O_ARRIVALS] = arrived.sum()
    out_int[O_COMPLETIONS] = done_c.sum()
    out_int[O_CONTACTED] = contacted
    out_int[O_BINDS] = binds
    out_int[O_PEAK] = peak
    for i in range(N):
        out_int[O_DONE + i] = done_c[i]
        for m in range(M):
            out_assigned[i, m] = assigned[i, m]


run_mapping = njit(cache=True)(_run_mapping)

_USER_KERNELS: dict[str, object] = {}


def make_user_kernel(user) -> object:
    """The kernel specialised for a :class:`~.policies.MappingPolicy` (once per policy per process).

    Not cached on disk: the function body is shared by every user policy, so a
    disk-cache entry could not tell two user policies apart.
    """
    k = _USER_KERNELS.get(user.token)
    if k is None:
        fn = user.compiled()
        g = dict(_run_mapping.__globals__)
        g["_select"] = _user_selector(fn, getattr(user, "uses_u", True))
        body = _pytypes.FunctionType(_run_mapping.__code__, g, "run_mapping_" + "".join(
            ch if ch.isalnum() else "_" for ch in user.name), _run_mapping.__defaults__, _run_mapping.__closure__)
        k = njit(cache=False)(body)
        _USER_KERNELS[user.token] = k
    return k
