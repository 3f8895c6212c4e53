"""Standard Workload Format (SWF v2.2) reader: a log as a pandas DataFrame.

Format (Feitelson et al., Parallel Workloads Archive): one job per line, 18
whitespace-separated numeric fields; header lines start with ``;`` and hold
``Key: value`` metadata (continuation lines are indented); ``-1`` means
"unknown"; floats are accepted where integers are expected.

Columns (the 18 fields, in order; times in seconds, memory in kilobytes per
processor, as the format defines them):

====  ======================  =====  =============================================
 #    column                  dtype  meaning
====  ======================  =====  =============================================
 1    ``job_id``              int64  job number (1, 2, ...)
 2    ``submit_time``         float  submit time, s from the log's start
 3    ``wait_time``           float  wait in the queue, s
 4    ``run_time``            float  wall-clock run time, s
 5    ``allocated_procs``     int64  processors allocated
 6    ``avg_cpu_time``        float  average CPU time used per processor, s
 7    ``used_memory``         float  average memory used per processor, KB
 8    ``requested_procs``     int64  processors requested
 9    ``requested_time``      float  requested (wall-clock) time, s
 10   ``requested_memory``    float  requested memory per processor, KB
 11   ``status``              int64  1 completed, 0 failed, 5 cancelled, ...
 12   ``user_id``             int64  user number
 13   ``group_id``            int64  group number
 14   ``executable_id``       int64  application (executable) number
 15   ``queue_id``            int64  queue number
 16   ``partition_id``        int64  partition number
 17   ``preceding_job_id``    int64  job this one depends on
 18   ``think_time``          float  think time from the preceding job, s
====  ======================  =====  =============================================

Missing values stay ``-1`` (the format's own marker), not ``NA``: the integer
columns then stay plain ``int64`` arrays that compiled kernels can take as they
are, a frame written back is the same SWF, and no value of the 18 fields is
legitimately ``-1``. :func:`with_na` gives a copy with ``pd.NA``/``NaN``
instead for analysis.

Header comments go to ``df.attrs``: ``header`` (``{key: value}``; numeric keys
such as ``MaxJobs`` as ``int``; repeatable keys ``Note``, ``Queue``,
``Partition`` -- and any key that repeats -- as lists), ``comments`` (every
header line, without the ``;``), ``source`` (the path), ``jobs``, ``skipped``
and ``skipped_lines`` (file line numbers of skipped malformed lines).

Speed: the job lines are parsed by pandas' C parser in one call (no Python loop
per line); only when that fails is the failing block scanned line by line to
name the file, line and field (``on_error="raise"``) or to drop the malformed
lines (``on_error="skip"``). Blocks of ``chunksize`` lines are streamed when the
log does not fit in memory.
"""

from __future__ import annotations

import gzip
import io
import itertools
import os
import re
import zlib
from pathlib import Path
from typing import Iterator

import numpy as np
import pandas as pd

from ..errors import ModelError
from ..validation import check_file

__all__ = ["SWF_FIELDS", "SWF_COLUMNS", "SWF_UNITS", "read_swf", "read_swf_header", "with_na", "MISSING"]

MISSING = -1

#: ``(column, dtype, unit, meaning)`` for the 18 SWF fields, in file order.
SWF_FIELDS: tuple[tuple[str, str, str, str], ...] = (
    ("job_id", "int64", "", "job number"),
    ("submit_time", "float64", "s", "submit time from the log's start"),
    ("wait_time", "float64", "s", "wait time in the queue"),
    ("run_time", "float64", "s", "wall-clock run time"),
    ("allocated_procs", "int64", "processors", "number of allocated processors"),
    ("avg_cpu_time", "float64", "s", "average CPU time used per processor"),
    ("used_memory", "float64", "KB", "average used memory per processor"),
    ("requested_procs", "int64", "processors", "requested number of processors"),
    ("requested_time", "float64", "s", "requested wall-clock time"),
    ("requested_memory", "float64", "KB", "requested memory per processor"),
    ("status", "int64", "", "1 completed, 0 failed, 5 cancelled"),
    ("user_id", "int64", "", "user number"),
    ("group_id", "int64", "", "group number"),
    ("executable_id", "int64", "", "application number"),
    ("queue_id", "int64", "", "queue number"),
    ("partition_id", "int64", "", "partition number"),
    ("preceding_job_id", "int64", "", "preceding job number"),
    ("think_time", "float64", "s", "think time from the preceding job"),
)
SWF_COLUMNS: tuple[str, ...] = tuple(f[0] for f in SWF_FIELDS)
SWF_UNITS: dict[str, str] = {f[0]: f[2] for f in SWF_FIELDS}
_INT_COLS = tuple(f[0] for f in SWF_FIELDS if f[1] == "int64")
_N = len(SWF_FIELDS)

