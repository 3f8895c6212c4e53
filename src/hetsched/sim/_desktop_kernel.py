"""Compiled event loop of the desktop-grid model (see :mod:`hetsched.sim.desktop`).

Everything here takes preallocated arrays and numpy Generators, does no checks
and no allocation in the hot loop. The kernel is *resumable*: all state lives in
the arrays, and :func:`run` returns ``NEED_SUPPORT`` when the robust (central)
LP support of the current capacity vector is not in its hash table; the Python
wrapper solves that LP, stores the support and calls :func:`run` again.

Performance notes (named where made):

* the event list is three fixed-slot winner trees (machine task timers,
  machine availability timers, class arrival streams; the next event is the
  earliest of the three roots, ties in that order) whose nodes
  store the winning key next to its slot, so a node's two children share a cache
  line; an update replays at most ``log2(slots)`` matches and stops at the first
  node whose winner is unchanged; ties go to the lower slot (deterministic
  order). A completion followed by a new start on the same machine updates the
  slot once. (``tree_init``/``tree_set`` remain for the caller's initial state:
  :func:`run` rebuilds its winner tree from ``tkey`` at every entry.);
* no array views in the hot loop (the class selection reads ``muT[j, i]`` and
  ``E[c, i]`` in place: no view objects, no reference counting per event), the
  number of waiting tasks is kept incrementally, the CPU-chain catch-up uses
  scalars instead of small temporary arrays;
* randomness comes from numpy Generators passed in (one per purpose), drawn in
  the same order as the previous kernel, so results are identical to it for the
  same seed (``tests/test_desktop_kernel.py`` checks this against the copy in
  ``tests/_desktop_kernel_ref.py``);
* the vertex LP of LPAS_DG is re-optimised in place by a dense tableau *dual
  simplex*: an availability event only changes one right-hand side, so the old
  basis stays dual feasible and typically needs 0-2 pivots (no Python, no
  HiGHS per event); the tableau is refactored from its basis every
  ``REFACTOR`` pivots to bound round-off;
* CPU-availability chains are simulated only while a machine runs a task, by
  jumping over geometric sojourns; an idle machine's chain is caught up with
  precomputed powers ``P^(2^b)`` when it next starts a task.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit


# machine int fields (mi[j, .])
UP, BUSY, CST, CK, PREV, NEXT, TKIND = 0, 1, 2, 3, 4, 5, 6
N_MI = 7
# machine float fields (mf[j, .])
TARR, REM, SEGT, LEVEL, IDLE_SINCE, AEST, SEGEND, UPSINCE = 0, 1, 2, 3, 4, 5, 6, 7
N_MF = 8
# ist fields
EVENTS, PENDING, MISS_SLOT, LP_SOLVES, PIVOTS, AVAIL_EVENTS, RESUB, OVERFLOW, ARRIVALS = 0, 1, 2, 3, 4, 5, 6, 7, 8
PIV_SINCE, SUP_CHANGES, LP_FAIL, PEND_MACHINE, TABLE_COUNT, STARTS, LOOKUPS = 9, 10, 11, 12, 13, 14, 15
N_IST = 16
# fst fields
T_NOW, QINT1, QINT2, T_LAST, LAM, QMID = 0, 1, 2, 3, 4, 5
N_FST = 6

# return codes
DONE = 0
NEED_SUPPORT = 1
OVERFLOWED = 2

REFACTOR = 200
LP_TOL = 1e-9
INF = np.inf


# ----------------------------------------------------------------------------- event tree
@njit(cache=True)
def tree_init(tkey, tree, P):
    """Build the tournament tree over ``tkey`` (size ``P``, a power of two)."""
    for k in range(P):
        tree[P + k] = k
    for node in range(P - 1, 0, -1):
        lft = tree[2 * node]
        rgt = tree[2 * node + 1]
        tree[node] = rgt if tkey[rgt] < tkey[lft] else lft


@njit(cache=True)
def tree_set(tkey, tree, P, slot, t):
    tkey[slot] = t
    node = (P + slot) >> 1
    while node >= 1:
        lft = tree[2 * node]
        rgt = tree[2 * node + 1]
        tree[node] = rgt if tkey[rgt] < tkey[lft] else lft
        node >>= 1


@njit(cache=True)
def wtree_build(tkey, base, n, wkey, widx, P):
    """Winner tree over slots ``base .. base+n-1`` of ``tkey`` (``P >= n`` leaves, a
    power of two; padding leaves hold +inf) with each node's winning key stored
    next to its slot: a node's two children are adjacent in memory."""
    for k in range(P):
        wkey[P + k] = tkey[base + k] if k < n else INF
        widx[P + k] = base + k
    for node in range(P - 1, 0, -1):
        lft = 2 * node
        if wkey[lft + 1] < wkey[lft]:
            wkey[node] = wkey[lft + 1]
            widx[node] = widx[lft + 1]
        else:
            wkey[node] = wkey[lft]
            widx[node] = widx[lft]


