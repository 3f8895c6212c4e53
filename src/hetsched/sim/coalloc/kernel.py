"""Compiled replication kernel of the co-allocation model (no checks; writes ``out``).

Built on the shared core: the event list (:mod:`..core.events`, slots below),
the xoshiro streams (:mod:`..core.rng`: stream 0 drives cluster-1 arrivals —
gap, size, work —, stream 1 cluster-2 arrivals — gap, work —, so a job has the
same work under every policy: common random numbers), and the instability
segments (:mod:`..core.instability`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..core.events import ev_cancel, ev_new, ev_pop, ev_schedule, ev_time
from ..core.instability import NSEG, seg_close, seg_new, seg_observe
from ..core.rng import expo, uniform

# event slots; completions (priority 0) before arrivals (priority 1) at equal times
ARR1, ARR2, END_A, END_B, END_CO, END2 = 0, 1, 2, 3, 4, 5
N_SLOTS = 6
# policy codes
LOCAL, HEURISTIC, TABLE, ALWAYS, HEURISTIC_C1Q1 = 0, 1, 2, 3, 4
# out layout
O_COST, O_L1, O_L2, O_T, O_DONE, O_EVENTS, O_COALLOC, O_BOUND, O_LOST1, O_LOST2, O_NEND = range(11)
N_OUT = 11 + NSEG  # then the NSEG segment averages of the number in system


@njit(cache=True)
def run_coalloc(rates, policy, table, clamp, max_starts, horizon, warmup, limit, bound, st, q1size, q1work,
                q2rem, out):
    """One replication over ``[0, horizon]``; statistics over ``[warmup, horizon]``.

    ``rates`` = (lam1, lam2, mu1, mu2, mu3, p, c1, c2). ``table[x1, q1, q2]``
    read at ``min(q, clamp)``. ``limit > 0``: at most ``limit`` jobs wait in
    queue 1 and ``limit`` are at cluster 2 (the MDP's truncation; further
    arrivals are lost). ``bound``: stop, flagged, when the number in system
    exceeds it. Queue buffers hold ``bound + 2`` jobs.
    """
    lam1, lam2, mu1, mu2, mu3, p, c1, c2 = rates[0], rates[1], rates[2], rates[3], rates[4], rates[5], rates[6], rates[7]
    cap = q1size.size
    ev = ev_new(N_SLOTS)
    if lam1 > 0:
        ev_schedule(ev, ARR1, expo(st, 0) / lam1, 1)
    if lam2 > 0:
        ev_schedule(ev, ARR2, expo(st, 1) / lam2, 1)
    sg = seg_new(warmup, horizon)
    h1 = 0
    n1 = 0
    h2 = 0
    n2 = 0
    kind_a = 0
    kind_b = 0
    x1 = 0
    x2 = 0
    x11 = 0
    t = 0.0
    events = 0
    coallocs = 0
    done = 0
    lost1 = 0
    lost2 = 0
    area = 0.0
    area1 = 0.0
    area2 = 0.0
    hit = False
    while True:
        te = ev_time(ev)
        if te > horizon:
            te = horizon
        L1 = n1 + x1 + x2 + x11
        seg_observe(sg, te, L1 + n2)
        if te > warmup:
            t0 = t if t > warmup else warmup
            dt = te - t0
            area += (c1 * L1 + c2 * n2) * dt
            area1 += L1 * dt
            area2 += n2 * dt
        t = te
        if t >= horizon:
            break
        slot = ev_pop(ev)
        events += 1
        if slot == ARR1:
            g = 1 if uniform(st, 0) < p else 2
            w = expo(st, 0)
            ev_schedule(ev, ARR1, t + expo(st, 0) / lam1, 1)
            if limit > 0 and n1 >= limit:
                lost1 += 1
            else:
                j = (h1 + n1) % cap
                q1size[j] = g
                q1work[j] = w
                n1 += 1
        elif slot == ARR2:
            w = expo(st, 1)
            ev_schedule(ev, ARR2, t + expo(st, 1) / lam2, 1)
            if limit > 0 and n2 >= limit:
                lost2 += 1
            else:
                j = (h2 + n2) % cap
                q2rem[j] = w / mu2
                n2 += 1
                if n2 == 1 and x11 == 0:
                    ev_schedule(ev, END2, t + q2rem[j], 0)
        elif slot == END_A or slot == END_B:
            k = kind_a if slot == END_A else kind_b
            if k == 1:
                x1 -= 1
            else:
                x2 -= 1
            if slot == END_A:
                kind_a = 0
            else:
                kind_b = 0
            done += 1
        elif slot == END_CO:
            x11 = 0
            if n2 > 0:  # the preempted (or waiting) cluster-2 job resumes
                ev_schedule(ev, END2, t + q2rem[h2], 0)
            done += 1
        else:  # END2
            h2 = (h2 + 1) % cap
            n2 -= 1
            if n2 > 0:
                ev_schedule(ev, END2, t + q2rem[h2], 0)
            done += 1
        # decision epoch: start at most max_starts jobs of queue 1 (0 = as many as fit)
        nstart = 0
        while n1 > 0 and (max_starts == 0 or nstart < max_starts):
            g = q1size[h1]
            theta = 2 - x1 - 2 * x2 - x11
            act = 0
            if g == 2 and x11 == 0 and theta >= 1:
                if policy == HEURISTIC:
                    act = 1 if (x1 == 1 and p * c1 * n1 > c2 * n2) else 0
                elif policy == TABLE:
                    act = table[x1, min(n1, clamp), min(n2, clamp)]
                elif policy == ALWAYS:
                    act = 1
                elif policy == HEURISTIC_C1Q1:  # the comparator of §6: without the multiplier p
                    act = 1 if (x1 == 1 and c1 * n1 > c2 * n2) else 0
            if act == 1:
                w = q1work[h1]
                h1 = (h1 + 1) % cap
                n1 -= 1
                x11 = 1
                ev_schedule(ev, END_CO, t + w / mu3, 0)
                if n2 > 0:  # preempt the cluster-2 job; it keeps its remaining time
                    q2rem[h2] = ev.ht[ev.pos[END2]] - t
                    ev_cancel(ev, END2)
                coallocs += 1
            elif theta >= g:
                w = q1work[h1]
                h1 = (h1 + 1) % cap
                n1 -= 1
                if g == 1:
                    x1 += 1
                else:
                    x2 += 1
                if kind_a == 0:
                    kind_a = g
                    ev_schedule(ev, END_A, t + w / mu1, 0)
                else:
                    kind_b = g
                    ev_schedule(ev, END_B, t + w / mu1, 0)
            else:
                break
            nstart += 1
        if n1 + n2 + x1 + x2 + x11 > bound or n1 >= cap - 1 or n2 >= cap - 1:
            hit = True
            break
    T = t - warmup
    nend = n1 + x1 + x2 + x11 + n2
    out[O_COST] = area / T if T > 0 else np.nan
    out[O_L1] = area1 / T if T > 0 else np.nan
    out[O_L2] = area2 / T if T > 0 else np.nan
    out[O_T] = t
    out[O_DONE] = done
    out[O_EVENTS] = events
    out[O_COALLOC] = coallocs
    out[O_BOUND] = 1.0 if hit else 0.0
    out[O_LOST1] = lost1
    out[O_LOST2] = lost2
    out[O_NEND] = nend
    if not hit:
        seg_close(sg, horizon, nend, out[N_OUT - NSEG:])
    else:
        for k in range(NSEG):
            out[N_OUT - NSEG + k] = np.nan
