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
* every random number depends only on ``opts.seed``.
"""

from __future__ import annotations

import importlib
import json
import math
import pkgutil
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
]


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


@dataclass
class ExperimentResult:
    id: str
    rows: list[dict[str, Any]]
    table: str
    figures: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "rows": [_jsonable(r) for r in self.rows],
            "notes": list(self.notes),
            "figures": [str(p) for p in self.figures],
            "meta": _jsonable(self.meta),
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


@dataclass(frozen=True)
class Experiment:
    id: str
    title: str
    source: str
    run: Callable[[RunOptions], ExperimentResult]
    params: tuple[Param, ...] = ()

    def __post_init__(self) -> None:
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


def write_results(result: ExperimentResult, outdir: Path) -> list[Path]:
    """Write rows as CSV and Parquet, the whole result as JSON, the table as text."""
    import pandas as pd

    outdir.mkdir(parents=True, exist_ok=True)
    written = []
    df = pd.DataFrame([_jsonable(r) for r in result.rows])
    p = outdir / "results.csv"
    df.to_csv(p, index=False)
    written.append(p)
    try:
        p = outdir / "results.parquet"
        df.to_parquet(p, index=False)
        written.append(p)
    except (ImportError, ValueError, TypeError):  # mixed-type columns: CSV/JSON still hold them
        pass
    p = outdir / "results.json"
    p.write_text(json.dumps(result.to_json(), indent=2))
    written.append(p)
    p = outdir / "table.txt"
    p.write_text(result.table + "\n")
    written.append(p)
    return written
