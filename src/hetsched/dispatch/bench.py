"""``hetsched dispatch bench``: the dispatcher against the best ordinary Dask version of the same work.

The work: ``T`` empty tasks (emulated, zero seconds), each run on a worker and
its result brought back to the client. Every side runs on the same loopback
``LocalCluster`` of ``W`` single-threaded workers — threads in this process
(``processes=False``, the in-process emulation) or real worker processes
(``processes=True``) — with the lean Dask settings of
:data:`hetsched.dispatch.emulate.LEAN_SETTINGS`, in the same process,
alternately, ``repeats`` times each; medians are reported.

* **Dispatcher**: :class:`~hetsched.dispatch.Dispatcher` with the given policy
  (LPAS_DG by default) on heterogeneous workers — two classes, per-worker rates
  ``[1 + k mod 3, 3 - k mod 3]``, ``alpha = [0.5, 0.5]``, time unit 1e-4 s
  (expected task time 33-100 us, so with ``prefetch`` 0.05 s every machine's
  depth is ``max_prefetch`` = 64), rate monitoring off, journal optional
  (off by default: the references keep none). Timed from accepting the tasks
  (``add_many``) to the last result; setting the dispatcher up (membership
  plugin, first LP) is reported apart (``setup_seconds``). Every result is
  counted through ``on_result``: ``lost`` = tasks never reported,
  ``duplicated`` = tasks reported more than once.
* **client.map, same chunks** (the reference): ``client.map(execute_batch,
  chunks)`` then ``client.gather``, the chunks of the sizes the dispatcher's
  last run sent as batches, placed by Dask's own scheduler.
* **client.map, one chunk per worker**: ``W`` chunks of ``T / W`` tasks.

``ratio`` = median over repeats of dispatcher / the same-chunks reference run
next to it (``ratio_per_worker`` likewise); ``overhead_seconds_per_task`` =
``1/dispatcher - 1/reference`` of the medians (what the dispatcher adds per task).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path

__all__ = ["run_bench", "map_run", "dispatcher_run", "batch_timeline", "sampled_profile"]


def _chunks(sizes: list[int]) -> list:
    from .worker import KIND_EMULATE, Chunk

    item = (KIND_EMULATE, 0.0, 0.0)  # what the dispatcher sends for an empty emulated task
    return [Chunk([item] * s) for s in sizes]  # the same opaque argument the dispatcher submits


def map_run(client, sizes: list[int]) -> float:
    """Tasks per second of ``client.map(execute_batch, chunks)`` + ``client.gather``, chunks of ``sizes``."""
    from .worker import execute_batch

    chunks = _chunks(sizes)
    n = sum(sizes)
    t0 = time.perf_counter()
    futs = client.map(execute_batch, chunks, pure=False)
    out = client.gather(futs)
    wall = time.perf_counter() - t0
    got = sum(len(r) for r in out)
    if got != n:  # pragma: no cover - Dask lost results: the comparison would be meaningless
        raise RuntimeError(f"client.map returned {got} results for {n} tasks")
    del futs
    return n / wall


def split(n: int, parts: int) -> list[int]:
    """``n`` tasks in ``parts`` chunks whose sizes differ by at most one."""
    q, r = divmod(n, parts)
    return [q + (k < r) for k in range(parts) if q + (k < r) > 0]


def batch_timeline(tasks) -> dict:
    """Medians (ms) over the batches of a run: submission to start on the worker (``t4 - t3``), end to the
    dispatcher noticing it (``t6 - t5``), and from that notice to the machine's next batch but one being
    submitted (two batches are in flight) — the dispatcher's own share of the refill path."""
    import statistics
    from collections import defaultdict

    batches: dict = defaultdict(list)
    for t in tasks:
        if "t7" in t.times and t.worker is not None:
            batches[(t.worker, t.times["t3"])].append(t.times)
    per: dict = defaultdict(list)
    for (w, t3), ts in batches.items():
        per[w].append((t3, min(x["t4"] for x in ts), max(x["t5"] for x in ts), ts[0]["t6"]))
    start, notice, own = [], [], []
    for rows in per.values():
        rows.sort()
        start += [t4 - t3 for t3, t4, _, _ in rows]
        notice += [t6 - t5 for _, _, t5, t6 in rows]
        own += [b[0] - a[3] for a, b in zip(rows, rows[2:]) if b[0] >= a[3]]
    med = (lambda x: round(1000 * statistics.median(x), 2) if x else None)
    return {"submit_to_start": med(start), "end_to_noticed": med(notice), "noticed_to_next_submit": med(own)}


