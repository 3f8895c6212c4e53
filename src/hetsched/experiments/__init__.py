"""The papers' experiments as named, runnable definitions.

Each submodule of this package registers one or more :class:`Experiment` with
:func:`register`; the registry is filled by importing every submodule, so a new
experiment module needs no edit here. ``hetsched reproduce ID`` runs one.

Contract for an experiment's ``run(opts)``:

* ``opts`` is a :class:`RunOptions` (quick mode, seed, workers, output folder,
  and ``extra``: the ``--set KEY=VALUE`` parameters, already checked against the
  experiment's declared :class:`Param` s by :func:`parse_sets` -- an unknown key
  or a bad value is refused before the run, and a given value is applied in
  ``--quick`` mode too);
* it returns an :class:`ExperimentResult` whose ``rows`` use the paper's column
  names, whose ``table`` is the text printed in the paper's layout, and whose
  ``figures`` lists the plot files it wrote under ``opts.outdir``;
* every random number depends only on ``opts.seed``;
* as each cell (a row, or a group of rows) finishes it calls
  ``opts.tracker.done(rows)`` after announcing ``opts.tracker.total(n)``: the
  command then shows one progress bar with an ETA over the whole experiment,
  and an interrupted run (Ctrl-C) still writes the finished rows, marked
  ``interrupted``.

Results files (:func:`write_results`) carry a provenance record
(:mod:`hetsched.provenance`) and the unit of every column (:data:`UNITS`, or
the experiment's own ``ExperimentResult.units``). Output folders are never
overwritten silently and never reached through a symbolic link
(:func:`prepare_outdir`).
"""

from __future__ import annotations

import importlib
import json
import math
import os
import pkgutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..errors import HetschedError

__all__ = [
    "Param",
    "parse_sets",
    "sizes",
    "REPS",
    "HORIZON",
    "Experiment",
    "ExperimentResult",
    "RunOptions",
    "register",
    "registry",
    "get",
    "write_results",
    "prepare_outdir",
    "Tracker",
    "UNITS",
    "batch",
    "run_experiment",
    "check_backend",
]

#: Unit of each column name used by the shipped experiments (an experiment may
#: override or extend it with ``ExperimentResult.units``). Fractions are in
#: [0, 1]; ``percent`` columns are already multiplied by 100.
UNITS: dict[str, str] = {
    "Qbar": "tasks (time-average number in system)",
    "Q": "tasks (time-average number in system)",
    "W": "time units (mean completion time)",
    "mean": "model metric (see 'metric')",
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
    "I": "fraction (inaccuracy of the rate estimates)",
    "cost": "cost per time unit (discounted model)",
    "ST": "time units (mean response)", "SRT": "time units (mean service-response)",
    "UoS": "fraction (utilisation of servers)", "GoS": "fraction (grade of service: loss)",
}


@dataclass(frozen=True)
class RunOptions:
    quick: bool = False
    seed: int = 2009
    workers: int | None = None
    backend: str = "local"
    scheduler: str | None = None
    outdir: Path = Path("results")
    progress: bool = True
    extra: dict[str, Any] = field(default_factory=dict)
    tracker: "Tracker | None" = None

    def __post_init__(self) -> None:
        if self.tracker is None:
            object.__setattr__(self, "tracker", Tracker(enabled=False))


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
    """``exp.run(opts)`` with the backend options checked and honoured (``hetsched reproduce``).

    * ``--scheduler`` without ``--backend dask``: refused (it would be ignored).
    * ``--backend dask`` on an experiment with nothing to distribute (``dask="none"``): refused.
    * ``--backend dask --scheduler ADDR``: the address must accept connections now (checked
      before any work, so an unreachable scheduler fails at once, in one line).
    * ``--backend dask`` without ``--scheduler``: a Dask ``LocalCluster`` of ``--workers``
      single-threaded worker processes (default: the cores available) is started for the run
      and closed after it; an experiment that drives the cluster itself (``dask="own"``)
      decides on its own.
    """
    from dataclasses import replace

    from ..runner import default_workers

    check_backend(exp, opts.backend, opts.scheduler)
    if opts.backend != "dask" or opts.scheduler:
        return exp.run(opts)
    if exp.dask == "own":
        return exp.run(opts)
    try:
        from distributed import LocalCluster
    except ImportError:  # pragma: no cover - optional extra
        raise HetschedError("--backend dask needs the 'distributed' package: pip install 'hetsched[dask]'") from None
    from ..dispatch.emulate import quiet_dask

    quiet_dask()
    n = opts.workers or default_workers()
    with LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None,
                      host="127.0.0.1") as cluster:
        return exp.run(replace(opts, scheduler=cluster.scheduler_address))


