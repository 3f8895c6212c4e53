"""Per-task records: one row per task of a simulation run, and their certificate.

Schema (:data:`RECORD_COLUMNS`; times in the model's time units):

=============  =======  ====================================================
column         dtype    meaning
=============  =======  ====================================================
``task``       int64    task number (unique within a run)
``class``      int64    task class ``0..N-1``
``arrival``    float64  arrival time
``start``      float64  start of the (last) execution
``end``        float64  completion time
``machine``    int64    machine that completed it ``0..M-1``
``attempts``   int64    executions started (``1`` where machines never fail)
=============  =======  ====================================================

Every machine of the thesis models serves one task at a time, so the
``[start, end)`` intervals of one machine never overlap; a task that failed and
was resubmitted appears once, with the start of its successful attempt.

:func:`check_records` is the certificate a simulator's records must pass:
every task once, ``end >= start >= arrival``, no overlap per machine,
``attempts >= 1``, and Little's law ``L = lambda W`` between the time-average
number in system ``L`` and the mean response ``W`` with ``lambda = n / T``.
Over the records' own span, ``L`` integrated from the records equals
``lambda W`` identically; the check has teeth when ``L`` is the simulator's own
time-average accumulator (argument ``L``), which the records must then agree
with (``little_rtol``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import ModelError

__all__ = ["RECORD_COLUMNS", "records_frame", "check_records", "RecordsCheck", "write_records", "read_records",
           "number_in_system", "RECORD_FORMATS", "records_format", "check_records_path", "MAX_RECORDS_BYTES"]

#: file suffix -> format of records files (the suffix decides; any other is refused)
RECORD_FORMATS = {".parquet": "parquet", ".csv": "csv"}
#: largest records file read (a 30 x 20,000 run of 2.C1 with records is about 5 GB of Parquet at most)
MAX_RECORDS_BYTES = 16 << 30
_CSV_META = "# hetsched: "

#: column -> dtype of the per-task records.
RECORD_COLUMNS: dict[str, str] = {
    "task": "int64", "class": "int64", "arrival": "float64", "start": "float64", "end": "float64",
    "machine": "int64", "attempts": "int64",
}


def records_frame(task, klass, arrival, start, end, machine, attempts=None) -> pd.DataFrame:
    """Build a records frame with the schema's dtypes (``attempts`` defaults to 1)."""
    n = len(task)
    cols = {"task": task, "class": klass, "arrival": arrival, "start": start, "end": end, "machine": machine,
            "attempts": np.ones(n, dtype=np.int64) if attempts is None else attempts}
    out = {}
    for name, dtype in RECORD_COLUMNS.items():
        a = np.asarray(cols[name])
        if a.shape != (n,):
            raise ModelError(f"records: column {name!r} has shape {a.shape}, expected ({n},)")
        out[name] = a.astype(dtype)
    return pd.DataFrame(out)


def _validate_schema(df: pd.DataFrame, where: str = "records") -> None:
    if not isinstance(df, pd.DataFrame):
        raise ModelError(f"{where}: expected a DataFrame, got {type(df).__name__}")
    missing = [c for c in RECORD_COLUMNS if c not in df.columns and c != "attempts"]
    if missing:
        raise ModelError(f"{where}: missing column(s) {missing}; expected {list(RECORD_COLUMNS)}")
    for c in RECORD_COLUMNS:
        if c in df.columns and not pd.api.types.is_numeric_dtype(df[c]):
            raise ModelError(f"{where}: column {c!r} must be numeric, got dtype {df[c].dtype}")


