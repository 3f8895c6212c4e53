"""The system model: task classes, machines, groups, availability, failures.

A :class:`System` is inert, validated, frozen data (thesis §1.2, §1.4.1, §1.5.1):

* ``N`` task classes with arrival rates ``alpha[i] > 0`` (tasks per time unit);
  for decentralized grids (§1.5.1) an optional per-machine matrix
  ``alpha_matrix[i, j]`` whose row sums are ``alpha``;
* ``M`` machines described as **groups** of identical machines: a group has a
  count and one column of nominal execution rates ``mu'[i]`` (``0`` = cannot run
  class ``i``); ``mu`` expands the groups into the ``N x M`` matrix;
* CPU availabilities ``a[j]`` in ``[0, 1]`` (§3.3): the effective execution rate is
  ``a[j] * mu'[i, j]``;
* optionally a failure/repair process (:class:`Failures`, §3.4) and a per-group
  three-state CPU-availability Markov chain (Table 3.13, §3.4.5);
* the execution-time distribution family (``exp``, ``det``, ``hyperexp``).

Nothing here holds engine state or random generators. Validation errors name
the field and the bad value (:class:`~hetsched.errors.ModelError`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from .errors import ModelError
from .validation import show as _show  # the one short repr of a bad value in messages

__all__ = ["MachineGroup", "Failures", "CpuChain", "System", "EXEC_DISTS"]

EXEC_DISTS = ("exp", "det", "hyperexp")
UP_DISTS = ("exp", "hyperexp", "weibull")
DOWN_DISTS = ("exp", "hyperexp", "const")

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


class _Where:
    """A field's full path for messages: ``str(W("mu")[0][1])`` is ``field 'mu[0][1]'``."""

    __slots__ = ("prefix", "path")

    def __init__(self, path: str, prefix: str = "") -> None:
        self.prefix, self.path = prefix, path

    def __getitem__(self, k: Any) -> "_Where":
        return _Where(f"{self.path}[{k}]", self.prefix)

    def __str__(self) -> str:
        return f"{self.prefix}field '{self.path}'"


W = _Where


def _num(where: Any, x: Any) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise ModelError(f"{where}: expected a number, got {_show(x)}")
    try:
        v = float(x)
    except OverflowError:
        raise ModelError(f"{where}: number too large, got {_show(x)}") from None
    if not np.isfinite(v):
        raise ModelError(f"{where}: expected a finite number, got {_show(x)}")
    return v


def _in(where: Any, v: float, lo: float, hi: float, what: str = "", lo_open: bool = False) -> float:
    """Range check: ``lo <= v <= hi`` (``lo < v`` with ``lo_open``)."""
    if (v <= lo if lo_open else v < lo) or v > hi:
        lo_s = f"> {lo:g}" if lo_open else f">= {lo:g}"
        raise ModelError(f"{where}: {what + ' ' if what else ''}must be {lo_s} and <= {hi:g}, got {_show(v)}")
    return v


def _rate(where: Any, x: Any, *, zero_ok: bool, what: str = "rate") -> float:
    """A rate: ``MIN_RATE <= v <= MAX_RATE`` (or exactly 0 where ``zero_ok``)."""
    v = _num(where, x)
    if zero_ok and v == 0:
        return 0.0
    if v <= 0:
        raise ModelError(f"{where}: {what} must be {'>= 0' if zero_ok else '> 0'}, got {_show(x)}")
    return _in(where, v, MIN_RATE, MAX_RATE, what)


def _int(where: Any, x: Any, lo: int, hi: int) -> int:
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
        raise ModelError(f"{where}: expected an integer, got {_show(x)}")
    if not lo <= x <= hi:
        raise ModelError(f"{where}: must lie in [{lo}, {hi:,}], got {_show(int(x))}")
    return int(x)


def _name(where: Any, x: Any, empty_ok: bool = False) -> str:
    if not isinstance(x, str):
        raise ModelError(f"{where}: expected a string, got {_show(x)}")
    if not x and not empty_ok:
        raise ModelError(f"{where}: expected a non-empty string, got ''")
    if len(x) > MAX_NAME:
        raise ModelError(f"{where}: at most {MAX_NAME} characters, got {len(x):,}")
    return x


