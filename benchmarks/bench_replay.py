"""Benchmark of trace replay and per-task records in the mapping kernel (issue 13).

Rows (ratios against references run in the same process; medians of
interleaved repeats, CPU time of the replication itself):

* **records cost** — System 2.C1 under LPAS, Poisson arrivals, one replication
  of 20,000 time units (about 2.6 million tasks): CPU time with
  ``records=True`` over the time without (ratio > 1 = the cost of records).
* **trace vs Poisson** — 2.C1 under MCT: events per CPU-second replaying the
  LCG log at load 0.8 (187,520 jobs, one window) against a Poisson
  replication of the same system (ratio ~ 1: the trace costs nothing extra).
* **compiled vs pure Python** — the first 20,000 Gaia jobs through MCT on 2.C1
  at load 0.8: the compiled replay against ``tests/reference_replay.py``
  (same records, checked), wall-time ratio.

Run: ``python benchmarks/bench_replay.py [--quick]``.
"""

from __future__ import annotations

import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
TRACES = REPO / ".." / "shared" / "traces"


def _cpu(fn) -> float:
    c0 = time.process_time()
    fn()
    return time.process_time() - c0


def main(quick: bool = False) -> list[dict]:
    from hetsched.scenarios import load
    from hetsched.sim.mapping import prepare, replication
    from hetsched.sim.mapping.run import prepare_trace
    from hetsched.traces import read_swf, workload

    sysm = load("2.C1")
    reps = 3 if quick else 7
    H = 4000.0 if quick else 20_000.0
    rows = []
    # --- records cost (Poisson)
    p_off = prepare(sysm, "lpas", horizon=H)
    p_on = replace(p_off, records=True)
    replication(np.random.SeedSequence(0), p_off.with_params(horizon=10.0))  # compile / load the cache
    off, on = [], []
    for r in range(reps):  # interleaved: the machine's load affects both alike
        off.append(replication(np.random.SeedSequence(r), p_off)["cpu"])
        on.append(replication(np.random.SeedSequence(r), p_on)["cpu"])
    mo, mn = statistics.median(off), statistics.median(on)
    rows.append({"benchmark": f"records on/off, 2.C1 LPAS, 1 replication x {H:g}", "metric": "CPU s (median)",
                 "hetsched": mn, "reference": mo, "ratio": mn / mo,
                 "note": "kernel time with records / without (> 1 = cost of records)"})
    lcg = TRACES / "LCG.swf.gz"
    gaia = TRACES / "UniLu-Gaia-2014-2.swf.gz"
    if not (lcg.is_file() and gaia.is_file()):
        rows.append({"benchmark": "trace replay", "metric": "skipped", "hetsched": None, "reference": None,
                     "ratio": None, "note": f"the logs are not in {TRACES}"})
        return rows
    # --- trace vs Poisson (events per CPU second)
    tw = workload(read_swf(lcg), sysm, load=0.8)
    base = prepare(sysm.with_(alpha=tuple(tw.alpha)), "mct", horizon=H, tie="lowest")
    p_tr = prepare_trace(base, tw, 1)
    p_po = prepare(sysm, "mct", horizon=H, tie="lowest")
    tr_rate, po_rate = [], []
    for r in range(reps):
        o = replication(np.random.SeedSequence(r), p_tr)
        tr_rate.append(o["events"] / o["cpu"])
        o = replication(np.random.SeedSequence(r), p_po)
        po_rate.append(o["events"] / o["cpu"])
    a, b = statistics.median(tr_rate), statistics.median(po_rate)
    rows.append({"benchmark": "trace replay (LCG, 187,520 jobs) vs Poisson, 2.C1 MCT", "metric": "events/CPU-s",
                 "hetsched": a, "reference": b, "ratio": a / b, "note": "trace / Poisson events per CPU-second"})
    # --- compiled vs the pure-Python reference replay
    sys.path.insert(0, str(REPO / "tests"))
    from reference_replay import replay

    n = 5000 if quick else 20_000
    w = workload(read_swf(gaia).iloc[:n], sysm, load=0.8)
    base = prepare(sysm.with_(alpha=tuple(w.alpha)), "mct", horizon=1.0, tie="lowest")
    p = prepare_trace(replace(base, records=True), w, 1)
    t_c, t_py = [], []
    for _ in range(3 if quick else 5):
        t0 = time.perf_counter()
        out = replication(np.random.SeedSequence(0), p)
        t_c.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        ref, _ = replay(w.arrival, w.size, w.klass, sysm.mu, "mct")
        t_py.append(time.perf_counter() - t0)
    order = np.argsort(out["rec_task"])
    assert np.array_equal(out["rec_e"][order], ref["end"].to_numpy())
    a, b = statistics.median(t_c), statistics.median(t_py)
    rows.append({"benchmark": f"compiled replay vs pure Python ({n} Gaia jobs, MCT, records on)",
                 "metric": "wall s (median)", "hetsched": a, "reference": b, "ratio": b / a,
                 "note": "reference time / compiled time (same records)"})
    return rows


if __name__ == "__main__":
    for row in main(quick="--quick" in sys.argv):
        print(row)
