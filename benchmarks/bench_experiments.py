"""Whole experiments as one batch: speed-up of ``hetsched reproduce thesis-table-2.1`` from 1 to 2 workers.

Row (the reference is the same command with ``--workers 1``, run in this
process's session right before or after; medians of repeats):

* ``experiments: Table 2.1 speed-up 1 -> W workers`` — wall seconds of
  ``hetsched reproduce thesis-table-2.1 --workers W`` (the whole command as a
  user runs it: start-up, kernel loading, 33 cells x 30 replications x
  20,000 time units, summaries, plot, results files) against
  ``--workers 1``. ``ratio`` = the speed-up (reference / hetsched); target
  >= 1.8 with 2 workers on 2 cores. ``--quick`` runs the ``--quick`` table
  (5 x 2,000), three times each.

The note gives the load average (the machine may be shared: a speed-up needs
free cores), the CPU seconds of each run (user + system, of the command and
its worker processes), and the critical path of the batch: the longest single
replication (estimated as the largest per-cell mean replication time), which
no number of machines can shorten.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

EXP = "thesis-table-2.1"


def _run(workers: int, quick: bool) -> dict:
    """One ``hetsched reproduce`` in a fresh process: wall and CPU seconds, and its rows."""
    with tempfile.TemporaryDirectory() as d:
        cmd = [sys.executable, "-m", "hetsched.cli", "reproduce", EXP, "--workers", str(workers), "--outdir", d,
               "--json"] + (["--quick"] if quick else [])
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - t0
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr.strip()[-500:]}")
        rows = json.loads(p.stdout)["rows"]
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return {"wall": wall, "cpu": cpu, "rows": rows}


def _numbers(rows: list[dict]) -> list:
    return [(r["system"], r["heuristic"], r["Qbar"], r["ci_low"], r["ci_high"], r["events"]) for r in rows]


def main(quick: bool = False, workers: int = 2) -> list[dict]:
    repeats = 3 if quick else 1
    load0 = os.getloadavg()
    one, many = [], []
    for _ in range(repeats):  # alternate, so that a change in the machine's load hits both
        one.append(_run(1, quick))
        many.append(_run(workers, quick))
    load1 = os.getloadavg()
    same = all(_numbers(a["rows"]) == _numbers(b["rows"]) for a, b in zip(one, many))
    w1 = statistics.median(r["wall"] for r in one)
    wn = statistics.median(r["wall"] for r in many)
    rows = one[0]["rows"]
    reps = rows[0]["reps"]
    # critical path: the longest replication (cell compute seconds / reps, measured with 1 worker)
    longest = max(r["wall_seconds"] / r["reps"] for r in rows)
    total = sum(r["wall_seconds"] for r in rows)
    size = (f"{len(rows)} cells x {reps} reps x {rows[0]['horizon']:g} time units"
            + (" (--quick)" if quick else ""))
    return [{
        "benchmark": f"experiments: Table 2.1 speed-up 1 -> {workers} workers",
        "size": size,
        "metric": "wall seconds (ratio = speed-up)",
        "hetsched": wn,
        "reference": w1,
        "ratio": w1 / wn,
        "command": f"hetsched reproduce {EXP}{' --quick' if quick else ''} --workers {workers} (reference --workers 1)",
        "note": (f"target >= 1.8 on 2 cores; median of {repeats}; identical rows: {same}; "
                 f"CPU s {statistics.median(r['cpu'] for r in one):.1f} (1 worker) / "
                 f"{statistics.median(r['cpu'] for r in many):.1f} ({workers}); "
                 f"replication compute {total:.1f} s in {len(rows) * reps} tasks, longest replication "
                 f"{longest:.3g} s; load average {load0[0]:.2f} -> {load1[0]:.2f} on {os.cpu_count()} cores"),
    }]


if __name__ == "__main__":
    args = sys.argv[1:]
    q = "--quick" in args
    for row in main(quick=q):
        print(json.dumps(row))
