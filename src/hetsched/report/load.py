"""Reading results folders for the report, defensively.

A *results folder* is one run's folder (it holds ``results.json``: written by
``hetsched reproduce``, ``hetsched compare --outdir`` or ``hetsched simulate
--outdir`` through :mod:`hetsched.resultsio`) or a folder of such folders
(``results/`` of ``reproduce``). :func:`scan` reads each with the project's
one reader (:func:`hetsched.resultsio.read_results_dir`: regular files inside
the folder only, size limits, ``results.json`` checked field by field), then
checks what the report itself reads (:func:`check_doc`: the body of a
comparison or a simulation; PNG figures by their signature), and returns the
good ones as :class:`RunRecord` and every bad folder as one :class:`Skipped`
line: nothing in a results folder can make the report fail.

What a folder holds but the report leaves out (a ``table.txt`` that is a
symbolic link or not a regular file, a figure outside the folder or not an
image) is named in the record's ``notes``.
"""

from __future__ import annotations

import math
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["RunRecord", "Skipped", "scan", "check_doc", "FIGURE_TYPES", "MAX_ROWS"]

MAX_ROWS = 5_000
FIGURE_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".svg": "image/svg+xml"}
_PNG = b"\x89PNG\r\n\x1a\n"


@dataclass
class RunRecord:
    """What the report knows of one results folder."""

    id: str
    folder: Path
    doc: dict[str, Any]
    table_text: str
    figures: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what was left out, and why

    @property
    def kind(self) -> str:
        """``experiment``, ``compare`` or ``simulate``."""
        k = self.doc.get("kind")
        return k if k in ("compare", "simulate") else "experiment"

    @property
    def rows(self) -> list[dict[str, Any]]:
        return list(self.doc.get("rows") or [])

    @property
    def provenance(self) -> dict[str, Any]:
        return dict(self.doc.get("provenance") or {})


@dataclass(frozen=True)
class Skipped:
    """A results folder left out of the report: the reader's one line (path and reason)."""

    line: str

    def __str__(self) -> str:
        return self.line


def _str_list(x: Any) -> bool:
    return isinstance(x, list) and all(isinstance(v, str) for v in x)


def _num_or_none(v: Any) -> bool:
    return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))


def check_doc(doc: dict) -> str | None:
    """What the report reads beyond :mod:`hetsched.resultsio`'s checks: ``None`` when fine, else the reason."""
    kind = doc.get("kind")
    if kind == "compare":
        return _check_compare(doc)
    if kind == "simulate":
        pcs = doc.get("per_class")
        if pcs is not None and not (isinstance(pcs, list) and all(isinstance(e, dict) for e in pcs)):
            return "'per_class' is not a list of objects"
        for key in ("class_names", "machine_names"):
            if doc.get(key) is not None and not _str_list(doc[key]):
                return f"{key!r} is not a list of strings"
    return None


def _check_compare(c: dict) -> str | None:
    pols, diffs = c.get("policies"), c.get("differences")
    if not isinstance(pols, list) or not all(isinstance(p, dict) and isinstance(p.get("policy"), str) for p in pols):
        return "'policies' is not a list of policies"
    if not isinstance(diffs, list) or not all(isinstance(d, dict) for d in diffs):
        return "'differences' is not a list of objects"
    for p in pols:
        who = f"policy {p['policy'][:40]!r}"
        pcs = p.get("per_class")
        if pcs is not None and not (isinstance(pcs, list) and all(isinstance(e, dict) for e in pcs)):
            return f"{who}: 'per_class' is not a list of objects"
        if p.get("share") is not None and not (isinstance(p["share"], list) and all(
                isinstance(r, list) and all(_num_or_none(v) for v in r) for r in p["share"])):
            return f"{who}: 'share' is not a matrix of numbers"
        if p.get("ci") is not None and not (isinstance(p["ci"], list) and len(p["ci"]) == 2):
            return f"{who}: 'ci' is not a pair"
    for key in ("class_names", "machine_names", "metrics"):
        if c.get(key) is not None and not _str_list(c[key]):
            return f"{key!r} is not a list of strings"
    if c.get("ranking") is not None and not (isinstance(c["ranking"], list)
                                             and all(isinstance(g, dict) for g in c["ranking"])):
        return "'ranking' is not a list of objects"
    return None


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _left_out(folder, notes: list[str]) -> list[Path]:
    """Notes on the table and figures the reader did not take; the figures kept (PNG by signature)."""
    from ..safeio import inside

    t = folder.folder / "table.txt"
    if os.path.lexists(t) and not folder.table_text and not (_regular(t) and inside(t, folder.folder)):
        notes.append("table.txt left out: not a regular file inside the folder (a symbolic link?)")
    kept = {p.name for p in folder.figures}
    figs = []
    for name in folder.doc.get("figures") or []:
        base = Path(name).name
        if not base or base in (".", ".."):
            continue
        if base not in kept:
            why = ("not a PNG, JPEG or SVG file name" if Path(base).suffix.lower() not in FIGURE_TYPES
                   else "not a regular file inside the folder")
            notes.append(f"figure {base[:80]!r} left out: {why}")
            continue
        p = folder.folder / base
        if p.suffix.lower() == ".png":
            try:
                with open(p, "rb") as fh:
                    head = fh.read(8)
            except OSError:
                head = b""
            if head != _PNG:
                notes.append(f"figure {base[:80]!r} left out: not a PNG image")
                continue
        if p not in figs:
            figs.append(p)
    return figs


def scan(dirs) -> tuple[list[RunRecord], list[Skipped]]:
    """Every results folder in ``dirs`` (each a run's folder or a folder of them); bad ones as :class:`Skipped`."""
    from ..errors import HetschedError
    from ..resultsio import read_results_dir

    recs: list[RunRecord] = []
    skipped: list[Skipped] = []
    seen: set[str] = set()
    for d in dirs:
        d = Path(d)
        try:
            folders, problems = read_results_dir(d)
        except HetschedError as exc:
            skipped.append(Skipped(str(exc)))
            continue
        except OSError as exc:
            skipped.append(Skipped(f"{str(d)!r}: cannot be listed: {exc.strerror or exc}"))
            continue
        skipped += [Skipped(p) for p in problems]
        try:
            links = sorted(p for p in d.iterdir() if p.is_symlink() and p.is_dir())
        except OSError:
            links = []
        skipped += [Skipped(f"{str(p)!r}: a symbolic link to a folder (not followed)") for p in links]
        for f in folders:
            key = str(f.folder.resolve())
            if key in seen:
                continue
            seen.add(key)
            reason = check_doc(f.doc)
            if reason:
                skipped.append(Skipped(f"{str(f.folder / 'results.json')!r}: {reason}"))
                continue
            notes: list[str] = []
            doc = f.doc
            if len(f.rows) > MAX_ROWS:
                notes.append(f"{len(f.rows):,} rows: the first {MAX_ROWS:,} are shown")
                doc = {**doc, "rows": f.rows[:MAX_ROWS]}
            figs = _left_out(f, notes)
            rid = f.id if not (isinstance(doc.get("id"), float) and not math.isfinite(doc["id"])) else f.folder.name
            recs.append(RunRecord(str(rid)[:200], f.folder, doc, f.table_text, figs, notes))
    return recs, skipped
