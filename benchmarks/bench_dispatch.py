"""The dispatcher against the best ordinary Dask version of the same work (issue 24, item 2).

``hetsched.dispatch.bench.run_bench`` on a loopback ``LocalCluster`` of W
single-threaded workers: T empty tasks through the dispatcher (LPAS_DG on
heterogeneous workers, prefetch 0.05 s -> up to 64 tasks decided ahead per
worker, sent as batches of up to 32, journal off, every result counted)
against ``client.map(execute_batch, chunks)`` + ``gather`` with the chunk sizes
the dispatcher used, and against one chunk per worker, on the same cluster,
alternately, medians of ``repeats``. Same as ``hetsched dispatch bench
--workers W --tasks T [--processes] --json``.

Rows: worker processes (``LocalCluster(processes=True)``, the target row) and
the in-process emulation (threads), W = 4; threads W = 16 (full run); the
pure-pull dispatcher (prefetch 0: one task per Dask task) against
``client.map`` of single tasks. Target (issue 24): the dispatcher >= 0.9x
batched ``client.map`` with the same chunk sizes, on process workers, 0 lost.
"""

from __future__ import annotations

import sys


def main(quick: bool = False) -> list[dict]:
    from hetsched.dispatch.bench import run_bench

    T = 2000 if quick else 5000
    repeats = 3 if quick else 5
    cases = [(4, True, 0.05), (4, False, 0.05), (4, False, 0.0)] if quick else \
        [(4, True, 0.05), (4, False, 0.05), (16, False, 0.05), (4, False, 0.0)]
    rows = []
    for W, processes, prefetch in cases:
        out = run_bench(W, T, processes=processes, prefetch=prefetch, policy="lpas-dg", repeats=repeats)
        kind = "processes" if processes else "threads"
        mode = f"prefetch {prefetch:g} s" if prefetch else "pure pull"
        target = processes and prefetch > 0
        cmd = (f"hetsched dispatch bench --workers {W} --tasks {T} --prefetch {prefetch:g} --repeats {repeats}"
               + (" --processes" if processes else "") + " --json")
        rows.append({
            "benchmark": f"dispatch vs client.map, same chunks ({W} {kind}, {mode})", "metric": "tasks/s",
            "size": f"{W} workers ({kind}), {T} empty tasks, LPAS_DG, {repeats} repeats",
            "command": cmd,
            "target": ">= 0.9x client.map same chunks, lost 0" if target else "",
            **({"target_met": out["ratio"] >= 0.9 and out["lost"] == 0} if target else {}),
            "hetsched": out["tasks_per_second"], "reference": out["reference_tasks_per_second"], "ratio": out["ratio"],
            "note": (f"ref: client.map(execute_batch, the dispatcher's {out['batches']:.0f} batch sizes) + gather, "
                     f"same cluster ({kind}); dispatcher adds {1e6 * out['overhead_seconds_per_task']:.0f} us/task; "
                     f"one chunk per worker: {out['per_worker_tasks_per_second']:.0f} tasks/s (ratio "
                     f"{out['ratio_per_worker']:.2f}); per batch (ms): submit to start "
                     f"{out['timeline_ms']['submit_to_start']}, end to noticed {out['timeline_ms']['end_to_noticed']}, "
                     f"noticed to next submit {out['timeline_ms']['noticed_to_next_submit']}; lost {out['lost']}, "
                     f"duplicated {out['duplicated']}; medians of {repeats} alternated runs on a shared host"),
        })
    return rows


if __name__ == "__main__":
    for row in main(quick="--quick" in sys.argv):
        print(row)