def _vec(where: Any, xs: Any, n: int | None = None) -> tuple[float, ...]:
    if isinstance(xs, np.ndarray) and xs.ndim == 1 and xs.dtype.kind in "iuf":
        # fast path for arrays (System.from_arrays with many machines)
        v = xs.astype(float)
        bad = np.flatnonzero(~np.isfinite(v))
        if bad.size:
            raise ModelError(f"{where[int(bad[0])]}: expected a finite number, got {_show(xs[bad[0]])}")
        out = tuple(v.tolist())
    else:
        if isinstance(xs, (str, bytes)) or not isinstance(xs, (Sequence, np.ndarray)):
            raise ModelError(f"{where}: expected a list of numbers, got {_show(xs)}")
        out = tuple(_num(where[k], x) for k, x in enumerate(xs))
    if n is not None and len(out) != n:
        raise ModelError(f"{where}: expected {n} values (one per class), got {len(out)}: {_show(list(xs))}")
    return out


def _rates(where: Any, xs: Any, *, zero_ok: bool, what: str = "rate") -> tuple[float, ...]:
    """A vector of rates, each 0 (if allowed) or in ``[MIN_RATE, MAX_RATE]``."""
    v = _vec(where, xs)
    arr = np.asarray(v, dtype=float)
    ok = (arr >= MIN_RATE) & (arr <= MAX_RATE)
    if zero_ok:
        ok |= arr == 0
    bad = np.flatnonzero(~ok)
    if bad.size:
        _rate(where[int(bad[0])], v[bad[0]], zero_ok=zero_ok, what=what)
    return v


@dataclass(frozen=True)
class MachineGroup:
    """``count`` identical machines with nominal rates ``mu[i]`` per class."""

    name: str
    count: int
    mu: tuple[float, ...]
    # Three-state CPU chain (100/50/33 %) of this group, or None (static a_j).
    cpu_chain: "CpuChain | None" = None
    # Weibull availability-time parameters of this group (§3.4.5), if any.
    weibull_shape: float | None = None
    weibull_scale: float | None = None

    def __post_init__(self) -> None:
        _name(W("name", "group "), self.name)
        pre = f"group {self.name!r} "
        if isinstance(self.count, bool) or not isinstance(self.count, (int, np.integer)) or self.count < 1:
            raise ModelError(f"{W('count', pre)}: expected a positive integer, got {_show(self.count)}")
        object.__setattr__(self, "count", _int(W("count", pre), self.count, 1, MAX_MACHINES))
        object.__setattr__(self, "mu", _rates(W("mu", pre), self.mu, zero_ok=True, what="execution rate"))
        if len(self.mu) > MAX_CLASSES:
            raise ModelError(f"{W('mu', pre)}: at most {MAX_CLASSES} classes, got {len(self.mu):,}")
        if self.cpu_chain is not None and not isinstance(self.cpu_chain, CpuChain):
            raise ModelError(f"{W('cpu_chain', pre)}: expected a CpuChain, got {_show(self.cpu_chain)}")
        if (self.weibull_shape is None) != (self.weibull_scale is None):
            raise ModelError(f"{W('weibull_shape', pre)}: give weibull_shape and weibull_scale together, or neither")
        if self.weibull_shape is not None:
            w = W("weibull_shape", pre)
            object.__setattr__(self, "weibull_shape", _in(w, _num(w, self.weibull_shape), *WEIBULL_SHAPE))
            w = W("weibull_scale", pre)
            object.__setattr__(self, "weibull_scale", _in(w, _num(w, self.weibull_scale), MIN_TIME, MAX_TIME))


