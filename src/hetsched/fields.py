"""The fields of a system: limits, and the checks of numbers, rates, names and matrices.

Every check raises :class:`~hetsched.errors.ModelError` with one line naming
the field (its full path, e.g. ``group 'P' field 'mu[2]'``) and the bad value.
:mod:`hetsched.system` checks its fields with these; the scenario loader
(:mod:`hetsched.scenarios`) and its schema use the same limits and the same
size and name checks (:func:`size_problem`, :func:`duplicate`) before it
builds a system, so that each check is written once. The reasons for each
limit are in ``docs/input-validation.md``.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from .errors import ModelError
from .validation import show  # the one short repr of a bad value in messages

__all__ = ["MAX_CLASSES", "MAX_MACHINES", "MAX_GROUPS", "MAX_CELLS", "MAX_STREAM_CELLS", "MAX_RATE", "MIN_RATE",
           "MAX_TIME", "MIN_TIME", "MAX_NAME", "WEIBULL_SHAPE", "SCV_MAX", "Where", "show", "number", "in_range",
           "rate", "integer", "name", "vector", "rates", "matrix", "size_problem", "duplicate"]

# Limits of a system (docs/input-validation.md). They keep every derived
# quantity finite (rates x horizons, 1/rates, N x M matrices) and every matrix
# in memory; the scenario schema (``scenarios/schema.py``) uses the same values.
MAX_CLASSES = 1_000
MAX_MACHINES = 1_000_000
MAX_GROUPS = 200_000  # declared groups (one per machine for System.from_arrays)
MAX_CELLS = 20_000_000  # N x M: one float64 rate matrix <= 160 MB
MAX_STREAM_CELLS = 2_000_000  # N x M per-machine arrival rates (alpha_matrix), kept as Python tuples
MAX_RATE = 1e9  # arrival, execution and failure rates (per time unit)
MIN_RATE = 1e-12  # smallest positive rate (0 = "cannot run" where allowed)
MAX_TIME = 1e15  # means and scales of times (fault durations, Weibull scale, steps)
MIN_TIME = 1e-9
MAX_NAME = 200  # ids and names (characters)
WEIBULL_SHAPE = (0.1, 100.0)
SCV_MAX = 1e4


class Where:
    """A field's full path for messages: ``str(Where("mu")[0][1])`` is ``field 'mu[0][1]'``."""

    __slots__ = ("prefix", "path")

    def __init__(self, path: str, prefix: str = "") -> None:
        self.prefix, self.path = prefix, path

    def __getitem__(self, k: Any) -> "Where":
        return Where(f"{self.path}[{k}]", self.prefix)

    def __str__(self) -> str:
        return f"{self.prefix}field '{self.path}'"


def number(where: Any, x: Any) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise ModelError(f"{where}: expected a number, got {show(x)}")
    try:
        v = float(x)
    except OverflowError:
        raise ModelError(f"{where}: number too large, got {show(x)}") from None
    if not np.isfinite(v):
        raise ModelError(f"{where}: expected a finite number, got {show(x)}")
    return v


def in_range(where: Any, v: float, lo: float, hi: float, what: str = "", lo_open: bool = False) -> float:
    """Range check: ``lo <= v <= hi`` (``lo < v`` with ``lo_open``)."""
    if (v <= lo if lo_open else v < lo) or v > hi:
        lo_s = f"> {lo:g}" if lo_open else f">= {lo:g}"
        raise ModelError(f"{where}: {what + ' ' if what else ''}must be {lo_s} and <= {hi:g}, got {show(v)}")
    return v


def rate(where: Any, x: Any, *, zero_ok: bool, what: str = "rate") -> float:
    """A rate: ``MIN_RATE <= v <= MAX_RATE`` (or exactly 0 where ``zero_ok``)."""
    v = number(where, x)
    if zero_ok and v == 0:
        return 0.0
    if v <= 0:
        raise ModelError(f"{where}: {what} must be {'>= 0' if zero_ok else '> 0'}, got {show(x)}")
    return in_range(where, v, MIN_RATE, MAX_RATE, what)


def integer(where: Any, x: Any, lo: int, hi: int) -> int:
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
        raise ModelError(f"{where}: expected an integer, got {show(x)}")
    if not lo <= x <= hi:
        raise ModelError(f"{where}: must lie in [{lo}, {hi:,}], got {show(int(x))}")
    return int(x)


def name(where: Any, x: Any, empty_ok: bool = False) -> str:
    if not isinstance(x, str):
        raise ModelError(f"{where}: expected a string, got {show(x)}")
    if not x and not empty_ok:
        raise ModelError(f"{where}: expected a non-empty string, got ''")
    if len(x) > MAX_NAME:
        raise ModelError(f"{where}: at most {MAX_NAME} characters, got {len(x):,}")
    return x