@njit(cache=True)
def wtree_set(tkey, wkey, widx, P, base, slot, t):
    """Set ``slot``'s key (leaf ``slot - base``); replay the matches up the path,
    stopping as soon as a node's winner (slot and key) is unchanged -- its
    ancestors then are too. Ties go to the left child (lower slot), as in
    :func:`tree_set`."""
    tkey[slot] = t
    node = P + slot - base
    wkey[node] = t
    node >>= 1
    while node >= 1:
        lft = 2 * node
        kl = wkey[lft]
        kr = wkey[lft + 1]
        if kr < kl:
            w = widx[lft + 1]
            kw = kr
        else:
            w = widx[lft]
            kw = kl
        if widx[node] == w and wkey[node] == kw:
            return
        widx[node] = w
        wkey[node] = kw
        node >>= 1


# ----------------------------------------------------------------------------- variates
@njit(cache=True)
def draw(g, kind, mean, scv):
    """0 exp, 1 det/const, 2 hyperexp (balanced means, given scv)."""
    if kind == 0:
        return g.exponential(mean)
    if kind == 1:
        return mean
    p1 = 0.5 * (1.0 + math.sqrt((scv - 1.0) / (scv + 1.0)))
    if g.random() < p1:
        return g.exponential(mean / (2.0 * p1))
    return g.exponential(mean / (2.0 * (1.0 - p1)))


@njit(cache=True)
def draw_up(g, kind, mean, scv, shape, scale):
    if kind == 3:  # weibull
        return scale * g.weibull(shape)
    return draw(g, kind, mean, scv)


# ----------------------------------------------------------------------------- LP (dense tableau)
@njit(cache=True)
def lp_build(T, obj, basis, mu_colT, alpha, cap):
    """Slack-basis tableau of max lam s.t. lam a_i - sum_c mu_ic d_ic <= 0, sum_i d_ic <= cap_c."""
    C, N = mu_colT.shape
    m = N + C
    n0 = N * C
    nv = n0 + 1 + m
    T[:, :] = 0.0
    obj[:] = 0.0
    for i in range(N):
        for c in range(C):
            T[i, i * C + c] = -mu_colT[c, i]
            T[N + c, i * C + c] = 1.0
        T[i, n0] = alpha[i]
    for r in range(m):
        T[r, n0 + 1 + r] = 1.0
        basis[r] = n0 + 1 + r
    for c in range(C):
        T[N + c, nv] = cap[c]
    obj[n0] = -1.0  # minimise -lam


@njit(cache=True)
def lp_pivot(T, obj, basis, r, k):
    m = T.shape[0]
    w = T.shape[1]
    piv = T[r, k]
    for q in range(w):
        T[r, q] /= piv
    for row in range(m):
        if row != r:
            f = T[row, k]
            if f != 0.0:
                for q in range(w):
                    T[row, q] -= f * T[r, q]
            T[row, k] = 0.0
    f = obj[k]
    if f != 0.0:
        for q in range(w):
            obj[q] -= f * T[r, q]
        obj[k] = 0.0
    basis[r] = k


@njit(cache=True)
def lp_primal(T, obj, basis):
    """Primal simplex from a feasible basis (Dantzig, Bland after 50 pivots)."""
    m = T.shape[0]
    nv = T.shape[1] - 1
    it = 0
    while True:
        k = -1
        best = -LP_TOL
        for q in range(nv):
            if obj[q] < best:
                k = q
                if it > 50:
                    break
                best = obj[q]
        if k < 0:
            return it
        r = -1
        br = INF
        for row in range(m):
            a = T[row, k]
            if a > LP_TOL:
                ratio = T[row, nv] / a
                if ratio < br - 1e-12 or (r >= 0 and ratio <= br + 1e-12 and basis[row] < basis[r]):
                    r = row
                    br = ratio
        if r < 0:
            return -1
        lp_pivot(T, obj, basis, r, k)
        it += 1
        if it > 100000:
            return -2


