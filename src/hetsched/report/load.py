"""Reading results folders for the report, defensively.

A *results folder* is one run's folder (it holds ``results.json``: written by
``hetsched reproduce``, ``hetsched compare --outdir`` or ``hetsched simulate
--outdir``) or a folder of such folders (``results/`` of ``reproduce``).
:func:`scan` reads every one it finds and returns the good ones as
:class:`RunRecord` and every bad file as one :class:`Skipped` line: nothing in
a results folder can make the report fail.

What is read, and only from inside the run's folder:

* ``results.json`` -- a regular file (not a link), at most :data:`MAX_JSON`
  bytes, UTF-8 JSON of the shape :func:`check_doc` accepts (anything else:
  skipped with the reason);
* ``table.txt`` -- a regular file inside the folder, not a symbolic link, at
  most :data:`MAX_TABLE` bytes (else left out, with a note);
* the figures the JSON lists -- by file name only, regular files inside the
  folder, not links, PNG (checked by its signature), JPEG or SVG, at most
  :data:`MAX_FIGURE` bytes each.
"""

from __future__ import annotations

import json
import math
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["RunRecord", "Skipped", "scan", "check_doc", "MAX_JSON", "MAX_TABLE", "MAX_FIGURE", "FIGURE_TYPES"]

MAX_JSON = 64 * 2**20
MAX_TABLE = 2 * 2**20
MAX_FIGURE = 16 * 2**20
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
        k = self.meta.get("kind")
        return k if k in ("compare", "simulate") and isinstance(self.meta.get(k), dict) else "experiment"

    @property
    def meta(self) -> dict[str, Any]:
        return self.doc.get("meta") or {}

    @property
    def rows(self) -> list[dict[str, Any]]:
        return list(self.doc.get("rows") or [])

    @property
    def provenance(self) -> dict[str, Any]:
        return dict(self.doc.get("provenance") or {})


@dataclass(frozen=True)
class Skipped:
    path: Path
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


def _regular(path: Path) -> os.stat_result | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st if stat.S_ISREG(st.st_mode) else None


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
        return True
    except (ValueError, OSError, RuntimeError):
        return False


def _str_list(x: Any) -> bool:
    return isinstance(x, list) and all(isinstance(v, str) for v in x)


def check_doc(doc: Any) -> str | None:
    """``None`` when ``doc`` has the shape of a results file, else the reason (one line)."""
    if not isinstance(doc, dict):
        return f"not a JSON object but {type(doc).__name__}"
    rows = doc.get("rows")
    if not isinstance(rows, list):
        return "no 'rows' list" if rows is None else f"'rows' is a {type(rows).__name__}, not a list"
    for k, r in enumerate(rows):
        if not isinstance(r, dict):
            return f"rows[{k}] is a {type(r).__name__}, not an object"
    if "id" in doc and not isinstance(doc["id"], (str, int, float)) or isinstance(doc.get("id"), bool):
        return f"'id' is a {type(doc['id']).__name__}, not a string"
    for key, ok, want in (("status", lambda v: isinstance(v, str), "a string"),
                          ("figures", _str_list, "a list of file names"),
                          ("notes", _str_list, "a list of strings"),
                          ("units", lambda v: isinstance(v, dict) and all(isinstance(u, str) for u in v.values()),
                           "an object of strings"),
                          ("provenance", lambda v: isinstance(v, dict), "an object"),
                          ("meta", lambda v: isinstance(v, dict), "an object")):
        if doc.get(key) is not None and not ok(doc[key]):
            return f"'{key}' is not {want}"
    meta = doc.get("meta") or {}
    kind = meta.get("kind")
    if kind in ("compare", "simulate"):
        body = meta.get(kind)
        if not isinstance(body, dict):
            return f"meta.{kind} is not an object"
        if kind == "compare":
            return _check_compare(body)
    return None


def _check_compare(c: dict) -> str | None:
    pols, diffs = c.get("policies"), c.get("differences")
    if not isinstance(pols, list) or not all(isinstance(p, dict) and isinstance(p.get("policy"), str) for p in pols):
        return "meta.compare.policies is not a list of policies"
    if not isinstance(diffs, list) or not all(isinstance(d, dict) for d in diffs):
        return "meta.compare.differences is not a list of objects"
    for p in pols:
        for key in ("per_class",):
            if p.get(key) is not None and not (isinstance(p[key], list) and all(isinstance(e, dict) for e in p[key])):
                return f"policy {p['policy'][:40]!r}: '{key}' is not a list of objects"
        if p.get("share") is not None and not (isinstance(p["share"], list) and all(
                isinstance(r, list) and all(_num_or_none(v) for v in r) for r in p["share"])):
            return f"policy {p['policy'][:40]!r}: 'share' is not a matrix of numbers"
        if p.get("ci") is not None and not (isinstance(p["ci"], list) and len(p["ci"]) == 2):
            return f"policy {p['policy'][:40]!r}: 'ci' is not a pair"
    for key in ("class_names", "machine_names", "metrics"):
        if c.get(key) is not None and not _str_list(c[key]):
            return f"meta.compare.{key} is not a list of strings"
    return None


