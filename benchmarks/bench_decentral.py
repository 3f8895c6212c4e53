"""Decentralized-grid benchmark: System 4.A (thesis Table 4.1) and the LP re-solves of LPAS_dec.

Rows:

* kernel events per second for MCT, KPB (k=3) and LPAS_dec on System 4.A
  (rate changes on), against an ordinary plain-Python heapq loop of MCT on
  the same system (static rates; reference, same process, shorter horizon);
* LP work per second in LPAS_dec: the in-kernel LP (basis check, structured
  simplex, dense simplex as fallback) on views of 4.A perturbed like
  rate-change events, against HiGHS from scratch (``lp.solve_allocation``)
  on the same views;
* the same for 300-machine views of System 4.B2 perturbed like CPU events;
* extrapolated seconds per 200,000-time-unit replication of LPAS_dec.

Medians of repeats; kernel times are CPU seconds (the machine is shared).
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
import random
import statistics
import sys
import time
from collections import deque

import numpy as np


def _python_mct(alpha, mu, horizon, seed):
    """Reference: an ordinary plain-Python MCT loop on per-machine streams (static rates); returns events.

    A fair baseline: ``heapq`` events, the arrival's stream found by bisection
    on cumulative rates (no ``rng.choice(p=)`` per arrival), ``deque`` queues,
    and the expected completion time kept incrementally per machine
    (``work[j]`` = sum of ``1/mu`` of its tasks), so an arrival costs O(M).
    """
    rnd = random.Random(seed)
    N, M = mu.shape
    cum = list(itertools.accumulate(alpha.ravel().tolist()))
    tot = cum[-1]
    inv = [[1.0 / x if x > 0 else math.inf for x in row] for row in mu.tolist()]
    rate = mu.tolist()
    work = [0.0] * M
    queues = [deque() for _ in range(M)]
    ev = [(rnd.expovariate(tot), 1, -1)]
    events = 0
    while ev:
        t, kind, j = heapq.heappop(ev)
        if t > horizon:
            break
        events += 1
        if kind == 1:
            i = bisect.bisect_right(cum, rnd.random() * tot) // M
            row = inv[i]
            d = min(range(M), key=lambda jj: work[jj] + row[jj])
            queues[d].append(i)
            work[d] += row[d]
            if len(queues[d]) == 1:
                heapq.heappush(ev, (t + rnd.expovariate(rate[i][d]), 0, d))
            heapq.heappush(ev, (t + rnd.expovariate(tot), 1, -1))
        else:
            i = queues[j].popleft()
            work[j] -= inv[i][j]
            if queues[j]:
                c = queues[j][0]
                heapq.heappush(ev, (t + rnd.expovariate(rate[c][j]), 0, j))
    return events


def _lp_rates(system, n, seed):
    """(in-kernel LP updates/s, HiGHS solves/s, share of updates needing a simplex) on perturbed views."""
    from hetsched.lp import solve_allocation
    from hetsched.lp.tableau import gub_simplex, solve_vertex
    from hetsched.sim.decentral import per_machine_alpha

    A0 = per_machine_alpha(system)
    mu0 = np.ascontiguousarray(system.mu_effective)
    N, M = mu0.shape
    rng = np.random.default_rng(seed)
    views = []
    A, mu = A0.copy(), mu0.copy()
    a_levels = np.unique(system.a)
    for _ in range(n):
        if M <= 10:  # 4.A: a random walk of one-rate changes, as rate-change events do
            i, j = rng.integers(N), rng.integers(M)
            if rng.random() < 0.5:
                A[i, j] = A0[i, j] * rng.choice([1.0, 1.1, 1.2])
            else:
                mu[i, j] = mu0[i, j] * rng.choice([1.0, 1.05, 1.15])
        else:  # 4.B: one machine learns another's new CPU availability
            j = rng.integers(M)
            mu[:, j] = system.mu[:, j] * rng.choice(a_levels)
        views.append((A.sum(1).copy(), np.ascontiguousarray(mu)))
    basis = np.zeros(N + M, np.int64)
    sup = np.zeros((N, M), bool)
    ones = np.ones(M)
    solve_vertex(views[0][0], views[0][1], ones, sup, basis, False)
    simplex = 0
    t0 = time.perf_counter()
    for a, m in views:
        if gub_simplex(a, m, basis, sup, 200) < 0:
            solve_vertex(a, m, ones, sup, basis, True)
            simplex += 1
    t_k = time.perf_counter() - t0
    n_ref = min(n, 50 if M <= 10 else 10)
    t0 = time.perf_counter()
    for a, m in views[:n_ref]:
        solve_allocation(m, a)
    t_h = (time.perf_counter() - t0) / n_ref
    return n / t_k, 1.0 / t_h, simplex / n


def main(quick: bool = False) -> list[dict]:
    from hetsched.scenarios import load
    from hetsched.sim.decentral import per_machine_alpha, prepare, replication, warm_up_kernels

    warm_up_kernels()
    s = load("4.A")
    H = 5_000.0 if quick else 40_000.0
    rep = 1 if quick else 3
    rows = []
    lp_rate = None
    for pol, k in (("mct", None), ("kpb", 3), ("lpas-dec", None)):
        p = prepare(s, pol, k=k, horizon=H)
        rates, out = [], None
        for r in range(rep):
            out = replication(np.random.SeedSequence(r), p)
            rates.append(out["events"] / out["cpu"])
        ev = statistics.median(rates)
        if pol == "lpas-dec":
            lp_rate = (out["lp_checks"] / out["cpu"], out["lp_solves"], out["lp_checks"])
            t200k = out["cpu"] * 200_000.0 / H
        rows.append({"benchmark": f"decentral 4.A {pol}", "metric": "events/s",
                     "size": f"scenario 4.A, horizon {H:g}, seeds 0..{rep - 1}", "hetsched": ev,
                     "reference": None, "ratio": None, "note": f"{out['events']} events, horizon {H:g}"})
    # reference: plain Python MCT, static rates
    Href = 50.0 if quick else 300.0
    ts = []
    for r in range(rep):
        t0 = time.process_time()
        ev_ref = _python_mct(per_machine_alpha(s), s.mu_effective, Href, r)
        ts.append(time.process_time() - t0)
    ref_rate = ev_ref / statistics.median(ts)
    rows[0]["reference"] = ref_rate
    rows[0]["ratio"] = rows[0]["hetsched"] / ref_rate
    rows[0]["note"] += (f"; reference: an ordinary plain-Python heapq MCT loop (cumulative-rate bisection, deque "
                        f"queues, static rates), horizon {Href:g}, seeds 0..{rep - 1} ({ev_ref} events); "
                        f"ratio = hetsched / reference")
    rows.append({"benchmark": "decentral 4.A lpas-dec", "metric": "view LP updates/s (in run)",
                 "hetsched": lp_rate[0], "reference": None, "ratio": None,
                 "note": f"{lp_rate[2]} view updates, {lp_rate[1]} dense solves (incl. the initial one)"})
    rows.append({"benchmark": "decentral 4.A lpas-dec", "metric": "s per 200,000-unit replication",
                 "hetsched": t200k, "reference": None, "ratio": None, "note": "extrapolated from the run above"})
    for sid, n in (("4.A", 200 if quick else 2000), ("4.B2", 100 if quick else 1000)):
        k_rate, h_rate, share = _lp_rates(load(sid), n, 1)
        rows.append({"benchmark": f"decentral {sid} view LP", "metric": "LP updates/s",
                     "size": f"scenario {sid}, {n} perturbed views, seed 1",
                     "hetsched": k_rate, "reference": h_rate, "ratio": k_rate / h_rate,
                     "note": f"basis check / structured simplex ({100 * share:.0f}% needed the dense simplex); "
                             "reference: HiGHS from scratch (lp.solve_allocation)"})
    return rows


if __name__ == "__main__":
    for row in main(quick="--quick" in sys.argv[1:]):
        print(row)
