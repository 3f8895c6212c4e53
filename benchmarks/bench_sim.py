"""Benchmark of the simulation engine (``make bench`` collects ``main``).

Rows (ratios against references run in the same process; medians of repeats):

* **kernel vs C** — System 2.C1 under LPAS, the kernel of record: events per
  CPU-second of hetsched's compiled replication kernel (one core, in-process,
  ``tie="lowest"`` like the C loop; per-class statistics, common random
  numbers and the instability rule on, as always) against the plain C loop
  ``../shared/reference/des_ref.c``, compiled here with ``cc -O2``. Target
  ratio >= 0.9 (issue 24).
* **kernel per policy family vs the kernel before it** — events per
  CPU-second of today's kernel (one kernel per policy family, selection bound
  at compile time) against the single kernel with a policy switch per event
  that it replaced, loaded from the repository's history (``git show
  {BEFORE}:src/hetsched/sim/mapping/kernel.py``) and run in the same process
  on the same seeds (the runs are checked to be the same runs: equal event
  counts); LPAS/lowest, MCT/random, LPAS-2/k/random, Guided-LPAS/random.
  Target: no row below 0.97 (no drop over 3 %). Skipped without git.
* **end to end vs C** — ``hetsched simulate 2.C1 --policy lpas --reps 10
  --horizon 20000 --workers 1 --seed 1 --json`` as a subprocess: its
  ``events / wall_seconds`` (wall_seconds = everything the command does after
  start-up: validation, LP, replications, summary) against the C loop's events
  per wall-second. Target ratio >= 0.8.
* **user policy vs built-in** — the issue's ``my_mct`` written in Python
  (``@hetsched.mapping_policy``) against the built-in ``mct``, both with
  ``tie="lowest"`` on 2.C1, events per CPU-second in-process. Target >= 0.8.
* **random ties cost** — the default ``tie="random"`` against ``lowest``
  (2.C1, LPAS), for information.
* **SimPy** — an equivalent SimPy model of 2.C1 under LPAS, for scale.
* Non-quick mode only: wall time of the whole of Table 2.1.

Run: ``python benchmarks/bench_sim.py [--quick]``.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO / ".." / "shared"
#: the last commit with the single mapping kernel (a policy switch per event)
BEFORE = "c4f1538"


def _kernel_rates(policy, horizon: float, repeats: int, tie: str = "lowest", system: str = "2.C1") -> list[float]:
    from hetsched.scenarios import load
    from hetsched.sim.mapping import prepare, replication

    params = prepare(load(system), policy, horizon=horizon, tie=tie)
    replication(np.random.SeedSequence(0), params.with_params(horizon=10.0))  # compile / load cache
    rates = []
    for r in range(repeats):
        out = replication(np.random.SeedSequence(r), params)
        rates.append(out["events"] / out["cpu"])
    return rates


def _before_kernel():
    """The mapping kernel of commit BEFORE, loaded from git into a temporary module (None without git)."""
    import importlib.util

    git = shutil.which("git")
    if git is None:
        return None
    out = subprocess.run([git, "-C", str(REPO), "show", f"{BEFORE}:src/hetsched/sim/mapping/kernel.py"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        return None
    src = out.stdout.replace("from ..core.", "from hetsched.sim.core.")
    d = Path(tempfile.mkdtemp(prefix="hetsched-before-"))
    f = d / "mapping_kernel_before.py"
    f.write_text(src)
    spec = importlib.util.spec_from_file_location("mapping_kernel_before", f)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _before_rates(OK, policy, tie, horizon, seeds, system="2.C1"):
    """Events per CPU-second of the kernel before (same model, same seeds); and the event counts."""
    from hetsched.scenarios import load
    from hetsched.sim.core.rng import make_streams
    from hetsched.sim.mapping import prepare

    pr = prepare(load(system), policy, horizon=horizon, tie=tie)
    p = pr.params
    N, M = p.mu.shape
    rates, events = [], []
    for sd in seeds:
        st = make_streams(np.random.SeedSequence(sd), OK.n_streams(N))
        out_int = np.zeros(OK.O_DONE + N, np.int64)
        args = (pr.code, p.alpha, p.mu, p.mu_pol, p.w, p.incremental, p.cand, p.ncand, p.pw, p.pi, p.cmat,
                p.dist, p.dpar, p.gen, horizon, 0.0, p.max_in_system, pr.tie, st, np.zeros(N), np.zeros(N),
                np.zeros(10), out_int, np.zeros((N, M), np.int64), np.zeros(0), np.zeros(0),
                np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0, np.int64),
                np.zeros(0, np.int64), np.zeros(1), np.zeros(M))
        c0 = time.process_time()
        OK.run_mapping(*args)
        rates.append(out_int[OK.O_EVENTS] / (time.process_time() - c0))
        events.append(int(out_int[OK.O_EVENTS]))
    return rates, events


def restructuring_rows(horizon: float, rounds: int, repeats: int) -> list[dict]:
    """Today's kernel against the kernel it replaced, interleaved, same seeds (see the module docstring)."""
    OK = _before_kernel()
    if OK is None:
        return []
    from hetsched.scenarios import load
    from hetsched.sim.mapping import prepare, replication

    rows = []
    for policy, tie in (("lpas", "lowest"), ("mct", "random"), ("lpas-2k", "random"), ("guided-lpas", "random")):
        _before_rates(OK, policy, tie, 10.0, [0])  # compile
        params = prepare(load("2.C1"), policy, horizon=horizon, tie=tie)
        replication(np.random.SeedSequence(0), params.with_params(horizon=10.0))
        now, before = [], []
        for _ in range(rounds):
            b, ev = _before_rates(OK, policy, tie, horizon, range(repeats))
            before += b
            for sd, e in zip(range(repeats), ev):
                out = replication(np.random.SeedSequence(sd), params)
                assert out["events"] == e, "not the same runs"
                now.append(out["events"] / out["cpu"])
        med = statistics.median
        rows.append({
            "benchmark": f"sim: kernel per family vs the single kernel before it, 2.C1 {policy} tie {tie}",
            "metric": "events per CPU-second", "size": f"scenario 2.C1, horizon {horizon:g}, seeds 0..{repeats - 1}",
            "hetsched": med(now), "reference": med(before), "ratio": med(now) / med(before),
            "target": "ratio >= 0.97", "target_met": med(now) / med(before) >= 0.97,
            "note": f"reference = the kernel of commit {BEFORE} (git show), same process, same seeds and events; "
                    f"interleaved; medians of {len(now)}",
        })
    return rows