@njit(cache=True)
def lp_dual(T, obj, basis):
    """Dual simplex after a right-hand-side change (Dantzig, Bland after 50 pivots)."""
    m = T.shape[0]
    nv = T.shape[1] - 1
    it = 0
    while True:
        r = -1
        most = -LP_TOL
        for row in range(m):
            v = T[row, nv]
            if v < most:
                if it > 50:
                    if r < 0 or basis[row] < basis[r]:
                        r = row
                else:
                    most = v
                    r = row
        if r < 0:
            return it
        k = -1
        br = INF
        for q in range(nv):
            a = T[r, q]
            if a < -LP_TOL:
                d = obj[q]
                if d < 0.0:
                    d = 0.0
                ratio = d / (-a)
                if ratio < br - 1e-12:
                    k = q
                    br = ratio
        if k < 0:
            return -1
        lp_pivot(T, obj, basis, r, k)
        it += 1
        if it > 100000:
            return -2


@njit(cache=True)
def lp_refactor(T, obj, basis, mu_colT, alpha, cap, scratchT, scratchO, scratchB):
    """Rebuild the tableau from its basis: T = B^-1 [A | I | b]."""
    lp_build(scratchT, scratchO, scratchB, mu_colT, alpha, cap)
    m = T.shape[0]
    nv = T.shape[1] - 1
    B = np.empty((m, m))
    for r in range(m):
        for q in range(m):
            B[q, r] = scratchT[q, basis[r]]
    Binv = np.linalg.inv(B)
    T[:, :] = Binv @ scratchT
    n0 = nv - 1 - m
    obj[:] = scratchO
    for r in range(m):
        if basis[r] == n0:
            for q in range(nv + 1):
                obj[q] += T[r, q]
    for r in range(m):
        k = basis[r]
        obj[k] = 0.0


@njit(cache=True)
def lp_set_cap(T, obj, cap, N, c, newcap):
    d = newcap - cap[c]
    cap[c] = newcap
    if d == 0.0:
        return
    m = T.shape[0]
    nv = T.shape[1] - 1
    n0 = nv - 1 - m
    sc = n0 + 1 + N + c
    for row in range(m):
        T[row, nv] += d * T[row, sc]
    obj[nv] += d * obj[sc]


@njit(cache=True)
def lp_support(T, basis, mu_colT, support):
    """Write delta*_ic > tol into ``support[c, i]``; return True if it changed, and lam*."""
    C, N = mu_colT.shape
    m = T.shape[0]
    nv = T.shape[1] - 1
    n0 = N * C
    changed = False
    newsup = np.zeros((C, N), dtype=np.bool_)
    lam = 0.0
    for r in range(m):
        k = basis[r]
        v = T[r, nv]
        if k < n0:
            if v > LP_TOL:
                i = k // C
                c = k - i * C
                if mu_colT[c, i] > 0.0:
                    newsup[c, i] = True
        elif k == n0:
            lam = v
    for c in range(C):
        for i in range(N):
            if newsup[c, i] != support[c, i]:
                changed = True
                support[c, i] = newsup[c, i]
    return changed, lam


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


# ----------------------------------------------------------------------------- queues, idle lists
@njit(cache=True)
def q_push_back(qarr, qh, ql, head_arr, i, tarr):
    cap = qarr.shape[1]
    if ql[i] >= cap:
        return False
    qarr[i, (qh[i] + ql[i]) & (cap - 1)] = tarr
    ql[i] += 1
    if ql[i] == 1:
        head_arr[i] = tarr
    return True


@njit(cache=True)
def q_push_front_sorted(qarr, qh, ql, head_arr, i, tarr):
    """Insert at the front, then move back past heads that arrived earlier (keeps arrival order)."""
    cap = qarr.shape[1]
    if ql[i] >= cap:
        return False
    qh[i] = (qh[i] - 1) & (cap - 1)
    ql[i] += 1
    pos = qh[i]
    qarr[i, pos] = tarr
    for _ in range(ql[i] - 1):
        nxt = (pos + 1) & (cap - 1)
        if qarr[i, nxt] < qarr[i, pos]:
            tmp = qarr[i, nxt]
            qarr[i, nxt] = qarr[i, pos]
            qarr[i, pos] = tmp
            pos = nxt
        else:
            break
    head_arr[i] = qarr[i, qh[i]]
    return True


