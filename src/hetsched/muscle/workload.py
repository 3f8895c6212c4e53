"""Multicluster system and moldable-job workload of He et al. (seed 002, §2 and §5).

Model
-----
A multicluster has ``n`` clusters; cluster ``C_j`` holds ``m_j`` identical computers
of service rate ``u_j`` (:class:`MultiCluster`). A job ``J_i`` is the 4-tuple
``(a_i, s_i, e_ij, d_i)``: arrival time, preferable size, execution time in cluster
``C_j`` at the preferable size, and soft deadline (:class:`Workload`).

Generator (§5, :func:`generate_workload`):

* arrivals are a Poisson process of rate ``lambda``;
* the preferable size ``s_i`` is uniform on the integers ``[MIN_S, MAX_S]``;
* the execution time ``x_i`` at the preferable size *on a computer of the average
  service rate* ``u_bar = mean(u_j)`` is bounded Pareto (Eq. 4)

  ``f(x) = alpha e_l^alpha / (1 - (e_l/e_u)^alpha) x^(-alpha-1)``, ``e_l <= x <= e_u``;

  in cluster ``C_j`` it is ``e_ij = x_i u_bar / u_j``;
* at any other size ``s_i + k`` the time follows Eq. 3 (:func:`moldable_time`)
  ``e_{ij,s_i+k} = e_{ij,s_i} s_i/(s_i+k) (1 + |k| phi)``;
* the deadline (Eq. 5) is ``d_i = max_j{e_ij} (1 + dr_i)`` with ``dr_i`` uniform on
  ``[MIN_DR, MAX_DR]``; it is a *relative* deadline, so the absolute deadline stored
  here is ``a_i + d_i`` (the paper's slack "deadline minus execution time minus
  arrival time" is only positive with this reading).

The paper gives no Pareto shape and no arrival rate; ``alpha`` (default 1) and
``load`` (offered utilisation, from which ``lambda`` follows by
:func:`arrival_rate_for_load`) are parameters (see ``docs/_parts/assumptions-muscle.md``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import ModelError

__all__ = [
    "MultiCluster",
    "Workload",
    "WorkloadParams",
    "TABLE1",
    "bounded_pareto_mean",
    "bounded_pareto_sample",
    "moldable_time",
    "arrival_rate_for_load",
    "generate_workload",
    "evenly_spaced_sizes",
]


def _ro(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


@dataclass(frozen=True)
class MultiCluster:
    """Cluster sizes ``m`` and per-computer service rates ``u`` (validated, read-only)."""

    sizes: tuple[int, ...]
    rates: tuple[float, ...]
    name: str = ""

    def __post_init__(self) -> None:
        sizes = tuple(int(s) for s in self.sizes)
        rates = tuple(float(r) for r in self.rates)
        if len(sizes) == 0:
            raise ModelError("sizes: a multicluster needs at least one cluster")
        if len(sizes) != len(rates):
            raise ModelError(f"rates: expected {len(sizes)} values (one per cluster), got {len(rates)}")
        for j, s in enumerate(sizes):
            if s < 1:
                raise ModelError(f"sizes[{j}]: cluster size must be >= 1, got {s}")
        for j, r in enumerate(rates):
            if not (r > 0 and np.isfinite(r)):
                raise ModelError(f"rates[{j}]: service rate must be positive and finite, got {r}")
        object.__setattr__(self, "sizes", sizes)
        object.__setattr__(self, "rates", rates)

    @property
    def n(self) -> int:
        return len(self.sizes)

    @property
    def m_max(self) -> int:
        return max(self.sizes)

    @property
    def mean_rate(self) -> float:
        """``u_bar``: the average service rate of the constituent clusters."""
        return float(np.mean(self.rates))

    @property
    def capacity(self) -> float:
        """Processing capability in average-rate computers: ``sum_j m_j u_j / u_bar``."""
        return float(np.dot(self.sizes, self.rates) / self.mean_rate)


#: Table 1 of the paper (the Fig. 2 multicluster).
TABLE1 = MultiCluster(sizes=(20, 16, 12, 10), rates=(1.0, 1.2, 1.4, 1.6), name="table1")


def evenly_spaced_sizes(lo: int, hi: int, n: int = 5) -> tuple[int, ...]:
    """Fig. 3: ``n`` cluster sizes spread uniformly over ``[lo, hi]`` (same mean)."""
    if lo > hi or lo < 1:
        raise ModelError(f"range: expected 1 <= lo <= hi, got [{lo}, {hi}]")
    if n == 1:
        return (int(round((lo + hi) / 2)),)
    return tuple(int(round(lo + i * (hi - lo) / (n - 1))) for i in range(n))


@dataclass(frozen=True)
class WorkloadParams:
    """Generator parameters, named as in §5 (defaults: the Fig. 2 caption)."""

    n_jobs: int = 40_000
    min_s: int = 1
    max_s: int = 10
    e_l: float = 5.0
    e_u: float = 100.0
    alpha: float = 1.0
    min_dr: float = 1.0
    max_dr: float = 5.0
    load: float = 0.8

    def __post_init__(self) -> None:
        if self.n_jobs < 1:
            raise ModelError(f"n_jobs: must be >= 1, got {self.n_jobs}")
        if not (1 <= self.min_s <= self.max_s):
            raise ModelError(f"min_s/max_s: expected 1 <= MIN_S <= MAX_S, got [{self.min_s}, {self.max_s}]")
        if not (0 < self.e_l < self.e_u and np.isfinite(self.e_u)):
            raise ModelError(f"e_l/e_u: expected 0 < e_l < e_u < inf, got ({self.e_l}, {self.e_u})")
        if not self.alpha > 0:
            raise ModelError(f"alpha: Pareto shape must be > 0, got {self.alpha}")
        if not (0 <= self.min_dr <= self.max_dr):
            raise ModelError(f"min_dr/max_dr: expected 0 <= MIN_DR <= MAX_DR, got [{self.min_dr}, {self.max_dr}]")
        if not (0 < self.load and np.isfinite(self.load)):
            raise ModelError(f"load: offered utilisation must be positive, got {self.load}")


@dataclass(frozen=True)
class Workload:
    """A job stream: arrival ``a``, preferable size ``s``, time ``x`` at the preferable
    size on an average-rate computer, absolute deadline ``deadline`` (all read-only)."""

    arrival: np.ndarray
    size: np.ndarray
    x: np.ndarray
    deadline: np.ndarray
    source: str = "generated"
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        a = np.asarray(self.arrival, dtype=np.float64)
        s = np.asarray(self.size, dtype=np.int64)
        x = np.asarray(self.x, dtype=np.float64)
        d = np.asarray(self.deadline, dtype=np.float64)
        n = a.shape[0]
        for name, v in (("size", s), ("x", x), ("deadline", d)):
            if v.shape != (n,):
                raise ModelError(f"{name}: expected shape ({n},), got {v.shape}")
        if n and (not np.all(np.isfinite(a)) or np.any(np.diff(a) < 0)):
            raise ModelError("arrival: must be finite and non-decreasing")
        if n and s.min() < 1:
            raise ModelError(f"size: preferable sizes must be >= 1, got {int(s.min())}")
        if n and (not np.all(x > 0) or not np.all(np.isfinite(x))):
            raise ModelError("x: execution times must be positive and finite")
        if n and np.any(d < a):
            raise ModelError("deadline: a deadline lies before its job's arrival")
        for name, v in (("arrival", a), ("size", s), ("x", x), ("deadline", d)):
            object.__setattr__(self, name, _ro(v))

    def __len__(self) -> int:
        return int(self.arrival.shape[0])

    def exec_times(self, system: MultiCluster) -> np.ndarray:
        """``e[i, j] = x_i u_bar / u_j``: time at the preferable size in cluster ``j``."""
        return np.outer(self.x, system.mean_rate / np.asarray(system.rates))

    def head(self, n: int) -> "Workload":
        return Workload(self.arrival[:n], self.size[:n], self.x[:n], self.deadline[:n], self.source, dict(self.meta))


def bounded_pareto_mean(alpha: float, lo: float, hi: float) -> float:
    """Mean of the bounded Pareto law of Eq. 4."""
    if abs(alpha - 1.0) < 1e-12:
        return lo * hi / (hi - lo) * np.log(hi / lo)
    c = alpha * lo**alpha / (1.0 - (lo / hi) ** alpha)
    return c * (hi ** (1 - alpha) - lo ** (1 - alpha)) / (1 - alpha)


def bounded_pareto_sample(rng: np.random.Generator, n: int, alpha: float, lo: float, hi: float) -> np.ndarray:
    """Inverse-CDF draws from Eq. 4: ``x = lo (1 - U (1 - (lo/hi)^alpha))^(-1/alpha)``."""
    u = rng.random(n)
    return lo * (1.0 - u * (1.0 - (lo / hi) ** alpha)) ** (-1.0 / alpha)


def moldable_time(e_pref: np.ndarray | float, s_pref: np.ndarray | int, k: np.ndarray | int, phi: float):
    """Eq. 3: execution time at size ``k`` of a job whose time at its preferable size
    ``s_pref`` is ``e_pref``: ``e_pref s_pref / k (1 + |k - s_pref| phi)``."""
    return e_pref * s_pref / k * (1.0 + np.abs(k - s_pref) * phi)


def arrival_rate_for_load(params: WorkloadParams, system: MultiCluster) -> float:
    """Poisson rate giving offered utilisation ``load``:
    ``lambda = load * sum_j m_j u_j / (u_bar E[s] E[x])`` (work at preferable sizes)."""
    mean_s = 0.5 * (params.min_s + params.max_s)
    mean_x = bounded_pareto_mean(params.alpha, params.e_l, params.e_u)
    return params.load * system.capacity / (mean_s * mean_x)


def generate_workload(params: WorkloadParams, system: MultiCluster, seed: int | np.random.SeedSequence = 0) -> Workload:
    """Draw a job stream (§5). Separate streams for arrivals, sizes, times and
    deadline ratios, so that changing one law leaves the others' draws unchanged."""
    if params.max_s > system.m_max:
        raise ModelError(f"max_s: {params.max_s} exceeds the largest cluster ({system.m_max} computers)")
    if isinstance(seed, np.random.SeedSequence):  # never depend on earlier spawns of the caller's object
        ss = np.random.SeedSequence(seed.entropy, spawn_key=seed.spawn_key, pool_size=seed.pool_size)
    else:
        ss = np.random.SeedSequence(seed)
    r_arr, r_size, r_x, r_dr = (np.random.default_rng(c) for c in ss.spawn(4))
    n = params.n_jobs
    lam = arrival_rate_for_load(params, system)
    arrival = np.cumsum(r_arr.exponential(1.0 / lam, n))
    size = r_size.integers(params.min_s, params.max_s + 1, n)
    x = bounded_pareto_sample(r_x, n, params.alpha, params.e_l, params.e_u)
    dr = r_dr.uniform(params.min_dr, params.max_dr, n)
    slowest = system.mean_rate / min(system.rates)
    deadline = arrival + x * slowest * (1.0 + dr)
    return Workload(arrival, size, x, deadline, source="generated",
                    meta={"lambda": lam, "params": params.__dict__.copy()})
