"""Time to first answer: the commands a new user runs first, each in a fresh process (issue 24, item 5).

Every row runs a command in new Python processes (``repeats`` times, medians)
and measures the CPU seconds of the process (user + system, children
included) and its wall seconds. The reference, measured in the same run, is
the floor every numba tool pays: a fresh ``python -c "import numpy, numba"``
(the ratio says how many of those a command costs). Rows:

* ``hetsched --help``; ``hetsched lp 2.A``;
* ``hetsched simulate 2.A --policy mct --reps 1 --horizon 1000`` with the
  kernel cache warm (target <= 1.5 CPU-s);
* ``hs.simulate`` of a user-written MCT (``@hs.mapping_policy``; 1 replication
  x 1,000) in a fresh process: cache cold (an empty ``HETSCHED_CACHE_DIR`` and
  an empty ``NUMBA_CACHE_DIR``: the simulator's own compiled helpers too, the
  worst case; target <= 8 CPU-s) and warm (the same process again; target
  <= 1.5 CPU-s);
* a trace replay in a fresh process with the cache warm (2.C1, MCT, the first
  20,000 jobs of the Gaia log at load 0.8): the share of the process's wall
  time spent compiling or loading kernels (``startup_seconds`` of the result;
  target <= 10 %);
* ``hetsched mdp coalloc --delta 30``.

Run: ``python benchmarks/bench_startup.py [--quick]``. The machine may be
shared: CPU seconds are less sensitive to other load than wall seconds.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TRACES = REPO / ".." / "shared" / "traces"
PY = sys.executable
HETSCHED = str(Path(PY).with_name("hetsched"))

USER_POLICY = '''
import json, os, sys, time
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

res = hs.simulate("2.A", my_mct, reps=1, horizon=1000.0, workers=1, seed=1)
print(json.dumps({"mean": res.mean}))
'''

TRACE_REPLAY = '''
import json, sys, time
t0 = time.perf_counter()
import hetsched as hs
from hetsched.traces import read_swf, workload
sysm = hs.load("2.C1")
w = workload(read_swf(sys.argv[1]).iloc[:20000], sysm, load=0.8)
res = hs.simulate(sysm, "mct", trace=w, reps=4, workers=1, seed=1)
print(json.dumps({"startup": res.extra["startup_seconds"], "wall": time.perf_counter() - t0, "mean": res.mean}))
'''


def _run(cmd: list[str], env: dict | None = None) -> tuple[float, float, str]:
    """(CPU seconds, wall seconds, stdout) of a fresh process."""
    before = os.times()
    import time

    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=1800)
    wall = time.perf_counter() - t0
    after = os.times()
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {out.stderr[-2000:]}")
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return cpu, wall, out.stdout


def _median_runs(cmd, repeats, env=None):
    runs = [_run(cmd, env) for _ in range(repeats)]
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs), runs


def main(quick: bool = False) -> list[dict]:
    repeats = 3 if quick else 5
    floor_cpu, floor_wall, _ = _median_runs([PY, "-c", "import numpy, numba"], repeats)
    rows = []

    def row(name, cmd_text, cpu, wall, target=None, met=None, note=""):
        rows.append({
            "benchmark": f"first answer: {name}", "metric": "CPU s (fresh process, median)",
            "size": f"{repeats} fresh processes", "hetsched": cpu, "reference": floor_cpu, "ratio": cpu / floor_cpu,
            "target": target, "target_met": met, "command": cmd_text,
            "note": f"wall {wall:.2f} s (median); reference = a fresh `python -c 'import numpy, numba'` "
                    f"({floor_cpu:.2f} CPU-s, {floor_wall:.2f} s wall), measured in this run. {note}".strip(),
        })

    cpu, wall, _ = _median_runs([HETSCHED, "--help"], repeats)
    row("hetsched --help", "hetsched --help", cpu, wall)
    cpu, wall, _ = _median_runs([HETSCHED, "lp", "2.A"], repeats)
    row("hetsched lp 2.A", "hetsched lp 2.A", cpu, wall)
    sim = [HETSCHED, "simulate", "2.A", "--policy", "mct", "--reps", "1", "--horizon", "1000"]
    _run(sim)  # the cache warm (compiled once if it was not)
    cpu, wall, _ = _median_runs(sim, repeats)
    row("simulate 2.A mct, 1 x 1,000 (cache warm)", " ".join(["hetsched", *sim[1:]]), cpu, wall,
        "<= 1.5 CPU-s", cpu <= 1.5)
    # a user policy: cold (empty caches, every compile counted) then warm
    with tempfile.TemporaryDirectory() as d:
        cold_runs = []
        for k in range(1 if quick else 2):
            env = {"HETSCHED_CACHE_DIR": str(Path(d) / f"h{k}"), "NUMBA_CACHE_DIR": str(Path(d) / f"n{k}")}
            cold_runs.append(_run([PY, "-c", USER_POLICY], env))
        cpu = statistics.median(r[0] for r in cold_runs)
        wall = statistics.median(r[1] for r in cold_runs)
        row("hs.simulate, user policy, cache cold", "python -c '<@hs.mapping_policy my_mct; hs.simulate(2.A, 1 x "
            "1,000)>' (empty HETSCHED_CACHE_DIR and NUMBA_CACHE_DIR)", cpu, wall, "<= 8 CPU-s", cpu <= 8.0,
            f"{len(cold_runs)} cold process(es): every kernel and helper compiled")
        cpu, wall, _ = _median_runs([PY, "-c", USER_POLICY], repeats, env)
        row("hs.simulate, user policy, cache warm", "the same, in a new process after it (cache warm)", cpu, wall,
            "<= 1.5 CPU-s", cpu <= 1.5)
    gaia = TRACES / "UniLu-Gaia-2014-2.swf.gz"
    if gaia.is_file():
        _run([PY, "-c", TRACE_REPLAY, str(gaia)])  # cache warm
        runs = [_run([PY, "-c", TRACE_REPLAY, str(gaia)]) for _ in range(repeats)]
        shares = [json.loads(r[2].strip().splitlines()[-1]) for r in runs]
        share = statistics.median(s["startup"] / s["wall"] for s in shares)
        rows.append({
            "benchmark": "first answer: trace replay in a fresh process (cache warm), compile share",
            "metric": "kernel compile/load share of wall", "size": "2.C1 MCT, 20,000 Gaia jobs, load 0.8, 4 windows",
            "hetsched": share, "reference": None, "ratio": None, "target": "<= 10 %", "target_met": share <= 0.10,
            "command": "python -c '<hs.simulate(2.C1, mct, trace=Gaia[:20000], load=0.8)>'",
            "note": f"startup_seconds (kernel load) / wall of the whole process; median of {repeats}; process "
                    f"wall {statistics.median(r[1] for r in runs):.2f} s, CPU {statistics.median(r[0] for r in runs):.2f} s",
        })
    cpu, wall, _ = _median_runs([HETSCHED, "mdp", "coalloc", "--delta", "30"], repeats)
    row("hetsched mdp coalloc --delta 30", "hetsched mdp coalloc --delta 30", cpu, wall)
    return rows


if __name__ == "__main__":
    for r in main(quick="--quick" in sys.argv[1:]):
        print(r)