def batch(opts: RunOptions, label: str = ""):
    """A :class:`hetsched.runner.Batch` on the experiment's workers/backend/scheduler, feeding its tracker:
    plan every cell (``batch.add(model.plan(...))``), then ``batch.run()`` submits every cell x
    replication at once."""
    from ..runner import Batch

    return Batch(workers=opts.workers, backend=opts.backend, scheduler=opts.scheduler, progress=False,
                 tracker=opts.tracker, label=label)


class Tracker:
    """Progress over a whole experiment, and the rows finished so far.

    ``total(n)`` announces the number of cells; ``done(rows)`` records the rows
    of one finished cell. On a terminal (stderr) one rich bar with an ETA runs
    over all cells; otherwise one plain log line per cell. ``rows`` keeps what
    finished, so an interrupted run can still write it.
    """

    def __init__(self, enabled: bool = True, label: str = "") -> None:
        self.enabled = enabled
        self.label = label
        self.rows: list[dict[str, Any]] = []
        self.n_total: int | None = None
        self.n_done = 0
        self._t0 = time.perf_counter()
        self._bar = None
        self._task = None

    def total(self, n: int) -> None:
        self.n_total = int(n)
        if self.enabled and sys.stderr.isatty() and self._bar is None:
            from rich.console import Console
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                                       TimeRemainingColumn)

            self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                                 console=Console(stderr=True), transient=True)
            self._bar.start()
            self._task = self._bar.add_task(self.label or "cells", total=self.n_total)

    def done(self, rows: dict[str, Any] | list[dict[str, Any]], label: str = "") -> None:
        rows = [rows] if isinstance(rows, dict) else list(rows)
        self.rows.extend(rows)
        self.n_done += 1
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.update(self._task, advance=1)
        else:
            tot = f"/{self.n_total}" if self.n_total else ""
            el = time.perf_counter() - self._t0
            eta = ""
            if self.n_total:
                eta = f", ETA {el / self.n_done * (self.n_total - self.n_done):.0f} s"
            print(f"{self.label}: cell {self.n_done}{tot} done{(' (' + label + ')') if label else ''}"
                  f" after {el:.1f} s{eta}", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


@dataclass
class ExperimentResult:
    id: str
    rows: list[dict[str, Any]]
    table: str
    figures: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)
    status: str = "complete"
    provenance: dict[str, Any] | None = None

    def column_units(self) -> dict[str, str]:
        """Unit of every column that has one (the experiment's own, else :data:`UNITS`)."""
        cols: list[str] = []
        for r in self.rows:
            cols += [c for c in r if c not in cols]
        out = {}
        for c in cols:
            u = self.units.get(c) or UNITS.get(c) or UNITS.get(c.split("_")[0] if "_" in c else "")
            if u:
                out[c] = u
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "status": self.status,
            "rows": [_jsonable(r) for r in self.rows],
            "units": self.column_units(),
            "notes": list(self.notes),
            "figures": [str(p) for p in self.figures],
            "meta": _jsonable(self.meta),
            "provenance": _jsonable(self.provenance),
        }