def number_in_system(arrival: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Step function of the number of tasks in system: ``(times, counts)`` where
    ``counts[k]`` holds on ``[times[k], times[k+1])``. Ends sort before arrivals
    at equal times."""
    t = np.concatenate([end, arrival])
    d = np.concatenate([-np.ones(end.shape[0]), np.ones(arrival.shape[0])])
    kind = np.concatenate([np.zeros(end.shape[0]), np.ones(arrival.shape[0])])
    order = np.lexsort((kind, t))
    return t[order], np.cumsum(d[order])


@dataclass
class RecordsCheck:
    """Result of :func:`check_records`: ``ok`` and the list of ``violations``
    (each one line naming the rule, the task or machine, and the values), plus
    the Little's-law quantities (``L`` time-average number in system over
    ``[t0, t1]``, ``lam`` throughput ``n/(t1-t0)``, ``W`` mean response)."""

    ok: bool
    violations: list[str]
    n: int
    t0: float
    t1: float
    L: float
    lam: float
    W: float
    little_gap: float  # |L - lam W| / (lam W), L the simulator's if given
    details: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"ok": self.ok, "violations": self.violations, "n": self.n, "L": self.L, "lam": self.lam,
                "W": self.W, "little_gap": self.little_gap}

    def raise_if_failed(self) -> None:
        if not self.ok:
            more = f" (and {len(self.violations) - 1} more)" if len(self.violations) > 1 else ""
            raise ModelError(f"records: {self.violations[0]}{more}")


def check_records(df: pd.DataFrame, *, tasks=None, L: float | None = None, little_rtol: float = 0.02,
                  rtol: float = 1e-12, max_report: int = 5) -> RecordsCheck:
    """Check a records frame against the rules of the module docstring.

    Parameters
    ----------
    df : DataFrame with the :data:`RECORD_COLUMNS`.
    tasks : int or array, optional
        The tasks that must appear: ``n`` (tasks ``0..n-1``) or their ids.
    L : float, optional
        The simulator's own time-average number in system over the records'
        span ``[min arrival, max end]``; compared with ``lambda W`` from the records.
    little_rtol : float
        Tolerance of that comparison (relative).
    rtol : float
        Relative tolerance of the time comparisons (scaled by ``max(1, |t|)``),
        so that times of order 1e8 s do not fail on rounding.
    max_report : int
        Violations listed per rule (the count is always given).
    """
    _validate_schema(df)
    v: list[str] = []
    n = len(df)
    if n == 0:
        return RecordsCheck(False, ["no task in the records"], 0, 0.0, 0.0, 0.0, 0.0, 0.0, float("nan"))
    task = df["task"].to_numpy()
    arr = df["arrival"].to_numpy(dtype=np.float64)
    st = df["start"].to_numpy(dtype=np.float64)
    en = df["end"].to_numpy(dtype=np.float64)
    mach = df["machine"].to_numpy()

    def report(rule: str, idx: np.ndarray, fmt) -> None:
        if idx.size:
            shown = "; ".join(fmt(int(k)) for k in idx[:max_report])
            v.append(f"{rule}: {idx.size} violation(s): {shown}")

    for name, a in (("arrival", arr), ("start", st), ("end", en)):
        bad = np.flatnonzero(~np.isfinite(a))
        report(f"{name} is finite", bad, lambda k, a=a: f"task {task[k]} {name}={a[k]}")
    # every task once
    # sort-based set operations (np.unique's hash path is slow on large int arrays)
    srt = np.sort(task)
    rep = srt[1:] == srt[:-1]
    uniq = srt[np.r_[True, ~rep]]
    dup = np.sort(np.asarray(list(set(srt[1:][rep].tolist())), dtype=srt.dtype))
    if dup.size:
        v.append(f"every task once: {dup.size} task(s) appear more than once: {dup[:max_report].tolist()}")
    if tasks is not None:
        want = np.arange(int(tasks)) if np.ndim(tasks) == 0 else np.sort(np.asarray(tasks))
        if not np.array_equal(want, uniq):
            miss = want[~_member(want, uniq)]
            extra = uniq[~_member(uniq, want)]
        else:
            miss = extra = want[:0]
        if miss.size:
            v.append(f"every task once: {miss.size} task(s) missing: {miss[:max_report].tolist()}")
        if extra.size:
            v.append(f"every task once: {extra.size} unknown task(s): {extra[:max_report].tolist()}")
    # order of times
    scale = rtol * np.maximum(1.0, np.maximum(np.abs(arr), np.abs(en)))
    report("start >= arrival", np.flatnonzero(st < arr - scale),
           lambda k: f"task {task[k]} starts at {st[k]!r} before its arrival {arr[k]!r}")
    report("end >= start", np.flatnonzero(en < st - scale),
           lambda k: f"task {task[k]} ends at {en[k]!r} before its start {st[k]!r}")
    if (mach < 0).any():
        report("machine >= 0", np.flatnonzero(mach < 0), lambda k: f"task {task[k]} machine {mach[k]}")
    if "attempts" in df.columns:
        att = df["attempts"].to_numpy()
        report("attempts >= 1", np.flatnonzero(att < 1), lambda k: f"task {task[k]} attempts {att[k]}")
    # per-machine intervals never overlap
    order = np.lexsort((en, st, mach))
    m_o, s_o, e_o = mach[order], st[order], en[order]
    same = m_o[1:] == m_o[:-1]
    # running max of earlier ends on the same machine (a long task can cover several later ones)
    run_end = _running_max_by_group(m_o, e_o)
    tol_o = rtol * np.maximum(1.0, np.abs(e_o))
    ov = np.flatnonzero(same & (s_o[1:] < run_end[:-1] - tol_o[:-1])) + 1
    report("per-machine intervals never overlap", ov,
           lambda k: f"machine {m_o[k]}: task {task[order[k]]} starts at {s_o[k]!r} before an earlier task "
                     f"on it ends at {run_end[k - 1]!r}")
    # Little's law
    fin = np.isfinite(arr) & np.isfinite(en)
    t0 = float(arr[fin].min()) if fin.any() else 0.0
    t1 = float(en[fin].max()) if fin.any() else 0.0
    T = t1 - t0
    W = float(np.mean(en[fin] - arr[fin])) if fin.any() else float("nan")
    lam = fin.sum() / T if T > 0 else float("nan")
    times, counts = number_in_system(arr[fin], en[fin])
    area = float(np.sum(counts[:-1] * np.diff(times))) if times.size > 1 else 0.0
    L_rec = area / T if T > 0 else float("nan")
    if counts.size and counts.min() < 0:
        v.append(f"number in system >= 0: it reaches {int(counts.min())} (a task ends before it arrives)")
    L_cmp = L_rec if L is None else float(L)
    lw = lam * W
    gap = abs(L_cmp - lw) / lw if lw > 0 else float("nan")
    if L is not None and not (gap <= little_rtol):
        v.append(f"Little's law: the simulator's time-average number in system L = {L_cmp:.6g} differs from "
                 f"lambda W = {lam:.6g} x {W:.6g} = {lw:.6g} of the records by {100 * gap:.2f}% "
                 f"(tolerance {100 * little_rtol:.2f}%)")
    return RecordsCheck(not v, v, n, t0, t1, L_rec, float(lam), W, gap, {"L_records": L_rec})


def _member(a: np.ndarray, sorted_b: np.ndarray) -> np.ndarray:
    """``a[k] in sorted_b`` for every ``k`` (binary search)."""
    if sorted_b.size == 0:
        return np.zeros(a.shape[0], dtype=bool)
    pos = np.clip(np.searchsorted(sorted_b, a), 0, sorted_b.size - 1)
    return sorted_b[pos] == a


def _running_max_by_group(groups: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Running maximum of ``values`` restarted at every change of ``groups``
    (sorted by group). Vectorised: offset each group above the previous one."""
    if values.size == 0:
        return values.copy()
    finite = np.where(np.isfinite(values), values, -np.inf)
    span = float(np.max(np.abs(finite[np.isfinite(finite)]), initial=0.0)) * 2 + 1.0
    starts = np.r_[True, groups[1:] != groups[:-1]]
    gid = np.cumsum(starts) - 1
    shifted = finite + gid * span
    return np.maximum.accumulate(shifted) - gid * span


