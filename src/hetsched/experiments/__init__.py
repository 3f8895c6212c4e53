"""The papers' experiments as named, runnable definitions.

Each submodule of this package registers one or more :class:`Experiment` with
:func:`register`; the registry is filled by importing every submodule, so a new
experiment module needs no edit here. ``hetsched reproduce ID`` runs one.

Contract for an experiment's ``run(opts)``:

* ``opts`` is a :class:`RunOptions` (quick mode, seed, workers, output folder);
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
class Experiment:
    id: str
    title: str
    source: str
    run: Callable[[RunOptions], ExperimentResult]


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
        raise HetschedError(f"unknown experiment id {exp_id!r}; known ids: {known}")
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