@dataclass(frozen=True)
class CpuChain:
    """Discrete-time Markov chain of CPU availability (thesis §3.4.5, Table 3.13).

    ``P`` is the 3x3 one-step matrix over the states ``levels`` (default 100 %,
    50 %, 33 %), stepping every ``step`` time units. Rows of all zeros (a state
    the machine never visits, as printed in Table 3.13) are read as "stay".
    """

    P: tuple[tuple[float, ...], ...]
    levels: tuple[float, ...] = (1.0, 0.5, 0.33)
    step: float = 10.0

    def __post_init__(self) -> None:
        levels = _vec(W("levels", "cpu_chain "), self.levels)
        k = len(levels)
        if not 1 <= k <= 16:
            raise ModelError(f"cpu_chain field 'levels': expected 1 to 16 levels, got {k}")
        for x, lv in enumerate(levels):
            _in(W("levels", "cpu_chain ")[x], lv, 0.0, 1.0)
        if isinstance(self.P, (str, bytes)) or not isinstance(self.P, (Sequence, np.ndarray)) or len(self.P) != k:
            raise ModelError(f"cpu_chain field 'P': expected a {k}x{k} matrix (one row per level), got {_show(self.P)}")
        rows = tuple(_vec(W("P", "cpu_chain ")[r], row) for r, row in enumerate(self.P))
        for r, row in enumerate(rows):
            if len(row) != k:
                raise ModelError(f"cpu_chain field 'P[{r}]': expected {k} probabilities, got {len(row)}")
            for c, p in enumerate(row):
                _in(W("P", "cpu_chain ")[r][c], p, 0.0, 1.0, "probability")
            s = sum(row)
            if s != 0 and abs(s - 1) > 2e-3:
                raise ModelError(f"cpu_chain field 'P[{r}]': row must sum to 1 (or be all 0), sums to {s:.6g}")
        if not any(sum(row) > 0 for row in rows):
            raise ModelError("cpu_chain field 'P': every row is 0; at least one state must be visited")
        step = _in(W("step", "cpu_chain "), _num(W("step", "cpu_chain "), self.step), MIN_TIME, MAX_TIME)
        object.__setattr__(self, "P", rows)
        object.__setattr__(self, "levels", levels)
        object.__setattr__(self, "step", step)

    def matrix(self) -> np.ndarray:
        """Row-stochastic matrix: all-zero rows become self-loops, rows renormalised."""
        P = np.asarray(self.P, dtype=float).copy()
        for r in range(P.shape[0]):
            s = P[r].sum()
            if s == 0:
                P[r, r] = 1.0
            else:
                P[r] /= s
        return P

    def stationary(self) -> np.ndarray:
        """Stationary distribution ``pi`` (``pi P = pi``, ``sum pi = 1``).

        States unreachable from the states the printed row mass lives on get
        probability 0; for the reducible chains of Table 3.13 (a row of zeros)
        the chain is solved on the closed class containing the other states.
        """
        P = self.matrix()
        k = P.shape[0]
        # Closed communicating class reachable from the last state (the printed
        # chains always have mass on b/c); restrict to states with a nonzero row
        # in the printed table, which is where the machine actually lives.
        printed = np.asarray(self.P, dtype=float).sum(axis=1) > 0
        idx = np.flatnonzero(printed) if printed.any() else np.arange(k)
        Q = P[np.ix_(idx, idx)]
        Q = Q / Q.sum(axis=1, keepdims=True)
        A = np.vstack([Q.T - np.eye(len(idx)), np.ones(len(idx))])
        b = np.zeros(len(idx) + 1)
        b[-1] = 1.0
        pi_sub, *_ = np.linalg.lstsq(A, b, rcond=None)
        pi = np.zeros(k)
        pi[idx] = np.clip(pi_sub, 0, None)
        return pi / pi.sum()

    def mean_availability(self) -> float:
        """Steady-state CPU availability ``a = sum_x P_x * level_x`` (§3.4.5)."""
        return float(self.stationary() @ np.asarray(self.levels))


@dataclass(frozen=True)
class Failures:
    """Machine failure/repair process (thesis §3.4).

    Each machine alternates available periods (mean ``1/rate``) and fault periods
    (mean ``mean_down``). ``up_dist``: ``exp``, ``hyperexp`` (squared coefficient
    of variation ``scv``) or ``weibull`` (per-group shape/scale, §3.4.5);
    ``down_dist``: ``exp``, ``hyperexp`` or ``const``.
    """

    rate: float
    mean_down: float
    up_dist: str = "exp"
    down_dist: str = "exp"
    scv: float = 5.0

    def __post_init__(self) -> None:
        if self.up_dist not in UP_DISTS:
            raise ModelError(f"failures field 'up_dist': expected one of {', '.join(UP_DISTS)}, got {_show(self.up_dist)}")
        if self.down_dist not in DOWN_DISTS:
            raise ModelError(
                f"failures field 'down_dist': expected one of {', '.join(DOWN_DISTS)}, got {_show(self.down_dist)}"
            )
        if self.up_dist == "weibull":
            # rate unused (per-group Weibull up times); 0 or a valid rate
            object.__setattr__(self, "rate", _rate(W("rate", "failures "), self.rate, zero_ok=True))
        else:
            object.__setattr__(self, "rate", _rate(W("rate", "failures "), self.rate, zero_ok=False))
        w = W("mean_down", "failures ")
        object.__setattr__(self, "mean_down", _in(w, _num(w, self.mean_down), MIN_TIME, MAX_TIME))
        w = W("scv", "failures ")
        object.__setattr__(self, "scv", _in(w, _num(w, self.scv), 1.0, SCV_MAX, "hyperexponential scv"))

    @property
    def mean_up(self) -> float:
        return 1.0 / self.rate if self.rate > 0 else float("nan")


