"""A slow, obviously-correct reference simulator of the mapping model (thesis §2.2.2).

Pure Python, ``heapq`` event list, expected completion times computed from the
per-class counts at each arrival (rounded to 1e-9 so that equal times tie),
lowest-index ties, a numpy ``Generator`` for all randomness. Written independently of the compiled kernel; used only by tests.
"""

from __future__ import annotations

import heapq
from collections import deque

import numpy as np


def reference_qbar(alpha, mu, candidates, horizon, seed, dist="exp"):
    """Time-average number in system of one replication.

    ``candidates[i]``: machines a class-``i`` arrival may be sent to; the one
    with the least ``1/mu_ij + sum_i' Q_i'j/mu_i'j`` is chosen (lowest index on
    ties). Returns ``(qbar, per_class_mean_response)``.
    """
    rng = np.random.default_rng(seed)
    N, M = len(alpha), len(mu[0])
    inv = [[1.0 / mu[i][j] if mu[i][j] > 0 else None for j in range(M)] for i in range(N)]
    count = [[0] * M for _ in range(N)]
    queues = [deque() for _ in range(M)]  # (class, arrival time)
    events = []  # (time, priority, seq, kind, index); completions (0) before arrivals (1)
    seq = 0
    for i in range(N):
        heapq.heappush(events, (rng.exponential(1 / alpha[i]), 1, seq, "a", i))
        seq += 1
    n, area, last = 0, 0.0, 0.0
    resp = [[] for _ in range(N)]

    def service(i, j):
        return 1.0 / mu[i][j] if dist == "det" else rng.exponential(1.0 / mu[i][j])

    while events:
        t, _, _, kind, x = heapq.heappop(events)
        if t > horizon:
            break
        area += n * (t - last)
        last = t
        if kind == "a":
            i = x

            def ect(j):
                return round(inv[i][j] + sum(count[c][j] * inv[c][j] for c in range(N) if count[c][j]), 9)

            j = min(candidates[i], key=lambda j: (ect(j), j))
            queues[j].append((i, t))
            count[i][j] += 1
            n += 1
            if len(queues[j]) == 1:
                heapq.heappush(events, (t + service(i, j), 0, seq, "d", j))
                seq += 1
            heapq.heappush(events, (t + rng.exponential(1 / alpha[i]), 1, seq, "a", i))
            seq += 1
        else:
            j = x
            c, ta = queues[j].popleft()
            count[c][j] -= 1
            resp[c].append(t - ta)
            n -= 1
            if queues[j]:
                heapq.heappush(events, (t + service(queues[j][0][0], j), 0, seq, "d", j))
                seq += 1
    area += n * (horizon - last)
    return area / horizon, [float(np.mean(r)) if r else float("nan") for r in resp]
