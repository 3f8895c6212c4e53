"""What an experiment is (:class:`Experiment`), what it is given (:class:`RunOptions`) and
what it returns (:class:`ExperimentResult`, a :class:`hetsched.results.Result`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar, Iterable, Mapping

from ..results import Result, jsonable
from .params import KINDS, Param
from .progress import Tracker

__all__ = ["UNITS", "DASK_USES", "RunOptions", "Experiment", "ExperimentResult", "COMPLETE", "SOME_UNSTABLE",
           "INTERRUPTED", "CHECK_FAILED"]

#: Unit of each column name used by the shipped experiments (an experiment may
#: override or extend it with ``ExperimentResult.units``). Fractions are in
#: [0, 1]; ``percent`` columns are already multiplied by 100.
UNITS: dict[str, str] = {
    "Qbar": "tasks (time-average number in system)",
    "Q": "tasks (time-average number in system)",
    "W": "time units (mean completion time)",
    "mean": "model metric (see 'metric')",
    "value": "unit of the metric named in 'metric'",
    "value_untrusted": "unit of the metric (an unstable run: not an estimate)",
    "printed": "unit of the metric (the paper's printed value)",
    "rel_error": "fraction ((value - printed) / printed)",
    "ci_low": "unit of the metric", "ci_high": "unit of the metric",
    "acc": "percent (relative half-width of the 95% CI)",
    "accuracy": "percent (relative half-width of the 95% CI)",
    "X_accuracy": "percent (relative half-width of the 95% CI of X)",
    "rel_half_width": "fraction (relative half-width of the 95% CI)",
    "Delta": "percent (improvement over the reference policy)",
    "reduction": "percent (cost reduction of Optimal over Local)",
    "X": "messages per replication",
    "rho": "fraction of capacity", "load": "fraction of capacity (1/lambda*)",
    "lambda": "dimensionless (capacity multiple of the arrival rates)",
    "MCP": "time units (makespan-based cost)", "LBF": "fraction (load-balance factor)",
    "level": "jobs (workload level)",
    "offered": "fraction (work offered over the multicluster's capacity, of the run's workload)",
    "late_share": "fraction (jobs finishing after their deadline)",
    "I": "fraction (inaccuracy of the rate estimates)",
    "cost": "cost per time unit (discounted model)",
    "ST": "time units (mean response)", "SRT": "time units (mean service-response)",
    "UoS": "fraction (utilisation of servers)", "GoS": "fraction (grade of service: loss)",
}

#: how an experiment uses ``--backend dask``: its replications go through :mod:`hetsched.runner`
#: (``"runner"``), it drives the cluster itself (``"own"``, e.g. real dispatch), or it has nothing
#: to distribute (``"none"``: refused)
DASK_USES = ("runner", "own", "none")

COMPLETE, SOME_UNSTABLE, INTERRUPTED, CHECK_FAILED = 0, 1, 2, 3
_OLD_STATUS = {"complete": None, "interrupted": INTERRUPTED}


@dataclass(frozen=True)
class RunOptions:
    """What ``hetsched reproduce`` gives an experiment's ``run``: quick mode, seed, workers,
    backend, output folder, the checked ``--set`` values (``extra``) and the progress tracker."""

    quick: bool = False
    seed: int = 2009
    workers: int | None = None
    backend: str = "local"
    scheduler: str | None = None
    outdir: Path = Path("results")
    progress: bool = True
    extra: dict[str, Any] = field(default_factory=dict)
    tracker: Tracker | None = None

    def __post_init__(self) -> None:
        if self.tracker is None:
            object.__setattr__(self, "tracker", Tracker(enabled=False))


@dataclass(frozen=True)
class Experiment:
    """A named, runnable paper experiment: ``run(opts) -> ExperimentResult``."""

    id: str
    title: str
    source: str
    run: Callable[[RunOptions], "ExperimentResult"]
    params: tuple[Param, ...] = ()
    dask: str = "runner"

    def __post_init__(self) -> None:
        if self.dask not in DASK_USES:  # a programming error in an experiment module
            raise RuntimeError(f"experiment {self.id!r}: dask must be one of {DASK_USES}, got {self.dask!r}")
        for p in self.params:
            if p.kind not in KINDS:  # a programming error in an experiment module
                raise RuntimeError(f"experiment {self.id!r}: parameter {p.name!r} has unknown kind {p.kind!r}")


def _row_unstable(r: Mapping[str, Any]) -> bool:
    """A row marked unstable by the row convention (``stable`` false) or by an older column."""
    return r.get("stable") is False or r.get("unstable") is True


@dataclass(repr=False)
class ExperimentResult(Result):
    """The result of one experiment: rows in the paper's columns (plus the uniform columns of
    :mod:`hetsched.experiments.rows`), the table as printed, plots, notes.

    ``status`` (see :attr:`STATUS`) is computed from the rows unless given:
    0 when every row is stable, 1 when some row is unstable (the run is
    complete, those rows' values are untrusted), 2 for a run interrupted
    before its end (the finished rows only), 3 when a check of the results
    failed (``message`` says which).
    """

    id: str
    rows: list[dict[str, Any]]
    table: str = ""
    figures: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)
    status: Any = None
    provenance: dict[str, Any] | None = None
    message: str = ""
    seconds: float = 0.0
    keys: tuple[str, ...] = ()

    STATUS: ClassVar[Mapping[int, str]] = {
        COMPLETE: "complete",
        SOME_UNSTABLE: "complete; some rows are unstable (their numbers are untrusted)",
        INTERRUPTED: "interrupted: only the rows finished before the interrupt",
        CHECK_FAILED: "complete, but a check of the results failed",
    }

    def __post_init__(self) -> None:
        st = self.status
        if isinstance(st, str):  # the former spelling: "complete" / "interrupted"
            st = _OLD_STATUS.get(st, INTERRUPTED)
        n_unstable = sum(_row_unstable(r) for r in self.rows)
        if st is None:
            st = SOME_UNSTABLE if n_unstable else COMPLETE
        self.status = int(st)
        if not self.message:
            n = len(self.rows)
            if self.status == INTERRUPTED:
                self.message = f"interrupted after {n} finished row{'s' if n != 1 else ''}"
            elif self.status == CHECK_FAILED:
                self.message = "a check of the results failed"
            else:
                self.message = f"complete: {n} row{'s' if n != 1 else ''}" + (
                    f", {n_unstable} unstable (value null, the number in value_untrusted)" if n_unstable else "")
        if not (isinstance(self.seconds, (int, float)) and math.isfinite(self.seconds)):
            self.seconds = 0.0
        self.seconds = float(self.seconds)

    # ------------------------------------------------------------------ protocol
    def column_units(self) -> dict[str, str]:
        """Unit of every column that has one (the experiment's own, else :data:`UNITS`)."""
        from ..resultsio import column_units

        return column_units(self.rows, self.units, UNITS)

    def as_dict(self) -> dict[str, Any]:
        """The JSON of ``hetsched reproduce --json`` and of ``results.json``."""
        return {
            "id": self.id,
            "kind": "experiment",
            "status": self.status,
            "success": self.success,
            "message": self.message,
            "seconds": self.seconds,
            "rows": [jsonable(r) for r in self.rows],
            "units": self.column_units(),
            "notes": list(self.notes),
            "figures": [str(p) for p in self.figures],
            "meta": jsonable(self.meta),
            "provenance": jsonable(self.provenance),
        }

    to_json = as_dict  # the former name

    def _id_columns(self) -> list[str]:
        if self.keys:
            return list(self.keys)
        first = self.rows[0] if self.rows else {}
        return [c for c, v in first.items() if isinstance(v, str) and c not in ("metric", "check", "message")]

    def _frame_rows(self) -> Iterable[dict[str, Any]]:
        """One record per row: the row's identifiers, its main metric (``measure``), the value,
        its CI, the untrusted number of an unstable row, and the printed value where there is one.
        A row without the uniform columns gives one record per numeric column."""
        keys = self._id_columns()
        for k, r in enumerate(self.rows):
            ids = {"row": k + 1, **{c: r.get(c) for c in keys}}
            if "metric" in r:
                rec = {**ids, "measure": r["metric"], "value": _num(r.get("value")),
                       "ci_low": _num(r.get("ci_low")), "ci_high": _num(r.get("ci_high")),
                       "value_untrusted": _num(r.get("value_untrusted")), "stable": r.get("stable")}
                if "printed" in r:
                    rec["printed"] = _num(r.get("printed"))
                    rec["rel_error"] = _num(r.get("rel_error"))
                yield rec
                continue
            for c, v in r.items():
                if c not in keys and isinstance(v, (int, float)) and not isinstance(v, bool):
                    yield {**ids, "measure": c, "value": _num(v)}

    def _headline(self) -> str:
        return f"{self.id}: {len(self.rows)} rows"

    def write(self, outdir: Path | str) -> list[Path]:
        """Write this result into ``outdir`` (:func:`hetsched.resultsio.write_results`)."""
        from ..resultsio import write_results

        return write_results(outdir, self.as_dict(), table=self.table)


def _num(x: Any) -> float:
    if x is None or isinstance(x, bool):
        return float("nan")
    try:
        return float(x)
    except (TypeError, ValueError):
        return float("nan")
