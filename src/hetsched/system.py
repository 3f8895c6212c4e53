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

Classes and machines have names (``class_names``, ``machine_names``: the
user's, from a scenario file or :meth:`System.from_arrays`, or ``c1 ..`` and
``m1 ..``); every output numbers them from 1 and shows the names. The arrays
(``mu``, ``a``, ``alpha_array``, ...) are computed once per system.

Nothing here holds engine state or random generators. Validation errors name
the field and the bad value (:class:`~hetsched.errors.ModelError`); the checks
and limits of single fields are in :mod:`hetsched.fields`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from .errors import ModelError
from .fields import (  # noqa: F401 (the limits stay importable from here)
    MAX_CELLS,
    MAX_CLASSES,
    MAX_GROUPS,
    MAX_MACHINES,
    MAX_NAME,
    MAX_RATE,
    MAX_STREAM_CELLS,
    MAX_TIME,
    MIN_RATE,
    MIN_TIME,
    SCV_MAX,
    WEIBULL_SHAPE,
    duplicate,
    size_problem,
)
from .fields import Where as W
from .fields import in_range as _in
from .fields import integer as _int
from .fields import matrix as _matrix
from .fields import name as _name
from .fields import number as _num
from .fields import rate as _rate
from .fields import rates as _rates
from .fields import show as _show
from .fields import vector as _vec

__all__ = ["MachineGroup", "Failures", "CpuChain", "System", "EXEC_DISTS", "groups_from_matrix",
           "default_class_names"]

EXEC_DISTS = ("exp", "det", "hyperexp")
UP_DISTS = ("exp", "hyperexp", "weibull")
DOWN_DISTS = ("exp", "hyperexp", "const")


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

    @classmethod
    def _checked(cls, name: str, count: int, mu: tuple[float, ...]) -> "MachineGroup":
        """A group of values already checked (a validated rate matrix's column)."""
        g = object.__new__(cls)
        g.__dict__.update(name=name, count=count, mu=mu, cpu_chain=None, weibull_shape=None, weibull_scale=None)
        return g


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


def default_class_names(n: int) -> tuple[str, ...]:
    """The names of ``n`` unnamed classes: ``c1 .. cn`` (as unnamed machines are ``m1 .. mM``)."""
    return tuple(f"c{i + 1}" for i in range(n))


