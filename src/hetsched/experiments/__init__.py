"""The papers' experiments as named, runnable definitions.

``hetsched reproduce ID`` runs one. The package is split by job:

* :mod:`.core` -- :class:`Experiment` (id, title, source, ``run``, ``--set``
  parameters), :class:`RunOptions` (what ``run`` is given) and
  :class:`ExperimentResult` (what it returns; the project's result protocol);
* :mod:`.catalog` -- the registry: the literal table of experiment modules, :func:`get`,
  :func:`registry`;
* :mod:`.params` -- ``--set KEY=VALUE`` declarations (:class:`Param`),
  parsing (:func:`parse_sets`) and run sizes (:func:`sizes`);
* :mod:`.rows` -- the row convention every experiment follows (the paper's
  column names plus ``metric``, ``value``, CI, ``stable``,
  ``value_untrusted``, ``printed``, ``rel_error``);
* :mod:`.progress` -- :class:`Tracker`: one progress bar over the cells of an
  experiment and the rows finished so far;
* :mod:`.cluster` -- backend checks, the Dask ``LocalCluster``, the batch of
  cells (:func:`batch`);
* results files are written and read by :mod:`hetsched.resultsio`.

Contract for an experiment's ``run(opts)``:

* ``opts`` is a :class:`RunOptions` (quick mode, seed, workers, output folder,
  and ``extra``: the ``--set KEY=VALUE`` parameters, already checked against the
  experiment's declared :class:`Param` s by :func:`parse_sets` -- an unknown key
  or a bad value is refused before the run, and a given value is applied in
  ``--quick`` mode too);
* it returns an :class:`ExperimentResult` whose ``rows`` use the paper's column
  names and the uniform columns of :mod:`.rows`, whose ``table`` is the text
  printed in the paper's layout, and whose ``figures`` lists the plot files it
  wrote under ``opts.outdir``;
* every random number depends only on ``opts.seed``;
* as each cell (a row, or a group of rows) finishes it calls
  ``opts.tracker.done(rows)`` after announcing ``opts.tracker.total(n)``: the
  command then shows one progress bar with an ETA over the whole experiment,
  and an interrupted run (Ctrl-C) still writes the finished rows, with status
  ``interrupted``.

Results files (:func:`write_results`) carry a provenance record
(:mod:`hetsched.provenance`) and the unit of every column (:data:`UNITS`, or
the experiment's own ``ExperimentResult.units``). Output folders are never
overwritten silently and never reached through a symbolic link
(:func:`prepare_outdir`).
"""

from __future__ import annotations

from pathlib import Path

from ..resultsio import prepare_outdir
from .cluster import batch, check_backend, run_experiment
from .core import DASK_USES, UNITS, Experiment, ExperimentResult, RunOptions
from .params import HORIZON, REPS, Param, parse_sets, sizes
from .progress import Tracker
from .catalog import MODULES, get, register, registry

__all__ = [
    "Param", "parse_sets", "sizes", "REPS", "HORIZON", "Experiment", "ExperimentResult", "RunOptions",
    "register", "registry", "get", "MODULES", "write_results", "prepare_outdir", "Tracker", "UNITS", "DASK_USES",
    "batch", "run_experiment", "check_backend",
]


def write_results(result: ExperimentResult, outdir: Path) -> list[Path]:
    """Write rows as CSV and Parquet, the whole result as JSON, the table as text
    (:meth:`ExperimentResult.write`, through :func:`hetsched.resultsio.write_results`)."""
    return result.write(outdir)
