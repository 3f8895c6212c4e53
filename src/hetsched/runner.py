"""Independent replications, run in parallel: a local process pool or Dask.

:func:`replicate` is the one entry point every simulated model uses for one
run (one table cell). :func:`replicate_many` runs the replications of many
runs (a :class:`Job` each: function, params, seed, reps) as one batch on one
pool or cluster, so the workers stay busy across cells; :class:`Batch` is the
experiments' way to use it: each cell is *planned* by its model (validated,
prepared: a :class:`Planned` holding the job and the step that turns the
job's replications into the model's result), then every cell x replication of
the experiment is submitted at once.

A result depends only on its job's ``seed`` (replication ``r`` always
receives child ``r`` of ``SeedSequence(seed).spawn(reps)``), never on the
number of workers, the backend, or which other jobs share the batch: a cell
run in a batch is bit-identical to the same cell run alone.

Design notes (why it looks like this):

* **Local pool, reused.** Worker processes are started once per ``workers``
  value and kept for the life of the interpreter, so the numba kernels are
  loaded from the on-disk cache (``cache=True``) once per worker process, not
  once per call; an experiment that calls :func:`replicate` for 30 table cells
  pays the start-up once. Workers are forked when only the main thread runs
  (they inherit loaded kernels; scripts need no ``__main__`` guard), else
  started by a fork server (safe when the parent runs threads).
* **Params shipped once per chunk.** Replications are grouped in chunks (about
  four per worker); ``params`` is pickled once per chunk, not once per
  replication, so large arrays do not travel repeatedly. With Dask, ``params``
  is scattered to the cluster once and every task refers to it.
* **One batch per experiment.** :func:`replicate_many` submits the chunks of
  every job before waiting for any, so a pool or cluster never idles at the
  end of one cell while others wait; each job keeps its own seed, chunks
  and (on Dask) its own scattered ``params``.
* **Progress bar** (:class:`hetsched.progress.Progress`, the project's one
  progress mechanism) appears on a terminal only when the call has lasted more
  than a second and ``progress`` is true.
"""

from __future__ import annotations

import atexit
import multiprocessing as mp
import os
import socket
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Callable, Sequence
from urllib.parse import urlsplit

import numpy as np

from .errors import HetschedError, ModelError
from .progress import Progress
from .seeds import seed_sequence

__all__ = ["replicate", "replicate_many", "Job", "Planned", "Batch", "default_workers", "shutdown_pools",
           "dask_client", "check_scheduler", "check_run", "quiet_dask"]

_BACKENDS = ("local", "dask")
_POOLS: dict[int, ProcessPoolExecutor] = {}


