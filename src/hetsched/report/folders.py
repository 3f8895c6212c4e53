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

__all__ = ["save_run", "KINDS"]

#: the kinds of run folder the report knows, besides the papers' experiments
KINDS = ("compare", "simulate")


def save_run(result, outdir: Path | str, *, kind: str, rid: str, table: str, figures: dict[str, Any] | None = None,
             notes: list[str] | None = None, force: bool = False, provenance: Any = None) -> list[Path]:
    """Write ``result`` (a :class:`hetsched.results.Result`) and its figures into ``outdir``; the paths.

    ``figures`` maps file names (``*.png``) to matplotlib Figures (closed once saved).
    ``provenance`` is a started :class:`hetsched.provenance.Provenance` (finished here).
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
    res = experiments.ExperimentResult(id=rid, rows=rows, table=table, figures=figs, notes=list(notes or []),
                                       meta={"kind": kind, kind: jsonable(result.as_dict())})
    if provenance is not None:
        res.provenance = provenance.finish("complete").as_dict()
    written += experiments.write_results(res, out)
    return written + figs