@njit(cache=True)
def q_pop(qarr, qh, ql, head_arr, i):
    cap = qarr.shape[1]
    v = qarr[i, qh[i]]
    qh[i] = (qh[i] + 1) & (cap - 1)
    ql[i] -= 1
    if ql[i] > 0:
        head_arr[i] = qarr[i, qh[i]]
    return v


@njit(cache=True)
def idle_add(mi, chead, ctail, cidle, c, j):
    mi[j, NEXT] = -1
    mi[j, PREV] = ctail[c]
    if ctail[c] >= 0:
        mi[ctail[c], NEXT] = j
    else:
        chead[c] = j
    ctail[c] = j
    cidle[c] += 1


@njit(cache=True)
def idle_remove(mi, chead, ctail, cidle, c, j):
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


@njit(cache=True)
def pick_in_column(mi, chead, cidle, c, mrule, g_tie):
    """Machine of column ``c`` that receives work: list head (longest idle), lowest index, or uniform."""
    j = chead[c]
    if mrule == 2:  # lowest index
        k = mi[j, NEXT]
        while k >= 0:
            if k < j:
                j = k
            k = mi[k, NEXT]
    elif mrule == 3:  # random
        u = int(g_tie.random() * cidle[c])
        for _ in range(u):
            j = mi[j, NEXT]
    return j


# ----------------------------------------------------------------------------- class selection
@njit(cache=True)
def select_row(policy, t, ql, head_arr, muT, j, E, c):
    """:func:`hetsched.sim.pull_policies.select_class` for machine ``j`` (column ``c``),
    reading ``muT[j]`` and ``E[c]`` in place (no array views in the hot loop)."""
    best = -1
    best_key = 0.0
    use_lp = policy == 2 or policy == 3
    for i in range(ql.shape[0]):
        if ql[i] <= 0:
            continue
        r = muT[j, i]
        if r <= 0.0:
            continue
        if use_lp and not E[c, i]:
            continue
        if policy == 0:
            key = -head_arr[i]
        else:
            key = (t - head_arr[i]) * r
        if best < 0 or key > best_key:
            best = i
            best_key = key
    return best


# ----------------------------------------------------------------------------- chain
@njit(cache=True)
def chain_catch_up(mi, j, cid, k, Ppow, g_chain):
    d = k - mi[j, CK]
    if d <= 0:
        return
    s = mi[j, CST]
    # distribution after d steps, v P^d, in three scalars (no allocation)
    v0 = 1.0 if s == 0 else 0.0
    v1 = 1.0 if s == 1 else 0.0
    v2 = 1.0 if s == 2 else 0.0
    b = 0
    while d > 0:
        if d & 1:
            w0 = 0.0
            w1 = 0.0
            w2 = 0.0
            if v0 != 0.0:
                w0 += v0 * Ppow[cid, b, 0, 0]
                w1 += v0 * Ppow[cid, b, 0, 1]
                w2 += v0 * Ppow[cid, b, 0, 2]
            if v1 != 0.0:
                w0 += v1 * Ppow[cid, b, 1, 0]
                w1 += v1 * Ppow[cid, b, 1, 1]
                w2 += v1 * Ppow[cid, b, 1, 2]
            if v2 != 0.0:
                w0 += v2 * Ppow[cid, b, 2, 0]
                w1 += v2 * Ppow[cid, b, 2, 1]
                w2 += v2 * Ppow[cid, b, 2, 2]
            v0 = w0
            v1 = w1
            v2 = w2
        d >>= 1
        b += 1
    u = g_chain.random()
    if u < v0:
        s = 0
    elif u < v0 + v1:
        s = 1
    elif u < v0 + v1 + v2:
        s = 2
    else:
        s = 2
    mi[j, CST] = s
    mi[j, CK] = k