def dispatcher_run(client, n: int, names: list[str], *, policy: str = "lpas-dg", prefetch: float = 0.05,
                   journal: str | None = None, max_prefetch: int = 64, profile: str | None = None) -> dict:
    """One dispatcher run of ``n`` empty tasks on the workers ``names``: tasks/s, lost, duplicated, batch sizes."""
    from .dispatcher import Dispatcher, Emulation
    from .worker import KIND_EMULATE

    rates = {name: [1.0 + k % 3, 3.0 - k % 3] for k, name in enumerate(names)}
    seen: Counter = Counter()
    t_setup = time.perf_counter()
    d = Dispatcher(client, ["a", "b"], rates, policy=policy, alpha=[0.5, 0.5], time_unit=1e-4,
                   emulation=Emulation(rates, {}, 0.0), adapt_arrivals=False, adapt_rates=False,
                   timeout_factor=None, prefetch=prefetch, max_prefetch=max_prefetch, journal=journal)
    try:
        t0 = time.perf_counter()
        d.add_many([("a" if k % 2 else "b", KIND_EMULATE, 0.0) for k in range(n)])
        if profile:
            import cProfile

            pr = cProfile.Profile()
            pr.enable()
        res = d.run(timeout=600, on_result=lambda tid, c, ok, v: seen.__setitem__(tid, seen[tid] + 1))
        wall = time.perf_counter() - t0
        if profile:
            pr.disable()
            pr.dump_stats(profile)
        sizes = list(d.state.batch_sizes)
        timeline = batch_timeline(d.tasks.values())
    finally:
        d.close()
    return {"tasks_per_second": n / wall, "lost": n - len(seen), "duplicated": sum(c > 1 for c in seen.values()),
            "batches": res.extra["batches"], "success": res.success, "wall": wall, "setup_seconds": t0 - t_setup,
            "decision_seconds": res.decision_seconds, "submit_seconds": res.submit_seconds, "batch_sizes": sizes,
            "timeline_ms": timeline}


def run_bench(workers: int, tasks: int, *, processes: bool = False, prefetch: float = 0.05, policy: str = "lpas-dg",
              journal: bool = False, repeats: int = 3, max_prefetch: int = 64) -> dict:
    """The ``hetsched dispatch bench`` JSON (module docstring)."""
    from ..errors import ModelError
    from ..policies.pull import policy_code
    from .budget import MAX_TASKS, MAX_WORKERS
    from .dasklayer import cluster_workers
    from .emulate import close_quietly, local_cluster

    policy_code(policy)
    if not 1 <= workers <= MAX_WORKERS:
        raise ModelError(f"--workers: must lie in [1, {MAX_WORKERS}], got {workers!r}")
    if not 1 <= tasks <= MAX_TASKS:
        raise ModelError(f"--tasks: must lie in [1, {MAX_TASKS:,}], got {tasks!r}")
    cluster, client = local_cluster(workers, processes=processes)
    runs, same, per_worker = [], [], []
    try:
        # the workers' names, read on the scheduler (Client.scheduler_info() may answer without workers)
        names = sorted((n for n, _ in cluster_workers(client, wait=30.0, n=workers).values()),
                       key=lambda s: (0, int(s), "") if s.isdigit() else (1, 0, s))
        with tempfile.TemporaryDirectory() as tmp:
            def one(k: int, n: int) -> dict:
                return dispatcher_run(client, n, names, policy=policy, prefetch=prefetch,
                                      journal=str(Path(tmp) / f"j{k}.db") if journal else None,
                                      max_prefetch=max_prefetch)

            warm = one(-1, min(tasks, 200))  # warm up every path
            map_run(client, warm["batch_sizes"])
            map_run(client, split(min(tasks, 200), workers))
            sizes = None
            for r in range(repeats):  # alternate the order: drifts of a shared host hit every side alike
                order = ("d", "m", "w") if r % 2 == 0 else ("w", "d", "m")
                for side in order:
                    if side == "d":
                        runs.append(one(r, tasks))
                        sizes = runs[-1]["batch_sizes"]
                    elif side == "m":
                        same.append(map_run(client, sizes))
                    else:
                        per_worker.append(map_run(client, split(tasks, workers)))
    finally:
        close_quietly(client, cluster)
    tps = statistics.median(r["tasks_per_second"] for r in runs)
    ref = statistics.median(same)
    ref_w = statistics.median(per_worker)
    # ratios: medians over repeats of each run against the reference run next to it (a shared host drifts)
    ratio = statistics.median(r["tasks_per_second"] / m for r, m in zip(runs, same))
    ratio_w = statistics.median(r["tasks_per_second"] / w for r, w in zip(runs, per_worker))
    return {"workers": workers, "tasks": tasks, "cluster": "processes" if processes else "threads",
            "policy": policy, "prefetch": prefetch, "max_prefetch": max_prefetch, "journal": journal,
            "repeats": repeats, "tasks_per_second": tps,
            "reference": "client.map(execute_batch, same chunks) + gather", "reference_tasks_per_second": ref,
            "ratio": ratio, "overhead_seconds_per_task": 1.0 / tps - 1.0 / ref,
            "per_worker_tasks_per_second": ref_w, "ratio_per_worker": ratio_w,
            "lost": max(r["lost"] for r in runs), "duplicated": max(r["duplicated"] for r in runs),
            "batches": statistics.median(r["batches"] for r in runs),
            "setup_seconds": statistics.median(r["setup_seconds"] for r in runs),
            "timeline_ms": {k: statistics.median(r["timeline_ms"][k] for r in runs if r["timeline_ms"][k] is not None)
                            if any(r["timeline_ms"][k] is not None for r in runs) else None
                            for k in ("submit_to_start", "end_to_noticed", "noticed_to_next_submit")},
            "runs": [{k: v for k, v in r.items() if k != "batch_sizes"} for r in runs],
            "reference_runs": same, "per_worker_runs": per_worker}


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