@dataclass(frozen=True)
class Param:
    """One ``--set KEY=VALUE`` parameter an experiment accepts.

    ``kind``: ``int``, ``float``, ``bool``, ``str`` or a list of them
    (``ints``, ``floats``, ``strs``: a JSON list or comma-separated). Numbers
    must be finite and within ``[lo, hi]`` (``lo`` excluded with ``lo_open``);
    strings one of ``choices`` when given; ``check`` may refine a value
    (return it, or raise :class:`HetschedError` with the reason).
    """

    name: str
    kind: str
    help: str = ""
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    choices: tuple[str, ...] | None = None
    check: Callable[[Any], Any] | None = None


_KINDS = ("int", "float", "bool", "str", "ints", "floats", "strs")

REPS = Param("reps", "int", "independent replications", 1, 10_000)
HORIZON = Param("horizon", "float", "simulated time units per replication", 0.0, 1e12, lo_open=True)


#: how an experiment uses ``--backend dask``: its replications go through :mod:`hetsched.runner`
#: (``"runner"``), it drives the cluster itself (``"own"``, e.g. real dispatch), or it has nothing
#: to distribute (``"none"``: refused)
DASK_USES = ("runner", "own", "none")


@dataclass(frozen=True)
class Experiment:
    id: str
    title: str
    source: str
    run: Callable[[RunOptions], ExperimentResult]
    params: tuple[Param, ...] = ()
    dask: str = "runner"

    def __post_init__(self) -> None:
        if self.dask not in DASK_USES:  # a programming error in an experiment module
            raise RuntimeError(f"experiment {self.id!r}: dask must be one of {DASK_USES}, got {self.dask!r}")
        for p in self.params:
            if p.kind not in _KINDS:  # a programming error in an experiment module
                raise RuntimeError(f"experiment {self.id!r}: parameter {p.name!r} has unknown kind {p.kind!r}")


def _parse_one(exp_id: str, p: Param, text: str) -> Any:
    name = f"--set {p.name}"
    raw = text.strip()
    try:
        val: Any = json.loads(raw)
    except (json.JSONDecodeError, RecursionError, ValueError):
        val = raw
    if p.kind in ("ints", "floats", "strs"):
        if isinstance(val, str):
            items: list[Any] = [s.strip() for s in val.split(",") if s.strip()]
        elif isinstance(val, list):
            items = val
        else:
            items = [val]
        if not items:
            raise HetschedError(f"{name}: expected a list (JSON or comma-separated), got {text!r}")
        if len(items) > 1000:
            raise HetschedError(f"{name}: at most 1000 values, got {len(items):,}")
        return [_scalar(p, p.kind[:-1], f"{name}[{k}]", v) for k, v in enumerate(items)]
    if p.kind == "str" and not isinstance(val, str):
        val = raw  # text as given (e.g. a path that happens to parse as a number)
    return _scalar(p, p.kind, name, val)


def _scalar(p: Param, kind: str, name: str, val: Any) -> Any:
    from .._cliutil import check_choice, check_float, check_int

    if kind == "int":
        v = check_int(val, name, None if p.lo is None else int(p.lo), None if p.hi is None else int(p.hi))
    elif kind == "float":
        if isinstance(val, bool) or isinstance(val, (list, dict)):
            raise HetschedError(f"{name}: expected a number, got {val!r}")
        v = check_float(val, name, p.lo, p.hi, lo_open=p.lo_open)
    elif kind == "bool":
        s = str(val).strip().lower()
        if isinstance(val, bool):
            v = val
        elif s in ("true", "1", "yes", "on"):
            v = True
        elif s in ("false", "0", "no", "off"):
            v = False
        else:
            raise HetschedError(f"{name}: expected true or false, got {val!r}")
    else:
        if not isinstance(val, (str, int, float)) or isinstance(val, bool):
            raise HetschedError(f"{name}: expected a text value, got {val!r}")
        v = str(val)
        if len(v) > 4096:
            raise HetschedError(f"{name}: at most 4096 characters, got {len(v):,}")
        if p.choices is not None:
            v = check_choice(v, name, p.choices)
    if p.check is not None:
        try:
            v = p.check(v)
        except HetschedError as exc:
            raise HetschedError(f"{name}: {exc}") from None
    return v