@njit(cache=True)
def chain_segment_end(k, s, cid, logstay, step, g_chain):
    """End time of the sojourn in state ``s`` that covers step ``k`` (geometric extra steps)."""
    ls = logstay[cid, s]
    if ls >= 0.0:
        return INF
    u = 1.0 - g_chain.random()  # (0, 1]
    L = math.floor(math.log(u) / ls)
    return (k + 1 + L) * step


# ----------------------------------------------------------------------------- task start / completion timer
@njit(cache=True)
def schedule_task(mi, mf, j, tkey, wkey, widx, P):
    tc = mf[j, SEGT] + mf[j, REM] / mf[j, LEVEL] if mf[j, LEVEL] > 0.0 else INF
    if tc <= mf[j, SEGEND]:
        mi[j, TKIND] = 0
        wtree_set(tkey, wkey, widx, P, 0, j, tc)
    else:
        mi[j, TKIND] = 1
        wtree_set(tkey, wkey, widx, P, 0, j, mf[j, SEGEND])


@njit(cache=True)
def start_task(mi, mf, j, i, tarr, t, muT, a_true, chain_id, Ppow, logstay, levels, step,
               exec_kind, exec_scv, tkey, wkey, widx, P, g_exec, g_chain, ist):
    mi[j, BUSY] = i
    mf[j, TARR] = tarr
    mf[j, REM] = draw(g_exec, exec_kind, 1.0 / muT[j, i], exec_scv)
    mf[j, SEGT] = t
    cid = chain_id[j]
    if cid >= 0:
        k = int(math.floor(t / step))
        chain_catch_up(mi, j, cid, k, Ppow, g_chain)
        s = mi[j, CST]
        mf[j, LEVEL] = levels[s]
        mf[j, SEGEND] = chain_segment_end(k, s, cid, logstay, step, g_chain)
    else:
        mf[j, LEVEL] = a_true[j]
        mf[j, SEGEND] = INF
    ist[STARTS] += 1
    schedule_task(mi, mf, j, tkey, wkey, widx, P)


