"""Results files: one writer and one reader for every command that saves results.

A *results folder* (``results/ID/`` of ``hetsched reproduce``, the ``--outdir``
of ``compare`` or ``simulate``) holds:

``results.json``
    The whole result (what ``--json`` prints): at least ``id``, ``kind``
    (``"experiment"``, ``"compare"``, ``"simulate"``...), ``status`` (an
    integer, 0 = success, as in :mod:`hetsched.results`), ``success``,
    ``message``, ``rows`` (a list of flat objects), ``units`` (column -> unit)
    and ``provenance`` (:mod:`hetsched.provenance`).
``results.csv`` / ``results.parquet``
    The rows as a table. The Parquet schema metadata (key ``hetsched``) carries
    ``id``, ``kind``, ``status``, ``units`` and ``provenance``; a column mixing
    numbers and text is stored as text, lists as JSON text.
``table.txt``
    The text the command printed (optional), and any plots (PNG, SVG).

Writing (:func:`write_results`): the folder is checked once before any
computation (:func:`prepare_outdir`: never replaces results without
``force``, never follows a symbolic link out of the results root); each file
goes through :mod:`hetsched.safeio` (a temporary file in the folder renamed
over the target, refusing a target that is a symbolic link or not a regular
file), so a reader never sees half a file and no write escapes the folder.

Reading (:func:`read_results`, :func:`read_results_dir`): every file is read
(:func:`hetsched.safeio.read_input`) only if it is a regular file inside its
folder, not a link, and under a size limit;
``results.json`` is checked field by field; a malformed folder is one line in
``problems`` and is skipped, never an exception. Results written by older
versions (``status`` as text) are read into the current form.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import math
import os
import signal
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from .errors import HetschedError
from .results import jsonable
from .safeio import InputError, atomic_output, inside, read_input, write_bytes, write_text

__all__ = ["RESULTS_FILES", "MAX_JSON_BYTES", "MAX_TEXT_BYTES", "prepare_outdir", "write_results", "MANIFEST", "LOCK",
           "lock_outdir", "unlock_outdir", "manifest", "record_written", "output_in", "save_figure", "hold_interrupts",
           "rows_frame", "ResultsFolder", "read_results", "read_results_dir", "column_units"]

#: the files :func:`write_results` writes (and :func:`prepare_outdir` may replace with ``force``)
RESULTS_FILES = ("results.json", "results.csv", "results.parquet", "table.txt")
MAX_JSON_BYTES = 200_000_000  # results.json of the largest shipped experiment is ~1 MB
MAX_TEXT_BYTES = 5_000_000  # table.txt
MAX_FIGURE_BYTES = 50_000_000

#: statuses of results files written before status was an integer
_OLD_STATUS = {"complete": 0, "interrupted": 2}
INTERRUPTED_STATUS = 2


# --------------------------------------------------------------------------- output folder
MANIFEST = ".hetsched-manifest.json"  #: the files hetsched wrote into a results folder (``--force`` removes only these)
LOCK = ".hetsched.lock"  #: held (with the owner's pid) by the process writing into a results folder
_HELD: set[str] = set()  # folders whose lock this process holds (released at exit)


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by another user
        return True
    except OSError:
        return False
    return True


def lock_outdir(outdir: Path | str) -> Path:
    """Take the lock of a results folder: a file ``.hetsched.lock`` created exclusively, holding this pid.

    A lock held by another live process is refused (one line naming the folder
    and the pid: two runs never write into one folder); a lock left by a dead
    process (killed with SIGKILL, a power cut) is taken over. The lock is
    re-entrant within a process and released when the process exits
    (:func:`unlock_outdir` releases it earlier).
    """
    outdir = Path(outdir)
    lock = outdir / LOCK
    key = str(outdir.resolve())
    if key in _HELD:
        return lock
    for _ in range(3):
        # the lock appears whole: a private file holding the pid is hard-linked to the lock's name (atomic,
        # fails if the name exists), so no other run ever reads an empty lock and takes it for a stale one
        try:
            fd, tmp = tempfile.mkstemp(prefix=".hetsched-lock.", dir=outdir)
            with os.fdopen(fd, "w") as fh:
                fh.write(f"{os.getpid()}\n")
            try:
                os.link(tmp, lock)
                taken = True
            except FileExistsError:
                taken = False
            finally:
                os.unlink(tmp)
        except OSError as exc:
            raise HetschedError(f"output folder {str(outdir)!r} is not writable: {exc.strerror or exc}") from None
        if taken:
            break
        try:
            if lock.is_symlink() or not lock.is_file():
                raise HetschedError(f"output folder {str(outdir)!r}: {LOCK} is not a regular file; remove it")
            text = read_input(lock, max_bytes=100, what="lock file").strip()
            pid = int(text) if isinstance(text, str) and text.isdigit() else -1
        except (InputError, OSError):
            pid = -1
        if pid == os.getpid():
            break
        if _pid_alive(pid):
            raise HetschedError(f"output folder {str(outdir)!r} is being written by another hetsched run "
                                f"(pid {pid}, lock {str(lock)!r}); wait for it or choose another --outdir")
        with contextlib.suppress(FileNotFoundError):
            lock.unlink()  # stale: its owner is dead
    else:
        raise HetschedError(f"output folder {str(outdir)!r}: could not take the lock {str(lock)!r}")
    if not _HELD:
        atexit.register(_release_all)
    _HELD.add(key)
    return lock


def unlock_outdir(outdir: Path | str) -> None:
    """Release the lock this process holds on ``outdir`` (nothing if it holds none)."""
    outdir = Path(outdir)
    key = str(outdir.resolve())
    if key not in _HELD:
        return
    _HELD.discard(key)
    lock = outdir / LOCK
    with contextlib.suppress(OSError, InputError):
        if not lock.is_symlink() and read_input(lock, max_bytes=100).strip() == str(os.getpid()):
            lock.unlink()


def _release_all() -> None:
    for key in list(_HELD):
        unlock_outdir(key)


def manifest(outdir: Path | str) -> list[str]:
    """The names (relative to ``outdir``) of the files hetsched wrote there.

    From ``.hetsched-manifest.json``; a folder written before manifests existed
    is read as its ``results.json`` describes it (the results files and the
    figures it lists); a folder with neither holds nothing of hetsched's.
    """
    outdir = Path(outdir)
    m = outdir / MANIFEST
    if os.path.lexists(m):
        try:
            doc = json.loads(read_input(m, max_bytes=MAX_TEXT_BYTES, what="manifest"))
            names = doc.get("files") if isinstance(doc, dict) else None
            if isinstance(names, list) and all(isinstance(n, str) for n in names):
                return [n for n in names if _safe_name(n)]
        except (InputError, ValueError):
            pass
        raise HetschedError(f"output folder {str(outdir)!r}: {MANIFEST} is damaged; remove the folder's "
                            f"results by hand or choose another --outdir")
    if not os.path.lexists(outdir / "results.json"):
        return []
    names = list(RESULTS_FILES)
    try:
        doc = json.loads(read_input(outdir / "results.json", max_bytes=MAX_JSON_BYTES))
        names += [Path(f).name for f in (doc.get("figures") or []) if isinstance(f, str)]
    except (InputError, ValueError, AttributeError):
        pass
    return [n for n in names if _safe_name(n)]


def _safe_name(name: str) -> bool:
    p = Path(name)
    return bool(name) and not p.is_absolute() and ".." not in p.parts and name not in (MANIFEST, LOCK)


def record_written(outdir: Path | str, paths: Iterable[Path | str]) -> None:
    """Add ``paths`` (inside ``outdir``) to the folder's manifest (written atomically)."""
    outdir = Path(outdir)
    names = manifest(outdir) if os.path.lexists(outdir / MANIFEST) else []
    for p in paths:
        try:
            rel = Path(os.path.abspath(p)).relative_to(os.path.abspath(outdir)).as_posix()
        except ValueError:
            continue
        if _safe_name(rel) and rel not in names:
            names.append(rel)
    write_text(outdir / MANIFEST, json.dumps({"files": names}, indent=1), force=True, what="manifest")