_REPEATABLE = ("Note", "Queue", "Partition")
_INT_KEYS = ("MaxJobs", "MaxRecords", "MaxNodes", "MaxProcs", "MaxRuntime", "MaxMemory", "MaxQueues",
             "MaxPartitions", "AllowOveruse", "UnixStartTime", "TimeZone")
_KEY_RE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_]*):(?:\s+(.*)|\s*)$")


# ----------------------------------------------------------------------------- opening
def _check_path(path: Path) -> None:
    """A regular, readable file: a directory, a device (``/dev/zero``) or a FIFO
    would make a reader fail obscurely or block forever."""
    check_file(path, "swf", kind="SWF file (.swf or .swf.gz)", error=ModelError)


def _is_gzip(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == b"\x1f\x8b"


def _open_bin(path: Path):
    """Byte stream of a plain or gzip file (gzip recognised by its magic bytes, so a
    plain file named ``.gz`` still reads and a fake ``.gz`` gets a clear error)."""
    return gzip.open(path, "rb") if _is_gzip(path) else open(path, "rb")


def _dec(line: bytes) -> str:
    return line.decode("utf-8", errors="replace")


class _Reader:
    """Line source (bytes) with error translation (bad gzip, truncated gzip, I/O errors)."""

    def __init__(self, path: Path):
        self.path = path
        try:
            self.f = _open_bin(path)
        except OSError as exc:
            raise ModelError(f"swf: cannot read {path}: {exc.strerror or exc}") from None

    def _wrap(self, fn, *a):
        try:
            return fn(*a)
        except (gzip.BadGzipFile, EOFError, zlib.error, OSError) as exc:
            kind = ("corrupt or truncated gzip data" if isinstance(exc, (gzip.BadGzipFile, EOFError, zlib.error))
                    else (exc.strerror or str(exc)))
            raise ModelError(f"swf: {self.path}: {kind}") from None

    def read(self) -> bytes:
        """The whole (decompressed) content; one C call for gzip (``gzip.decompress``
        is ~2x faster than reading a ``GzipFile`` to its end)."""
        if isinstance(self.f, gzip.GzipFile):
            with open(self.path, "rb") as raw:
                return self._wrap(lambda: gzip.decompress(raw.read()))
        return self._wrap(self.f.read)

    def lines(self, n: int) -> list[bytes]:
        return self._wrap(lambda: list(itertools.islice(self.f, n)))

    def close(self) -> None:
        self.f.close()


# ----------------------------------------------------------------------------- header
def _parse_header(lines: list[str]) -> dict:
    header: dict = {}
    last = None
    for raw in lines:
        m = _KEY_RE.match(raw)
        if m:
            key, val = m.group(1), (m.group(2) or "").strip()
            if key in _INT_KEYS:
                try:
                    val = int(float(val))
                except ValueError:
                    pass
            if key in _REPEATABLE:
                header.setdefault(key, []).append(val)
            elif key in header:
                old = header[key]
                header[key] = (old if isinstance(old, list) else [old]) + [val]
            else:
                header[key] = val
            last = key
        elif last is not None and raw.strip() and raw[:1].isspace():
            # continuation of the previous key's value
            cur = header[last]
            if isinstance(cur, list):
                cur[-1] = f"{cur[-1]} {raw.strip()}".strip()
            elif isinstance(cur, str):
                header[last] = f"{cur} {raw.strip()}".strip()
        else:
            last = None
    return header


def read_swf_header(path: str | os.PathLike) -> dict:
    """Only the header of an SWF log: ``{"header": {...}, "comments": [...]}`` (reads no job line)."""
    path = Path(path)
    _check_path(path)
    r = _Reader(path)
    comments = []
    try:
        while True:
            block = r.lines(256)
            if not block:
                break
            for line in block:
                s = _dec(line).strip()
                if not s:
                    continue
                if not s.startswith(";"):
                    return {"header": _parse_header(comments), "comments": comments}
                comments.append(s[1:].rstrip())
    finally:
        r.close()
    return {"header": _parse_header(comments), "comments": comments}


# ----------------------------------------------------------------------------- job lines
_INT_POS = [SWF_COLUMNS.index(c) for c in _INT_COLS]


def _fast_parse(data: bytes) -> pd.DataFrame | None:
    """All job lines of a block as a typed frame, or ``None`` when the block has
    a malformed line (the caller then scans it line by line)."""
    if not data.strip():
        return _frame(np.empty((0, _N)))
    try:
        raw = pd.read_csv(io.BytesIO(data), sep=r"\s+", comment=";", header=None, names=range(_N),
                          engine="c", skip_blank_lines=True)
    except (ValueError, pd.errors.ParserError, IndexError, OverflowError, UnicodeError):
        return None
    cols = {}
    for j, (name, dtype, _u, _m) in enumerate(SWF_FIELDS):
        c = raw[j]
        if not pd.api.types.is_numeric_dtype(c.dtype) or pd.api.types.is_bool_dtype(c.dtype):
            return None  # a non-numeric token (pandas kept the column as text)
        v = c.to_numpy()
        if v.dtype.kind == "f":
            if not np.isfinite(v).all():
                return None  # a missing field (too few on a line) or a nan/inf token
            if dtype == "int64":
                if not (np.array_equal(v, np.round(v)) and np.abs(v).max(initial=0) <= 2**62):
                    return None
                v = v.astype(np.int64)
        elif v.dtype.kind in "iu":
            v = v.astype(np.int64) if dtype == "int64" else v.astype(np.float64)
        else:
            return None
        cols[name] = v
    return pd.DataFrame(cols)


def _scan(lines: list[bytes], first_lineno: int, path: Path, on_error: str, bad: list[int]) -> pd.DataFrame:
    """Slow path (only for a block that failed the fast parse): check every line,
    raise on the first malformed one or drop it (its line number goes to ``bad``)."""
    rows = []
    int_idx = set(_INT_POS)
    for k, line in enumerate(lines):
        lineno = first_lineno + k
        s = _dec(line).split(";", 1)[0].strip()
        if not s:
            continue
        parts = s.split()
        problem = None
        vals = []
        if len(parts) != _N:
            problem = f"expected {_N} fields, got {len(parts)}"
            if len(parts) < _N:
                problem += f" (field {len(parts) + 1} '{SWF_COLUMNS[len(parts)]}' is missing)"
        else:
            for j, tok in enumerate(parts):
                try:
                    v = float(tok)
                except ValueError:
                    problem = f"field {j + 1} '{SWF_COLUMNS[j]}': not a number: {tok[:40]!r}"
                    break
                if not np.isfinite(v):
                    problem = f"field {j + 1} '{SWF_COLUMNS[j]}': not a finite number: {tok[:40]!r}"
                    break
                if j in int_idx and (v != round(v) or abs(v) > 2**62):
                    problem = f"field {j + 1} '{SWF_COLUMNS[j]}': expected an integer, got {tok[:40]!r}"
                    break
                vals.append(v)
        if problem is not None:
            if on_error == "raise":
                raise ModelError(f"swf: {path}:{lineno}: {problem}")
            bad.append(lineno)
            continue
        rows.append(vals)
    return _frame(np.asarray(rows, dtype=np.float64).reshape(-1, _N))


def _frame(a: np.ndarray) -> pd.DataFrame:
    cols = {}
    for j, (name, dtype, _u, _m) in enumerate(SWF_FIELDS):
        cols[name] = a[:, j].astype(np.int64) if dtype == "int64" else np.ascontiguousarray(a[:, j])
    return pd.DataFrame(cols)


def _attrs(path: Path, header: dict, comments: list[str], n: int, bad: list[int]) -> dict:
    return {"source": str(path), "header": header, "comments": comments, "jobs": n,
            "skipped": len(bad), "skipped_lines": list(bad), "missing": MISSING,
            "units": dict(SWF_UNITS)}


def _header_of(lines) -> list[str]:
    """The leading comment lines (without ``;``), up to the first job line."""
    comments = []
    for line in lines:
        s = line.strip()
        if not s:
            continue
        if not s.startswith(";"):
            break
        comments.append(s[1:].rstrip())
    return comments


def _blocks(path: Path, block_lines: int | None, on_error: str, bad: list[int], header_out: dict):
    """Yield one typed frame per block of lines (the whole file when
    ``block_lines`` is None); ``header_out`` gets the header before the first yield."""
    r = _Reader(path)
    lineno = 1
    try:
        if block_lines is None:
            data = r.read()
            _refuse_binary(path, data)
            comments = _header_of(io.StringIO(_dec(data[: 1 << 20])))
            header_out.update(header=_parse_header(comments), comments=comments)
            df = _fast_parse(data)
            if df is None:
                df = _scan(data.splitlines(keepends=True), 1, path, on_error, bad)
            yield df
            return
        comments: list[str] = []
        in_header = True
        while True:
            lines = r.lines(block_lines)
            if not lines:
                break
            if lineno == 1:
                _refuse_binary(path, lines[0])
            if in_header:
                for line in lines:
                    s = _dec(line).strip()
                    if s and not s.startswith(";"):
                        in_header = False
                        break
                    if s:
                        comments.append(s[1:].rstrip())
                header_out.update(header=_parse_header(comments), comments=comments)
            df = _fast_parse(b"".join(lines))
            if df is None:
                df = _scan(lines, lineno, path, on_error, bad)
            lineno += len(lines)
            yield df
    finally:
        r.close()


def _refuse_binary(path: Path, data: bytes) -> None:
    head = data[:4096]
    if b"\x00" in head:
        raise ModelError(f"swf: {path}: binary data, not an SWF text file")
    text = _dec(head)
    if text.count("\ufffd") > len(text) // 10 > 0:
        raise ModelError(f"swf: {path}: binary data, not an SWF text file")


def read_swf(path: str | os.PathLike, *, chunksize: int | None = None,
             on_error: str = "raise") -> pd.DataFrame | Iterator[pd.DataFrame]:
    """Read an SWF log (plain or gzip) as a DataFrame of its 18 fields.

    Parameters
    ----------
    path : str or path-like
        A regular file, ``.swf`` or gzip-compressed (recognised by content).
    chunksize : int, optional
        Stream the log: return an iterator of DataFrames of at most
        ``chunksize`` jobs each (every chunk carries the header in ``attrs``;
        ``attrs["skipped"]`` counts malformed lines so far). Default: one frame.
    on_error : {"raise", "skip"}
        A malformed line (wrong number of fields, a non-number, a fraction in
        an integer field): raise :class:`~hetsched.errors.ModelError` naming
        file, line and field; or drop it and count it in ``attrs["skipped"]``
        (line numbers in ``attrs["skipped_lines"]``).

    Returns
    -------
    DataFrame with the columns of :data:`SWF_FIELDS` (``-1`` = unknown) and
    ``attrs`` as described in the module docstring; or an iterator of them.

    Raises
    ------
    ModelError
        Missing file, directory, device or FIFO, corrupt gzip, binary data,
        malformed line (with ``on_error="raise"``).
    """
    if on_error not in ("raise", "skip"):
        raise ModelError(f"on_error: expected 'raise' or 'skip', got {on_error!r}")
    if chunksize is not None:
        if isinstance(chunksize, bool) or not isinstance(chunksize, (int, np.integer)) or chunksize < 1:
            raise ModelError(f"chunksize: expected a positive integer number of jobs, got {chunksize!r}")
    path = Path(path)
    _check_path(path)
    if chunksize is not None:
        return _iter_chunks(path, int(chunksize), on_error)
    bad: list[int] = []
    meta: dict = {}
    df = next(_blocks(path, None, on_error, bad, meta))
    df.attrs.update(_attrs(path, meta.get("header", {}), meta.get("comments", []), len(df), bad))
    return df


def _iter_chunks(path: Path, chunksize: int, on_error: str) -> Iterator[pd.DataFrame]:
    bad: list[int] = []
    meta: dict = {}
    for df in _blocks(path, chunksize, on_error, bad, meta):
        if len(df) == 0:
            continue
        df.attrs.update(_attrs(path, meta.get("header", {}), meta.get("comments", []), len(df), bad))
        yield df


def with_na(df: pd.DataFrame) -> pd.DataFrame:
    """A copy with the ``-1`` (unknown) markers as missing values: nullable
    ``Int64`` for the integer fields, ``NaN`` for the others."""
    out = df.copy()
    for name, dtype, _u, _m in SWF_FIELDS:
        if name not in out:
            continue
        col = out[name]
        if dtype == "int64":
            out[name] = col.astype("Int64").mask(col == MISSING)
        else:
            out[name] = col.mask(col == MISSING)
    return out
