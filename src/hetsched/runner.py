"""Independent replications, run in parallel: a local process pool or Dask.

:func:`replicate` is the one entry point every simulated model uses. A result
depends only on ``seed`` (replication ``r`` always receives child ``r`` of
``SeedSequence(seed).spawn(reps)``), never on the number of workers or the
backend.

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
* **Progress bar** (rich, on stderr) appears only when the call has lasted more
  than a second and ``progress`` is true.
"""

from __future__ import annotations

import atexit
import multiprocessing as mp
import os
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import Any, Callable

import numpy as np

from .errors import HetschedError, ModelError
from .sim.core.seeds import seed_sequence

__all__ = ["replicate", "default_workers", "shutdown_pools"]

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
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context(method))
        _POOLS[workers] = pool
    return pool


def _run_chunk(fn: Callable, params: dict, items: list[tuple[int, np.random.SeedSequence]]):
    """Worker side: run the replications of one chunk (params unpickled once)."""
    return [(i, fn(ss, params)) for i, ss in items]


def _run_one(fn: Callable, ss: np.random.SeedSequence, params: dict) -> dict:
    return fn(ss, params)


class _Progress:
    """A rich progress bar that only shows up after ``delay`` seconds."""

    def __init__(self, total: int, label: str, enabled: bool, delay: float = 1.0):
        self.total, self.label, self.enabled, self.delay = total, label, enabled, delay
        self.t0 = time.perf_counter()
        self.done = 0
        self._bar = None
        self._task = None

    def update(self, n: int = 0) -> None:
        self.done += n
        if not self.enabled:
            return
        if self._bar is None and time.perf_counter() - self.t0 > self.delay and self.done < self.total:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._bar = Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                console=Console(stderr=True), transient=True,
            )
            self._bar.start()
            self._task = self._bar.add_task(self.label or "replications", total=self.total)
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def _check(reps: int, seed: int, workers: int | None, backend: str, scheduler: str | None) -> int:
    if not isinstance(reps, (int, np.integer)) or reps < 1:
        raise ModelError(f"reps must be a positive integer, got {reps!r}")
    seed_sequence(seed)  # the one seed normaliser: raises ModelError naming a bad seed
    if backend not in _BACKENDS:
        raise ModelError(f"backend must be one of {', '.join(_BACKENDS)}, got {backend!r}")
    if backend == "dask" and not scheduler:
        raise ModelError("backend 'dask' needs a scheduler address (--scheduler tcp://HOST:PORT)")
    if workers is None:
        workers = default_workers()
    if not isinstance(workers, (int, np.integer)) or workers < 1:
        raise ModelError(f"workers must be a positive integer, got {workers!r}")
    return int(min(workers, reps))


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
        Root seed (normalised by :func:`hetsched.sim.core.seeds.seed_sequence`);
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
    n_workers = _check(reps, seed, workers, backend, scheduler)
    children = seed_sequence(seed).spawn(int(reps))
    bar = _Progress(int(reps), label, progress)
    try:
        if backend == "dask":
            return _replicate_dask(fn, params, children, scheduler, bar)
        if n_workers == 1:
            out = []
            for ss in children:
                out.append(fn(ss, params))
                bar.update(1)
            return out
        return _replicate_pool(fn, params, children, n_workers, bar)
    finally:
        bar.close()


def _replicate_pool(fn, params, children, n_workers, bar) -> list[dict]:
    reps = len(children)
    n_chunks = min(reps, 4 * n_workers)
    items = list(enumerate(children))
    chunks = [items[c::n_chunks] for c in range(n_chunks)]  # interleaved: balanced, order restored below
    pool = _get_pool(n_workers)
    try:
        futures = {pool.submit(_run_chunk, fn, params, ch) for ch in chunks}
    except Exception:  # a broken pool (e.g. a worker was killed): start a fresh one once
        _POOLS.pop(n_workers, None)
        pool = _get_pool(n_workers)
        futures = {pool.submit(_run_chunk, fn, params, ch) for ch in chunks}
    results: list[Any] = [None] * reps
    pending = futures
    try:
        while pending:
            done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
            for f in done:
                for i, r in f.result():
                    results[i] = r
                    bar.update(1)
            bar.update(0)
    except BaseException:
        for f in pending:
            f.cancel()
        raise
    return results


def _replicate_dask(fn, params, children, scheduler, bar) -> list[dict]:
    try:
        from distributed import Client
    except ImportError as exc:  # pragma: no cover - optional extra
        raise HetschedError("backend 'dask' needs the 'distributed' package: pip install 'hetsched[dask]'") from exc
    try:
        client = Client(scheduler, timeout="10s", set_as_default=False)
    except OSError as exc:
        raise HetschedError(f"cannot reach the Dask scheduler at {scheduler!r}: {exc}") from exc
    try:
        pfut = client.scatter(params, broadcast=True, hash=False)
        futs = client.map(_run_one, [fn] * len(children), children, params=pfut, pure=False)
        while True:
            n_done = sum(f.done() for f in futs)
            bar.update(n_done - bar.done)
            if n_done == len(futs) or any(f.status == "error" for f in futs):
                break
            time.sleep(0.05)
        return list(client.gather(futs))  # raises the first replication error, if any
    finally:
        client.close()