def output_in(outdir: Path | str, name: str | Path) -> tuple[Path, bool]:
    """``(path, force)`` for writing ``name`` into a results folder: replacing is allowed only for a
    file hetsched wrote there (in the manifest); a user's file of that name is refused."""
    outdir = Path(outdir)
    p = outdir / name
    rel = Path(os.path.abspath(p)).relative_to(os.path.abspath(outdir)).as_posix()
    return p, rel in manifest(outdir)


def save_figure(fig: Any, path: Path | str, **kwargs: Any) -> Path:
    """Save a matplotlib figure into a results folder through the safe writer; recorded in the manifest."""
    path = Path(path)
    target, force = output_in(path.parent, path.name)
    with hold_interrupts(), atomic_output(target, force=force, what="figure") as tmp:
        fig.savefig(tmp, **kwargs)
    record_written(path.parent, [target])
    return target


def _status_of(outdir: Path) -> int | None:
    try:
        doc = json.loads(read_input(outdir / "results.json", max_bytes=MAX_JSON_BYTES))
        st = doc.get("status", 0) if isinstance(doc, dict) else None
        return _OLD_STATUS.get(st, 0) if isinstance(st, str) else (st if isinstance(st, int) else None)
    except (InputError, ValueError):
        return None


def prepare_outdir(outdir: Path | str, *, force: bool = False) -> Path:
    """Check, before any computation, that results can be written to ``outdir``; create it; lock it.

    Refuses (:class:`~hetsched.errors.HetschedError`, one line naming the
    path): a symbolic link anywhere on the way from the results root to
    ``outdir`` (never follow a link out of the results folder); an ``outdir``
    another live hetsched process is writing into (:func:`lock_outdir`); an
    ``outdir`` that holds finished results, unless ``force``; a folder that
    cannot be created or written.

    Only the files hetsched wrote there (:func:`manifest`) are removed -- with
    ``force``, or without it when the previous run did not finish (interrupted,
    or killed before its ``results.json``): a rerun of the same command then
    starts again instead of being blocked. A user's other files are never touched.
    """
    outdir = Path(outdir)
    for p in [outdir, *outdir.parents]:
        if p.is_symlink():
            raise HetschedError(f"output folder {str(outdir)!r}: {str(p)!r} is a symbolic link; "
                                f"refusing to follow it (choose another --outdir)")
        if str(p) in (".", "", os.sep):
            break
    if os.path.lexists(outdir) and not outdir.is_dir():
        raise HetschedError(f"output folder {str(outdir)!r} exists and is not a folder")
    try:
        outdir.mkdir(parents=True, exist_ok=True)
        probe = outdir / ".hetsched-write-probe"
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
        os.close(fd)
        probe.unlink()
    except OSError as exc:
        raise HetschedError(f"output folder {str(outdir)!r} is not writable: {exc.strerror or exc}") from None
    lock_outdir(outdir)
    ours = [n for n in manifest(outdir) if os.path.lexists(outdir / n)]
    if not os.path.lexists(outdir / MANIFEST):
        clash = [n for n in RESULTS_FILES if os.path.lexists(outdir / n) and n not in ours]
        if clash:
            unlock_outdir(outdir)
            raise HetschedError(f"output folder {str(outdir)!r} holds files hetsched did not write "
                                f"({', '.join(clash)}); choose another --outdir")
    finished = os.path.lexists(outdir / "results.json") and _status_of(outdir) != INTERRUPTED_STATUS
    if ours and finished and not force:
        unlock_outdir(outdir)
        raise HetschedError(f"output folder {str(outdir)!r} already holds results ({len(ours)} files); "
                            f"pass --force to replace them or --outdir to write elsewhere")
    for n in sorted(ours, key=lambda n: -n.count("/")):
        p = outdir / n
        with contextlib.suppress(OSError):
            if p.is_symlink() or p.is_file():
                p.unlink()
            elif p.is_dir():
                with contextlib.suppress(OSError):
                    p.rmdir()  # only if empty: a user's file inside stays
    for n in ours:  # subfolders hetsched made (records/) go when they are left empty
        parent = (outdir / n).parent
        while parent != outdir and inside(parent, outdir):
            with contextlib.suppress(OSError):
                parent.rmdir()
            parent = parent.parent
    with contextlib.suppress(OSError):
        (outdir / MANIFEST).unlink()
    return outdir