@dataclass(frozen=True)
class System:
    """A heterogeneous computing system (see module docstring)."""

    id: str
    alpha: tuple[float, ...]
    groups: tuple[MachineGroup, ...]
    title: str = ""
    source: str = ""
    availability: tuple[float, ...] | None = None  # per machine; None = all 1
    failures: Failures | None = None
    exec_dist: str = "exp"
    alpha_matrix: tuple[tuple[float, ...], ...] | None = None  # N x M, per-machine streams
    class_names: tuple[str, ...] | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _name(W("id"), self.id)
        for fld in ("title", "source"):
            if not isinstance(getattr(self, fld), str) or len(getattr(self, fld)) > 10 * MAX_NAME:
                raise ModelError(f"field {fld!r}: expected a string of at most {10 * MAX_NAME} characters, "
                                 f"got {_show(getattr(self, fld))}")
        object.__setattr__(self, "alpha", _rates(W("alpha"), self.alpha, zero_ok=False, what="arrival rate"))
        N = len(self.alpha)
        if N == 0:
            raise ModelError("field 'alpha': at least one task class is needed, got []")
        if N > MAX_CLASSES:
            raise ModelError(f"field 'alpha': at most {MAX_CLASSES:,} task classes, got {N:,}")
        if isinstance(self.groups, (str, bytes)) or not isinstance(self.groups, Iterable):
            raise ModelError(f"field 'groups': expected a list of MachineGroup, got {_show(self.groups)}")
        groups = tuple(self.groups)
        if not groups:
            raise ModelError("field 'groups': at least one machine is needed, got none")
        for k, g in enumerate(groups):
            if not isinstance(g, MachineGroup):
                raise ModelError(f"field 'groups[{k}]': expected a MachineGroup, got {_show(g)}")
        if len(groups) > MAX_GROUPS:
            raise ModelError(f"field 'groups': at most {MAX_GROUPS:,} groups, got {len(groups):,}")
        object.__setattr__(self, "groups", groups)
        M_total = sum(g.count for g in groups)
        if M_total > MAX_MACHINES:
            raise ModelError(f"field 'groups': at most {MAX_MACHINES:,} machines in all, got {M_total:,}")
        if N * M_total > MAX_CELLS:
            raise ModelError(
                f"field 'groups': N x M = {N:,} x {M_total:,} = {N * M_total:,} rates exceed the limit of "
                f"{MAX_CELLS:,} (a {N * M_total * 8 / 1e6:,.0f} MB matrix)"
            )
        if self.failures is not None and not isinstance(self.failures, Failures):
            raise ModelError(f"field 'failures': expected a Failures, got {_show(self.failures)}")
        if self.failures is not None and self.failures.up_dist == "weibull":
            missing = [g.name for g in groups if g.weibull_shape is None]
            if missing:
                raise ModelError(
                    f"failures field 'up_dist': 'weibull' needs weibull_shape/scale on every group; "
                    f"missing on group {missing[0]!r}"
                )
        if not isinstance(self.meta, Mapping):
            raise ModelError(f"field 'meta': expected a table (mapping), got {_show(self.meta)}")
        for g in groups:
            if len(g.mu) != N:
                raise ModelError(
                    f"group {g.name!r} field 'mu': expected {N} rates (one per class), got {len(g.mu)}: {_show(list(g.mu))}"
                )
        names = [g.name for g in groups]
        if len(set(names)) != len(names):
            from collections import Counter

            dup = sorted(n for n, c in Counter(names).items() if c > 1)
            raise ModelError(f"field 'groups': group names must be unique, got duplicates {_show(dup)}")
        M = sum(g.count for g in groups)
        if self.availability is not None:
            av = _vec(W("availability"), self.availability)
            if len(av) != M:
                raise ModelError(f"field 'availability': expected {M} values (one per machine), got {len(av)}")
            bad = np.flatnonzero(~((np.asarray(av) >= 0) & (np.asarray(av) <= 1)))
            if bad.size:
                j = int(bad[0])
                raise ModelError(f"field 'availability[{j}]' (machine {j + 1}): must lie in [0, 1], got {av[j]!r}")
            object.__setattr__(self, "availability", av)
        if self.exec_dist not in EXEC_DISTS:
            raise ModelError(f"field 'exec_dist': expected one of {', '.join(EXEC_DISTS)}, got {_show(self.exec_dist)}")
        runnable = (self.mu_groups > 0).any(axis=1)
        if not runnable.all():
            i = int(np.flatnonzero(~runnable)[0])
            raise ModelError(f"field 'mu': class {i + 1} cannot run on any machine (all rates are 0)")
        if self.alpha_matrix is not None:
            am = self.alpha_matrix
            if N * M > MAX_STREAM_CELLS:
                raise ModelError(f"field 'alpha_matrix': N x M = {N * M:,} per-machine rates exceed the limit of "
                                 f"{MAX_STREAM_CELLS:,}")
            if isinstance(am, (str, bytes)) or not isinstance(am, (Sequence, np.ndarray)) or len(am) != N:
                raise ModelError(f"field 'alpha_matrix': expected {N} rows (one per class), got {_show(am)}")
            rows = tuple(_rates(W("alpha_matrix")[i], r, zero_ok=True) for i, r in enumerate(am))
            for i, r in enumerate(rows):
                if len(r) != M:
                    raise ModelError(f"field 'alpha_matrix[{i}]': expected {M} per-machine rates, got {len(r)}")
            object.__setattr__(self, "alpha_matrix", rows)
            A = np.asarray(rows, dtype=float)
            if not np.allclose(A.sum(axis=1), self.alpha, rtol=1e-9):
                raise ModelError(
                    f"field 'alpha_matrix': row sums {_show(A.sum(axis=1).tolist())} differ from 'alpha' {_show(list(self.alpha))}"
                )
        if self.class_names is not None:
            if isinstance(self.class_names, (str, bytes)) or not isinstance(self.class_names, Sequence):
                raise ModelError(f"field 'class_names': expected a list of {N} names, got {_show(self.class_names)}")
            if len(self.class_names) != N:
                raise ModelError(f"field 'class_names': expected {N} names, got {len(self.class_names)}")
            object.__setattr__(self, "class_names", tuple(
                _name(W("class_names")[i], c) for i, c in enumerate(self.class_names)))

    @classmethod
    def from_arrays(
        cls,
        alpha: Any,
        mu: Any,
        *,
        id: str = "custom",
        availability: Any = None,
        failures: Failures | None = None,
        exec_dist: str = "exp",
        alpha_matrix: Any = None,
        machine_names: Sequence[str] | None = None,
        class_names: Sequence[str] | None = None,
        title: str = "",
        source: str = "",
    ) -> "System":
        """A system of ``M`` single machines from an ``N x M`` rate matrix.

        ``alpha[i]`` is the arrival rate of class ``i`` and ``mu[i, j]`` the
        execution rate of class ``i`` on machine ``j`` (``0`` = cannot run).
        Validated exactly like ``System(...)`` and scenario files (same limits:
        :data:`MAX_RATE`, :data:`MAX_MACHINES`, ...); raises
        :class:`~hetsched.errors.ModelError` naming the field and the value.
        """
        return cls(
            id=id, alpha=alpha if isinstance(alpha, np.ndarray) else _vec(W("alpha"), alpha),
            groups=groups_from_matrix(mu, machine_names), title=title, source=source,
            availability=availability, failures=failures, exec_dist=exec_dist,
            alpha_matrix=alpha_matrix, class_names=class_names,
        )

    # -- derived views (cheap; arrays are fresh copies, the System stays frozen)
    @property
    def N(self) -> int:
        return len(self.alpha)

    @property
    def M(self) -> int:
        return sum(g.count for g in self.groups)

    @property
    def alpha_array(self) -> np.ndarray:
        return np.asarray(self.alpha, dtype=float)

    @property
    def group_of(self) -> np.ndarray:
        """Group index of every machine (machines ordered group by group)."""
        return np.repeat(np.arange(len(self.groups)), [g.count for g in self.groups])

    @property
    def mu_groups(self) -> np.ndarray:
        """``N x G`` nominal rates, one column per group."""
        return np.asarray([g.mu for g in self.groups], dtype=float).T

    @property
    def mu(self) -> np.ndarray:
        """``N x M`` nominal execution rates ``mu'[i, j]``."""
        return self.mu_groups[:, self.group_of]

    @property
    def a(self) -> np.ndarray:
        """CPU availability per machine (static ``a_j``; 1 where not given)."""
        if self.availability is not None:
            return np.asarray(self.availability, dtype=float)
        out = np.ones(self.M)
        chains = [g.cpu_chain for g in self.groups]
        if any(c is not None for c in chains):
            mean_a = np.array([c.mean_availability() if c is not None else 1.0 for c in chains])
            out = mean_a[self.group_of]
        return out

    @property
    def mu_effective(self) -> np.ndarray:
        """``N x M`` effective rates ``a_j * mu'[i, j]`` (thesis §3.3)."""
        return self.mu * self.a[None, :]

    @property
    def has_groups(self) -> bool:
        return any(g.count > 1 for g in self.groups)

    def machine_labels(self) -> list[str]:
        out = []
        for g in self.groups:
            out += [g.name] if g.count == 1 else [f"{g.name}{k + 1}" for k in range(g.count)]
        return out

    def lp_groups(self) -> tuple[np.ndarray, np.ndarray]:
        """Machines that are interchangeable for the allocation LP.

        Two machines are interchangeable when they have the same nominal rate
        column and the same availability ``a_j`` (whatever group they were
        declared in). Returns ``(labels, counts)``: ``labels[j]`` is the LP-group
        index of machine ``j`` (in order of first appearance). Machines of one
        declared group with different availabilities (e.g. System 3.A case 4)
        fall in different LP groups; repeated copies of a group (System 3.F)
        fall in one.
        """
        # Distinct rate columns among the (few) declared groups, then combine
        # with the distinct availabilities: 1-D integer keys, cheap to unique.
        _, col_id = np.unique(self.mu_groups.T, axis=0, return_inverse=True)
        a_vals, a_id = np.unique(np.round(self.a, 12), return_inverse=True)
        keys = col_id.ravel()[self.group_of] * len(a_vals) + a_id.ravel()
        _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        # relabel in order of first appearance (stable, readable group order)
        order = np.argsort(first)
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        labels = rank[inverse.ravel()].astype(np.int64)
        counts = np.bincount(labels, minlength=len(order))
        return labels, counts

    def with_(self, **changes: Any) -> "System":
        """A copy with some fields replaced (validated again)."""
        from dataclasses import replace

        return replace(self, **changes)

    def summary(self) -> str:
        return f"{self.id}: N={self.N} classes, M={self.M} machines in {len(self.groups)} groups"