def vector(where: Any, xs: Any, n: int | None = None) -> tuple[float, ...]:
    if isinstance(xs, np.ndarray) and xs.ndim == 1 and xs.dtype.kind in "iuf":
        # fast path for arrays (System.from_arrays with many machines)
        v = xs.astype(float)
        bad = np.flatnonzero(~np.isfinite(v))
        if bad.size:
            raise ModelError(f"{where[int(bad[0])]}: expected a finite number, got {show(xs[bad[0]])}")
        out = tuple(v.tolist())
    else:
        if isinstance(xs, (str, bytes)) or not isinstance(xs, (Sequence, np.ndarray)):
            raise ModelError(f"{where}: expected a list of numbers, got {show(xs)}")
        out = tuple(number(where[k], x) for k, x in enumerate(xs))
    if n is not None and len(out) != n:
        raise ModelError(f"{where}: expected {n} values (one per class), got {len(out)}: {show(list(xs))}")
    return out


def rates(where: Any, xs: Any, *, zero_ok: bool, what: str = "rate") -> tuple[float, ...]:
    """A vector of rates, each 0 (if allowed) or in ``[MIN_RATE, MAX_RATE]``."""
    v = vector(where, xs)
    arr = np.asarray(v, dtype=float)
    ok = (arr >= MIN_RATE) & (arr <= MAX_RATE)
    if zero_ok:
        ok |= arr == 0
    bad = np.flatnonzero(~ok)
    if bad.size:
        rate(where[int(bad[0])], v[bad[0]], zero_ok=zero_ok, what=what)
    return v

def matrix(where: Any, mu: Any) -> np.ndarray:
    """A finite ``N x M`` float matrix from a list of rows or an array (messages name ``mu[i][j]``)."""
    if isinstance(mu, np.ndarray) and mu.dtype.kind in "iuf":
        if mu.ndim != 2:
            raise ModelError(f"{where}: expected a matrix (classes x machines), got an array of shape {mu.shape}")
        A = mu.astype(float)
    else:
        if isinstance(mu, (str, bytes, Mapping)) or not isinstance(mu, (Sequence, np.ndarray)):
            raise ModelError(f"{where}: expected a matrix (list of rows, one per class), got {show(mu)}")
        rows = list(mu)
        if rows and len(rows) <= MAX_CLASSES:
            width = None
            for i, r in enumerate(rows):
                if isinstance(r, (str, bytes, Mapping)) or not isinstance(r, (Sequence, np.ndarray)):
                    raise ModelError(f"{where[i]}: expected a row of rates, got {show(r)}")
                if width is None:
                    width = len(r)
                elif len(r) != width:
                    raise ModelError(f"{where[i]}: expected {width} columns like row 0, got {len(r)}")
                if len(r) > MAX_MACHINES:
                    raise ModelError(f"{where[i]}: at most {MAX_MACHINES:,} machines, got {len(r):,}")
            A = np.asarray([vector(where[i], r) for i, r in enumerate(rows)], dtype=float)
        else:
            A = np.zeros((len(rows), 0))
    N, M = A.shape
    if N == 0 or M == 0:
        raise ModelError(f"{where}: empty matrix (need at least one class and one machine)")
    if N > MAX_CLASSES or M > MAX_MACHINES or N * M > MAX_CELLS:
        raise ModelError(f"{where}: {N:,} x {M:,} exceeds the limits ({MAX_CLASSES:,} classes, "
                         f"{MAX_MACHINES:,} machines, {MAX_CELLS:,} rates)")
    ok = np.isfinite(A) & (A <= MAX_RATE) & ((A == 0) | (A >= MIN_RATE))
    if not ok.all():
        i, j = (int(x[0]) for x in np.nonzero(~ok))
        rate(where[i][j], A[i, j], zero_ok=True, what="execution rate")
    return A


def size_problem(N: int, M: int, n_groups: int) -> str | None:
    """What the limits refuse in ``N`` classes x ``M`` machines in ``n_groups`` groups, or None.

    One text for :class:`System` and the scenario loader (which names its own field)."""
    if N > MAX_CLASSES:
        return f"{N:,} task classes exceed the limit of {MAX_CLASSES:,}"
    if M > MAX_MACHINES:
        return f"{M:,} machines in all exceed the limit of {MAX_MACHINES:,}"
    if N * M > MAX_CELLS:
        return (f"N x M = {N:,} x {M:,} = {N * M:,} rates exceed the limit of {MAX_CELLS:,} "
                f"(a {N * M * 8 / 1e6:,.0f} MB matrix)")
    if n_groups > MAX_GROUPS:
        return (f"{n_groups:,} machine groups in all exceed the limit of {MAX_GROUPS:,} "
                "(give identical machines as one group with a count)")
    return None


def duplicate(names: Sequence[str]) -> tuple[int, str] | None:
    """``(index, name)`` of the first name that repeats an earlier one, or None."""
    seen: set[str] = set()
    for k, n in enumerate(names):
        if n in seen:
            return k, n
        seen.add(n)
    return None
