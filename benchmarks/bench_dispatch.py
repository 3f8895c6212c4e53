"""Dispatcher overhead per task and empty-task throughput vs plain ``client.submit``.

Same loopback ``LocalCluster`` (W single-threaded workers, TCP on 127.0.0.1) for
both. Reference: ``client.submit`` of every task up front (Dask's own
scheduler places them), then wait. hetsched: the pull dispatcher, one task per
worker at a time, decision by the Gcmu / LPAS_DG rule, ``workers=[address]``.

Rows:
* ``dispatch decision+submission`` (ms per task): time in the policy's
  selection plus the ``client.submit`` call, against the ``client.submit`` call
  alone;
* ``empty-task throughput`` (tasks/s, end to end until every result is back).
Medians of ``repeats`` runs.
"""

from __future__ import annotations

import statistics
import sys
import time


def _plain(client, n):
    from distributed import wait

    from hetsched.dispatch.worker import KIND_EMULATE, execute

    t0 = time.perf_counter()
    futs = [client.submit(execute, KIND_EMULATE, 0.0, 0.0, pure=False) for _ in range(n)]
    t_sub = time.perf_counter() - t0
    wait(futs)
    wall = time.perf_counter() - t0
    del futs
    return 1000 * t_sub / n, n / wall


def _hetsched(client, n, policy, W):
    from hetsched.dispatch.dispatcher import Dispatcher, Emulation
    from hetsched.dispatch.worker import KIND_EMULATE

    rates = {str(k): [1.0 + k % 3, 3.0 - k % 3] for k in range(W)}
    d = Dispatcher(client, ["a", "b"], rates, policy=policy, alpha=[0.5, 0.5], emulation=Emulation(rates, {}, 0.0),
                   adapt_arrivals=False, adapt_rates=False, timeout_factor=None)
    t0 = time.perf_counter()
    d.add_many([("a" if k % 2 else "b", KIND_EMULATE, 0.0) for k in range(n)])
    res = d.run(timeout=600)
    wall = time.perf_counter() - t0
    d.close()
    assert res.completed == n and res.lost == 0
    return 1000 * (res.decision_seconds + res.submit_seconds) / res.extra["attempts"], n / wall


def main(quick: bool = False) -> list[dict]:
    from hetsched.dispatch.emulate import local_cluster

    W = 8
    n = 500 if quick else 3000
    repeats = 2 if quick else 3
    cluster, client = local_cluster(W, processes=False)
    rows = []
    try:
        _plain(client, 100)  # warm up
        ref = [_plain(client, n) for _ in range(repeats)]
        ref_ms = statistics.median(r[0] for r in ref)
        ref_tp = statistics.median(r[1] for r in ref)
        for policy in ("gcmu", "lpas-dg"):
            runs = [_hetsched(client, n, policy, W) for _ in range(repeats)]
            ms = statistics.median(r[0] for r in runs)
            tp = statistics.median(r[1] for r in runs)
            rows.append({"benchmark": f"dispatch decision+submission ({policy}, {W} workers)", "metric": "ms/task",
                         "hetsched": ms, "reference": ref_ms, "ratio": ms / ref_ms,
                         "note": f"reference: client.submit call alone; {n} empty tasks; target < 1 ms"})
            rows.append({"benchmark": f"empty-task throughput ({policy}, {W} workers)", "metric": "tasks/s",
                         "hetsched": tp, "reference": ref_tp, "ratio": tp / ref_tp,
                         "note": "reference: all tasks submitted to Dask at once; hetsched: pull, 1 task/worker; "
                                 "target >= 1000/s"})
    finally:
        client.close()
        cluster.close()
    return rows


if __name__ == "__main__":
    for row in main(quick="--quick" in sys.argv):
        print(row)