def simpy_lpas_2c1(horizon: float, seed: int) -> tuple[int, float, float]:
    """The same model in SimPy; returns ``(events, cpu_seconds, Qbar)``."""
    import simpy

    from hetsched.scenarios import load
    from hetsched.sim.mapping import prepare

    sysm = load("2.C1")
    p = prepare(sysm, "lpas", horizon=horizon)
    alpha, mu = sysm.alpha_array, sysm.mu
    N, M = mu.shape
    cands = [list(p.params.cand[i, : p.params.ncand[i]]) for i in range(N)]
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


def c_reference(horizon: float, repeats: int) -> tuple[list[float], list[float]] | None:
    """Compile ``des_ref.c`` with ``cc -O2`` now and run it: events per CPU-second and per wall-second."""
    src = SHARED / "reference" / "des_ref.c"
    cc = shutil.which("cc") or shutil.which("gcc")
    if not src.exists() or cc is None:
        return None
    with tempfile.TemporaryDirectory() as d:
        exe = Path(d) / "des_ref"
        subprocess.run([cc, "-O2", "-o", str(exe), str(src), "-lm"], check=True)
        out = subprocess.run([str(exe), "B", "LPAS", str(horizon), "1", str(repeats)], capture_output=True,
                             text=True, check=True).stdout
    rows = [line.split() for line in out.strip().splitlines()]
    return [int(r[3]) / float(r[5]) for r in rows], [int(r[3]) / float(r[4]) for r in rows]