def parse_sets(exp: Experiment, items: list[str]) -> dict[str, Any]:
    """``["reps=10", "ks=[2,3]"]`` -> ``{"reps": 10, "ks": [2, 3]}``, checked against ``exp.params``.

    Values are read as JSON where they parse, else as text; an unknown key is
    refused with the list of valid keys; a bad value with the key, the expected
    type or range, and the value.
    """
    known = {p.name: p for p in exp.params}
    valid = ", ".join(known) or "none"
    extra: dict[str, Any] = {}
    for item in items:
        key, eq, val = str(item).partition("=")
        key = key.strip()
        if not eq or not key:
            raise HetschedError(f"--set: expected KEY=VALUE, got {item!r} (valid keys for {exp.id}: {valid})")
        if key not in known:
            raise HetschedError(f"--set: unknown key {key[:100]!r} for {exp.id}; valid keys: {valid}")
        extra[key] = _parse_one(exp.id, known[key], val)
    return extra


def sizes(opts: RunOptions, reps: int, horizon: float, qreps: int, qhorizon: float,
          event_rate: float | None = None) -> tuple[int, float]:
    """``(reps, horizon)`` of a run: ``--set`` values win (also under ``--quick``), then the
    quick or full defaults. With ``event_rate`` (events per time unit of one replication,
    summed over everything the experiment simulates) the run is refused up front when its
    estimated events exceed :data:`hetsched._cliutil.MAX_EVENTS`.
    """
    from .._cliutil import check_event_budget

    r = int(opts.extra.get("reps", qreps if opts.quick else reps))
    h = float(opts.extra.get("horizon", qhorizon if opts.quick else horizon))
    if event_rate is not None and ("reps" in opts.extra or "horizon" in opts.extra):
        check_event_budget(event_rate * h * r, f"--set reps={r} horizon={h:g}")
    return r, h


_REGISTRY: dict[str, Experiment] = {}
_LOADED = False


def register(exp: Experiment) -> Experiment:
    if exp.id in _REGISTRY and _REGISTRY[exp.id] is not exp:
        raise RuntimeError(f"experiment id {exp.id!r} registered twice")
    _REGISTRY[exp.id] = exp
    return exp


def _load_all() -> None:
    global _LOADED
    if _LOADED:
        return
    for mod in pkgutil.iter_modules(__path__):
        if not mod.name.startswith("_"):
            importlib.import_module(f"{__name__}.{mod.name}")
    _LOADED = True


def registry() -> dict[str, Experiment]:
    _load_all()
    return dict(sorted(_REGISTRY.items()))


def get(exp_id: str) -> Experiment:
    reg = registry()
    if exp_id not in reg:
        known = ", ".join(reg) or "(none)"
        shown = exp_id if len(exp_id) <= 80 else exp_id[:40] + "..."
        raise HetschedError(f"unknown experiment id {shown!r}; known ids: {known}")
    return reg[exp_id]


def _jsonable(x: Any) -> Any:
    """Plain JSON types: numpy scalars/arrays become Python, NaN/inf become null."""
    import numpy as np

    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return _jsonable(x.tolist())
    if isinstance(x, (np.bool_,)):
        return bool(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, (float, np.floating)):
        v = float(x)
        return v if math.isfinite(v) else None
    if isinstance(x, Path):
        return str(x)
    return x


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
        return True
    except ValueError:
        return False


