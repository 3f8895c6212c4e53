"""Benchmark of the simulation engine (``make bench`` collects ``main``).

* System 2.C1 under LPAS: events per CPU-second of hetsched's compiled kernel
  (one core, in-process) against an equivalent SimPy model run in the same
  process (same model: Poisson arrivals per class, LPAS sets from the same LP,
  expected completion time from the counts, FCFS machines, exponential times).
  Medians of repeats; "events" = arrivals + completions in both.
* If ``gcc`` is available: the plain C loop of ``/work/shared/reference`` on
  the same model, for scale (run as a subprocess; not part of hetsched).
* Non-quick mode only: wall time of the whole of Table 2.1 (33 cells x 30
  replications x 20,000 time units) with the default local pool.

Run: ``python benchmarks/bench_sim.py [--quick]``.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def _hetsched_rate(horizon: float, repeats: int) -> tuple[float, float]:
    from hetsched.scenarios import load
    from hetsched.sim.mapping import prepare, replication

    params = prepare(load("2.C1"), "lpas", horizon=horizon)
    replication(np.random.SeedSequence(0), {**params, "horizon": 10.0})  # compile / load cache
    rates, qs = [], []
    for r in range(repeats):
        out = replication(np.random.SeedSequence(r), params)
        rates.append(out["events"] / out["cpu"])
        qs.append(out["Q"])
    return statistics.median(rates), statistics.mean(qs)


def simpy_lpas_2c1(horizon: float, seed: int) -> tuple[int, float, float]:
    """The same model in SimPy; returns ``(events, cpu_seconds, Qbar)``."""
    import simpy

    from hetsched.scenarios import load
    from hetsched.sim.mapping import prepare

    sysm = load("2.C1")
    p = prepare(sysm, "lpas", horizon=horizon)
    alpha, mu = sysm.alpha_array, sysm.mu
    N, M = mu.shape
    cands = [list(p["cand"][i, : p["ncand"][i]]) for i in range(N)]
    inv = (1.0 / mu).tolist()  # plain Python lists: the fastest idiom for a SimPy model
    rates = mu.tolist()
    alpha_l = alpha.tolist()
    rng = np.random.default_rng(seed)
    expo = rng.exponential
    env = simpy.Environment()
    stores = [simpy.Store(env) for _ in range(M)]
    W = [0.0] * M  # sum over queued tasks of 1/mu_ij, the expected completion time minus 1/mu_ij
    state = {"n": 0, "area": 0.0, "last": 0.0, "events": 0}

    def account():
        t = env.now
        state["area"] += state["n"] * (t - state["last"])
        state["last"] = t
        state["events"] += 1

    def arrivals(i):
        inv_i = inv[i]
        cand = cands[i]
        while True:
            yield env.timeout(expo(1.0 / alpha_l[i]))
            account()
            best, bv = -1, 0.0
            for j in cand:
                v = W[j] + inv_i[j]
                if best < 0 or v < bv:
                    best, bv = j, v
            W[best] += inv_i[best]
            state["n"] += 1
            stores[best].put(i)

    def machine(j):
        while True:
            i = yield stores[j].get()
            yield env.timeout(expo(1.0 / rates[i][j]))
            account()
            W[j] -= inv[i][j]
            state["n"] -= 1

    for i in range(N):
        env.process(arrivals(i))
    for j in range(M):
        env.process(machine(j))
    c0 = time.process_time()
    env.run(until=horizon)
    cpu = time.process_time() - c0
    state["area"] += state["n"] * (horizon - state["last"])
    return state["events"], cpu, state["area"] / horizon


def _c_reference_rate(horizon: float, repeats: int) -> float | None:
    src = Path("/work/shared/reference/des_ref.c")
    if not src.exists() or shutil.which("gcc") is None:
        return None
    exe = Path(tempfile.gettempdir()) / "hetsched_des_ref"
    if not exe.exists():
        subprocess.run(["gcc", "-O2", "-o", str(exe), str(src), "-lm"], check=True)
    out = subprocess.run([str(exe), "B", "LPAS", str(horizon), "1", str(repeats)], capture_output=True, text=True,
                         check=True).stdout
    rates = [int(l.split()[3]) / float(l.split()[5]) for l in out.strip().splitlines()]
    return statistics.median(rates)


def main(quick: bool = False) -> list[dict]:
    rows = []
    h_het = 2_000.0 if quick else 20_000.0
    h_simpy = 100.0 if quick else 1_000.0
    repeats = 3
    het, q_het = _hetsched_rate(h_het, repeats)
    sp = [simpy_lpas_2c1(h_simpy, r) for r in range(repeats)]
    sp_rate = statistics.median(e / c for e, c, _ in sp)
    rows.append({
        "benchmark": "sim: 2.C1 LPAS events/s (1 core)", "metric": "events per CPU-second",
        "hetsched": het, "reference": sp_rate, "ratio": het / sp_rate,
        "note": f"reference = SimPy model of the same system (horizon {h_simpy:g}); hetsched horizon {h_het:g}, "
                f"median of {repeats}",
    })
    c_rate = _c_reference_rate(h_het, repeats)
    if c_rate is not None:
        rows.append({
            "benchmark": "sim: 2.C1 LPAS vs plain C loop", "metric": "events per CPU-second",
            "hetsched": het, "reference": c_rate, "ratio": het / c_rate,
            "note": "reference = /work/shared/reference/des_ref.c (gcc -O2), same model; target ratio >= 0.8",
        })
    if not quick:
        from hetsched.experiments import RunOptions
        from hetsched.experiments.thesis_ch2 import run_table_21

        with tempfile.TemporaryDirectory() as d:
            t0 = time.perf_counter()
            res = run_table_21(RunOptions(quick=False, seed=2009, outdir=Path(d), progress=False))
            wall = time.perf_counter() - t0
        ev = sum(r["events"] for r in res.rows)
        rows.append({
            "benchmark": "sim: Table 2.1 full (33 cells x 30 reps x 20,000)", "metric": "wall seconds",
            "hetsched": wall, "reference": 180.0, "ratio": wall / 180.0,
            "note": f"reference = the 3-minute target on 2 cores; {ev:,} events; default workers",
        })
    return rows


if __name__ == "__main__":
    quick = "--quick" in sys.argv[1:]
    for row in main(quick=quick):
        print(row)
