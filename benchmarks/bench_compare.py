"""``hs.compare``: every policy x replication in one batch, against one ``hs.simulate`` per policy.

Row (both in this process, alternating, medians of repeats; the numbers must be
identical, since a comparison is the same runs paired):

* ``compare: 4 policies in one batch`` -- wall seconds of ``hs.compare(2.C1,
  [mct, lpas, lpas-2k, kpb], reps=R, horizon=T, workers=W)`` against the same
  four policies run one after the other with ``hs.simulate(..., workers=W)``
  plus the paired statistics. ``ratio`` = reference / hetsched (> 1: the
  batch is faster; it keeps every worker busy across policies instead of
  waiting at the end of each). No issue target; ``--quick``: 6 x 2,000, three
  repeats; full: 10 x 20,000 (issue 22's command), one repeat.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time

POLICIES = ["mct", "lpas", "lpas-2k", "kpb"]


def _compare(reps: int, horizon: float, workers: int):
    import hetsched as hs

    t0 = time.perf_counter()
    r = hs.compare("2.C1", POLICIES, reps=reps, horizon=horizon, seed=1, workers=workers, k=14)
    return time.perf_counter() - t0, [p.values for p in sorted(r.policies, key=lambda p: p.policy)]


def _one_by_one(reps: int, horizon: float, workers: int):
    import hetsched as hs
    from hetsched.compare.stats import paired_difference

    t0 = time.perf_counter()
    res = {p: hs.simulate("2.C1", p, reps=reps, horizon=horizon, seed=1, workers=workers,
                          **({"k": 14} if p == "kpb" else {})) for p in POLICIES}
    vals = {p: [r["Q"] for r in res[p].replications] for p in POLICIES}
    for i, a in enumerate(POLICIES):
        for b in POLICIES[i + 1:]:
            paired_difference(vals[a], vals[b])
    return time.perf_counter() - t0, [vals[p] for p in sorted(POLICIES)]


def main(quick: bool = False, workers: int = 2) -> list[dict]:
    reps, horizon, repeats = (6, 2_000.0, 3) if quick else (10, 20_000.0, 1)
    _compare(2, 10.0, workers)  # start-up (kernels, pool) outside the timing, for both
    load0 = os.getloadavg()
    ours, ref, same = [], [], True
    for _ in range(repeats):
        t1, v1 = _compare(reps, horizon, workers)
        t2, v2 = _one_by_one(reps, horizon, workers)
        ours.append(t1)
        ref.append(t2)
        same = same and v1 == v2
    load1 = os.getloadavg()
    a, b = statistics.median(ours), statistics.median(ref)
    return [{
        "benchmark": "compare: 4 policies in one batch",
        "size": f"2.C1, {len(POLICIES)} policies x {reps} reps x {horizon:g} time units, {workers} workers",
        "metric": "wall seconds (ratio = reference / hetsched)",
        "hetsched": a, "reference": b, "ratio": b / a,
        "command": f"python benchmarks/run.py compare{' --quick' if quick else ''}",
        "note": (f"reference: one hs.simulate per policy, then the paired statistics; median of {repeats}; "
                 f"identical per-replication values: {same}; load average {load0[0]:.2f} -> {load1[0]:.2f} "
                 f"on {os.cpu_count()} cores (shared machine: other work inflates both)"),
    }]


if __name__ == "__main__":
    for row in main(quick="--quick" in sys.argv[1:]):
        print(json.dumps(row))
