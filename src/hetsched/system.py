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

__all__ = ["MachineGroup", "Failures", "CpuChain", "System", "EXEC_DISTS"]

EXEC_DISTS = ("exp", "det", "hyperexp")
UP_DISTS = ("exp", "hyperexp", "weibull")
DOWN_DISTS = ("exp", "hyperexp", "const")


def _num(where: str, x: Any) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise ModelError(f"{where}: expected a number, got {x!r}")
    v = float(x)
    if not np.isfinite(v):
        raise ModelError(f"{where}: expected a finite number, got {x!r}")
    return v


def _vec(where: str, xs: Any, n: int | None = None) -> tuple[float, ...]:
    if isinstance(xs, (str, bytes)) or not isinstance(xs, (Sequence, np.ndarray)):
        raise ModelError(f"{where}: expected a list of numbers, got {xs!r}")
    out = tuple(_num(f"{where}[{k}]", x) for k, x in enumerate(xs))
    if n is not None and len(out) != n:
        raise ModelError(f"{where}: expected {n} values (one per class), got {len(out)}: {list(xs)!r}")
    return out


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
        if isinstance(self.count, bool) or not isinstance(self.count, (int, np.integer)) or self.count < 1:
            raise ModelError(f"group {self.name!r} field 'count': expected a positive integer, got {self.count!r}")
        object.__setattr__(self, "mu", _vec(f"group {self.name!r} field 'mu'", self.mu))
        for i, m in enumerate(self.mu):
            if m < 0:
                raise ModelError(f"group {self.name!r} field 'mu[{i}]': execution rate must be >= 0, got {m!r}")
        for fld in ("weibull_shape", "weibull_scale"):
            v = getattr(self, fld)
            if v is not None and _num(f"group {self.name!r} field '{fld}'", v) <= 0:
                raise ModelError(f"group {self.name!r} field '{fld}': must be > 0, got {v!r}")


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
        P = np.asarray(self.P, dtype=float)
        k = len(self.levels)
        if P.shape != (k, k):
            raise ModelError(f"cpu_chain field 'P': expected a {k}x{k} matrix, got shape {P.shape}")
        if (P < 0).any():
            raise ModelError(f"cpu_chain field 'P': probabilities must be >= 0, got {P.tolist()}")
        for r in range(k):
            s = P[r].sum()
            if s != 0 and abs(s - 1) > 2e-3:
                raise ModelError(f"cpu_chain field 'P[{r}]': row must sum to 1 (or be all 0), sums to {s:.6g}")
        if not all(0 <= lv <= 1 for lv in self.levels):
            raise ModelError(f"cpu_chain field 'levels': must lie in [0, 1], got {self.levels}")
        if self.step <= 0:
            raise ModelError(f"cpu_chain field 'step': must be > 0, got {self.step}")

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
            raise ModelError(f"failures field 'up_dist': expected one of {UP_DISTS}, got {self.up_dist!r}")
        if self.down_dist not in DOWN_DISTS:
            raise ModelError(f"failures field 'down_dist': expected one of {DOWN_DISTS}, got {self.down_dist!r}")
        if self.up_dist != "weibull" and not _num("failures field 'rate'", self.rate) > 0:
            raise ModelError(f"failures field 'rate': must be > 0, got {self.rate!r}")
        if not _num("failures field 'mean_down'", self.mean_down) > 0:
            raise ModelError(f"failures field 'mean_down': must be > 0, got {self.mean_down!r}")
        if _num("failures field 'scv'", self.scv) < 1:
            raise ModelError(f"failures field 'scv': hyperexponential needs scv >= 1, got {self.scv!r}")

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
        object.__setattr__(self, "alpha", _vec("field 'alpha'", self.alpha))
        N = len(self.alpha)
        if N == 0:
            raise ModelError("field 'alpha': at least one task class is needed, got []")
        for i, a in enumerate(self.alpha):
            if not a > 0:
                raise ModelError(f"field 'alpha[{i}]': arrival rate must be > 0, got {a!r}")
        groups = tuple(self.groups)
        if not groups:
            raise ModelError("field 'groups': at least one machine is needed, got none")
        object.__setattr__(self, "groups", groups)
        for g in groups:
            if len(g.mu) != N:
                raise ModelError(
                    f"group {g.name!r} field 'mu': expected {N} rates (one per class), got {len(g.mu)}: {list(g.mu)}"
                )
        names = [g.name for g in groups]
        if len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            raise ModelError(f"field 'groups': group names must be unique, got duplicates {dup}")
        M = sum(g.count for g in groups)
        if self.availability is not None:
            av = _vec("field 'availability'", self.availability)
            if len(av) != M:
                raise ModelError(f"field 'availability': expected {M} values (one per machine), got {len(av)}")
            for j, a in enumerate(av):
                if not 0 <= a <= 1:
                    raise ModelError(f"field 'availability[{j + 1}]' (machine {j + 1}): must lie in [0, 1], got {a!r}")
            object.__setattr__(self, "availability", av)
        if self.exec_dist not in EXEC_DISTS:
            raise ModelError(f"field 'exec_dist': expected one of {EXEC_DISTS}, got {self.exec_dist!r}")
        mu = self.mu
        for i in range(N):
            if not (mu[i] > 0).any():
                raise ModelError(f"field 'mu': class {i + 1} cannot run on any machine (all rates are 0)")
        if self.alpha_matrix is not None:
            A = np.asarray(self.alpha_matrix, dtype=float)
            if A.shape != (N, M):
                raise ModelError(f"field 'alpha_matrix': expected shape {N}x{M} (classes x machines), got {A.shape}")
            if (A < 0).any() or not np.isfinite(A).all():
                raise ModelError("field 'alpha_matrix': rates must be finite and >= 0")
            if not np.allclose(A.sum(axis=1), self.alpha, rtol=1e-9):
                raise ModelError(
                    f"field 'alpha_matrix': row sums {A.sum(axis=1).tolist()} differ from 'alpha' {list(self.alpha)}"
                )
        if self.class_names is not None and len(self.class_names) != N:
            raise ModelError(f"field 'class_names': expected {N} names, got {len(self.class_names)}")

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

    @classmethod
    def from_arrays(cls, alpha: Iterable[float], mu: Iterable[Iterable[float]], *, id: str = "custom",
                    machine_names: Sequence[str] | None = None, **fields: Any) -> "System":
        """A system from an arrival vector ``alpha`` (N) and a rate matrix ``mu`` (N x M).

        One group per machine (identical machines are still recognised by the
        LP, :meth:`lp_groups`); other fields (``availability``, ``exec_dist``,
        ``failures``, ``class_names``, ``title``, ...) as keywords.
        """
        return cls(id=id, alpha=tuple(_vec("field 'alpha'", alpha)), groups=groups_from_matrix(mu, machine_names),
                   **fields)


def groups_from_matrix(mu: Iterable[Iterable[float]], names: Sequence[str] | None = None) -> tuple[MachineGroup, ...]:
    """One group of one machine per column of an ``N x M`` rate matrix."""
    rows = [list(r) for r in mu]
    if not rows:
        raise ModelError("field 'mu': empty matrix")
    M = len(rows[0])
    for i, r in enumerate(rows):
        if len(r) != M:
            raise ModelError(f"field 'mu[{i}]': expected {M} columns like row 0, got {len(r)}")
        for j, x in enumerate(r):
            v = _num(f"field 'mu[{i}][{j}]'", x)
            if v < 0:
                raise ModelError(f"field 'mu[{i}][{j}]': execution rate must be >= 0, got {x!r}")
    names = list(names) if names is not None else [f"m{j + 1}" for j in range(M)]
    if len(names) != M:
        raise ModelError(f"field 'machine_names': expected {M} names, got {len(names)}")
    return tuple(MachineGroup(names[j], 1, tuple(r[j] for r in rows)) for j in range(M))