@contextlib.contextmanager
def hold_interrupts() -> Iterator[None]:
    """Delay SIGINT and SIGTERM until the block ends (a file set is written whole or not at all).

    Only in the main thread (elsewhere signals are not delivered to Python); a
    signal received meanwhile is re-raised at the end of the block.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got: list[int] = []
    old = {}

    def later(signum, frame):  # noqa: ARG001
        got.append(signum)

    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            old[sig] = signal.signal(sig, later)
        except (ValueError, OSError):
            pass
    try:
        yield
    finally:
        for sig, h in old.items():
            signal.signal(sig, h)
        for sig in got[:1]:
            h = old.get(sig)
            if callable(h):
                h(sig, None)
            elif h == signal.SIG_DFL:
                if sig == signal.SIGINT:
                    raise KeyboardInterrupt
                os.kill(os.getpid(), sig)


# --------------------------------------------------------------------------- writing
def column_units(rows: Iterable[Mapping[str, Any]], units: Mapping[str, str],
                 defaults: Mapping[str, str] = {}) -> dict[str, str]:
    """Unit of every column of ``rows`` that has one: ``units`` first, then ``defaults``, then
    ``defaults`` of the column's prefix before ``_`` (``W_1`` -> ``W``)."""
    cols: list[str] = []
    for r in rows:
        cols += [c for c in r if c not in cols]
    out = {}
    for c in cols:
        u = units.get(c) or defaults.get(c) or defaults.get(c.split("_")[0] if "_" in c else "")
        if u:
            out[c] = u
    return out