def _num_or_none(v: Any) -> bool:
    return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))


def _read_json(f: Path) -> tuple[dict | None, str | None]:
    st = _regular(f)
    if st is None:
        return None, "results.json is not a regular file (a link, a folder or a device?)"
    if st.st_size > MAX_JSON:
        return None, f"results.json is {st.st_size:,} bytes, over the limit of {MAX_JSON:,}"
    try:
        fd = os.open(f, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as fh:
            data = fh.read(MAX_JSON + 1)
    except OSError as exc:
        return None, f"cannot be read: {exc.strerror or exc}"
    try:
        doc = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        return None, "not UTF-8 text"
    except json.JSONDecodeError as exc:
        return None, f"not JSON (line {exc.lineno}: {exc.msg})"
    except RecursionError:
        return None, "JSON nested too deeply"
    except ValueError as exc:
        return None, f"not JSON ({str(exc)[:100]})"
    reason = check_doc(doc)
    return (None, reason) if reason else (doc, None)


def _table(folder: Path, notes: list[str]) -> str:
    p = folder / "table.txt"
    if not os.path.lexists(p):
        return ""
    st = _regular(p)
    if st is None or not _inside(p, folder):
        notes.append("table.txt left out: not a regular file inside the folder (a symbolic link?)")
        return ""
    if st.st_size > MAX_TABLE:
        notes.append(f"table.txt left out: {st.st_size:,} bytes, over the limit of {MAX_TABLE:,}")
        return ""
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as fh:
            return fh.read(MAX_TABLE).decode("utf-8", "replace")
    except OSError as exc:
        notes.append(f"table.txt left out: {exc.strerror or exc}")
        return ""


def _figures(folder: Path, names: list[str], notes: list[str]) -> list[Path]:
    out = []
    for name in names:
        base = Path(name).name
        p = folder / base
        if not base or base in (".", ".."):
            continue
        if p.suffix.lower() not in FIGURE_TYPES:
            notes.append(f"figure {base[:80]!r} left out: not a PNG, JPEG or SVG file name")
            continue
        st = _regular(p)
        if st is None or not _inside(p, folder):
            notes.append(f"figure {base[:80]!r} left out: not a regular file inside the folder")
            continue
        if st.st_size > MAX_FIGURE:
            notes.append(f"figure {base[:80]!r} left out: {st.st_size:,} bytes, over {MAX_FIGURE:,}")
            continue
        if p.suffix.lower() == ".png":
            try:
                with open(p, "rb") as fh:
                    head = fh.read(8)
            except OSError:
                head = b""
            if head != _PNG:
                notes.append(f"figure {base[:80]!r} left out: not a PNG image")
                continue
        if p not in out:
            out.append(p)
    return out


def _record(folder: Path) -> tuple[RunRecord | None, Skipped | None]:
    f = folder / "results.json"
    doc, reason = _read_json(f)
    if doc is None:
        return None, Skipped(f, reason or "unreadable")
    notes: list[str] = []
    rows = doc["rows"]
    if len(rows) > MAX_ROWS:
        notes.append(f"{len(rows):,} rows: the first {MAX_ROWS:,} are shown")
        doc = {**doc, "rows": rows[:MAX_ROWS]}
    rid = doc.get("id")
    rid = folder.name if rid is None or rid == "" else str(rid)
    if isinstance(doc.get("id"), float) and not math.isfinite(doc["id"]):
        rid = folder.name
    figs = _figures(folder, doc.get("figures") or [], notes)
    return RunRecord(rid[:200], folder, doc, _table(folder, notes), figs, notes), None


def scan(dirs) -> tuple[list[RunRecord], list[Skipped]]:
    """Every results folder in ``dirs`` (each a run's folder or a folder of them); bad files as :class:`Skipped`."""
    recs: list[RunRecord] = []
    skipped: list[Skipped] = []
    seen: set[str] = set()
    for d in dirs:
        d = Path(d)
        if os.path.lexists(d / "results.json"):
            candidates = [d]
        else:
            try:
                candidates = sorted(p for p in d.iterdir() if p.is_dir() and not p.is_symlink())
            except OSError as exc:
                skipped.append(Skipped(d, f"cannot be listed: {exc.strerror or exc}"))
                continue
            for p in sorted(d.iterdir()):
                if p.is_symlink() and p.is_dir():
                    skipped.append(Skipped(p, "a symbolic link to a folder (not followed)"))
        for folder in candidates:
            if not os.path.lexists(folder / "results.json"):
                continue
            key = str(folder.resolve())
            if key in seen:
                continue
            seen.add(key)
            rec, bad = _record(folder)
            if rec is not None:
                recs.append(rec)
            else:
                skipped.append(bad)
    return recs, skipped
