"""Empty-task throughput of the dispatcher vs a plain ``client.submit`` loop (issue 17).

``hetsched.dispatch.bench.run_bench`` on a loopback ``LocalCluster`` of W
single-threaded workers (threads in this process): T empty tasks through the
dispatcher (Gcmu, prefetch 0.05 s -> batches of up to 64 tasks per worker,
journal on, every result counted) against ``client.submit`` of the same T tasks
on the same cluster, alternately, medians of ``repeats``. Same as
``hetsched dispatch bench --workers W --tasks T --json``.

Rows: throughput (tasks/s) for W = 4, 16, 64 (``--quick``: 4 and 16, fewer
tasks), and the pure-pull dispatcher (prefetch 0, one task per worker at a
time) at W = 16 for reference. Targets: ratio >= 2, >= 1,000 tasks/s, lost 0.
"""

from __future__ import annotations

import sys


def main(quick: bool = False) -> list[dict]:
    from hetsched.dispatch.bench import run_bench

    T = 2000 if quick else 5000
    repeats = 2 if quick else 3
    rows = []
    for W, prefetch in ([(4, 0.05), (16, 0.05), (16, 0.0)] if quick else [(4, 0.05), (16, 0.05), (64, 0.05),
                                                                           (16, 0.0)]):
        out = run_bench(W, T, prefetch=prefetch, repeats=repeats)
        mode = f"prefetch {prefetch:g} s" if prefetch else "pure pull"
        rows.append({"benchmark": f"dispatch empty-task throughput ({W} workers, {mode})", "metric": "tasks/s",
                     "size": f"{W} workers, {T} empty tasks, {repeats} repeats",
                     "command": f"hetsched dispatch bench --workers {W} --tasks {T} --prefetch {prefetch:g} --json",
                     "target": "ratio >= 2, >= 1000/s, lost 0",
                     "target_met": out["ratio"] >= 2 and out["tasks_per_second"] >= 1000 and out["lost"] == 0,
                     "hetsched": out["tasks_per_second"], "reference": out["reference_tasks_per_second"],
                     "ratio": out["ratio"],
                     "note": f"ref: client.submit loop, same cluster; T={T}, journal on, lost {out['lost']}, "
                             f"duplicated {out['duplicated']}; `hetsched dispatch bench --workers {W} --tasks {T} "
                             f"--prefetch {prefetch:g}`; target ratio >= 2, >= 1000/s"})
    return rows


if __name__ == "__main__":
    for row in main(quick="--quick" in sys.argv):
        print(row)