def prepare_outdir(outdir: Path, *, force: bool = False) -> Path:
    """Check, before any computation, that results can be written to ``outdir``.

    Refuses (:class:`~hetsched.errors.HetschedError`, one line naming the
    path): an ``outdir`` that already holds results, unless ``force``; a
    symbolic link anywhere on the way from the results root to ``outdir``
    (never follow a link out of the results folder); a folder that cannot be
    created or written. With ``force`` the previous results files are removed
    before the run (only the files hetsched writes, never anything else).
    """
    outdir = Path(outdir)
    for p in [outdir, *outdir.parents]:
        if p.is_symlink():
            raise HetschedError(f"output folder {str(outdir)!r}: {str(p)!r} is a symbolic link; "
                                f"refusing to follow it (choose another --outdir)")
        if str(p) in (".", "", os.sep):
            break
    if outdir.exists() and not outdir.is_dir():
        raise HetschedError(f"output folder {str(outdir)!r} exists and is not a folder")
    existing = [p for p in outdir.iterdir()] if outdir.is_dir() else []
    if existing and not force:
        raise HetschedError(f"output folder {str(outdir)!r} already holds results ({len(existing)} files); "
                            f"pass --force to replace them or --outdir to write elsewhere")
    try:
        outdir.mkdir(parents=True, exist_ok=True)
        probe = outdir / ".hetsched-write-probe"
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
        os.close(fd)
        probe.unlink()
    except OSError as exc:
        raise HetschedError(f"output folder {str(outdir)!r} is not writable: {exc.strerror or exc}") from None
    for p in existing:
        if p.is_symlink() or p.is_file():
            p.unlink()
        elif p.is_dir():
            import shutil

            shutil.rmtree(p)
    return outdir


def _open_new(path: Path, mode: str = "w"):
    """Open ``path`` for writing without following a symbolic link."""
    if path.is_symlink():
        raise HetschedError(f"{str(path)!r} is a symbolic link; refusing to write through it")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    return os.fdopen(os.open(path, flags, 0o644), mode)


def write_results(result: ExperimentResult, outdir: Path) -> list[Path]:
    """Write rows as CSV and Parquet, the whole result as JSON, the table as text.

    JSON and the Parquet schema metadata (key ``hetsched``) carry the status,
    the column units and the provenance record.
    """
    import pandas as pd

    outdir.mkdir(parents=True, exist_ok=True)
    written = []
    df = pd.DataFrame([_jsonable(r) for r in result.rows])
    doc = result.to_json()
    p = outdir / "results.csv"
    with _open_new(p) as f:
        df.to_csv(f, index=False)
    written.append(p)
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq_df = df.copy()
    for c in pq_df.columns:  # a column mixing numbers and text (e.g. "unstable") is stored as text
        kinds = {type(v) for v in pq_df[c] if v is not None and not (isinstance(v, float) and math.isnan(v))}
        if len(kinds - {int, float, bool}) and len(kinds) > 1 or any(k in (list, dict, tuple) for k in kinds):
            pq_df[c] = [None if v is None else (json.dumps(v) if isinstance(v, (list, dict, tuple)) else str(v))
                        for v in pq_df[c]]
    try:
        table = pa.Table.from_pandas(pq_df, preserve_index=False)
        meta = dict(table.schema.metadata or {})
        meta[b"hetsched"] = json.dumps({k: doc[k] for k in ("id", "status", "units", "provenance")}).encode()
        table = table.replace_schema_metadata(meta)
        p = outdir / "results.parquet"
        with _open_new(p, "wb") as f:
            pq.write_table(table, f)
        written.append(p)
    except (ValueError, TypeError, pa.ArrowException) as exc:
        raise HetschedError(f"{result.id}: rows cannot be stored as Parquet ({exc})") from None
    p = outdir / "results.json"
    with _open_new(p) as f:
        f.write(json.dumps(doc, indent=2))
    written.append(p)
    p = outdir / "table.txt"
    with _open_new(p) as f:
        f.write(result.table + "\n")
    written.append(p)
    return written