def rows_frame(rows: list[Mapping[str, Any]]):
    """The rows as a pandas DataFrame (JSON-ready values: NaN as missing)."""
    import pandas as pd

    return pd.DataFrame([jsonable(r) for r in rows])


def _parquet_bytes(df, meta: dict[str, Any]) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq_df = df.copy()
    for c in pq_df.columns:  # a column mixing numbers and text (e.g. "unstable") is stored as text
        kinds = {type(v) for v in pq_df[c] if v is not None and not (isinstance(v, float) and math.isnan(v))}
        if len(kinds - {int, float, bool}) and len(kinds) > 1 or any(k in (list, dict, tuple) for k in kinds):
            pq_df[c] = [None if v is None else (json.dumps(v) if isinstance(v, (list, dict, tuple)) else str(v))
                        for v in pq_df[c]]
    table = pa.Table.from_pandas(pq_df, preserve_index=False)
    schema_meta = dict(table.schema.metadata or {})
    schema_meta[b"hetsched"] = json.dumps(meta).encode()
    table = table.replace_schema_metadata(schema_meta)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return sink.getvalue().to_pybytes()


def write_results(outdir: Path | str, doc: Mapping[str, Any], *, table: str | None = None) -> list[Path]:
    """Write one result into ``outdir`` (see the module docstring); return the paths written.

    ``doc`` is the result's JSON object; its ``rows`` become ``results.csv`` and
    ``results.parquet``; ``table`` (the printed text) becomes ``table.txt``.
    Existing regular files of those names are replaced (the folder was checked
    by :func:`prepare_outdir`); a symbolic link among them is refused.
    """
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    doc = jsonable(dict(doc))
    rows = doc.get("rows") or []
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise HetschedError(f"{doc.get('id')}: 'rows' must be a list of objects")  # a programming error upstream
    df = rows_frame(rows)
    meta = {k: doc.get(k) for k in ("id", "kind", "status", "units", "provenance")}
    try:
        data = _parquet_bytes(df, meta)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for one cause
        raise HetschedError(f"{doc.get('id')}: rows cannot be stored as Parquet ({exc})") from None
    # the folder was checked by prepare_outdir: a file hetsched wrote there (the manifest) is replaced, a
    # user's file of the same name is refused; the set is written with SIGINT/SIGTERM held, results.json last
    # (a folder without it is an unfinished run, which a rerun replaces)
    files = [("results.csv", df.to_csv(index=False).encode()), ("results.parquet", data)]
    if table is not None:
        files.append(("table.txt", (table + "\n").encode()))
    files.append(("results.json", json.dumps(doc, indent=2).encode()))
    written: list[Path] = []
    with hold_interrupts():
        lock_outdir(outdir)
        try:
            for name, payload in files:
                target, force = output_in(outdir, name)
                written.append(write_bytes(target, payload, force=force, what="results file"))
        finally:
            record_written(outdir, written)
    return written


# --------------------------------------------------------------------------- reading
@dataclass
class ResultsFolder:
    """One results folder as read back: its JSON document, rows, printed table and plots."""

    id: str
    folder: Path
    doc: dict[str, Any]
    table_text: str = ""
    figures: list[Path] = field(default_factory=list)

    @property
    def kind(self) -> str:
        return str(self.doc.get("kind") or "experiment")

    @property
    def rows(self) -> list[dict[str, Any]]:
        return list(self.doc.get("rows") or [])

    @property
    def status(self) -> int:
        return int(self.doc.get("status", 0))

    @property
    def provenance(self) -> dict[str, Any]:
        return dict(self.doc.get("provenance") or {})

    @property
    def units(self) -> dict[str, str]:
        return dict(self.doc.get("units") or {})