def records_format(path: str | os.PathLike, what: str = "records") -> str:
    """``"parquet"`` or ``"csv"`` from the file name's suffix; any other suffix is refused with the list."""
    suffix = Path(os.fspath(path)).suffix.lower()
    fmt = RECORD_FORMATS.get(suffix)
    if fmt is None:
        raise ModelError(f"{what}: {str(path)!r}: the file name must end in "
                         f"{' or '.join(RECORD_FORMATS)} (the format follows the suffix), got "
                         f"{suffix or 'no suffix'!r}")
    return fmt


def check_records_path(path: str | os.PathLike, *, force: bool = False, what: str = "--records") -> Path:
    """Check, before a run, that records can be written to ``path``: a supported suffix, not a link, not
    an existing file without ``force``, an existing folder (:func:`hetsched.safeio.check_output`)."""
    from ..safeio import OutputError, check_output

    records_format(path, what)
    try:
        return check_output(path, force=force, what=what)
    except OutputError as exc:
        raise ModelError(str(exc)) from None


def write_records(df: pd.DataFrame, path: str | os.PathLike, *, meta: dict | None = None,
                  force: bool = False) -> Path:
    """Write records as Parquet (``.parquet``) or CSV (``.csv``); any other suffix is refused.

    ``meta`` (policy, seed, system...) goes into the Parquet key-value metadata as
    JSON under ``hetsched``, or into a first CSV line ``# hetsched: {json}``. The
    write goes through :func:`hetsched.safeio.atomic_output`: an existing file is
    replaced only with ``force=True``, links and non-regular targets are refused,
    and a failed write leaves nothing behind.
    """
    from ..safeio import OutputError, atomic_output

    fmt = records_format(path, "records")
    path = Path(path)
    try:
        with atomic_output(path, force=force, what="records") as tmp:
            if fmt == "parquet":
                import pyarrow as pa
                import pyarrow.parquet as pq

                table = pa.Table.from_pandas(df, preserve_index=False)
                if meta:
                    md = dict(table.schema.metadata or {})
                    md[b"hetsched"] = json.dumps(meta, default=str).encode()
                    table = table.replace_schema_metadata(md)
                pq.write_table(table, tmp)
            else:
                with open(tmp, "w", encoding="utf-8", newline="") as fh:
                    if meta:
                        fh.write(_CSV_META + json.dumps(meta, default=str).replace("\n", " ") + "\n")
                    df.to_csv(fh, index=False)
    except OutputError as exc:
        raise ModelError(str(exc)) from None
    except OSError as exc:
        raise ModelError(f"records: cannot write {path}: {exc}") from None
    return path


