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

Every job line must have exactly 18 fields: a line with 17 or 19 is an error
naming the file, line and count (or, with ``on_error="skip"``, dropped and
counted); the fast parse never shifts columns.

Safe reading: the log is opened through :func:`hetsched.safeio.open_input`
(regular files only; a FIFO or device is refused without blocking), and at most
``max_bytes`` of log text are read -- after gzip decompression, so a small gzip
that expands to gigabytes is refused once the limit is reached (and at once when
its size trailer already says so). The default :data:`MAX_SWF_BYTES` (1 GiB,
about 9 million jobs of ~110 bytes) can be changed per call (``max_bytes=``;
``None`` lifts it), for every command with the environment variable
``HETSCHED_SWF_MAX_BYTES`` (bytes; ``0`` or ``none`` lifts it), or with
``hetsched trace info --max-bytes``. A line over :data:`MAX_LINE_BYTES` is an
error naming its number. Streaming (``chunksize``) reads the file block by block,
so a caller that needs the first jobs reads only them.

Speed: the job lines are parsed by pandas' C parser in one call (no Python loop
per line); only when that fails is the failing block scanned line by line to
name the file, line and field (``on_error="raise"``) or to drop the malformed
lines (``on_error="skip"``). Blocks of ``chunksize`` lines are streamed when the
log does not fit in memory.
"""

from __future__ import annotations

import gzip
import io
import os
import re
import warnings
import zlib
from pathlib import Path
from typing import Iterator

import numpy as np
import pandas as pd

from ..errors import ModelError

__all__ = ["SWF_FIELDS", "SWF_COLUMNS", "SWF_UNITS", "read_swf", "read_swf_header", "with_na", "MISSING",
           "MAX_SWF_BYTES", "MAX_LINE_BYTES", "max_swf_bytes"]

MISSING = -1
#: default limit of the log text read (after decompression): 1 GiB, about 9 million jobs
MAX_SWF_BYTES = 1 << 30
#: longest line accepted (an SWF job line is under 200 bytes; header notes can be long)
MAX_LINE_BYTES = 1 << 20
_ENV_LIMIT = "HETSCHED_SWF_MAX_BYTES"
_BLOCK = 4 << 20  # bytes read at a time when streaming
_UNSET = object()

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
def max_swf_bytes(max_bytes=_UNSET) -> int | None:
    """The limit of log text to read: ``max_bytes`` if given (``None``: no limit), else the environment
    variable ``HETSCHED_SWF_MAX_BYTES`` (``0``/``none``: no limit), else :data:`MAX_SWF_BYTES`."""
    if max_bytes is _UNSET:
        env = os.environ.get(_ENV_LIMIT)
        if env is None or not env.strip():
            return MAX_SWF_BYTES
        text = env.strip().lower()
        if text in ("0", "none"):
            return None
        try:
            v = int(text)
        except ValueError:
            v = -1
        if v < 1:
            raise ModelError(f"{_ENV_LIMIT}: expected a positive number of bytes, 0 or none, got {env[:40]!r}")
        return v
    if max_bytes is None:
        return None
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, (int, np.integer)) or max_bytes < 1:
        raise ModelError(f"max_bytes: expected a positive number of bytes or None (no limit), got {max_bytes!r}")
    return int(max_bytes)


def _too_big(path: Path, limit: int) -> ModelError:
    return ModelError(f"swf: {path}: the log text exceeds the limit of {limit:,} bytes (after decompression); "
                      f"raise it with max_bytes= in the API, --max-bytes (trace info) or {_ENV_LIMIT}=BYTES "
                      f"(0 lifts it)")


class _Reader:
    """Bytes of a plain or gzip log (gzip recognised by its magic bytes, so a plain file named ``.gz``
    still reads and a fake ``.gz`` gets a clear error), opened safely, read up to a limit, with error
    translation (bad gzip, truncated gzip, I/O errors)."""

    def __init__(self, path: Path, limit: int | None):
        from ..safeio import InputError, open_input

        self.path, self.limit, self.total = path, limit, 0
        try:
            self.raw = open_input(path, what="swf", max_bytes=None)
        except InputError as exc:
            raise ModelError(str(exc)) from None
        try:
            self.gz = self.raw.read(2) == b"\x1f\x8b"
            self.raw.seek(0)
        except OSError as exc:
            self.raw.close()
            raise ModelError(f"swf: cannot read {path}: {exc.strerror or exc}") from None
        self.f = gzip.GzipFile(fileobj=self.raw, mode="rb") if self.gz else self.raw
        self.tail = b""
        self.pending: list[bytes] = []
        self.eof = False

    def _wrap(self, fn, *a):
        try:
            return fn(*a)
        except (gzip.BadGzipFile, EOFError, zlib.error, OSError) as exc:
            kind = ("corrupt or truncated gzip data" if isinstance(exc, (gzip.BadGzipFile, EOFError, zlib.error))
                    else (exc.strerror or str(exc)))
            raise ModelError(f"swf: {self.path}: {kind}") from None

    def _count(self, data: bytes) -> bytes:
        self.total += len(data)
        if self.limit is not None and self.total > self.limit:
            raise _too_big(self.path, self.limit)
        return data

    def check_declared_size(self) -> None:
        """Refuse at once a gzip whose size trailer (ISIZE, the size modulo 2^32 of a single-member file)
        already exceeds the limit; the running count still catches any other. A trailer beyond deflate's
        largest ratio (1032:1) is not a size (a corrupt file or several members) and is ignored."""
        if not self.gz or self.limit is None:
            return
        size = os.fstat(self.raw.fileno()).st_size
        if size >= 18:
            self.raw.seek(size - 4)
            isize = int.from_bytes(self.raw.read(4), "little")
            self.raw.seek(0)
            if self.limit < isize <= 1032 * size:
                raise _too_big(self.path, self.limit)

    def read(self) -> bytes:
        """The whole (decompressed) content, at most ``limit`` bytes; binary data is refused after its
        first 64 KiB (a gzip of zeros is not decompressed to the limit)."""
        head = self._count(self._wrap(self.f.read, 1 << 16))
        _refuse_binary(self.path, head)
        n = -1 if self.limit is None else self.limit + 1 - self.total
        return head + self._count(self._wrap(self.f.read, n)) if len(head) == 1 << 16 else head

    def lines(self, n: int) -> list[bytes]:
        """Up to ``n`` further lines (each with its newline but perhaps the last), read block by block."""
        while len(self.pending) < n and not self.eof:
            block = self._count(self._wrap(self.f.read, _BLOCK))
            if not block:
                self.eof = True
                if self.tail:
                    self.pending.append(self.tail)
                    self.tail = b""
                break
            data = self.tail + block
            cut = data.rfind(b"\n") + 1
            self.tail = data[cut:]
            if len(self.tail) > MAX_LINE_BYTES:
                raise ModelError(f"swf: {self.path}: a line longer than {MAX_LINE_BYTES:,} bytes (not an SWF log)")
            if cut:
                self.pending.extend(data[:cut].splitlines(keepends=True))
        out = self.pending[:n]
        del self.pending[:n]
        return out

    def close(self) -> None:
        try:
            self.f.close()
        finally:
            self.raw.close()


def _dec(line: bytes) -> str:
    return line.decode("utf-8", errors="replace")


# ----------------------------------------------------------------------------- header
def _parse_header(lines: list[str]) -> dict:
    header: dict = {}
    last = None
    for raw in lines:
        m = _KEY_RE.match(raw)
        if m:
            key, val = m.group(1), (m.group(2) or "").strip()
            if key in _INT_KEYS:  # a number that is not a finite integer (e.g. 1e400) stays text
                try:
                    f = float(val)
                    if f == int(f):
                        val = int(f)
                except (ValueError, OverflowError):
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


def read_swf_header(path: str | os.PathLike, *, max_bytes=_UNSET) -> dict:
    """Only the header of an SWF log: ``{"header": {...}, "comments": [...]}`` (reads no job line)."""
    path = Path(path)
    _check_path(path)
    r = _Reader(path, max_swf_bytes(max_bytes))
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
        with warnings.catch_warnings():
            # index_col=False: a line with more fields than 18 is an error (a ParserWarning on the first
            # line, a ParserError after it), never a shifted row with the first field as the index
            warnings.simplefilter("error", pd.errors.ParserWarning)
            warnings.simplefilter("ignore", pd.errors.DtypeWarning)  # a text token: the column check below
            raw = pd.read_csv(io.BytesIO(data), sep=r"\s+", comment=";", header=None, names=range(_N),
                              engine="c", skip_blank_lines=True, index_col=False)
    except (ValueError, pd.errors.ParserError, pd.errors.ParserWarning, IndexError, OverflowError, UnicodeError):
        return None
    if not isinstance(raw.index, pd.RangeIndex) or raw.shape[1] != _N:
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


def _check_path(path: Path) -> None:
    """A regular, readable file (checked before any reading: a directory, a device such as ``/dev/zero``
    or a FIFO would make a reader fail obscurely or block forever)."""
    from ..validation import check_file

    check_file(path, "swf", kind="SWF file (.swf or .swf.gz)", error=ModelError)


def _blocks(path: Path, block_lines: int | None, on_error: str, bad: list[int], header_out: dict,
            limit: int | None):
    """Yield one typed frame per block of lines (the whole file when
    ``block_lines`` is None); ``header_out`` gets the header before the first yield."""
    r = _Reader(path, limit)
    lineno = 1
    try:
        if block_lines is None:
            r.check_declared_size()
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


def read_swf(path: str | os.PathLike, *, chunksize: int | None = None, on_error: str = "raise",
             max_bytes=_UNSET) -> pd.DataFrame | Iterator[pd.DataFrame]:
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
    max_bytes : int or None, optional
        Most bytes of log text to read, after decompression (default
        :data:`MAX_SWF_BYTES` = 1 GiB, or ``HETSCHED_SWF_MAX_BYTES``; ``None``:
        no limit). A whole read of a gzip whose size trailer exceeds it is
        refused before decompressing.

    Returns
    -------
    DataFrame with the columns of :data:`SWF_FIELDS` (``-1`` = unknown) and
    ``attrs`` as described in the module docstring; or an iterator of them.

    Raises
    ------
    ModelError
        Missing file, directory, device or FIFO, corrupt gzip, binary data,
        more than ``max_bytes`` of text, malformed line (with ``on_error="raise"``).
    """
    if on_error not in ("raise", "skip"):
        raise ModelError(f"on_error: expected 'raise' or 'skip', got {on_error!r}")
    if chunksize is not None:
        if isinstance(chunksize, bool) or not isinstance(chunksize, (int, np.integer)) or chunksize < 1:
            raise ModelError(f"chunksize: expected a positive integer number of jobs, got {chunksize!r}")
    limit = max_swf_bytes(max_bytes)
    path = Path(path)
    _check_path(path)
    if chunksize is not None:
        return _iter_chunks(path, int(chunksize), on_error, limit)
    bad: list[int] = []
    meta: dict = {}
    df = next(_blocks(path, None, on_error, bad, meta, limit))
    df.attrs.update(_attrs(path, meta.get("header", {}), meta.get("comments", []), len(df), bad))
    return df


def _iter_chunks(path: Path, chunksize: int, on_error: str, limit: int | None) -> Iterator[pd.DataFrame]:
    bad: list[int] = []
    meta: dict = {}
    for df in _blocks(path, chunksize, on_error, bad, meta, limit):
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