def _matrix(where: Any, mu: Any) -> np.ndarray:
    """A finite ``N x M`` float matrix from a list of rows or an array (messages name ``mu[i][j]``)."""
    if isinstance(mu, np.ndarray) and mu.dtype.kind in "iuf":
        if mu.ndim != 2:
            raise ModelError(f"{where}: expected a matrix (classes x machines), got an array of shape {mu.shape}")
        A = mu.astype(float)
    else:
        if isinstance(mu, (str, bytes, Mapping)) or not isinstance(mu, (Sequence, np.ndarray)):
            raise ModelError(f"{where}: expected a matrix (list of rows, one per class), got {_show(mu)}")
        rows = list(mu)
        if rows and len(rows) <= MAX_CLASSES:
            width = None
            for i, r in enumerate(rows):
                if isinstance(r, (str, bytes, Mapping)) or not isinstance(r, (Sequence, np.ndarray)):
                    raise ModelError(f"{where[i]}: expected a row of rates, got {_show(r)}")
                if width is None:
                    width = len(r)
                elif len(r) != width:
                    raise ModelError(f"{where[i]}: expected {width} columns like row 0, got {len(r)}")
                if len(r) > MAX_MACHINES:
                    raise ModelError(f"{where[i]}: at most {MAX_MACHINES:,} machines, got {len(r):,}")
            A = np.asarray([_vec(where[i], r) for i, r in enumerate(rows)], dtype=float)
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
        _rate(where[i][j], A[i, j], zero_ok=True, what="execution rate")
    return A


def groups_from_matrix(mu: Any, names: Sequence[str] | None = None) -> tuple[MachineGroup, ...]:
    """One group of one machine per column of an ``N x M`` rate matrix."""
    A = _matrix(W("mu"), mu)
    M = A.shape[1]
    if M > MAX_GROUPS:
        raise ModelError(f"field 'mu': at most {MAX_GROUPS:,} machines as single-machine groups, got {M:,} "
                         "(give identical machines as groups)")
    if names is not None and (isinstance(names, (str, bytes)) or not isinstance(names, (Sequence, np.ndarray))):
        raise ModelError(f"field 'machine_names': expected a list of {M} names, got {_show(names)}")
    names = list(names) if names is not None else [f"m{j + 1}" for j in range(M)]
    if len(names) != M:
        raise ModelError(f"field 'machine_names': expected {M} names, got {len(names)}")
    cols = A.T
    return tuple(MachineGroup(names[j], 1, cols[j]) for j in range(M))