def read_records(path: str | os.PathLike, *, max_bytes: int | None = MAX_RECORDS_BYTES) -> pd.DataFrame:
    """Read a records file (task records, or MUSCLE job records): Parquet, or CSV for ``.csv``; the
    ``hetsched`` metadata goes to ``df.attrs["meta"]``. Read through :func:`hetsched.safeio.open_input`
    (a regular file, at most ``max_bytes``)."""
    from ..safeio import InputError, open_input

    path = Path(path)
    if not path.exists():
        raise ModelError(f"records: file not found: {path}")
    if not path.is_file():
        raise ModelError(f"records: {path} is not a regular file, expected a Parquet or CSV file")
    try:
        fh = open_input(path, what="records", max_bytes=max_bytes)
    except InputError as exc:
        raise ModelError(str(exc)) from None
    with fh:
        if path.suffix.lower() == ".csv":
            df, meta = _read_csv(fh, path)
        else:
            df, meta = _read_parquet(fh, path)
    if meta is not None:
        df.attrs["meta"] = meta
    df.attrs["source"] = str(path)
    return df


def _read_parquet(fh, path: Path):
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(fh)
    except Exception as exc:  # pyarrow raises ArrowInvalid / OSError for a non-Parquet file
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ModelError(f"records: {path} is not a readable Parquet file ({msg})") from None
    md = table.schema.metadata or {}
    meta = None
    if b"hetsched" in md:
        try:
            meta = json.loads(md[b"hetsched"])
        except ValueError:
            meta = None
    return table.to_pandas(), meta


def _read_csv(fh, path: Path):
    import io

    text = fh.read()
    meta = None
    first, _, rest = text.partition(b"\n")
    if first.startswith(_CSV_META.encode()):
        try:
            meta = json.loads(first[len(_CSV_META):].decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            meta = None
        text = rest
    try:
        df = pd.read_csv(io.BytesIO(text))
    except (ValueError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ModelError(f"records: {path} is not a readable CSV file ({msg})") from None
    return df, meta
