"""Compiled event loop of the immediate-mode mapping model (thesis §1.3.1, §2.2.2).

Compiled, no checks: :mod:`hetsched.sim.mapping` validates and builds the
arrays. No Python runs per event.

Design (the performance tricks, named where they are made):

* **Event list** — a binary heap of at most ``N + M`` slots: one pending
  arrival per class and one pending completion per machine. Keys are
  ``(time, priority, sequence)``: at equal times completions (priority 0) come
  before arrivals (priority 1), then insertion order. An arrival *replaces* the
  heap top with the next arrival of its class (one sift-down instead of a pop
  and a push).
* **FCFS queues** — one ring buffer per machine (class, unit size, arrival
  time), capacity the power of two above the instability bound (allocated,
  not touched: memory is committed only for the slots used). Arrays are never
  re-bound inside the loop, which keeps reference counting out of it.
* **Expected completion time** ``1/mu_ij + sum_i' Q_i'j / mu_i'j`` — the machine
  workload ``W_j`` is recomputed from the integer counts ``Q_.j`` whenever they
  change, in a fixed order, so two machines with equal counts have bit-equal
  workloads (exact ties); when every rate is a small rational the weights are
  integers (``L / mu_ij`` with ``L`` a common multiple) and sums are exact.
* **Common random numbers** — the size ``X`` (unit mean) of the ``k``-th task
  of class ``i`` comes from class ``i``'s own execution stream and is drawn at
  arrival; its execution time on machine ``j`` is ``X / mu_ij``. Arrivals of
  class ``i`` use stream ``i``; policy sampling and tie-breaking have their
  own streams. So two policies see the same arrivals and the same task sizes.
* **Time averages** are accumulated lazily: per class only when that class's
  count changes.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._rng import expo, uniform

# policy codes (see policies.py)
MET, MCT, KPB, LPAS, LPAS2K, LPSTATIC, GLPAS, GLPAS2K = 0, 1, 2, 3, 4, 5, 6, 7
# execution-time distributions
D_EXP, D_DET, D_HYPER, D_GENERAL = 0, 1, 2, 3
# tie rules
TIE_LOWEST, TIE_HIGHEST, TIE_RANDOM = 0, 1, 2
# status
ST_OK, ST_BOUND, ST_EXHAUSTED = 0, 1, 2

NSEG = 10
_PRIO = np.int64(1) << np.int64(50)


@njit(cache=True)
def _less(ta, ka, tb, kb):
    return ta < tb or (ta == tb and ka < kb)


@njit(cache=True)
def _sift_down(ht, hk, hc, size, k, t, key, code):
    while True:
        l = 2 * k + 1
        if l >= size:
            break
        m = l
        if l + 1 < size and _less(ht[l + 1], hk[l + 1], ht[l], hk[l]):
            m = l + 1
        if not _less(ht[m], hk[m], t, key):
            break
        ht[k] = ht[m]
        hk[k] = hk[m]
        hc[k] = hc[m]
        k = m
    ht[k] = t
    hk[k] = key
    hc[k] = code


@njit(cache=True)
def _push(ht, hk, hc, size, t, key, code):
    k = size
    while k > 0:
        p = (k - 1) >> 1
        if not _less(t, key, ht[p], hk[p]):
            break
        ht[k] = ht[p]
        hk[k] = hk[p]
        hc[k] = hc[p]
        k = p
    ht[k] = t
    hk[k] = key
    hc[k] = code
    return size + 1


@njit(cache=True, inline="always")
def _argmin_ect(i, lst, row, cnt, W, w, use_state, tie, st, s_tie, tol):
    """Machine of ``lst[row, :cnt]`` (ascending indices) with least expected completion time.

    (2-D list + row index rather than a row slice: a slice would cost a
    reference-count update per call in the hot loop.)
    """
    best = lst[row, 0]
    bv = w[i, best]
    if use_state:
        bv += W[best]
    lo = bv - tol * bv  # below lo: strictly better; up to hi: a tie
    hi = bv + tol * bv
    nt = 1
    for k in range(1, cnt):
        j = lst[row, k]
        v = w[i, j]
        if use_state:
            v += W[j]
        if v < lo:
            best = j
            bv = v
            lo = bv - tol * bv
            hi = bv + tol * bv
            nt = 1
        elif v <= hi:
            if tie == TIE_HIGHEST:
                best = j
            elif tie == TIE_RANDOM:
                nt += 1
                if uniform(st, s_tie) * nt <= 1.0:  # reservoir: uniform among ties
                    best = j
    return best


@njit(cache=True, inline="always")
def _argmin_fast(i, lst, cnt, W, wc):
    """Fast path of :func:`_argmin_ect`: exact weights, lowest-index ties.

    ``wc[i, k] = w[i, lst[i, k]]`` (gathered once): one indirect load per candidate.
    """
    best = lst[i, 0]
    bv = W[best] + wc[i, 0]
    for k in range(1, cnt):
        j = lst[i, k]
        v = W[j] + wc[i, k]
        if v < bv:
            best = j
            bv = v
    return best


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
def _two_choices(i, lst, row, cnt, pw, W, w, tie, st, s_pol, s_tie, tol, pair):
    """Power of two choices among ``lst[row, :cnt]`` with weights ``pw`` (LPAS-2/k, §2.3.1)."""
    if cnt <= 2:
        return _argmin_ect(i, lst, row, cnt, W, w, True, tie, st, s_tie, tol)
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
    return _argmin_ect(i, pair, 0, 2, W, w, True, tie, st, s_tie, tol)


@njit(cache=True)
def run_mapping(
    policy, alpha, mu, w, tol, cand, ncand, pw, pi, cmat,
    dist, hp, gen, horizon, warmup, max_in_system, tie, st, out_q, out_resp, out_seg, out_int, out_assigned,
):
    """Simulate one replication; compiled, no checks, writes the ``out_*`` arrays.

    ``out_q[i]`` time-average number of class ``i`` on ``[warmup, horizon]``;
    ``out_resp[i]`` sum of completion times of class ``i`` tasks arrived after
    ``warmup`` and finished before ``horizon``; ``out_seg`` time-average total
    number in system on ``NSEG`` equal segments; ``out_int`` = [status, events,
    arrivals, completions, contacted, binds, peak, completions per class...].
    """
    N = alpha.shape[0]
    M = mu.shape[1]
    exact = tol == 0.0
    fast = exact and tie == TIE_LOWEST
    wc = np.zeros(cand.shape, np.float64)
    for i in range(N):
        for k in range(ncand[i]):
            wc[i, k] = w[i, cand[i, k]]
    s_pol = 2 * N
    s_tie = 2 * N + 1
    # --- event heap
    H = N + M
    ht = np.empty(H, np.float64)
    hk = np.empty(H, np.int64)
    hc = np.empty(H, np.int64)
    size = 0
    seq = np.int64(0)
    for i in range(N):
        size = _push(ht, hk, hc, size, expo(st, i) / alpha[i], _PRIO + seq, i)
        seq += 1
    # --- queues (ring buffers)
    # capacity for the bound: pages are committed only when touched, so an
    # unused capacity costs address space, not memory
    cap = 64
    while cap < max_in_system + 2:
        cap *= 2
    qc = np.empty((M, cap), np.int64)
    qx = np.empty((M, cap), np.float64)
    qa = np.empty((M, cap), np.float64)
    head = np.zeros(M, np.int64)
    qlen = np.zeros(M, np.int64)
    Q = np.zeros((N, M), np.int64)
    W = np.zeros(M, np.float64)
    assigned = np.zeros((N, M), np.int64)
    arrived = np.zeros(N, np.int64)
    ncls = np.zeros(N, np.int64)
    last = np.zeros(N, np.float64)
    area = np.zeros(N, np.float64)
    done_c = np.zeros(N, np.int64)
    gpos = np.zeros(N, np.int64)
    tmp = np.empty((1, M), np.int64)
    pair = np.empty((1, 2), np.int64)
    n = 0
    peak = 0
    events = 0
    contacted = 0
    binds = 0
    status = ST_OK
    # --- segments for the trend test
    seg_len = (horizon - warmup) / NSEG
    seg = 0
    seg_end = warmup + seg_len
    seg_area = 0.0
    tlast = warmup
    t = 0.0
    while True:
        t = ht[0]
        if t > horizon:
            break
        code = hc[0]
        events += 1
        # total-number path on the segments (only after the warm-up)
        if t > warmup:
            while t > seg_end and seg < NSEG - 1:
                seg_area += n * (seg_end - tlast)
                out_seg[seg] = seg_area / seg_len
                seg_area = 0.0
                tlast = seg_end
                seg += 1
                seg_end = warmup + (seg + 1) * seg_len
            seg_area += n * (t - tlast)
            tlast = t
        if code < N:
            # ---------------- arrival of class i
            i = code
            arrived[i] += 1
            if policy == MCT or policy == KPB or policy == LPAS:
                if fast:
                    j = _argmin_fast(i, cand, ncand[i], W, wc)
                else:
                    j = _argmin_ect(i, cand, i, ncand[i], W, w, True, tie, st, s_tie, tol)
                contacted += ncand[i]
            elif policy == MET:
                j = _argmin_ect(i, cand, i, ncand[i], W, w, False, tie, st, s_tie, tol)
            elif policy == LPSTATIC:
                total = 0.0
                for k in range(ncand[i]):
                    total += pw[i, cand[i, k]]
                j = _sample(i, cand, i, ncand[i], pw, total, -1, st, s_pol)
            elif policy == LPAS2K:
                j = _two_choices(i, cand, i, ncand[i], pw, W, w, tie, st, s_pol, s_tie, tol, pair)
                contacted += min(ncand[i], 2)
            else:
                # Guided-LPAS(-2/k), §2.4: T_i(t) = {j in S_i : a_ij(t-) < pi_ij a_i(t) + C_ij sqrt(t)}
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
                if policy == GLPAS:
                    j = _argmin_ect(i, tmp, 0, cnt, W, w, True, tie, st, s_tie, tol)
                    contacted += cnt
                    if cnt < ncand[i]:
                        # binds when the unrestricted LPAS choice is excluded by (iii)
                        jl = _argmin_ect(i, cand, i, ncand[i], W, w, True, TIE_LOWEST, st, s_tie, tol)
                        jg = _argmin_ect(i, tmp, 0, cnt, W, w, True, TIE_LOWEST, st, s_tie, tol)
                        if W[jl] + w[i, jl] < W[jg] + w[i, jg] - tol * (W[jg] + w[i, jg]):
                            binds += 1
                else:
                    j = _two_choices(i, tmp, 0, cnt, pw, W, w, tie, st, s_pol, s_tie, tol, pair)
                    contacted += min(cnt, 2)
                    if cnt < ncand[i]:
                        binds += 1
            assigned[i, j] += 1
            # task size (unit mean), from class i's execution stream
            if dist == D_EXP:
                x = expo(st, N + i)
            elif dist == D_DET:
                x = 1.0
            elif dist == D_HYPER:
                u = uniform(st, N + i)
                e = expo(st, N + i)
                x = e / hp[1] if u <= hp[0] else e / hp[2]
            else:
                if gpos[i] >= gen.shape[1]:
                    status = ST_EXHAUSTED
                    break
                x = gen[i, gpos[i]]
                gpos[i] += 1
            # enqueue at j (grow the ring buffers if needed)
            p = (head[j] + qlen[j]) & (cap - 1)
            qc[j, p] = i
            qx[j, p] = x
            qa[j, p] = t
            qlen[j] += 1
            if t > warmup:
                area[i] += ncls[i] * (t - max(last[i], warmup))
            last[i] = t
            ncls[i] += 1
            n += 1
            if n > peak:
                peak = n
            Q[i, j] += 1
            if exact:  # integer-valued weights: the running sum is exact
                W[j] += w[i, j]
            else:  # recompute from the counts in a fixed order (bit-equal for equal counts)
                acc = 0.0
                for c in range(N):
                    acc += Q[c, j] * w[c, j]
                W[j] = acc
            # next arrival of class i replaces the heap top
            _sift_down(ht, hk, hc, size, 0, t + expo(st, i) / alpha[i], _PRIO + seq, i)
            seq += 1
            if qlen[j] == 1:
                size = _push(ht, hk, hc, size, t + x / mu[i, j], seq, N + j)
                seq += 1
            if n > max_in_system:
                status = ST_BOUND
                break
        else:
            # ---------------- completion at machine j
            j = code - N
            p = head[j]
            c = qc[j, p]
            if qa[j, p] >= warmup:
                out_resp[c] += t - qa[j, p]
                done_c[c] += 1
            head[j] = (p + 1) & (cap - 1)
            qlen[j] -= 1
            if t > warmup:
                area[c] += ncls[c] * (t - max(last[c], warmup))
            last[c] = t
            ncls[c] -= 1
            n -= 1
            Q[c, j] -= 1
            if exact:
                W[j] -= w[c, j]
            else:
                acc = 0.0
                for cc in range(N):
                    acc += Q[cc, j] * w[cc, j]
                W[j] = acc
            if qlen[j] > 0:
                p = head[j]
                _sift_down(ht, hk, hc, size, 0, t + qx[j, p] / mu[qc[j, p], j], seq, code)
                seq += 1
            else:
                size -= 1
                _sift_down(ht, hk, hc, size, 0, ht[size], hk[size], hc[size])
    # --- close the time averages at the end (horizon, or the stopping time)
    t_end = horizon if status == ST_OK else max(t, warmup)
    span = max(t_end - warmup, 1e-300)
    for i in range(N):
        if t_end > warmup:
            area[i] += ncls[i] * (t_end - max(last[i], warmup))
        out_q[i] = area[i] / span
    if status == ST_OK:
        while seg < NSEG - 1:
            seg_area += n * (seg_end - tlast)
            out_seg[seg] = seg_area / seg_len
            seg_area = 0.0
            tlast = seg_end
            seg += 1
            seg_end = warmup + (seg + 1) * seg_len
        seg_area += n * (horizon - tlast)
        out_seg[seg] = seg_area / seg_len
    out_int[0] = status
    out_int[1] = events
    out_int[2] = arrived.sum()
    out_int[3] = done_c.sum()
    out_int[4] = contacted
    out_int[5] = binds
    out_int[6] = peak
    for i in range(N):
        out_int[7 + i] = done_c[i]
        for m in range(M):
            out_assigned[i, m] = assigned[i, m]
