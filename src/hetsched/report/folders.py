"""Results folders of single runs (``compare --outdir``, ``simulate --outdir``) that the report reads.

A run's folder holds the same files as an experiment's (``hetsched
reproduce``): ``results.csv``/``results.parquet`` (the result's tidy
long-format frame), ``results.json`` (with provenance and units; the result's
``as_dict()`` under ``meta[KIND]`` and ``meta["kind"] = KIND``), ``table.txt``
(the text the command printed) and the PNG figures, written by the
experiments' writer (:func:`hetsched.experiments.write_results`): never into a
folder that already holds results without ``force``, never through a
symbolic link.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["start_run", "save_run", "KINDS"]

#: the kinds of run folder the report knows, besides the papers' experiments
KINDS = ("compare", "simulate")


def start_run(outdir: Path | str, *, force: bool = False, **fields: Any):
    """Before a run: check ``outdir`` (refused in one line when it holds results and not ``force``, when a
    symbolic link is on its way, when it cannot be written; emptied with ``force``) and start the run's
    provenance record (``fields``: ``seed``, ``reps``, ``horizon``, other parameters)."""
    from .. import experiments, provenance

    experiments.prepare_outdir(Path(outdir), force=force)
    return provenance.start(**fields)


def save_run(result, outdir: Path | str, *, kind: str, rid: str, table: str, figures: dict[str, Any] | None = None,
             notes: list[str] | None = None, force: bool = False, provenance: Any = None, system: Any = None
             ) -> list[Path]:
    """Write ``result`` (a :class:`hetsched.results.Result`) and its figures into ``outdir``; the paths.

    ``figures`` maps file names (``*.png``) to matplotlib Figures (closed once saved).
    ``provenance`` is a started :class:`hetsched.provenance.Provenance` (finished here). ``system``: the
    :class:`~hetsched.system.System` whose class and machine names go with the result (where it has them).
    """
    import math

    from .. import experiments
    from ..errors import HetschedError
    from ..results import jsonable

    if kind not in KINDS:  # a programming error
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    out = experiments.prepare_outdir(Path(outdir), force=force)
    written: list[Path] = []
    figs = []
    import matplotlib.pyplot as plt

    for name, fig in (figures or {}).items():
        p = out / name
        if Path(name).name != name or p.suffix != ".png":  # a programming error
            raise ValueError(f"figure names are plain *.png file names, got {name!r}")
        if p.is_symlink() or p.exists():
            raise HetschedError(f"{str(p)!r} exists; refusing to replace it")
        fig.savefig(p, dpi=110)
        plt.close(fig)
        figs.append(p)
    import pandas as pd

    rows = []
    for r in result.to_frame().to_dict("records"):
        rows.append({k: (None if v is pd.NA or (isinstance(v, float) and math.isnan(v)) else v)
                     for k, v in r.items()})
    body = jsonable(result.as_dict())
    if system is not None:
        if getattr(system, "class_names", None) and not body.get("class_names"):
            body["class_names"] = list(system.class_names)
        if hasattr(system, "machine_labels") and not body.get("machine_names"):
            body["machine_names"] = list(getattr(system, "machine_names", None) or system.machine_labels())
    res = experiments.ExperimentResult(id=rid, rows=rows, table=table, figures=figs, notes=list(notes or []),
                                       meta={"kind": kind, kind: body})
    if provenance is not None:
        res.provenance = provenance.finish("complete").as_dict()
    written += experiments.write_results(res, out)
    return written + figs