@dataclass(frozen=True, repr=False)
class System:
    """A heterogeneous computing system (see module docstring).

    ``class_names`` and ``machine_names`` are always defined: the user's names
    (``class_names=``, group names, ``machine_names=`` of :meth:`from_arrays`)
    or the defaults ``c1 ..`` and ``m1 ..``. The array views (``mu``, ``a``,
    ``alpha_array``, ...) are computed once and shared: treat them as
    read-only (copy before changing one). They stay writable so that compiled
    kernels see the same array type as for any other float array.
    """

    id: str
    alpha: tuple[float, ...]
    groups: tuple[MachineGroup, ...]
    title: str = ""
    source: str = ""
    availability: tuple[float, ...] | None = None  # per machine; None = all 1
    failures: Failures | None = None
    exec_dist: str = "exp"
    alpha_matrix: tuple[tuple[float, ...], ...] | None = None  # N x M, per-machine streams
    class_names: tuple[str, ...] | None = None  # None = the defaults c1, c2, ...
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
        if isinstance(self.groups, (str, bytes)) or not isinstance(self.groups, Iterable):
            raise ModelError(f"field 'groups': expected a list of MachineGroup, got {_show(self.groups)}")
        groups = tuple(self.groups)
        if not groups:
            raise ModelError("field 'groups': at least one machine is needed, got none")
        for k, g in enumerate(groups):
            if not isinstance(g, MachineGroup):
                raise ModelError(f"field 'groups[{k}]': expected a MachineGroup, got {_show(g)}")
        object.__setattr__(self, "groups", groups)
        M = sum(g.count for g in groups)
        problem = size_problem(N, M, len(groups))
        if problem:
            raise ModelError(f"field '{'alpha' if N > MAX_CLASSES else 'groups'}': {problem}")
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
        dup = duplicate([g.name for g in groups])
        if dup:
            raise ModelError(f"field 'groups': group names must be unique, got {dup[1]!r} twice")
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
            self._check_alpha_matrix(N, M)
        if self.class_names is None:
            object.__setattr__(self, "class_names", default_class_names(N))
        else:
            cn = self.class_names
            if isinstance(cn, (str, bytes)) or not isinstance(cn, (Sequence, np.ndarray)):
                raise ModelError(f"field 'class_names': expected a list of {N} names, got {_show(cn)}")
            if len(cn) != N:
                raise ModelError(f"field 'class_names': expected {N} names (one per class), got {len(cn)}")
            cn = tuple(_name(W("class_names")[i], c) for i, c in enumerate(cn))
            dup = duplicate(cn)
            if dup:
                raise ModelError(f"field 'class_names[{dup[0]}]': class names must be unique, got {dup[1]!r} twice")
            object.__setattr__(self, "class_names", cn)

    def _check_alpha_matrix(self, N: int, M: int) -> None:
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
        execution rate of class ``i`` on machine ``j`` (``0`` = cannot run);
        ``class_names`` and ``machine_names`` name them (default ``c1 ..``,
        ``m1 ..``). Validated exactly like ``System(...)`` and scenario files
        (same limits: :data:`MAX_RATE`, :data:`MAX_MACHINES`, ...), the matrix
        once, vectorised; raises :class:`~hetsched.errors.ModelError` naming
        the field and the value.
        """
        return cls(
            id=id, alpha=alpha if isinstance(alpha, np.ndarray) else _vec(W("alpha"), alpha),
            groups=groups_from_matrix(mu, machine_names), title=title, source=source,
            availability=availability, failures=failures, exec_dist=exec_dist,
            alpha_matrix=alpha_matrix, class_names=class_names,
        )

    # -- derived views: computed once, shared (the System is frozen) -------------
    def __getstate__(self) -> dict[str, Any]:
        return {f.name: self.__dict__[f.name] for f in fields(self)}  # the fields, not the cached views

    @cached_property
    def N(self) -> int:
        return len(self.alpha)

    @cached_property
    def M(self) -> int:
        return sum(g.count for g in self.groups)

    @cached_property
    def alpha_array(self) -> np.ndarray:
        return np.asarray(self.alpha, dtype=float)

    @cached_property
    def group_of(self) -> np.ndarray:
        """Group index of every machine (machines ordered group by group)."""
        return np.repeat(np.arange(len(self.groups)), [g.count for g in self.groups])

    @cached_property
    def mu_groups(self) -> np.ndarray:
        """``N x G`` nominal rates, one column per group."""
        return np.asarray([g.mu for g in self.groups], dtype=float).reshape(len(self.groups), -1).T

    @cached_property
    def mu(self) -> np.ndarray:
        """``N x M`` nominal execution rates ``mu'[i, j]``."""
        return self.mu_groups[:, self.group_of]

    @cached_property
    def a(self) -> np.ndarray:
        """CPU availability per machine (static ``a_j``; the CPU chain's mean where a group has one; else 1)."""
        if self.availability is not None:
            return np.asarray(self.availability, dtype=float)
        chains = [g.cpu_chain for g in self.groups]
        if any(c is not None for c in chains):
            mean_a = np.array([c.mean_availability() if c is not None else 1.0 for c in chains])
            return mean_a[self.group_of]
        return np.ones(self.M)

    @cached_property
    def mu_effective(self) -> np.ndarray:
        """``N x M`` effective rates ``a_j * mu'[i, j]`` (thesis §3.3)."""
        return self.mu * self.a[None, :]

    @cached_property
    def has_groups(self) -> bool:
        return any(g.count > 1 for g in self.groups)

    @cached_property
    def machine_names(self) -> tuple[str, ...]:
        """One name per machine: its group's name, numbered within groups of several
        (``P1 .. P10``; ``T.1-1`` where the group's name ends in a digit)."""
        out: list[str] = []
        for g in self.groups:
            if g.count == 1:
                out.append(g.name)
            else:
                sep = "-" if g.name[-1].isdigit() else ""
                out += [f"{g.name}{sep}{k + 1}" for k in range(g.count)]
        if len(set(out)) < len(out):  # a numbered member met another group's name: number every member
            out = [n for g in self.groups for n in ([g.name] if g.count == 1 else
                                                    [f"{g.name}#{k + 1}" for k in range(g.count)])]
        return tuple(out)

    @property
    def class_names_given(self) -> bool:
        """Whether the classes have names of the user's (not the defaults ``c1 ..``)."""
        return self.class_names != default_class_names(self.N)

    def machine_labels(self) -> list[str]:
        """Deprecated: use :attr:`machine_names`."""
        import warnings

        warnings.warn("System.machine_labels() is deprecated; use System.machine_names", DeprecationWarning,
                      stacklevel=2)
        return list(self.machine_names)

    @cached_property
    def _lp_groups(self) -> tuple[np.ndarray, np.ndarray]:
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
        return labels, np.bincount(labels, minlength=len(order))

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
        return self._lp_groups

    def with_(self, **changes: Any) -> "System":
        """A copy with some fields replaced (validated again); default class names follow a new N."""
        from dataclasses import replace

        if "class_names" not in changes and not self.class_names_given:
            changes["class_names"] = None
        return replace(self, **changes)

    def summary(self) -> str:
        return f"{self.id}: N={self.N} classes, M={self.M} machines in {len(self.groups)} groups"

    # -- display: a few lines, never the raw dataclass dump -----------------------
    def _parts(self) -> list[str]:
        def few(xs, k=6):
            xs = list(xs)
            return ", ".join(map(str, xs[:k])) + (f", ... ({len(xs):,} in all)" if len(xs) > k else "")

        classes = f"N = {self.N} classes" + (f" ({few(self.class_names)})" if self.class_names_given else "")
        groups = few((g.name if g.count == 1 else f"{g.name} x{g.count}") for g in self.groups)
        extra = [f"exec_dist {self.exec_dist}"]
        if self.failures is not None:
            extra.append(f"failures {self.failures.up_dist} up (rate {self.failures.rate:g}), "
                         f"mean down {self.failures.mean_down:g}")
        if self.availability is not None or any(g.cpu_chain is not None for g in self.groups):
            extra.append(f"mean availability {float(self.a.mean()):.4g}")
        return [f"{self.id}" + (f" — {self.title}" if self.title else ""),
                f"{classes}, alpha = [{few(f'{x:g}' for x in self.alpha)}]",
                f"M = {self.M:,} machines in {len(self.groups):,} groups: {groups}", "; ".join(extra)]

    def __repr__(self) -> str:
        head, *rest = self._parts()
        return f"System({head}\n  " + "\n  ".join(rest) + ")"

    def _repr_html_(self) -> str:
        import html

        e = html.escape
        head, *rest = self._parts()
        G, C = min(len(self.groups), 20), min(self.N, 12)
        cols = "".join(f"<th>{e(c)}</th>" for c in self.class_names[:C]) + ("<th>...</th>" if self.N > C else "")
        rows = "".join(
            f"<tr><td>{e(g.name)}</td><td>{g.count:,}</td>" + "".join(f"<td>{x:g}</td>" for x in g.mu[:C])
            + ("<td>...</td>" if self.N > C else "") + "</tr>" for g in self.groups[:G])
        more = f"<div><i>{len(self.groups) - G:,} more groups</i></div>" if len(self.groups) > G else ""
        return (f"<div><b>System {e(head)}</b><br>{'<br>'.join(e(x) for x in rest)}"
                f"<table><tr><th>group</th><th>count</th>{cols}</tr>{rows}</table>"
                f"<div><i>rates mu per class (columns) and group (rows)</i></div>{more}</div>")


