"""A slow, obviously-correct trace replay of the mapping model (thesis §2.2.2), for tests.

Pure Python with a ``heapq`` event list; no randomness at all (arrival times,
sizes and classes come from the trace). Each machine serves its FIFO queue one
task at a time; a class-``i`` task of size ``X`` runs ``X / mu[i][j]`` on
machine ``j``. Policies, decided at arrival from *expected* times (the policy
does not know ``X``): ``met`` -- least ``1/mu_ij``; ``mct`` -- least
``1/mu_ij + sum of 1/mu_cj over the tasks queued or running on j`` (rounded to
1e-9, lowest index on ties). Written independently of the compiled kernels, it
yields per-task records and its own time-average number in system (an
accumulator over the events, not derived from the records).
"""

from __future__ import annotations

import heapq
from collections import deque

import numpy as np

from hetsched.traces import records_frame


def replay(arrival, size, klass, mu, policy="mct"):
    """Returns ``(records, L)``: the records frame and the time-average number in
    system over ``[first arrival, last completion]``."""
    mu = np.asarray(mu, dtype=float)
    N, M = mu.shape
    mu_l = mu.tolist()  # plain floats: numpy scalar indexing per event is slow
    arrival_l = np.asarray(arrival, dtype=float).tolist()
    size_l = np.asarray(size, dtype=float).tolist()
    klass_l = np.asarray(klass).astype(int).tolist()
    inv = [[1.0 / mu_l[i][j] if mu_l[i][j] > 0 else None for j in range(M)] for i in range(N)]
    cands = [[j for j in range(M) if mu_l[i][j] > 0] for i in range(N)]
    queues = [deque() for _ in range(M)]
    pending = [0.0] * M  # sum of expected times of tasks queued or running on j
    n_tasks = len(arrival)
    start = np.full(n_tasks, np.nan)
    end = np.full(n_tasks, np.nan)
    mach = np.full(n_tasks, -1, dtype=np.int64)
    events = []  # (time, priority, seq, kind, index): completions (0) before arrivals (1)
    for k in range(n_tasks):
        heapq.heappush(events, (arrival_l[k], 1, k, "a", k))
    seq = n_tasks
    n_sys, area, last, t0 = 0, 0.0, arrival_l[0], arrival_l[0]
    while events:
        t, _, _, kind, x = heapq.heappop(events)
        area += n_sys * (t - last)
        last = t
        if kind == "a":
            i = klass_l[x]
            if policy == "met":
                j = min(cands[i], key=lambda j: (round(inv[i][j], 9), j))
            else:
                j = min(cands[i], key=lambda j: (round(inv[i][j] + pending[j], 9), j))
            queues[j].append(x)
            pending[j] += inv[i][j]
            mach[x] = j
            n_sys += 1
            if len(queues[j]) == 1:
                start[x] = t
                heapq.heappush(events, (t + size_l[x] / mu_l[i][j], 0, seq, "d", j))
                seq += 1
        else:
            j = x
            k = queues[j].popleft()
            end[k] = t
            pending[j] -= inv[klass_l[k]][j]
            n_sys -= 1
            if queues[j]:
                k2 = queues[j][0]
                start[k2] = t
                heapq.heappush(events, (t + size_l[k2] / mu_l[klass_l[k2]][j], 0, seq, "d", j))
                seq += 1
    L = area / (last - t0)
    return records_frame(np.arange(n_tasks), klass, arrival, start, end, mach), L