def end_to_end(reps: int, horizon: float) -> float:
    """``hetsched simulate 2.C1 --policy lpas ... --json``: events / wall_seconds."""
    exe = Path(sys.executable).with_name("hetsched")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "hetsched.cli"]
    cmd += ["simulate", "2.C1", "--policy", "lpas", "--reps", str(reps), "--horizon", str(horizon),
            "--workers", "1", "--seed", "1", "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=dict(os.environ)).stdout
    d = json.loads(out)
    return d["events"] / d["wall_seconds"]


def user_mct():
    import hetsched as hs

    @hs.mapping_policy
    def my_mct(i, mu, n, work, u):
        best, best_v = -1, 0.0
        for j in range(mu.shape[1]):
            if mu[i, j] > 0.0:
                v = work[j] + 1.0 / mu[i, j]
                if best < 0 or v < best_v:
                    best, best_v = j, v
        return best

    return my_mct


def main(quick: bool = False) -> list[dict]:
    med = statistics.median
    rows = []
    horizon = 2_000.0 if quick else 20_000.0
    repeats = 3 if quick else 5
    # interleave the runs that are compared, so a change in machine load hits both
    ker, c_cpu, c_wall = [], [], []
    c_ok = True
    for _ in range(2 if quick else 3):
        ker += _kernel_rates("lpas", horizon, repeats)
        c = c_reference(horizon, repeats)
        if c is None:
            c_ok = False
            break
        c_cpu += c[0]
        c_wall += c[1]
    if c_ok:
        rows.append({
            "benchmark": "sim: 2.C1 LPAS kernel vs plain C loop", "metric": "events per CPU-second",
            "size": f"scenario 2.C1, horizon {horizon:g}, seeds 0..{repeats - 1}",
            "hetsched": med(ker), "reference": med(c_cpu), "ratio": med(ker) / med(c_cpu),
            "target": "ratio >= 0.9", "target_met": med(ker) / med(c_cpu) >= 0.9,
            "note": f"../shared/reference/des_ref.c (cc -O2, compiled here), same model, tie lowest; per-class "
                    f"statistics on; horizon {horizon:g}; medians of {len(ker)}; target >= 0.9 (issue 24)",
        })
        # the command, also in quick mode (one run instead of three)
        n_e2e = 1 if quick else 3
        e2e = [end_to_end(10, 20_000.0) for _ in range(n_e2e)]
        rows.append({
            "benchmark": "sim: hetsched simulate 2.C1 --policy lpas --reps 10 --horizon 20000 --workers 1 vs C",
            "metric": "events per wall-second", "hetsched": med(e2e), "reference": med(c_wall),
            "ratio": med(e2e) / med(c_wall), "size": "scenario 2.C1, 10 reps x 20,000, seed 1",
            "command": "hetsched simulate 2.C1 --policy lpas --reps 10 --horizon 20000 --workers 1 --seed 1 --json",
            "target": "ratio >= 0.8", "target_met": med(e2e) / med(c_wall) >= 0.8,
            "note": f"events / wall_seconds of the --json output (everything after start-up); median of {n_e2e} "
                    f"command(s) against the C loop's wall-second rate; target >= 0.8",
        })
    rows += restructuring_rows(horizon, 2 if quick else 3, repeats)
    # user-written policy against the built-in one
    mine = user_mct()
    u_rates, b_rates = [], []
    for _ in range(2 if quick else 3):
        u_rates += _kernel_rates(mine, horizon, repeats)
        b_rates += _kernel_rates("mct", horizon, repeats)
    rows.append({
        "benchmark": "sim: user-written my_mct vs built-in mct (2.C1)", "metric": "events per CPU-second",
        "hetsched": med(u_rates), "reference": med(b_rates), "ratio": med(u_rates) / med(b_rates),
        "size": f"scenario 2.C1, horizon {horizon:g}, seeds 0..{repeats - 1}",
        "target": "ratio >= 0.8", "target_met": med(u_rates) / med(b_rates) >= 0.8,
        "note": f"@hetsched.mapping_policy compiled into the kernel; tie lowest; horizon {horizon:g}; "
                f"medians of {len(u_rates)}; target >= 0.8",
    })
    rnd = _kernel_rates("lpas", horizon, repeats, tie="random")
    low = _kernel_rates("lpas", horizon, repeats, tie="lowest")
    rows.append({
        "benchmark": "sim: 2.C1 LPAS tie=random vs tie=lowest", "metric": "events per CPU-second",
        "hetsched": med(rnd), "reference": med(low), "ratio": med(rnd) / med(low),
        "size": f"scenario 2.C1, horizon {horizon:g}, seeds 0..{repeats - 1}",
        "note": "cost of the default random tie-breaking (one draw per arrival with ties)",
    })
    h_simpy = 100.0 if quick else 1_000.0
    sp = [simpy_lpas_2c1(h_simpy, r) for r in range(3)]
    sp_rate = med(e / c for e, c, _ in sp)
    rows.append({
        "benchmark": "sim: 2.C1 LPAS kernel vs SimPy", "metric": "events per CPU-second",
        "hetsched": med(ker or low), "reference": sp_rate, "ratio": med(ker or low) / sp_rate,
        "size": f"scenario 2.C1; SimPy horizon {h_simpy:g}, seeds 0..2",
        "note": f"reference = SimPy model of the same system (horizon {h_simpy:g}), median of 3",
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
            "hetsched": wall, "reference": 180.0, "ratio": wall / 180.0, "size": "Table 2.1, seed 2009",
            "command": "hetsched reproduce thesis-table-2.1 --force", "target": "< 180 s", "target_met": wall < 180.0,
            "note": f"reference = the 3-minute target on 2 cores; {ev:,} events; default workers",
        })
    return rows


if __name__ == "__main__":
    quick = "--quick" in sys.argv[1:]
    for row in main(quick=quick):
        print(row)