# ----------------------------------------------------------------------------- the event loop
@njit(cache=True)
def run(ist, fst, mi, mf, tkey, tree, P,
        qarr, qh, ql, head_arr, chead, ctail, cidle,
        col, muT, mu_colT, a_true, a_est0, chain_id, Pm, Ppow, logstay, levels, step,
        alpha, fail_on, up_kind, up_mean, up_scv, wshape, wscale, down_kind, down_mean, down_scv,
        exec_kind, exec_scv, inacc,
        policy, mrule, resub, lp_mode, horizon, warmup,
        support, elig_static, cap, T, obj, basis, scT, scO, scB,
        keys_cap, key_used, sup_table,
        cls_n, cls_w, up_time,
        g_arr, g_exec, g_fail, g_chain, g_tie):
    """Compiled, no checks; runs until ``horizon`` or a robust-support miss; returns a code."""
    N = alpha.shape[0]
    M = col.shape[0]
    C = mu_colT.shape[0]
    use_lp_sup = policy == 2 or policy == 3
    E = support if use_lp_sup else elig_static
    # event list: winner tree with the keys stored in the nodes (rebuilt from
    # ``tkey`` at every entry, so the resumable state is ``tkey`` alone)
    # three trees -- task timers, availability timers, arrival streams -- so that an
    # arrival (half the events) replays log2(N) matches, not log2(2M + N)
    PT = 1
    while PT < M:
        PT *= 2
    PA = 1
    while PA < N:
        PA *= 2
    wkT = np.empty(2 * PT)
    wiT = np.empty(2 * PT, dtype=np.int64)
    wkV = np.empty(2 * PT)
    wiV = np.empty(2 * PT, dtype=np.int64)
    wkA = np.empty(2 * PA)
    wiA = np.empty(2 * PA, dtype=np.int64)
    wtree_build(tkey, 0, M, wkT, wiT, PT)
    wtree_build(tkey, M, M, wkV, wiV, PT)
    wtree_build(tkey, 2 * M, N, wkA, wiA, PA)

    # ---- resume after a robust-support miss: the Python side filled the table
    if ist[PENDING] == 1:
        s_, hit = table_lookup(cap, keys_cap, key_used)
        if not hit:
            ist[MISS_SLOT] = s_
            return NEED_SUPPORT
        ist[PENDING] = 0
        changed = False
        for c in range(C):
            for i in range(N):
                if support[c, i] != sup_table[s_, c, i]:
                    changed = True
                    support[c, i] = sup_table[s_, c, i]
        jp = ist[PEND_MACHINE]
        ist[PEND_MACHINE] = -1
        t = fst[T_NOW]
        if jp >= 0:
            c = col[jp]
            i = select_row(policy, t, ql, head_arr, muT, jp, E, c)
            if i >= 0:
                tarr = q_pop(qarr, qh, ql, head_arr, i)
                start_task(mi, mf, jp, i, tarr, t, muT, a_true, chain_id, Ppow, logstay, levels, step,
                           exec_kind, exec_scv, tkey, wkT, wiT, PT, g_exec, g_chain, ist)
            else:
                mf[jp, IDLE_SINCE] = t
                idle_add(mi, chead, ctail, cidle, c, jp)
        if changed:
            _scan(mi, mf, qarr, qh, ql, head_arr, chead, ctail, cidle, muT, E, policy, mrule, t,
                  a_true, chain_id, Ppow, logstay, levels, step, exec_kind, exec_scv, tkey, wkT, wiT, PT,
                  g_exec, g_chain, g_tie, ist)

    tmid = fst[QMID]
    qtot = 0  # tasks waiting, kept up to date at every push/pop below
    for i in range(N):
        qtot += ql[i]
    while True:
        # earliest of the three roots; ties in slot order (tasks, availability, arrivals)
        s = wiT[1]
        t = wkT[1]
        if wkV[1] < t:
            s = wiV[1]
            t = wkV[1]
        if wkA[1] < t:
            s = wiA[1]
            t = wkA[1]
        if t > horizon:
            break
        # time integral of the number waiting, split at mid-run (instability check)
        tl = fst[T_LAST]
        if qtot > 0:
            if t <= tmid:
                fst[QINT1] += qtot * (t - tl)
            elif tl >= tmid:
                fst[QINT2] += qtot * (t - tl)
            else:
                fst[QINT1] += qtot * (tmid - tl)
                fst[QINT2] += qtot * (t - tmid)
        fst[T_LAST] = t
        fst[T_NOW] = t
        ist[EVENTS] += 1

        if s < M:
            # ------------------------------------------------ task timer of machine j
            j = s
            if mi[j, TKIND] == 1:
                # CPU-chain state change while running: bank progress, draw next sojourn
                cid = chain_id[j]
                mf[j, REM] -= mf[j, LEVEL] * (t - mf[j, SEGT])
                if mf[j, REM] < 0.0:
                    mf[j, REM] = 0.0
                mf[j, SEGT] = t
                so = mi[j, CST]
                stay = Pm[cid, so, so]
                u = g_chain.random() * (1.0 - stay)
                acc = 0.0
                sn = so
                for y in range(3):
                    if y != so:
                        acc += Pm[cid, so, y]
                        sn = y
                        if u < acc:
                            break
                k = int(round(t / step))
                mi[j, CST] = sn
                mi[j, CK] = k
                mf[j, LEVEL] = levels[sn]
                mf[j, SEGEND] = chain_segment_end(k, sn, cid, logstay, step, g_chain)
                schedule_task(mi, mf, j, tkey, wkT, wiT, PT)
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
            i = select_row(policy, t, ql, head_arr, muT, j, E, c) if qtot > 0 else -1
            if i >= 0:
                # the new start overwrites slot j's key: one tree walk instead of two
                tarr = q_pop(qarr, qh, ql, head_arr, i)
                qtot -= 1
                start_task(mi, mf, j, i, tarr, t, muT, a_true, chain_id, Ppow, logstay, levels, step,
                           exec_kind, exec_scv, tkey, wkT, wiT, PT, g_exec, g_chain, ist)
            else:
                wtree_set(tkey, wkT, wiT, PT, 0, j, INF)
                mf[j, IDLE_SINCE] = t
                idle_add(mi, chead, ctail, cidle, c, j)
        elif s < 2 * M:
            # ------------------------------------------------ availability timer of machine j
            j = s - M
            c = col[j]
            ist[AVAIL_EVENTS] += 1
            repaired = -1
            if mi[j, UP] == 1:
                mi[j, UP] = 0
                up_time[j] += t - mf[j, UPSINCE]
                if mi[j, BUSY] >= 0:
                    i = mi[j, BUSY]
                    mi[j, BUSY] = -1
                    wtree_set(tkey, wkT, wiT, PT, 0, j, INF)
                    if chain_id[j] >= 0:
                        mi[j, CK] = int(math.floor(t / step))
                    ist[RESUB] += 1
                    was = ql[i]
                    if resub == 0:
                        ok = q_push_front_sorted(qarr, qh, ql, head_arr, i, mf[j, TARR])
                    else:
                        ok = q_push_back(qarr, qh, ql, head_arr, i, mf[j, TARR])
                    if not ok:
                        ist[OVERFLOW] = 1
                        return OVERFLOWED
                    qtot += 1
                    if was == 0:
                        jj = _find_machine(i, mi, mf, chead, cidle, muT, E, mrule, g_tie)
                        if jj >= 0:
                            idle_remove(mi, chead, ctail, cidle, col[jj], jj)
                            tarr = q_pop(qarr, qh, ql, head_arr, i)
                            qtot -= 1
                            start_task(mi, mf, jj, i, tarr, t, muT, a_true, chain_id, Ppow, logstay, levels,
                                       step, exec_kind, exec_scv, tkey, wkT, wiT, PT, g_exec, g_chain, ist)
                else:
                    idle_remove(mi, chead, ctail, cidle, c, j)
                newcap = cap[c] - mf[j, AEST]
                if newcap < 1e-12:
                    newcap = 0.0
                wtree_set(tkey, wkV, wiV, PT, M, s, t + draw(g_fail, down_kind, down_mean, down_scv))
            else:
                mi[j, UP] = 1
                mf[j, UPSINCE] = t
                a = a_est0[j]
                if inacc > 0.0:
                    a = a * (1.0 + inacc * (2.0 * g_tie.random() - 1.0))
                    if a > 1.0:
                        a = 1.0
                    if a < 0.0:
                        a = 0.0
                mf[j, AEST] = a
                newcap = cap[c] + a
                repaired = j
                wtree_set(tkey, wkV, wiV, PT, M, s, t + draw_up(g_fail, up_kind, up_mean, up_scv, wshape[j], wscale[j]))
            # ---- LP: re-optimise (vertex) or look up (central) the support
            changed = False
            if lp_mode == 1:
                lp_set_cap(T, obj, cap, N, c, newcap)
                it = lp_dual(T, obj, basis)
                ist[LP_SOLVES] += 1
                if it < 0:
                    ist[LP_FAIL] += 1
                    lp_build(T, obj, basis, mu_colT, alpha, cap)
                    it = lp_primal(T, obj, basis)
                    ist[PIV_SINCE] = 0
                else:
                    ist[PIVOTS] += it
                    ist[PIV_SINCE] += it
                    if ist[PIV_SINCE] > REFACTOR:
                        lp_refactor(T, obj, basis, mu_colT, alpha, cap, scT, scO, scB)
                        ist[PIV_SINCE] = 0
                changed, lam = lp_support(T, basis, mu_colT, support)
                fst[LAM] = lam
                if not use_lp_sup:
                    changed = False
            elif lp_mode == 2:
                cap[c] = newcap
                ist[LOOKUPS] += 1
                s_, hit = table_lookup(cap, keys_cap, key_used)
                if not hit:
                    ist[PENDING] = 1
                    ist[MISS_SLOT] = s_
                    ist[PEND_MACHINE] = repaired
                    return NEED_SUPPORT
                for cc in range(C):
                    for i in range(N):
                        if support[cc, i] != sup_table[s_, cc, i]:
                            changed = True
                            support[cc, i] = sup_table[s_, cc, i]
            else:
                cap[c] = newcap
            if changed:
                ist[SUP_CHANGES] += 1
            if repaired >= 0:
                i = select_row(policy, t, ql, head_arr, muT, j, E, c)
                if i >= 0:
                    tarr = q_pop(qarr, qh, ql, head_arr, i)
                    qtot -= 1
                    start_task(mi, mf, j, i, tarr, t, muT, a_true, chain_id, Ppow, logstay, levels, step,
                               exec_kind, exec_scv, tkey, wkT, wiT, PT, g_exec, g_chain, ist)
                else:
                    mf[j, IDLE_SINCE] = t
                    idle_add(mi, chead, ctail, cidle, c, j)
            if changed:
                qtot -= _scan(mi, mf, qarr, qh, ql, head_arr, chead, ctail, cidle, muT, E, policy, mrule, t,
                              a_true, chain_id, Ppow, logstay, levels, step, exec_kind, exec_scv, tkey, wkT, wiT, PT,
                              g_exec, g_chain, g_tie, ist)
        else:
            # ------------------------------------------------ arrival of class i
            i = s - 2 * M
            ist[ARRIVALS] += 1
            wtree_set(tkey, wkA, wiA, PA, 2 * M, s, t + g_arr.exponential(1.0 / alpha[i]))
            jj = -1
            if ql[i] == 0:  # invariant: a non-empty queue has no eligible idle machine
                jj = _find_machine(i, mi, mf, chead, cidle, muT, E, mrule, g_tie)
            if jj >= 0:
                idle_remove(mi, chead, ctail, cidle, col[jj], jj)
                start_task(mi, mf, jj, i, t, t, muT, a_true, chain_id, Ppow, logstay, levels, step,
                           exec_kind, exec_scv, tkey, wkT, wiT, PT, g_exec, g_chain, ist)
            else:
                if not q_push_back(qarr, qh, ql, head_arr, i, t):
                    ist[OVERFLOW] = 1
                    return OVERFLOWED
                qtot += 1
    return DONE


