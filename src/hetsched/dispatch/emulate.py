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
from .worker import KIND_EMULATE

__all__ = ["local_cluster", "demo_rates", "poisson_arrivals", "Killer", "run_demo"]


def local_cluster(n_workers: int, *, processes: bool = False, threads_per_worker: int = 1):
    """``(cluster, client)`` on 127.0.0.1 with ``n_workers`` single-threaded workers."""
    from distributed import Client, LocalCluster

    if int(n_workers) < 1:
        raise ModelError(f"workers: need at least 1 worker, got {n_workers!r}")
    cluster = LocalCluster(n_workers=int(n_workers), threads_per_worker=threads_per_worker, processes=processes,
                           protocol="tcp://", host="127.0.0.1", dashboard_address=None, silence_logs=logging.CRITICAL)
    client = Client(cluster)
    client.wait_for_workers(int(n_workers), timeout=120)
    return cluster, client


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
    """A hook that SIGKILLs one worker process, preferring a worker that is running a task."""

    def __init__(self, client, seed: Any = None):
        self.client = client
        self.rng = np.random.default_rng(np.random.SeedSequence(seed))
        self.killed: list[str] = []
        self.pids: dict[str, int] = {}

    def __call__(self, dispatcher) -> None:
        busy = sorted({m.address for m in dispatcher.machines.values() if m.fkey is not None})
        pool = busy or sorted({m.address for m in dispatcher.machines.values()})
        if not pool:
            return
        addr = pool[int(self.rng.integers(len(pool)))]
        if addr not in self.pids:  # ask every live worker once (a dead one could make run() wait)
            try:
                self.pids.update(self.client.run(os.getpid, workers=pool))
            except Exception:  # a worker went away meanwhile
                return
        pid = self.pids.pop(addr, None)
        if pid is None:
            return
        if pid == os.getpid():
            raise ModelError("kill: workers run in this process; use a cluster with processes=True")
        os.kill(pid, signal.SIGKILL)
        self.killed.append(addr)
        dispatcher.events.append({"t": time.time(), "event": "killed", "address": addr, "pid": pid})


def run_demo(policy: str = "lpas-dg", workers: int = 4, tasks: int = 200, kill: int = 0, *, seed: int = 2009,
             load: float = 0.7, rate: float = 100.0, scheduler: str | None = None, journal: str | None = None,
             progress=None) -> dict:
    """Run ``tasks`` emulated tasks on ``workers`` heterogeneous workers; kill ``kill`` of them on the way.

    ``rate``: mean task arrivals per second (fixes the time unit: ``sum(alpha)/rate``
    seconds). Kills happen at evenly spaced times during the arrival period;
    the killed workers' nannies restart them (with processes). Returns the
    ``hetsched dispatch demo`` JSON.
    """
    from ..sim.pull_policies import policy_code
    from .dispatcher import Dispatcher, Emulation

    policy_code(policy)  # fail before starting a cluster
    if tasks < 1:
        raise ModelError(f"tasks: need at least 1 task, got {tasks!r}")
    if kill < 0:
        raise ModelError(f"kill: must be >= 0, got {kill!r}")
    if kill and scheduler is not None:
        raise ModelError("kill: only for the embedded LocalCluster (not with --scheduler)")
    if not rate > 0:
        raise ModelError(f"rate: must be > 0 tasks per second, got {rate!r}")
    cluster = None
    if scheduler is None:
        cluster, client = local_cluster(workers, processes=kill > 0)
    else:
        from distributed import Client

        client = Client(scheduler, timeout=30)
    try:
        names = [str(w.get("name", a)) for a, w in client.scheduler_info(n_workers=-1)["workers"].items()]
        classes, rates, alpha = demo_rates(len(names), load)
        rates = {n: rates[str(k)] for k, n in enumerate(sorted(names, key=_natural))}
        time_unit = float(alpha.sum()) / rate
        arrivals = poisson_arrivals(alpha, tasks, time_unit, seed)
        span = arrivals[-1][0]
        killer = Killer(client, seed=[seed, 1])
        hooks = [(span * (k + 1) / (kill + 1), killer) for k in range(kill)]
        d = Dispatcher(client, classes, rates, policy=policy, alpha=alpha, time_unit=time_unit,
                       emulation=Emulation(rates, {}, time_unit), journal=journal, timeout_factor=20.0,
                       timeout_min=2.0)
        res = d.run(arrivals, hooks=hooks, progress=progress, timeout=max(120.0, 20 * span))
        d.close()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    out = {
        "policy": res.policy, "workers": len(names), "tasks": tasks, "kill": kill, "killed": len(killer.killed),
        "submitted": res.submitted, "completed": res.completed, "failed": res.failed, "lost": res.lost,
        "resubmitted": res.resubmitted, "duplicates_ignored": res.duplicates_ignored, "timeouts": res.timeouts,
        "mean_response": res.mean_response, "mean_response_units": res.mean_response / time_unit,
        "time_unit": time_unit, "lambda": res.lam, "lp_solves": res.lp_solves,
        "per_class": [dict(pc, mean_response_units=pc["mean_response"] / time_unit) for pc in res.per_class],
        "overhead": res.overhead,
        "dispatch_ms_per_task": 1000 * (res.decision_seconds + res.submit_seconds) / max(1, res.extra["attempts"]),
        "wall_seconds": res.wall_seconds, "success": res.success, "message": res.message,
        "membership_events": [e for e in res.events if e["event"] in ("left", "joined", "killed", "timeout")],
    }
    return out


def _natural(s: str):
    return (0, int(s), "") if s.isdigit() else (1, 0, s)
