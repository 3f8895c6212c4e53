"""Emulated heterogeneous clusters on this machine, and the dispatch demo.

* :func:`local_cluster` — a ``distributed.LocalCluster`` on loopback
  (127.0.0.1, no dashboard), one thread per worker so that every worker is one
  machine of the desktop-grid model; worker names are ``"0" .. "W-1"``.
* Heterogeneity is emulated by per-worker speed factors per class
  (:class:`~hetsched.dispatch.dispatcher.Emulation`): an emulated task of
  nominal work ``w`` sleeps ``w / (mu'_ij a_j)`` time units on worker ``j``.
* :func:`poisson_arrivals` — seeded Poisson streams (rates ``alpha`` per time
  unit), nominal work ``Exp(1)`` per task.
* :class:`Killer` — kills worker processes (``SIGKILL``) while they run a task;
  the nanny restarts them, so the dispatcher sees a leave and a join.
* :func:`run_demo` — the ``hetsched dispatch demo`` experiment.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from typing import Any

import numpy as np

from ..errors import ModelError
from .budget import (  # noqa: F401 - re-exported: the names of earlier versions
    BENCH_BUDGET_SECONDS,
    DEMO_BUDGET_SECONDS,
    MAX_RATE,
    MAX_TASKS,
    MAX_WORKERS,
    PLAIN_TASKS_PER_SECOND,
    PREFETCH_TASKS_PER_SECOND,
    PULL_TASKS_PER_SECOND,
    bench_seconds,
    check_bench_budget,
    check_demo_args,
    check_demo_budget,
    demo_seconds,
)
from .worker import KIND_EMULATE

__all__ = ["local_cluster", "quiet_dask", "replenish", "demo_rates", "poisson_arrivals", "Killer", "run_demo",
           "LEAN_SETTINGS"]


def local_cluster(n_workers: int, *, processes: bool = False, threads_per_worker: int = 1, attempts: int = 3):
    """``(cluster, client)`` on 127.0.0.1 with ``n_workers`` single-threaded workers.

    Quiet: distributed's logs are silenced and its "port already in use"
    warnings suppressed. Sets (process-wide) the lean Dask settings of
    ``LEAN_SETTINGS``: no per-worker statistical profiler, a slower system monitor, and
    ``distributed.deploy.lost-worker-timeout`` raised to 10 minutes so that a
    worker whose nanny restarts it slowly (a loaded host) is not dropped from the
    cluster for good; :func:`replenish` restarts workers that are gone anyway.
    Workers that are threads of this process get no memory limit: they share the
    process's memory, so a per-worker limit (total / workers) would pause them all
    once the process outgrows it (at about 200 workers on 16 GB).

    A worker process that dies while the cluster starts (killed, out of memory)
    makes Dask's start fail; the cluster is then closed and started again, up to
    ``attempts`` times, before one :class:`~hetsched.errors.ModelError` line.
    """
    import warnings

    import dask

    if isinstance(n_workers, bool) or not isinstance(n_workers, (int, np.integer)) or n_workers < 1:
        raise ModelError(f"workers: need at least 1 worker, got {n_workers!r}")
    if n_workers > MAX_WORKERS:
        raise ModelError(f"workers: at most {MAX_WORKERS} workers on one host, got {n_workers!r}")
    quiet_dask()
    from distributed import Client, LocalCluster

    last: BaseException | None = None
    for _ in range(max(1, attempts)):
        cluster = client = None
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r".*already in use", category=UserWarning)
            warnings.filterwarnings("ignore", message=r".*scratch directories", category=UserWarning)
            dask.config.set(LEAN_SETTINGS)  # process-wide: lost-worker-timeout is read when a worker is lost
            try:
                cluster = LocalCluster(n_workers=int(n_workers), threads_per_worker=threads_per_worker,
                                       processes=processes, protocol="tcp://", host="127.0.0.1",
                                       dashboard_address=None, silence_logs=logging.CRITICAL,
                                       **({} if processes else {"memory_limit": 0}))
                client = Client(cluster)
                client.wait_for_workers(int(n_workers), timeout=120)
                return cluster, client
            except KeyboardInterrupt:
                close_quietly(client, cluster)
                raise
            except Exception as exc:  # noqa: BLE001 - a worker died while starting, a port race: start again
                last = exc
                close_quietly(client, cluster)
    raise ModelError(f"workers: the local Dask cluster of {n_workers} worker(s) did not start after {attempts} "
                     f"attempt(s) ({type(last).__name__}: {str(last)[:200]})")


def close_quietly(*things) -> None:
    for x in things:
        if x is not None:
            try:
                x.close()
            except Exception:  # noqa: BLE001 - already broken: nothing to keep
                pass


# Dask settings of the emulated cluster. Every worker normally runs a statistical
# profiler (a thread sampling it every 10 ms) and a system monitor (psutil every
# 0.5 s); with dozens of workers in one process these alone saturate the host's
# cores and the shared event loop. They are switched off (profiler) or slowed
# down (monitor) here — for the dispatcher and the plain Dask references
# alike. lost-worker-timeout: see local_cluster.
LEAN_SETTINGS = {
    "distributed.deploy.lost-worker-timeout": "600s",
    "distributed.worker.profile.enabled": False,
    "distributed.admin.system-monitor.interval": "5s",
}
_LEAN = LEAN_SETTINGS  # the name of earlier versions


def quiet_dask() -> None:
    """:func:`hetsched.runner.quiet_dask` (distributed's loggers and port warnings), and the loggers a
    dispatcher's client and its interrupted shutdown would print to."""
    from ..runner import quiet_dask as quiet_runner

    quiet_runner()
    for name in ("distributed.client", "distributed.comm", "distributed.batched", "tornado.application"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    # a value fetch abandoned because its worker died leaves Dask's internal waiters unread; asyncio would
    # report each ("Task exception was never retrieved") on stderr
    logging.getLogger("asyncio").setLevel(logging.CRITICAL)


_quiet = quiet_dask  # the name of earlier versions (kept for callers not yet updated)


def replenish(cluster) -> None:
    """Start the ``LocalCluster``'s missing workers again, under their old names.

    ``SpecCluster`` keeps a spec per worker name; a worker whose process (and
    nanny) is gone has a spec but no running worker, and ``scale`` to the spec's
    size starts exactly those. Safe to call at any time.
    """
    def fix():  # in the cluster's event loop: no race with its own bookkeeping
        live = {str(w.get("name")) for w in cluster.scheduler_info.get("workers", {}).values()}
        for name in list(cluster.workers):
            status = getattr(getattr(cluster.workers[name], "status", None), "name", "")
            if str(name) not in live and status in ("closed", "closing", "failed", "closing_gracefully"):
                del cluster.workers[name]
        cluster.scale(len(cluster.worker_spec))

    cluster.loop.add_callback(fix)


def demo_rates(n_workers: int, load: float = 0.7) -> tuple[list[str], dict[str, list[float]], np.ndarray]:
    """Classes, per-worker rates and arrival rates of the demo system.

    Worker ``k`` gets the rates of group ``k mod 6`` of System 3.A (Table 3.1,
    groups T..Y: high task and machine heterogeneity); ``alpha`` has the
    direction of 3.A's ``alpha^1`` scaled so that ``lambda* = 1/load``.
    """
    from ..lp import solve_allocation

    groups = [[2, 1, 1, 1], [2, 20, 20, 20], [2, 3.7, 9.4, 2.8], [2, 7.1, 3.7, 5.9], [2, 2.4, 7.3, 4.4],
              [2, 8.7, 2.7, 6.3]]
    rates = {str(k): list(map(float, groups[k % 6])) for k in range(n_workers)}
    mu = np.array([rates[str(k)] for k in range(n_workers)]).T
    direction = np.array([11.25, 22.5, 36.0, 63.0])
    lam = solve_allocation(mu, direction).lam
    alpha = direction * lam * load
    return ["c1", "c2", "c3", "c4"], rates, alpha


def poisson_arrivals(alpha, n_tasks: int, time_unit: float, seed: Any = None) -> list[tuple]:
    """``n_tasks`` arrivals ``(offset_seconds, class, KIND_EMULATE, work)`` of the merged Poisson stream."""
    alpha = np.asarray(alpha, dtype=float)
    rng = np.random.default_rng(seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed))
    gaps = rng.exponential(1.0 / alpha.sum(), size=n_tasks)
    cls = rng.choice(len(alpha), size=n_tasks, p=alpha / alpha.sum())
    work = rng.exponential(1.0, size=n_tasks)
    t = np.cumsum(gaps) * time_unit
    return [(float(t[k]), int(cls[k]), KIND_EMULATE, float(work[k])) for k in range(n_tasks)]


class Killer:
    """A hook that SIGKILLs one worker process, preferring a worker that is running a task.

    With ``cluster`` (a ``LocalCluster`` with worker processes) the worker's
    pid is read from its nanny in this process — no message to a worker that
    may be dead or restarting, so a kill never blocks the dispatcher. Without
    it, pids are asked from the workers once (``client.run``).
    """

    def __init__(self, client, seed: Any = None, cluster=None, limit: int | None = None):
        self.client = client
        self.cluster = cluster
        self.limit = limit
        self.rng = np.random.default_rng(np.random.SeedSequence(seed))
        self.killed: list[str] = []
        self.pids: dict[str, int] = {}

    def _pid(self, addr, pool):
        if self.cluster is not None:
            for nanny in list(self.cluster.workers.values()):
                if getattr(nanny, "worker_address", None) == addr:
                    return _safe_pid(nanny)
            return None
        if addr not in self.pids:  # ask every live worker once (a dead one could make run() wait)
            try:
                self.pids.update(self.client.run(os.getpid, workers=pool))
            except Exception:  # a worker went away meanwhile
                return None
        return self.pids.pop(addr, None)

    def __call__(self, dispatcher) -> None:
        if self.limit is not None and len(self.killed) >= self.limit:
            return
        busy = sorted({m.address for m in dispatcher.machines.values() if m.n_out > 0})
        pool = busy or sorted({m.address for m in dispatcher.machines.values()})
        if self.cluster is not None:  # only workers whose process is alive right now
            alive = {getattr(n, "worker_address", None) for n in list(self.cluster.workers.values())
                     if _safe_pid(n) is not None}
            pool = [a for a in busy if a in alive] or [a for a in pool if a in alive]
        if not pool:
            return
        addr = pool[int(self.rng.integers(len(pool)))]
        pid = self._pid(addr, pool)
        if pid is None:
            return
        if pid == os.getpid():
            raise ModelError("kill: workers run in this process; use a cluster with processes=True")
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:  # already gone
            return
        self.killed.append(addr)
        dispatcher.events.append({"t": time.time(), "event": "killed", "address": addr, "pid": pid})


def _safe_pid(nanny):
    try:
        return nanny.pid
    except Exception:  # noqa: BLE001 - a nanny in transition
        return None


def demo_spec(policy, workers, tasks, seed, load, rate) -> str:
    """Hash of what defines the demo's tasks (a journal belongs to one demo configuration)."""
    import hashlib
    import json

    doc = {"demo": 1, "policy": str(policy).lower(), "workers": int(workers), "tasks": int(tasks),
           "seed": int(seed), "load": float(load), "rate": float(rate)}
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def run_demo(policy: str = "lpas-dg", workers: int = 4, tasks: int = 200, kill: int = 0, *, seed: int = 2009,
             load: float = 0.7, rate: float = 100.0, scheduler: str | None = None, journal: str | None = None,
             progress=None, prefetch: float = 0.0, worker_wait: float = 60.0, timeout: float | None = None,
             resolve_every: float | None = None) -> dict:
    """Run ``tasks`` emulated tasks on ``workers`` heterogeneous workers; kill ``kill`` of them on the way.

    ``rate``: mean task arrivals per second (fixes the time unit: ``sum(alpha)/rate``
    seconds). Kills happen at evenly spaced times during the arrival period;
    the killed workers' nannies restart them (with processes), and workers
    still missing after 5 s are started again (:func:`replenish`).

    With ``journal``: task ``k`` is the ``k``-th arrival of the seeded stream.
    A rerun on the same journal (same arguments; another configuration is
    refused) re-queues the accepted unfinished tasks and releases only the
    arrivals not yet accepted, at their original spacing — nothing is run or
    reported twice. ``timeout`` (default ``max(120, 20 x arrival span)`` s) and
    ``worker_wait`` bound the run; if either ends it, ``status`` is 2 or 3 and
    ``lost`` counts the unfinished tasks. Returns the ``hetsched dispatch demo``
    JSON: the :class:`~hetsched.dispatch.DispatchResult` fields and the demo's own.
    """
    from .dasklayer import cluster_workers
    from .dispatcher import Dispatcher, Emulation

    check_demo_args(policy, workers, tasks, kill, seed, load, rate, scheduler)
    spec = demo_spec(policy, workers, tasks, seed, load, rate)
    if journal is not None:  # refuse a bad journal before starting a cluster
        from .journal import Journal

        Journal(journal, ["c1", "c2", "c3", "c4"], spec=spec).close()
    quiet_dask()
    cluster = None
    if scheduler is None:
        cluster, client = local_cluster(workers, processes=kill > 0)
    else:
        client = connect(scheduler)
    killer = None
    try:
        names = [n for n, _ in cluster_workers(client, wait=10.0).values()]
        if not names:
            raise ModelError(f"--scheduler: the Dask cluster at {scheduler!r} has no workers")
        classes, rates, alpha = demo_rates(len(names), load)
        rates = {n: rates[str(k)] for k, n in enumerate(sorted(names, key=_natural))}
        time_unit = float(alpha.sum()) / rate
        arrivals = poisson_arrivals(alpha, tasks, time_unit, seed)
        d = Dispatcher(client, classes, rates, policy=policy, alpha=alpha, time_unit=time_unit,
                       emulation=Emulation(rates, {}, time_unit), journal=journal, journal_spec=spec,
                       timeout_factor=20.0, timeout_min=2.0, prefetch=prefetch, worker_wait=worker_wait,
                       resolve_every=resolve_every, ignore_unknown_workers=scheduler is not None,
                       replenish=None if cluster is None else (lambda: replenish(cluster)))
        resumed = d.next_id  # arrivals 0..next_id-1 were accepted by an earlier run
        rest = arrivals[resumed:]
        if rest:
            t0 = rest[0][0]
            rest = [(off - t0, c, k, p) for off, c, k, p in rest]
        span = rest[-1][0] if rest else 0.0
        killer = Killer(client, seed=[seed, 1], cluster=cluster)
        hooks = [(span * (k + 1) / (kill + 1), killer) for k in range(kill)]
        try:
            res = d.run(rest, hooks=hooks, progress=progress,
                        timeout=timeout if timeout is not None else max(120.0, 20 * span))
            counts = d.journal.counts() if d.journal is not None else None
        finally:
            d.close()
    finally:
        close_quietly(client, cluster)
    out = res.as_dict()
    out.update({
        "workers": len(names), "tasks": tasks, "kill": kill, "killed": len(killer.killed), "resumed": resumed,
        "restored": sum(e.get("tasks", 0) for e in res.events if e["event"] == "restored"),
        "journal_counts": counts, "time_unit": time_unit, "lambda": res.lam,
        "mean_response_units": res.mean_response / time_unit,
        "per_class": [dict(pc, mean_response_units=None if pc["mean_response"] is None
                           else pc["mean_response"] / time_unit) for pc in out["per_class"]],
        "dispatch_ms_per_task": 1000 * (res.decision_seconds + res.submit_seconds) / max(1, res.extra["attempts"]),
        "replenish_calls": res.extra["replenish_calls"],
        "membership_events": [e for e in res.events if e["event"] in ("left", "joined", "killed", "timeout",
                                                                      "replenish")],
    })
    from ..results import jsonable

    return jsonable(out)


def connect(scheduler: str, timeout: float = 30.0):
    """A ``distributed.Client`` of the scheduler at ``scheduler``, or one line naming it."""
    quiet_dask()
    from distributed import Client

    try:
        return Client(scheduler, timeout=timeout, set_as_default=False)
    except Exception as exc:  # noqa: BLE001 - unreachable address: one line
        raise ModelError(f"--scheduler: cannot reach the Dask scheduler at {scheduler!r}: {exc}") from None


def _natural(s: str):
    return (0, int(s), "") if s.isdigit() else (1, 0, s)