def groups_from_matrix(mu: Any, names: Sequence[str] | None = None) -> tuple[MachineGroup, ...]:
    """One group of one machine per column of an ``N x M`` rate matrix (validated once, vectorised)."""
    A = _matrix(W("mu"), mu)
    M = A.shape[1]
    if M > MAX_GROUPS:
        raise ModelError(f"field 'mu': at most {MAX_GROUPS:,} machines as single-machine groups, got {M:,} "
                         "(give identical machines as groups)")
    if names is not None and (isinstance(names, (str, bytes)) or not isinstance(names, (Sequence, np.ndarray))):
        raise ModelError(f"field 'machine_names': expected a list of {M} names, got {_show(names)}")
    names = [_name(W("machine_names")[j], n) for j, n in enumerate(names)] if names is not None else \
        [f"m{j + 1}" for j in range(M)]
    if len(names) != M:
        raise ModelError(f"field 'machine_names': expected {M} names (one per machine), got {len(names)}")
    dup = duplicate(names)
    if dup:
        raise ModelError(f"field 'machine_names[{dup[0]}]': machine names must be unique, got {dup[1]!r} twice")
    # every rate of A is checked (_matrix), every name above: the groups are built without checking again
    return tuple(MachineGroup._checked(n, 1, col) for n, col in zip(names, map(tuple, A.T.tolist())))
