"""Limits and run-time estimates of ``dispatch demo`` and ``dispatch bench`` (refused up front, never a hang).

A demo or bench whose estimated time exceeds its budget, or whose cluster
would not fit in the memory available, is refused with one line giving the
estimate; one estimated to take over :data:`WARN_SECONDS` runs with a warning
giving it. The estimates use throughputs and start-up costs measured on the
project's 2-core shared host under load (conservative on a quiet machine):

* cluster start: threads in this process ``1 + 0.05 W`` s (256 workers: 13 s),
  about ``60 + 0.2 W`` MiB; worker processes ``1.7`` s and ``75`` MiB each
  (4 processes: 7.3 s, 324 MiB; 8: 13.2 s, 576 MiB) — measured with
  :func:`hetsched.dispatch.emulate.local_cluster`;
* pure pull about 100 tasks/s (``dispatch bench --workers 4 --tasks 2000
  --prefetch 0``: 94/s; ``dispatch demo --tasks 2000 --rate 1000``: 110/s);
  with prefetch about 500 tasks/s, batched ``client.map`` about 500 tasks/s
  (both 240-4,000/s in ``docs/dispatch.md``); beyond 32 workers in one process
  every worker's own periodic work shares the event loop, so throughput is
  taken to fall as ``32 / W`` (64 workers: 239 tasks/s measured).
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import ModelError

__all__ = ["MAX_WORKERS", "MAX_TASKS", "MAX_RATE", "PULL_TASKS_PER_SECOND", "PREFETCH_TASKS_PER_SECOND",
           "MAP_TASKS_PER_SECOND", "DEMO_BUDGET_SECONDS", "BENCH_BUDGET_SECONDS", "WARN_SECONDS", "cluster_cost",
           "demo_seconds", "check_demo_budget", "bench_seconds", "check_bench_budget", "check_demo_args",
           "check_cluster"]

MAX_WORKERS = 256       # emulated workers on one host (threads or processes)
MAX_TASKS = 1_000_000   # demo/bench tasks per run (memory and run time stay small)
MAX_RATE = 100_000.0    # demo arrivals per second

PULL_TASKS_PER_SECOND = 100.0
PREFETCH_TASKS_PER_SECOND = 500.0
MAP_TASKS_PER_SECOND = 500.0
PLAIN_TASKS_PER_SECOND = MAP_TASKS_PER_SECOND  # the name of earlier versions (the reference's rate)
DEMO_BUDGET_SECONDS = 600.0     # a demonstration: ten minutes (60,000 tasks at the default --rate 100)
BENCH_BUDGET_SECONDS = 1800.0   # half an hour
WARN_SECONDS = 120.0            # longer than this: a warning line with the estimate

_THREAD_START, _THREAD_START_PER, _THREAD_MIB, _THREAD_MIB_PER = 1.0, 0.05, 60.0, 0.2
_PROC_START_PER, _PROC_MIB_PER = 1.7, 75.0
_CROWD = 32  # workers in one process beyond which the event loop is shared too thinly


def cluster_cost(workers: int, processes: bool) -> tuple[float, float]:
    """Estimated ``(seconds, MiB)`` to start a loopback cluster of ``workers`` single-threaded workers."""
    if processes:
        return _PROC_START_PER * workers, _THREAD_MIB + _PROC_MIB_PER * workers
    return _THREAD_START + _THREAD_START_PER * workers, _THREAD_MIB + _THREAD_MIB_PER * workers


def _crowding(workers: int, processes: bool) -> float:
    return 1.0 if processes else min(1.0, _CROWD / max(1, workers))


def _available_mib() -> float:
    try:
        import psutil

        return psutil.virtual_memory().available / 2**20
    except Exception:  # noqa: BLE001 - no psutil: no memory check
        return math.inf


def check_cluster(workers: int, processes: bool, option: str = "--workers") -> tuple[float, float]:
    """Refuse a cluster that would not fit in the memory available; its ``(seconds, MiB)`` estimate."""
    secs, mib = cluster_cost(workers, processes)
    avail = _available_mib()
    if mib > 0.8 * avail:
        raise ModelError(f"{option}: {workers} worker {'processes' if processes else 'threads'} need about "
                         f"{mib:,.0f} MiB, over 80 % of the {avail:,.0f} MiB available; use fewer workers"
                         + ("" if not processes else " or threads (without --processes)"))
    return secs, mib


def demo_seconds(tasks: int, rate: float, prefetch: float = 0.0, workers: int = 4, processes: bool = False) -> float:
    """Estimated duration of ``dispatch demo``: cluster start, then the tasks arrive at ``rate`` per second and
    are dispatched at most at the measured throughput (pure pull, or with prefetch)."""
    thr = (PREFETCH_TASKS_PER_SECOND if prefetch > 0 else PULL_TASKS_PER_SECOND) * _crowding(workers, processes)
    return tasks / min(rate, thr) + (cluster_cost(workers, processes)[0] if workers > 4 or processes else 0.0)


def check_demo_budget(tasks: int, rate: float, prefetch: float = 0.0, workers: int = 4,
                      processes: bool = False) -> float:
    """Refuse a demo estimated to run longer than :data:`DEMO_BUDGET_SECONDS` (one line with the estimate);
    returns the estimate."""
    if workers > 4 or processes:
        check_cluster(workers, processes)
    est = demo_seconds(tasks, rate, prefetch, workers, processes)
    if est > DEMO_BUDGET_SECONDS:
        thr = min(rate, (PREFETCH_TASKS_PER_SECOND if prefetch > 0 else PULL_TASKS_PER_SECOND)
                  * _crowding(workers, processes))
        raise ModelError(
            f"--tasks: {tasks:,} tasks at about {thr:g} per second (--rate {rate:g}, "
            f"{'prefetch' if prefetch > 0 else 'pure pull'}, {workers} workers) take about {est:,.0f} s, over the "
            f"demo's budget of {DEMO_BUDGET_SECONDS:.0f} s; give at most "
            f"{max(1, int((DEMO_BUDGET_SECONDS - (est - tasks / thr)) * thr)):,} tasks "
            "(limits: docs/input-validation.md)")
    return est


def bench_seconds(tasks: int, repeats: int, prefetch: float, workers: int = 4, processes: bool = False) -> float:
    """Estimated duration of ``dispatch bench``: cluster start, a warm-up, then ``repeats`` rounds of the
    dispatcher and the two ``client.map`` references."""
    crowd = _crowding(workers, processes)
    thr = (PREFETCH_TASKS_PER_SECOND if prefetch > 0 else PULL_TASKS_PER_SECOND) * crowd
    per_round = tasks / thr + 2 * tasks / (MAP_TASKS_PER_SECOND * crowd)
    warm = min(tasks, 200)
    return cluster_cost(workers, processes)[0] + warm / thr + 2 * warm / (MAP_TASKS_PER_SECOND * crowd) + \
        repeats * per_round


def check_bench_budget(tasks: int, repeats: int, prefetch: float, workers: int = 4,
                       processes: bool = False) -> float:
    """Refuse a bench estimated to run longer than :data:`BENCH_BUDGET_SECONDS`, or whose cluster does not
    fit in memory (one line with the estimate); returns the estimate."""
    check_cluster(workers, processes)
    est = bench_seconds(tasks, repeats, prefetch, workers, processes)
    if est > BENCH_BUDGET_SECONDS:
        crowd = _crowding(workers, processes)
        raise ModelError(
            f"--tasks: {tasks:,} tasks x {repeats} repeats on {workers} workers take about {est:,.0f} s "
            f"(dispatcher about {(PREFETCH_TASKS_PER_SECOND if prefetch > 0 else PULL_TASKS_PER_SECOND) * crowd:g} "
            f"tasks/s, client.map about {MAP_TASKS_PER_SECOND * crowd:g}), over the bench's budget of "
            f"{BENCH_BUDGET_SECONDS:.0f} s; lower --tasks, --repeats or --workers (limits: docs/input-validation.md)")
    return est


def _int_arg(name, v, lo, hi):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise ModelError(f"--{name}: expected an integer, got {v!r}")
    if not lo <= v <= hi:
        raise ModelError(f"--{name}: must lie in [{lo}, {hi:,}], got {v!r}")


def check_demo_args(policy: str, workers: int, tasks: int, kill: int, seed: int, load: float, rate: float,
                    scheduler: str | None = None) -> None:
    """Validate the demo's arguments before anything starts (one line naming the option and value)."""
    from ..policies.pull import policy_code

    policy_code(policy)
    _int_arg("workers", workers, 1, MAX_WORKERS)
    _int_arg("tasks", tasks, 1, MAX_TASKS)
    _int_arg("kill", kill, 0, 1_000)
    _int_arg("seed", seed, 0, 2**63 - 1)
    if not (isinstance(load, (int, float)) and math.isfinite(load) and 0 < load < 1):
        raise ModelError(f"--load: offered load 1/lambda* must lie in (0, 1) (1 or more is unstable), got {load!r}")
    if not (isinstance(rate, (int, float)) and math.isfinite(rate) and 0 < rate <= MAX_RATE):
        raise ModelError(f"--rate: tasks per second must lie in (0, {MAX_RATE:g}], got {rate!r}")
    if kill and scheduler is not None:
        raise ModelError("--kill: only for the embedded LocalCluster (not with --scheduler)")
