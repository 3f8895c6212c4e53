"""A slow, obviously-correct reference simulator of the desktop-grid model (pure Python).

Written from the model's description (``hetsched.sim.desktop`` module
docstring), not from the kernel: ``heapq`` event list with lazy deletion,
Python lists for the class queues, idle machines chosen by sorting on the
machine rule, the class chosen by the policy's key. It shares only the
random inputs with the kernel: the same xoshiro256+ streams (re-implemented
here in pure Python from the seed states of ``make_streams``) read in the
same order, so that for ``tie="lowest"`` both must give *identical* runs.

Scope: static availability ``a_j`` (no CPU chains), FCFS and Gcmu,
machine rules ``longest-idle``, ``fastest`` and ``lowest-index``,
resubmission ``front``/``back``, failures with exp/hyperexp up times and
exp/hyperexp/const down times, exp/det/hyperexp execution times.

Draw order (the only thing mirrored): stream 0 arrivals (one ``-log u`` per
arrival, at scheduling), 1 task sizes (one unit-mean variate per arrival, drawn
right after the next arrival time; a start runs ``size / mu'_ij``), 2 failures
(one up time per machine at time 0 in machine order, then one variate per
availability event), 7 the size of a task resubmitted after a failure (a fresh
unit-mean variate at the failure).
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from hetsched.sim.core.rng import make_streams
from hetsched.sim.core.variates import variate

MASK = (1 << 64) - 1
S_ARR, S_EXEC, S_FAIL, S_RESTART = 0, 1, 2, 7


class Xoshiro:
    """xoshiro256+ (Blackman & Vigna), one stream, pure Python."""

    def __init__(self, state):
        self.s = [int(x) for x in state]

    def next(self) -> int:
        s0, s1, s2, s3 = self.s
        result = (s0 + s3) & MASK
        t = (s1 << 17) & MASK
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = ((s3 << 45) | (s3 >> 19)) & MASK
        self.s = [s0, s1, s2, s3]
        return result

    def uniform(self) -> float:
        return float((self.next() >> 11) + 1) / 9007199254740992.0

    def expo(self) -> float:
        return -math.log(self.uniform())


def _variate(rng: Xoshiro, kind: str, mean: float, scv: float) -> float:
    if kind == "exp":
        return mean * rng.expo()
    if kind in ("det", "const"):
        return mean
    # hyperexponential, balanced means: branch first, then the exponential
    p1 = 0.5 * (1.0 + math.sqrt((scv - 1.0) / (scv + 1.0)))
    u = rng.uniform()
    e = rng.expo()
    return e * mean / (2 * p1) if u <= p1 else e * mean / (2 * (1 - p1))


def simulate(system, policy, seed_seq, *, horizon, warmup=0.0, machine_rule="longest-idle", resubmit="front",
             exec_dist=None, exec_scv=2.0):
    """One replication; returns a dict with ``W``, ``W_class``, counts and ``up_fraction``."""
    st = make_streams(seed_seq, 8)
    rng = {k: Xoshiro(st[k]) for k in (S_ARR, S_EXEC, S_FAIL, S_RESTART)}
    N, M = system.N, system.M
    mu = np.asarray(system.mu, float)
    a = np.asarray(system.a, float)
    alpha = system.alpha_array
    f = system.failures
    ed = exec_dist or system.exec_dist
    assert all(g.cpu_chain is None for g in system.groups), "reference: static availability only"
    # sanity: the kernel's parameterisation of the same distributions
    assert variate(ed, 1.0, scv=exec_scv).mean == 1.0

    heap, seq, version = [], [0], {}

    def schedule(slot, t, prio):
        seq[0] += 1
        version[slot] = seq[0]
        heapq.heappush(heap, (t, prio, seq[0], slot))

    def cancel(slot):
        version[slot] = None

    up = [True] * M
    busy = [None] * M  # (class, original arrival) of the running task
    idle_since = [0.0] * M
    idle = set(range(M))
    queues = [[] for _ in range(N)]  # (original arrival time, size), in queue order
    up_since = [0.0] * M
    up_time = [0.0] * M
    done = [0] * N
    resp = [0.0] * N
    counts = {"events": 0, "arrivals": 0, "resubmissions": 0, "avail_events": 0}

    if f is not None:
        for j in range(M):
            schedule(("avail", j), _variate(rng[S_FAIL], f.up_dist, f.mean_up, f.scv), 1)
    for i in range(N):
        schedule(("arr", i), rng[S_ARR].expo() / alpha[i], 2)

    def start(j, i, task, t):
        tarr, size = task
        idle.discard(j)
        busy[j] = (i, tarr)
        x = size / mu[i, j]
        schedule(("task", j), t + x / a[j], 0)

    def pick_class(j, t):
        best, key_best = -1, None
        for i in range(N):
            if queues[i] and mu[i, j] > 0:
                key = -queues[i][0][0] if policy == "fcfs" else (t - queues[i][0][0]) * mu[i, j]
                if best < 0 or key > key_best:
                    best, key_best = i, key
        return best

    def pick_machine(i):
        cands = [j for j in idle if mu[i, j] > 0]
        if not cands:
            return -1
        if machine_rule == "lowest-index":
            return min(cands)
        if machine_rule == "fastest":
            return min(cands, key=lambda j: (-mu[i, j] * a[j], idle_since[j], j))
        return min(cands, key=lambda j: (idle_since[j], j))

    while heap:
        t, prio, sq, slot = heap[0]
        if version.get(slot) != sq:
            heapq.heappop(heap)
            continue
        if t > horizon:
            break
        heapq.heappop(heap)
        version[slot] = None
        counts["events"] += 1
        kind, x = slot
        if kind == "task":
            j = x
            i, tarr = busy[j]
            if tarr >= warmup:
                done[i] += 1
                resp[i] += t - tarr
            busy[j] = None
            i2 = pick_class(j, t) if any(queues) else -1
            if i2 >= 0:
                start(j, i2, queues[i2].pop(0), t)
            else:
                idle_since[j] = t
                idle.add(j)
        elif kind == "avail":
            j = x
            counts["avail_events"] += 1
            if up[j]:
                up[j] = False
                up_time[j] += t - up_since[j]
                if busy[j] is not None:
                    i, tarr = busy[j]
                    busy[j] = None
                    cancel(("task", j))
                    counts["resubmissions"] += 1
                    was_empty = not queues[i]
                    task = (tarr, _variate(rng[S_RESTART], ed, 1.0, exec_scv))
                    if resubmit == "front":
                        k = 0
                        while k < len(queues[i]) and queues[i][k][0] < tarr:
                            k += 1
                        queues[i].insert(k, task)
                    else:
                        queues[i].append(task)
                    if was_empty:
                        jj = pick_machine(i)
                        if jj >= 0:
                            start(jj, i, queues[i].pop(0), t)
                else:
                    idle.discard(j)
                schedule(slot, t + _variate(rng[S_FAIL], f.down_dist, f.mean_down, f.scv), 1)
            else:
                up[j] = True
                up_since[j] = t
                schedule(slot, t + _variate(rng[S_FAIL], f.up_dist, f.mean_up, f.scv), 1)
                i2 = pick_class(j, t)
                if i2 >= 0:
                    start(j, i2, queues[i2].pop(0), t)
                else:
                    idle_since[j] = t
                    idle.add(j)
        else:
            i = x
            counts["arrivals"] += 1
            schedule(slot, t + rng[S_ARR].expo() / alpha[i], 2)
            size = _variate(rng[S_EXEC], ed, 1.0, exec_scv)
            jj = pick_machine(i) if not queues[i] else -1
            if jj >= 0:
                start(jj, i, (t, size), t)
            else:
                queues[i].append((t, size))
    for j in range(M):
        if up[j]:
            up_time[j] += horizon - up_since[j]
    n = sum(done)
    return {"W": sum(resp) / n if n else float("nan"),
            "W_class": [r / d if d else float("nan") for r, d in zip(resp, done)],
            "completed": done, "up_fraction": [u / horizon for u in up_time], **counts}