@njit(cache=True)
def _find_machine(i, mi, mf, chead, cidle, muT, E, mrule, g_tie):
    """Idle available machine that receives an arriving class-``i`` task, or -1."""
    C = chead.shape[0]
    best = -1
    if mrule == 3:  # uniform over eligible idle machines
        tot = 0
        for c in range(C):
            if cidle[c] > 0 and E[c, i] and muT[chead[c], i] > 0.0:
                tot += cidle[c]
        if tot == 0:
            return -1
        u = int(g_tie.random() * tot)
        for c in range(C):
            if cidle[c] > 0 and E[c, i] and muT[chead[c], i] > 0.0:
                if u < cidle[c]:
                    j = chead[c]
                    for _ in range(u):
                        j = mi[j, NEXT]
                    return j
                u -= cidle[c]
        return -1
    best_r = 0.0
    for c in range(C):
        if cidle[c] == 0 or not E[c, i]:
            continue
        j = chead[c]
        r = muT[j, i]
        if r <= 0.0:
            continue
        if mrule == 2:  # lowest machine index
            k = mi[j, NEXT]
            while k >= 0:
                if k < j:
                    j = k
                k = mi[k, NEXT]
            if best < 0 or j < best:
                best = j
        elif mrule == 1:  # fastest (effective rate as the scheduler knows it), then longest idle
            r = r * mf[j, AEST]
            if best < 0 or r > best_r or (r == best_r and mf[j, IDLE_SINCE] < mf[best, IDLE_SINCE]):
                best = j
                best_r = r
        else:  # longest idle (requests served in order)
            if best < 0 or mf[j, IDLE_SINCE] < mf[best, IDLE_SINCE] or (
                mf[j, IDLE_SINCE] == mf[best, IDLE_SINCE] and j < best
            ):
                best = j
    return best


@njit(cache=True)
def _scan(mi, mf, qarr, qh, ql, head_arr, chead, ctail, cidle, muT, E, policy, mrule, t,
          a_true, chain_id, Ppow, logstay, levels, step, exec_kind, exec_scv, tkey, wkey, widx, P,
          g_exec, g_chain, g_tie, ist):
    """After a support change: idle machines pull (column order) until nothing qualifies.

    Returns the number of tasks started."""
    N = ql.shape[0]
    qtot = 0
    for i in range(N):
        qtot += ql[i]
    if qtot == 0:
        return 0
    started = 0
    C = chead.shape[0]
    for c in range(C):
        while cidle[c] > 0:
            j = pick_in_column(mi, chead, cidle, c, mrule, g_tie)
            i = select_row(policy, t, ql, head_arr, muT, j, E, c)
            if i < 0:
                break
            idle_remove(mi, chead, ctail, cidle, c, j)
            tarr = q_pop(qarr, qh, ql, head_arr, i)
            started += 1
            start_task(mi, mf, j, i, tarr, t, muT, a_true, chain_id, Ppow, logstay, levels, step,
                       exec_kind, exec_scv, tkey, wkey, widx, P, g_exec, g_chain, ist)
    return started