def _read_regular(path: Path, folder: Path, limit: int) -> bytes | None:
    """The bytes of ``path`` if it is a regular file (not a link) inside ``folder`` under ``limit``."""
    if path.is_symlink() or not path.is_file() or not inside(path, folder):
        return None
    try:
        return read_input(path, max_bytes=limit, encoding=None)
    except InputError:
        return None


def _check_doc(doc: Any, where: str) -> dict[str, Any]:
    """A results document checked field by field (``HetschedError`` naming the first bad field)."""
    if not isinstance(doc, dict):
        raise HetschedError(f"{where}: not a results file (expected a JSON object, got {type(doc).__name__})")
    rows = doc.get("rows")
    if not isinstance(rows, list):
        raise HetschedError(f"{where}: not a results file (no list 'rows')")
    for k, r in enumerate(rows):
        if not isinstance(r, dict):
            raise HetschedError(f"{where}: rows[{k}] is not an object")
    out = dict(doc)
    if not isinstance(out.get("id", ""), (str, int, float)):
        raise HetschedError(f"{where}: 'id' is not text")
    status = out.get("status", 0)
    if isinstance(status, str):  # files written before status was an integer
        status = _OLD_STATUS.get(status, 2 if status != "complete" else 0)
    if isinstance(status, bool) or not isinstance(status, int):
        raise HetschedError(f"{where}: 'status' is not an integer")
    out["status"] = status
    out.setdefault("success", status == 0)
    for key, typ in (("units", dict), ("provenance", dict), ("meta", dict)):
        if out.get(key) is not None and not isinstance(out[key], typ):
            raise HetschedError(f"{where}: {key!r} is not an object")
    if out.get("units") is not None and not all(isinstance(v, str) for v in out["units"].values()):
        raise HetschedError(f"{where}: 'units' values must be text")
    for key in ("notes", "figures"):
        v = out.get(key)
        if v is not None and not (isinstance(v, list) and all(isinstance(x, str) for x in v)):
            raise HetschedError(f"{where}: {key!r} is not a list of text")
    if not isinstance(out.get("message", ""), str):
        raise HetschedError(f"{where}: 'message' is not text")
    return out


def read_results(folder: Path | str) -> ResultsFolder:
    """Read one results folder; :class:`HetschedError` (one line naming the file) if it is not one."""
    folder = Path(folder)
    f = folder / "results.json"
    data = _read_regular(f, folder, MAX_JSON_BYTES)
    if data is None:
        raise HetschedError(f"{str(f)!r}: no results file (missing, not a regular file inside the folder, or over "
                            f"{MAX_JSON_BYTES:,} bytes)")
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError, ValueError) as exc:
        raise HetschedError(f"{str(f)!r}: not a hetsched results file ({str(exc)[:200]})") from None
    doc = _check_doc(doc, repr(str(f)))
    raw = _read_regular(folder / "table.txt", folder, MAX_TEXT_BYTES)
    table = raw.decode("utf-8", "replace") if raw is not None else ""
    figs = []
    for name in doc.get("figures") or []:
        cand = folder / Path(name).name
        if cand.suffix.lower() in (".png", ".svg", ".jpg", ".jpeg") and not cand.is_symlink() and cand.is_file() \
                and inside(cand, folder) and cand.stat().st_size <= MAX_FIGURE_BYTES:
            figs.append(cand)
    return ResultsFolder(str(doc.get("id") or folder.name), folder, doc, table, figs)


def read_results_dir(root: Path | str) -> tuple[list[ResultsFolder], list[str]]:
    """Every results folder directly under ``root`` (and ``root`` itself if it is one).

    Returns ``(folders, problems)``: a folder whose files are malformed is one
    line in ``problems`` and is left out. A missing ``root`` is an error.
    """
    root = Path(root)
    if not root.is_dir():
        raise HetschedError(f"results folder {str(root)!r} does not exist (run `hetsched reproduce ID` first)")
    cands = [root] if (root / "results.json").exists() else []
    cands += sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink() and (p / "results.json").exists())
    out, problems = [], []
    for folder in cands:
        try:
            out.append(read_results(folder))
        except HetschedError as exc:
            problems.append(str(exc))
        except OSError as exc:
            problems.append(f"{str(folder)!r}: cannot read: {exc.strerror or exc}")
    return out, problems
