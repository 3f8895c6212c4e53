"""``hetsched dispatch bench``: empty-task throughput of the dispatcher vs a plain ``client.submit`` loop.

Both sides run on the same loopback ``LocalCluster`` (W single-threaded workers;
threads in this process by default, ``processes=True`` for worker processes;
the lean Dask settings of :data:`hetsched.dispatch.emulate._LEAN`), in the same
process, alternately, ``repeats`` times each; medians are reported.

* Reference: ``client.submit(execute, ...)`` for every task up front (Dask's own
  scheduler places them), then wait for all.
* Dispatcher: :class:`~hetsched.dispatch.dispatcher.Dispatcher` with the given
  policy, two classes, per-worker rates ``[1 + k mod 3, 3 - k mod 3]``, time
  unit 1e-4 s (so the expected task time is 33–100 µs and a machine's prefetch
  depth is ``min(max_prefetch, prefetch / expected)``), a journal in a
  temporary file (every acceptance and result committed), rate monitoring off.
  Every result is counted through ``on_result``: ``lost`` = tasks never
  reported, ``duplicated`` = tasks reported more than once.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path

__all__ = ["run_bench", "plain_loop", "dispatcher_run"]


def plain_loop(client, n: int) -> float:
    """Tasks per second of ``n`` empty ``client.submit`` calls, end to end."""
    from distributed import wait

    from .worker import KIND_EMULATE, execute

    t0 = time.perf_counter()
    futs = [client.submit(execute, KIND_EMULATE, 0.0, 0.0, pure=False) for _ in range(n)]
    wait(futs)
    wall = time.perf_counter() - t0
    del futs
    return n / wall


def dispatcher_run(client, n: int, W: int, *, policy: str = "gcmu", prefetch: float = 0.05,
                   journal: str | None = None, max_prefetch: int = 64, profile: str | None = None) -> dict:
    """One dispatcher run of ``n`` empty tasks; tasks/s, lost, duplicated, batches."""
    from .dispatcher import Dispatcher, Emulation
    from .worker import KIND_EMULATE

    names = sorted(str(w.get("name")) for w in client.scheduler_info(n_workers=-1)["workers"].values())
    rates = {name: [1.0 + k % 3, 3.0 - k % 3] for k, name in enumerate(names)}
    seen: Counter = Counter()
    t0 = time.perf_counter()
    d = Dispatcher(client, ["a", "b"], rates, policy=policy, alpha=[0.5, 0.5], time_unit=1e-4,
                   emulation=Emulation(rates, {}, 0.0), adapt_arrivals=False, adapt_rates=False,
                   timeout_factor=None, prefetch=prefetch, max_prefetch=max_prefetch, journal=journal)
    try:
        d.add_many([("a" if k % 2 else "b", KIND_EMULATE, 0.0) for k in range(n)])
        if profile:
            import cProfile

            pr = cProfile.Profile()
            pr.enable()
        res = d.run(timeout=600, on_result=lambda tid, c, ok, v: seen.__setitem__(tid, seen[tid] + 1))
        if profile:
            pr.disable()
            pr.dump_stats(profile)
    finally:
        d.close()
    wall = time.perf_counter() - t0
    return {"tasks_per_second": n / wall, "lost": n - len(seen), "duplicated": sum(c > 1 for c in seen.values()),
            "batches": res.extra["batches"], "success": res.success, "wall": wall,
            "decision_seconds": res.decision_seconds, "submit_seconds": res.submit_seconds}


def run_bench(workers: int, tasks: int, *, processes: bool = False, prefetch: float = 0.05, policy: str = "gcmu",
              journal: bool = True, repeats: int = 3, max_prefetch: int = 64) -> dict:
    """The ``hetsched dispatch bench`` JSON (module docstring)."""
    from ..errors import ModelError
    from ..policies.pull import policy_code
    from .emulate import MAX_TASKS, MAX_WORKERS, local_cluster

    policy_code(policy)
    if not 1 <= workers <= MAX_WORKERS:
        raise ModelError(f"--workers: must lie in [1, {MAX_WORKERS}], got {workers!r}")
    if not 1 <= tasks <= MAX_TASKS:
        raise ModelError(f"--tasks: must lie in [1, {MAX_TASKS:,}], got {tasks!r}")
    cluster, client = local_cluster(workers, processes=processes)
    runs, refs = [], []
    try:
        plain_loop(client, min(tasks, 200))  # warm up both paths
        with tempfile.TemporaryDirectory() as tmp:
            dispatcher_run(client, min(tasks, 200), workers, policy=policy, prefetch=prefetch,
                           journal=str(Path(tmp) / "warm.db") if journal else None, max_prefetch=max_prefetch)
            for r in range(repeats):
                refs.append(plain_loop(client, tasks))
                runs.append(dispatcher_run(client, tasks, workers, policy=policy, prefetch=prefetch,
                                           journal=str(Path(tmp) / f"j{r}.db") if journal else None,
                                           max_prefetch=max_prefetch))
    finally:
        client.close()
        cluster.close()
    tps = statistics.median(r["tasks_per_second"] for r in runs)
    ref = statistics.median(refs)
    return {"workers": workers, "tasks": tasks, "cluster": "processes" if processes else "threads",
            "policy": policy, "prefetch": prefetch, "max_prefetch": max_prefetch, "journal": journal,
            "repeats": repeats, "tasks_per_second": tps, "reference_tasks_per_second": ref, "ratio": tps / ref,
            "lost": max(r["lost"] for r in runs), "duplicated": max(r["duplicated"] for r in runs),
            "batches": statistics.median(r["batches"] for r in runs),
            "runs": [{k: v for k, v in r.items()} for r in runs], "reference_runs": refs}


def _component(filename: str) -> str:
    f = filename.replace("\\", "/")
    for key, name in (("/hetsched/dispatch/journal", "journal (sqlite)"), ("sqlite3", "journal (sqlite)"),
                      ("/hetsched/", "dispatcher (hetsched)"), ("/distributed/scheduler", "dask scheduler"),
                      ("/distributed/worker", "dask worker"), ("/distributed/client", "dask client"),
                      ("/distributed/comm", "dask comm"), ("/distributed/protocol", "dask serialization"),
                      ("/distributed/", "dask other"), ("/tornado/", "event loop"), ("/asyncio/", "event loop"),
                      ("cloudpickle", "dask serialization"), ("msgpack", "dask serialization"),
                      ("/dask/", "dask other"), ("threading.py", "waiting"), ("queue.py", "waiting"),
                      ("selectors.py", "waiting")):
        if key in f:
            return name
    return "other python"


_IDLE = {"select", "poll", "wait", "_wait_for_tstate_lock", "get", "_worker", "sleep", "accept"}


def _attribute(frame) -> str:
    """Component of a sampled stack: idle, or the innermost frame that belongs to a known component."""
    if frame.f_code.co_name in _IDLE:
        return "waiting"
    f = frame
    while f is not None:
        comp = _component(f.f_code.co_filename)
        if comp not in ("other python", "event loop", "waiting"):
            return comp
        f = f.f_back
    return _component(frame.f_code.co_filename)


def sampled_profile(fn, interval: float = 0.002) -> tuple[object, dict]:
    """Run ``fn()`` while sampling every thread's stack: share of busy samples per component.

    All threads of this process are sampled (with a threaded ``LocalCluster``:
    the scheduler, the workers and the client share one event-loop thread, the
    dispatcher runs in the caller's thread). A thread whose innermost frame is a
    blocking wait counts as idle and is left out; a busy sample goes to the
    innermost frame that belongs to the dispatcher, its journal or a part of
    Dask (else to "event loop" / "other python").
    """
    import sys
    import threading

    busy: Counter = Counter()
    stop = threading.Event()
    me = [None]

    def sampler():
        me[0] = threading.get_ident()
        while not stop.is_set():
            for tid, frame in sys._current_frames().items():
                if tid != me[0]:
                    comp = _attribute(frame)
                    if comp != "waiting":
                        busy[comp] += 1
            time.sleep(interval)

    th = threading.Thread(target=sampler, daemon=True)
    th.start()
    try:
        out = fn()
    finally:
        stop.set()
        th.join()
    total = sum(busy.values()) or 1
    return out, {k: v / total for k, v in busy.most_common()}