def default_workers() -> int:
    """Number of cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


def shutdown_pools() -> None:
    """Stop the cached local worker processes (also done at exit)."""
    while _POOLS:
        _, pool = _POOLS.popitem()
        pool.shutdown(wait=True, cancel_futures=True)


atexit.register(shutdown_pools)


def _get_pool(workers: int) -> ProcessPoolExecutor:
    pool = _POOLS.get(workers)
    if pool is None:
        # fork when it is safe (only the main thread runs): workers inherit the
        # imported modules and already-loaded kernels, and scripts need no
        # ``if __name__ == "__main__"`` guard; otherwise forkserver.
        methods = mp.get_all_start_methods()
        if "fork" in methods and threading.active_count() == 1:
            method = "fork"
        elif "forkserver" in methods:
            method = "forkserver"
        else:  # pragma: no cover - Windows
            method = "spawn"
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context(method),
                                   initializer=_quiet_worker)
        _POOLS[workers] = pool
    return pool


def _exit_quietly(signum: int, frame: Any) -> None:  # noqa: ARG001
    os._exit(128 + signum)


def _quiet_worker() -> None:
    """Worker start-up: Ctrl-C (SIGINT to the terminal's process group) ends a worker at once and silently;
    the parent handles the interrupt (writes what finished) -- no KeyboardInterrupt traceback per worker."""
    import signal

    signal.signal(signal.SIGINT, _exit_quietly)


def _run_chunk(fn: Callable, params: dict, items: list[tuple[int, np.random.SeedSequence]]):
    """Worker side: run the replications of one chunk (params unpickled once); each with its seconds."""
    out = []
    for i, ss in items:
        t0 = time.perf_counter()
        r = fn(ss, params)
        out.append((i, r, time.perf_counter() - t0))
    return out


def _run_one(fn: Callable, ss: np.random.SeedSequence, params: dict):
    t0 = time.perf_counter()
    r = fn(ss, params)
    return r, time.perf_counter() - t0


@dataclass(frozen=True)
class Job:
    """The replications of one run: ``fn(SeedSequence(seed).spawn(reps)[r], params)`` for ``r < reps``.

    ``fn`` is a picklable top-level function drawing all its randomness from
    the seed sequence it receives; ``params`` is shipped once per chunk (local
    pool) or scattered once (Dask).
    """

    fn: Callable[[np.random.SeedSequence, Any], dict]
    params: Any
    reps: int
    seed: Any
    label: str = ""


@dataclass
class Planned:
    """One model run split at its replications (what a model's ``plan`` function returns).

    ``job`` holds the replications to run and ``finish(runs, seconds)`` turns
    them (in replication order; ``seconds`` = the compute time they took)
    into the model's result; or ``job`` is ``None`` and ``result`` is already
    known (e.g. a system found unstable before any simulation). ``warm``
    (keyed by ``warm_key``) compiles or loads the kernel in this process, so
    that forked workers inherit it.
    """

    job: Job | None
    finish: Callable[[list, float], Any] | None = None
    result: Any = None
    warm: Callable[[], None] | None = None
    warm_key: Any = None


def _check_backend(workers: int | None, backend: str, scheduler: str | None) -> int:
    if backend not in _BACKENDS:
        raise ModelError(f"backend must be one of {', '.join(_BACKENDS)}, got {backend!r}")
    if backend == "dask" and not scheduler:
        raise ModelError("backend 'dask' needs a scheduler address (--scheduler tcp://HOST:PORT)")
    if workers is None:
        workers = default_workers()
    if isinstance(workers, bool) or not isinstance(workers, (int, np.integer)) or workers < 1:
        raise ModelError(f"workers must be a positive integer, got {workers!r}")
    return int(workers)


def _check_job(reps: int, seed: Any) -> None:
    if isinstance(reps, bool) or not isinstance(reps, (int, np.integer)) or reps < 1:
        raise ModelError(f"reps must be a positive integer, got {reps!r}")
    seed_sequence(seed)  # the one seed normaliser: raises ModelError naming a bad seed


def check_run(reps: int, seed: Any, workers: int | None, backend: str, scheduler: str | None) -> int:
    """Check a run's ``reps``, ``seed``, ``workers``, ``backend`` and ``scheduler`` (:class:`ModelError`
    naming the bad one); return the number of worker processes it will use (at most ``reps``)."""
    _check_job(reps, seed)
    return int(min(_check_backend(workers, backend, scheduler), reps))


def check_scheduler(address: str, timeout: float = 3.0) -> None:
    """Refuse at once (one line) a Dask scheduler address that does not accept connections.

    Only ``tcp://HOST:PORT`` (or ``HOST:PORT``) addresses are probed with a
    plain socket; other protocols are left to the Dask client.
    """
    text = str(address)
    parts = urlsplit(text if "://" in text else f"tcp://{text}")
    if parts.scheme not in ("tcp", ""):
        return
    try:
        host, port = parts.hostname, parts.port
    except ValueError:
        raise HetschedError(f"--scheduler: not an address of the form tcp://HOST:PORT: {text!r}") from None
    if not host or port is None:
        raise HetschedError(f"--scheduler: not an address of the form tcp://HOST:PORT: {text!r}")
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError as exc:
        raise HetschedError(f"--scheduler: cannot reach the Dask scheduler at {text!r}: "
                            f"{exc.strerror or exc}") from None


def quiet_dask() -> None:
    """Silence distributed's loggers and its port warnings (they would precede hetsched's own messages)."""
    import logging
    import warnings

    warnings.filterwarnings("ignore", message=r"Port \d+ is already in use", category=UserWarning)
    warnings.filterwarnings("ignore", module=r"distributed\..*", category=UserWarning)
    for name in ("distributed", "distributed.scheduler", "distributed.nanny", "distributed.worker",
                 "distributed.core", "distributed.http.proxy", "distributed.deploy"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def dask_client(scheduler: str):
    """A Dask client of the cluster at ``scheduler`` (refused in one line when unreachable)."""
    try:
        from distributed import Client
    except ImportError as exc:  # pragma: no cover - optional extra
        raise HetschedError("backend 'dask' needs the 'distributed' package: pip install 'hetsched[dask]'") from exc
    check_scheduler(scheduler)
    try:
        return Client(scheduler, timeout="10s", set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise HetschedError(f"cannot reach the Dask scheduler at {scheduler!r}: {exc}") from exc


def replicate(
    fn: Callable[[np.random.SeedSequence, dict], dict],
    params: dict,
    reps: int,
    seed: int,
    *,
    workers: int | None = None,
    backend: str = "local",
    scheduler: str | None = None,
    progress: bool = True,
    label: str = "",
) -> list[dict]:
    """Run ``fn(seed_seq, params)`` for the ``reps`` children of ``SeedSequence(seed)``.

    Parameters
    ----------
    fn : callable
        A picklable top-level function ``fn(seed_seq, params) -> dict`` (one
        replication). It must draw all its randomness from ``seed_seq``.
    params : dict
        Model parameters, identical for every replication (shipped once per
        chunk of replications, or scattered once to a Dask cluster).
    reps : int
        Number of independent replications ``R``.
    seed : int or SeedSequence
        Root seed (normalised by :func:`hetsched.seeds.seed_sequence`);
        replication ``r`` receives ``SeedSequence(seed).spawn(reps)[r]``.
    workers : int, optional
        Local worker processes (default: the cores available). ``1`` runs
        in-process, without a pool. Ignored by the Dask backend.
    backend : {"local", "dask"}
    scheduler : str, optional
        Dask scheduler address (``tcp://host:port``), required for ``dask``.
    progress : bool
        Show a progress bar on stderr when the call lasts more than a second.
    label : str
        Progress-bar text.

    Returns
    -------
    list of dict
        One result per replication, in replication order.
    """
    check_run(reps, seed, workers, backend, scheduler)
    return replicate_many([Job(fn, params, int(reps), seed, label)], workers=workers, backend=backend,
                          scheduler=scheduler, progress=progress, label=label)[0]


def replicate_many(
    jobs: Sequence[Job],
    *,
    workers: int | None = None,
    backend: str = "local",
    scheduler: str | None = None,
    progress: bool = True,
    label: str = "",
    on_done: Callable[[int, list, float], None] | None = None,
    client: Any = None,
) -> list[list[dict]]:
    """Run the replications of every job as one batch; per-job results in job order.

    Every chunk of every job is submitted before any result is awaited, so
    the pool (or the Dask cluster) works through all cells x replications
    without idling between cells. Job ``j``'s results are exactly those of
    ``replicate(job.fn, job.params, job.reps, job.seed)`` (same seeds, same
    order), whatever the other jobs, ``workers`` or ``backend``.

    Parameters
    ----------
    jobs : sequence of Job
    workers, backend, scheduler, progress, label
        As :func:`replicate` (``progress`` counts replications over all jobs).
    on_done : callable, optional
        ``on_done(j, runs, seconds)`` as soon as job ``j`` has all its
        replications (``seconds``: their summed compute time); an exception
        it raises stops the batch.
    client : distributed.Client, optional
        Use this client instead of connecting to ``scheduler``.

    Returns
    -------
    list of list of dict
        ``out[j][r]``: replication ``r`` of job ``j``.
    """
    jobs = list(jobs)
    for job in jobs:
        _check_job(job.reps, job.seed)
    n_workers = _check_backend(workers, backend, scheduler if client is None else "client")
    total = sum(int(job.reps) for job in jobs)
    n_workers = min(n_workers, max(total, 1))
    children = [seed_sequence(job.seed).spawn(int(job.reps)) for job in jobs]
    bar = Progress(label or "replications", total, enabled=progress, delay=1.0)
    results: list[list[Any]] = [[None] * int(job.reps) for job in jobs]
    seconds = [0.0] * len(jobs)
    left = [int(job.reps) for job in jobs]

    def record(j: int, i: int, r: Any, dt: float) -> None:
        results[j][i] = r
        seconds[j] += dt
        left[j] -= 1
        bar.advance(1)
        if left[j] == 0 and on_done is not None:
            on_done(j, results[j], seconds[j])

    try:
        if backend == "dask":
            _many_dask(jobs, children, scheduler, client, record, bar)
        elif n_workers == 1:
            for j, job in enumerate(jobs):
                for i, ss in enumerate(children[j]):
                    t0 = time.perf_counter()
                    r = job.fn(ss, job.params)
                    record(j, i, r, time.perf_counter() - t0)
        else:
            _many_pool(jobs, children, n_workers, record, bar)
    finally:
        bar.close()
    return results


def _submit_all(pool, jobs, children, n_workers):
    futures = {}
    try:
        for j, job in enumerate(jobs):
            items = list(enumerate(children[j]))
            n_chunks = min(len(items), 4 * n_workers)
            for c in range(n_chunks):  # interleaved: balanced, order restored by index
                futures[pool.submit(_run_chunk, job.fn, job.params, items[c::n_chunks])] = j
    except BaseException:
        for f in futures:
            f.cancel()
        raise
    return futures


def _many_pool(jobs, children, n_workers, record, bar) -> None:
    pool = _get_pool(n_workers)
    try:
        futures = _submit_all(pool, jobs, children, n_workers)
    except Exception:  # a broken pool (e.g. a worker was killed): start a fresh one once
        _POOLS.pop(n_workers, None)
        pool = _get_pool(n_workers)
        futures = _submit_all(pool, jobs, children, n_workers)
    pending = set(futures)
    try:
        while pending:
            done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
            for f in done:
                j = futures[f]
                for i, r, dt in f.result():
                    record(j, i, r, dt)
            bar.advance(0)
    except BaseException:
        for f in pending:
            f.cancel()
        raise


def _many_dask(jobs, children, scheduler, client, record, bar) -> None:
    from distributed import as_completed

    own = client is None
    if own:
        client = dask_client(scheduler)
    futs: list = []
    try:
        where = {}
        for j, job in enumerate(jobs):
            # once per job; wrapped in a list: a dict given to scatter is scattered value by value under
            # its own keys as data names ("mu", "alpha", ...), which two jobs' params would share
            [pfut] = client.scatter([job.params], broadcast=True, hash=False)
            fj = client.map(_run_one, [job.fn] * len(children[j]), children[j], params=pfut, pure=False)
            for i, f in enumerate(fj):
                where[f.key] = (j, i)
            futs += fj
        for f, (r, dt) in as_completed(futs, loop=client.loop, with_results=True):  # raises the first error
            j, i = where[f.key]
            record(j, i, r, dt)
    except BaseException:
        for f in futs:
            f.cancel()
        raise
    finally:
        if own:
            client.close()


class Batch:
    """The cells of one experiment, planned first and then run as one batch.

    ``cell = batch.add(model.plan(...))`` for every cell, ``batch.run()``
    once, then ``cell.result`` is what the model's ``simulate`` would have
    returned for that cell alone (bit-identical numbers; ``wall_seconds`` is
    the compute time of the cell's replications, summed over workers).
    With a ``tracker`` (:class:`hetsched.experiments.progress.Tracker`) the batch
    announces its cells and reports each as it finishes (``row(result)``
    gives the rows kept for an interrupted run).
    """

    def __init__(self, *, workers: int | None = None, backend: str = "local", scheduler: str | None = None,
                 progress: bool = False, tracker: Any = None, label: str = "") -> None:
        self.workers, self.backend, self.scheduler = workers, backend, scheduler
        self.progress, self.tracker, self.label = progress, tracker, label
        self.cells: list[_Cell] = []

    def add(self, planned: Planned, row: Callable[[Any], Any] | None = None, label: str = "") -> "_Cell":
        cell = _Cell(planned, row, label)
        self.cells.append(cell)
        return cell

    def _tick(self, cell: "_Cell") -> None:
        if self.tracker is None:
            return
        if cell.row is not None:
            rows = cell.row(cell.result)
        else:
            res = cell.result
            ci = getattr(res, "ci", (None, None)) or (None, None)
            rows = {"cell": cell.label or getattr(res, "scenario", ""), "policy": getattr(res, "policy", None),
                    "metric": getattr(res, "metric", None), "mean": getattr(res, "mean", None),
                    "ci_low": ci[0], "ci_high": ci[1], "unstable": getattr(res, "unstable", None)}
        self.tracker.done(rows, cell.label)

    def run(self) -> "Batch":
        """Run every cell's replications at once (one pool or cluster); fill each ``cell.result``."""
        todo = [c for c in self.cells if not c.ran]
        n_workers = _check_backend(self.workers, self.backend, self.scheduler)
        jobs = [c.planned.job for c in todo if c.planned.job is not None]
        total = sum(int(j.reps) for j in jobs)
        if self.backend == "local" and min(n_workers, total) > 1:
            # load each kernel here, then start the pool's processes before any progress thread,
            # so that forked workers inherit the loaded kernels
            warmed = set()
            for c in todo:
                w = c.planned
                if w.warm is not None and w.warm_key not in warmed:
                    w.warm()
                    warmed.add(w.warm_key)
            pool = _get_pool(min(n_workers, total))
            pool.submit(int).result()
        if self.tracker is not None:
            self.tracker.total((self.tracker.n_total or 0) + len(todo))
        for c in todo:
            if c.planned.job is None:
                c.set(c.planned.result)
                self._tick(c)
        with_job = [c for c in todo if c.planned.job is not None]

        def done(j: int, runs: list, seconds: float) -> None:
            c = with_job[j]
            c.set(c.planned.finish(runs, seconds))
            self._tick(c)

        replicate_many([c.planned.job for c in with_job], workers=self.workers, backend=self.backend,
                       scheduler=self.scheduler, progress=self.progress, label=self.label, on_done=done)
        return self


class _Cell:
    """One cell of a :class:`Batch`: ``.result`` once the batch has run."""

    def __init__(self, planned: Planned, row, label: str) -> None:
        self.planned, self.row, self.label = planned, row, label
        self.ran = False
        self._result = None

    def set(self, result: Any) -> None:
        self._result, self.ran = result, True

    @property
    def result(self) -> Any:
        if not self.ran:
            raise RuntimeError("cell result read before Batch.run()")  # a programming error
        return self._result
