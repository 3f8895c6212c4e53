"""Where an experiment's replications run: backend checks, the Dask ``LocalCluster`` of
``--backend dask`` without ``--scheduler``, and the batch every experiment plans its cells in."""

from __future__ import annotations

from dataclasses import replace

from ..errors import HetschedError
from .core import Experiment, ExperimentResult, RunOptions

__all__ = ["check_backend", "run_experiment", "batch"]


def check_backend(exp: Experiment, backend: str, scheduler: str | None) -> None:
    """Refuse, in one line, backend options that ``exp`` would ignore or cannot use (see :func:`run_experiment`)."""
    from ..runner import check_scheduler

    if backend != "dask":
        if scheduler:
            raise HetschedError(f"--scheduler {scheduler!r} applies only with --backend dask")
        return
    if exp.dask == "none":
        raise HetschedError(f"--backend dask does not apply to {exp.id}: it computes its results exactly, "
                            f"with no replications to distribute (drop --backend/--scheduler)")
    if scheduler:
        check_scheduler(scheduler)


def run_experiment(exp: Experiment, opts: RunOptions) -> ExperimentResult:
    """``exp.run(opts)`` with the backend options checked and honoured (``hetsched reproduce``);
    the result's ``seconds`` is the wall time of the run.

    * ``--scheduler`` without ``--backend dask``: refused (it would be ignored).
    * ``--backend dask`` on an experiment with nothing to distribute (``dask="none"``): refused.
    * ``--backend dask --scheduler ADDR``: the address must accept connections now (checked
      before any work, so an unreachable scheduler fails at once, in one line).
    * ``--backend dask`` without ``--scheduler``: a Dask ``LocalCluster`` of ``--workers``
      single-threaded worker processes (default: the cores available) is started for the run
      and closed after it; an experiment that drives the cluster itself (``dask="own"``)
      decides on its own.
    """
    import time

    from ..runner import default_workers, quiet_dask

    check_backend(exp, opts.backend, opts.scheduler)
    t0 = time.perf_counter()
    if opts.backend != "dask" or opts.scheduler or exp.dask == "own":
        result = exp.run(opts)
    else:
        try:
            from distributed import LocalCluster
        except ImportError:  # pragma: no cover - optional extra
            raise HetschedError("--backend dask needs the 'distributed' package: pip install 'hetsched[dask]'") from None
        quiet_dask()
        n = opts.workers or default_workers()
        with LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None,
                          host="127.0.0.1") as cluster:
            result = exp.run(replace(opts, scheduler=cluster.scheduler_address))
    result.seconds = time.perf_counter() - t0
    return result


def batch(opts: RunOptions, label: str = ""):
    """A :class:`hetsched.runner.Batch` on the experiment's workers/backend/scheduler, feeding its tracker:
    plan every cell (``batch.add(model.plan(...))``), then ``batch.run()`` submits every cell x
    replication at once."""
    from ..runner import Batch

    return Batch(workers=opts.workers, backend=opts.backend, scheduler=opts.scheduler, progress=False,
                 tracker=opts.tracker, label=label)
