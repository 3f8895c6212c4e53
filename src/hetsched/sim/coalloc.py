"""Discrete-event simulation of the two-cluster co-allocation system (seed-000, §6).

Self-contained: one compiled numba kernel (``cache=True``), a thin wrapper that
validates and allocates, and a replication driver. The system is the one of
:mod:`hetsched.mdp.coalloc`, simulated job by job rather than as a Markov chain:

* cluster 1: two nodes, FCFS queue; a job needs one node (prob. ``p``) or two;
* cluster 2: one node, FCFS queue;
* each job carries an Exp(1) amount of *work*; it runs for ``work / mu1`` on
  cluster 1, ``work / mu2`` on cluster 2, ``work / mu3`` when co-allocated
  (exponential service times as in the paper, and common random numbers across
  policies: a job has the same work whatever the policy does with it);
* a co-allocated job takes one node of cluster 1 and the node of cluster 2; the
  cluster-2 job in service is preempted and later resumes with its remaining work;
* a decision is made after every arrival and completion; by default at most one
  job of queue 1 starts per decision epoch, as in the MDP (``max_starts=0``
  starts as many as fit, a plain FCFS system).

Policies (integer codes inside the kernel; names in :data:`POLICIES`):
``local`` never co-allocates; ``heuristic`` co-allocates iff
``p c1 q1 > c2 q2`` and ``x1 = 1`` (§6, "best pack"); ``table`` reads a
``[x1, q1, q2]`` decision table (the optimal policy from the solver; ``q1`` and
``q2`` beyond the table's ``Delta`` are clamped to ``Delta``); ``always``
co-allocates whenever it may.

The output is the long-run average of ``c1 (q1 + x1 + x2 + x11) + c2 q2``
(time average after a warm-up), with a 95 % Student-t interval over independent
replications run by :func:`hetsched.runner.replicate` (replication ``r`` seeded by
``SeedSequence(seed).spawn(reps)[r]``): results do not depend on the number of
worker processes or the backend.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numba import njit

from ..errors import ModelError

__all__ = ["POLICIES", "SimParams", "CoallocSimResult", "simulate_one", "simulate_coalloc"]

POLICIES = {"local": 0, "heuristic": 1, "table": 2, "always": 3}

_N_OUT = 14  # kernel output slots, see _simulate
_N_BATCH = 20
_QCAP = 1 << 20  # queue capacity per replication; exceeding it marks the run unstable


@dataclass(frozen=True)
class SimParams:
    """Rates, probabilities and costs of the simulated system (same meaning as in the MDP)."""

    lam1: float
    lam2: float
    mu1: float = 1.0
    mu2: float = 1.0
    mu3: float = 0.7
    p: float = 0.6
    c1: float = 2.0
    c2: float = 1.0

    def __post_init__(self) -> None:
        for name in ("lam1", "lam2", "c1", "c2"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v >= 0):
                raise ModelError(f"{name}: must be a finite number >= 0, got {v!r}")
        for name in ("mu1", "mu2", "mu3"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v > 0):
                raise ModelError(f"{name}: must be a finite number > 0, got {v!r}")
        if not 0 <= self.p <= 1:
            raise ModelError(f"p: must lie in [0, 1], got {self.p!r}")

    @classmethod
    def of(cls, prm: Any) -> "SimParams":
        """From any object with the same attribute names (e.g. ``CoallocParams``)."""
        return cls(*(float(getattr(prm, n)) for n in ("lam1", "lam2", "mu1", "mu2", "mu3", "p", "c1", "c2")))


# --------------------------------------------------------------------------- kernel


@njit(cache=True)
def _simulate(rates, policy, table, max_starts, n_completions, n_warmup, rng1, rng2, limit,
              q1size, q1work, q2rem, out, batches):
    """Compiled, no checks: simulate one replication, write totals into ``out`` and ``batches``.

    ``rates`` = (lam1, lam2, mu1, mu2, mu3, p, c1, c2). ``rng1`` drives cluster-1
    arrivals (gap, size, work), ``rng2`` cluster-2 arrivals (gap, work).
    out: 0 mean cost, 1 mean L1, 2 mean L2, 3 measured time, 4 completions,
    5 events, 6 co-allocations, 7 overflow flag, 8 final number in system,
    9 local starts, 10 final q1, 11 final q2, 12 and 13 arrivals lost at cluster 1 and 2
    (only with ``limit > 0``: at most ``limit`` jobs wait in queue 1 / are at cluster 2,
    the truncation of the MDP). ``batches[b]``: mean cost of batch b.
    """
    lam1, lam2, mu1, mu2, mu3, p, c1, c2 = rates
    inf = np.inf
    cap = q1size.size
    D = table.shape[1] - 1
    # queue 1 ring buffer
    h1 = 0
    n1 = 0
    # queue 2 ring buffer (remaining service times); head is in service unless preempted
    h2 = 0
    n2 = 0
    end2 = inf
    # cluster 1 service: two slots (kind 1 = one-node, 2 = two-node local)
    end_a = inf
    end_b = inf
    kind_a = 0
    kind_b = 0
    end_co = inf
    x1 = 0
    x2 = 0
    x11 = 0
    t = 0.0
    next1 = rng1.exponential(1.0 / lam1) if lam1 > 0 else inf
    next2 = rng2.exponential(1.0 / lam2) if lam2 > 0 else inf
    # statistics
    done = 0
    events = 0
    coallocs = 0
    starts = 0
    area = 0.0
    area1 = 0.0
    area2 = 0.0
    t_meas0 = 0.0
    measuring = n_warmup == 0
    nb = batches.size
    per_batch = max(1, n_completions // nb)
    b = 0
    b_area = 0.0
    b_t0 = 0.0
    overflow = False
    lost1 = 0
    lost2 = 0
    total = n_warmup + n_completions
    while done < total:
        # next event
        te = next1
        ev = 0
        if next2 < te:
            te = next2
            ev = 1
        if end_a < te:
            te = end_a
            ev = 2
        if end_b < te:
            te = end_b
            ev = 3
        if end_co < te:
            te = end_co
            ev = 4
        if end2 < te:
            te = end2
            ev = 5
        if te == inf:
            break
        # accumulate cost over [t, te)
        L1 = n1 + x1 + x2 + x11
        cr = c1 * L1 + c2 * n2
        dt = te - t
        if measuring:
            area += cr * dt
            area1 += L1 * dt
            area2 += n2 * dt
            b_area += cr * dt
        t = te
        events += 1
        completed = False
        if ev == 0:  # arrival to cluster 1
            size = 1 if rng1.random() < p else 2
            work = rng1.exponential(1.0)
            next1 = t + rng1.exponential(1.0 / lam1)
            if limit > 0 and n1 >= limit:
                lost1 += 1
            elif n1 >= cap:
                overflow = True
                break
            else:
                j = (h1 + n1) % cap
                q1size[j] = size
                q1work[j] = work
                n1 += 1
        elif ev == 1:  # arrival to cluster 2
            work = rng2.exponential(1.0)
            next2 = t + rng2.exponential(1.0 / lam2)
            if limit > 0 and n2 >= limit:
                lost2 += 1
            elif n2 >= cap:
                overflow = True
                break
            else:
                j = (h2 + n2) % cap
                q2rem[j] = work / mu2
                n2 += 1
                if n2 == 1 and x11 == 0:
                    end2 = t + q2rem[j]
        elif ev == 2 or ev == 3:  # local completion at cluster 1
            k = kind_a if ev == 2 else kind_b
            if k == 1:
                x1 -= 1
            else:
                x2 -= 1
            if ev == 2:
                end_a = inf
                kind_a = 0
            else:
                end_b = inf
                kind_b = 0
            completed = True
        elif ev == 4:  # co-allocated job completes; cluster 2 resumes
            x11 = 0
            end_co = inf
            if n2 > 0:
                end2 = t + q2rem[h2]
            completed = True
        else:  # cluster-2 completion
            h2 = (h2 + 1) % cap
            n2 -= 1
            end2 = t + q2rem[h2] if n2 > 0 else inf
            completed = True
        # decision epoch: start at most max_starts jobs of queue 1 (0 = as many as fit)
        nstart = 0
        while n1 > 0 and (max_starts == 0 or nstart < max_starts):
            g = q1size[h1]
            theta = 2 - x1 - 2 * x2 - x11
            act = 0
            if g == 2 and x11 == 0 and theta >= 1:
                if policy == 1:
                    act = 1 if (x1 == 1 and p * c1 * n1 > c2 * n2) else 0
                elif policy == 2:
                    act = table[x1, min(n1, D), min(n2, D)]
                elif policy == 3:
                    act = 1
            if act == 1:
                w = q1work[h1]
                h1 = (h1 + 1) % cap
                n1 -= 1
                x11 = 1
                end_co = t + w / mu3
                if n2 > 0 and end2 < inf:  # preempt the cluster-2 job, keep its remaining time
                    q2rem[h2] = end2 - t
                end2 = inf
                coallocs += 1
            elif theta >= g:
                w = q1work[h1]
                h1 = (h1 + 1) % cap
                n1 -= 1
                if g == 1:
                    x1 += 1
                else:
                    x2 += 1
                if kind_a == 0:
                    kind_a = g
                    end_a = t + w / mu1
                else:
                    kind_b = g
                    end_b = t + w / mu1
                starts += 1
            else:
                break
            nstart += 1
        if completed:
            done += 1
            if not measuring and done >= n_warmup:
                measuring = True
                t_meas0 = t
                b_t0 = t
            elif measuring and b < nb and (done - n_warmup) >= (b + 1) * per_batch:
                batches[b] = b_area / (t - b_t0) if t > b_t0 else 0.0
                b += 1
                b_area = 0.0
                b_t0 = t
    T = t - t_meas0
    out[0] = area / T if T > 0 else np.nan
    out[1] = area1 / T if T > 0 else np.nan
    out[2] = area2 / T if T > 0 else np.nan
    out[3] = T
    out[4] = done - n_warmup if done > n_warmup else 0
    out[5] = events
    out[6] = coallocs
    out[7] = 1.0 if overflow else 0.0
    out[8] = n1 + x1 + x2 + x11 + n2
    out[9] = starts
    out[10] = n1
    out[11] = n2
    out[12] = lost1
    out[13] = lost2


# --------------------------------------------------------------------------- wrapper


def _policy_code(policy: str) -> int:
    key = str(policy).lower()
    if key not in POLICIES:
        raise ModelError(f"policy: expected one of {', '.join(POLICIES)}, got {policy!r}")
    return POLICIES[key]


def _check_table(table: np.ndarray | None, code: int) -> np.ndarray:
    if table is None:
        if code == POLICIES["table"]:
            raise ModelError("table: policy 'table' needs a decision table [x1, q1, q2]")
        return np.zeros((2, 2, 2), dtype=np.int8)
    t = np.ascontiguousarray(table, dtype=np.int8)
    if t.ndim != 3 or t.shape[0] != 2 or t.shape[1] != t.shape[2] or t.shape[1] < 2:
        raise ModelError(f"table: expected shape (2, Delta+1, Delta+1), got {t.shape}")
    if t.min() < 0 or t.max() > 1:
        raise ModelError("table: entries must be 0 or 1")
    return t


def simulate_one(
    params: SimParams,
    policy: str = "local",
    completions: int = 200_000,
    warmup: int | None = None,
    seed: int | np.random.SeedSequence = 0,
    table: np.ndarray | None = None,
    max_starts: int = 1,
    limit: int | None = None,
    queue_capacity: int = _QCAP,
) -> dict[str, Any]:
    """One replication. ``seed`` is an int or a ``SeedSequence``; warm-up default: 5 % of ``completions``.

    ``limit``: truncate as the MDP does (at most ``limit`` jobs waiting in queue 1 and
    ``limit`` jobs at cluster 2; further arrivals are lost). ``None``: unbounded queues.
    """
    code = _policy_code(policy)
    tab = _check_table(table, code)
    if completions < 1:
        raise ModelError(f"completions: must be >= 1, got {completions}")
    if max_starts < 0:
        raise ModelError(f"max_starts: must be >= 0 (0 = unlimited), got {max_starts}")
    if limit is not None and limit < 1:
        raise ModelError(f"limit: must be >= 1 (or None for unbounded queues), got {limit}")
    warmup = completions // 20 if warmup is None else int(warmup)
    ss = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    s1, s2 = ss.spawn(2)
    rng1, rng2 = np.random.Generator(np.random.PCG64(s1)), np.random.Generator(np.random.PCG64(s2))
    rates = np.array([params.lam1, params.lam2, params.mu1, params.mu2, params.mu3, params.p, params.c1, params.c2])
    out = np.zeros(_N_OUT)
    batches = np.full(_N_BATCH, np.nan)
    cap = int(queue_capacity)
    t0 = time.perf_counter()
    _simulate(rates, code, tab, int(max_starts), int(completions), warmup, rng1, rng2, int(limit or 0),
              np.zeros(cap, np.int8), np.zeros(cap), np.zeros(cap), out, batches)
    wall = time.perf_counter() - t0
    return {
        "cost": out[0], "L1": out[1], "L2": out[2], "time": out[3], "completions": int(out[4]),
        "events": int(out[5]), "coallocations": int(out[6]), "overflow": bool(out[7]),
        "in_system_end": int(out[8]), "local_starts": int(out[9]), "lost1": int(out[12]), "lost2": int(out[13]),
        "batches": batches, "wall_seconds": wall,
    }


def _trend_unstable(batches: np.ndarray) -> bool:
    """Queues growing through the run: the last quarter of batch means far above the second."""
    b = batches[np.isfinite(batches)]
    if b.size < 8:
        return False
    q = b.size // 4
    early, late = b[q: 2 * q].mean(), b[-q:].mean()
    return bool(late > 1.5 * early and late - early > 5.0)


def _replication(ss: np.random.SeedSequence, params: dict) -> dict[str, Any]:
    """One replication for :func:`hetsched.runner.replicate` (top level: picklable)."""
    return simulate_one(seed=ss, **params)


@dataclass
class CoallocSimResult:
    """Replicated estimate of the long-run average cost of one policy."""

    policy: str
    mean: float
    ci: tuple[float, float]
    half_width: float
    reps: int
    per_rep: np.ndarray
    unstable: bool
    events: int
    wall_seconds: float
    L1: float
    L2: float
    coallocations_per_rep: float
    seed: int
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "policy": self.policy, "metric": "cost", "mean": self.mean, "ci": list(self.ci),
            "half_width": self.half_width, "reps": self.reps, "unstable": self.unstable,
            "events": self.events, "wall_seconds": self.wall_seconds, "L1": self.L1, "L2": self.L2,
            "coallocations_per_rep": self.coallocations_per_rep, "seed": self.seed,
        }


def simulate_coalloc(
    params: SimParams | Any,
    policy: str = "local",
    reps: int = 10,
    completions: int = 200_000,
    seed: int = 0,
    workers: int | None = 1,
    table: np.ndarray | None = None,
    warmup: int | None = None,
    max_starts: int = 1,
    limit: int | None = None,
    backend: str = "local",
    scheduler: str | None = None,
    progress: bool = False,
) -> CoallocSimResult:
    """Independent replications of one policy: mean cost and 95 % Student-t interval.

    Replication ``r`` uses ``SeedSequence(seed).spawn(reps)[r]`` whatever ``workers`` is,
    so the same seed gives the same numbers sequentially or in parallel, and the
    same arrivals and works under every policy (common random numbers).
    A run whose queue overflows or whose cost trends upward through the run in
    most replications is flagged ``unstable``.
    """
    from ..runner import replicate
    from ..stats import t_interval

    prm = params if isinstance(params, SimParams) else SimParams.of(params)
    code = _policy_code(policy)
    tab = _check_table(table, code) if table is not None or code == POLICIES["table"] else None
    if reps < 1:
        raise ModelError(f"reps: must be >= 1, got {reps}")
    # compile (or load from the numba cache) in this process before timing
    simulate_one(prm, policy, 10, 0, 0, tab, max_starts, limit, queue_capacity=16)
    t0 = time.perf_counter()
    kw = dict(params=prm, policy=policy, completions=int(completions), warmup=warmup, table=tab,
              max_starts=int(max_starts), limit=limit)
    results = replicate(_replication, kw, int(reps), int(seed), workers=workers, backend=backend,
                        scheduler=scheduler, progress=progress, label=f"coalloc {policy}")
    wall = time.perf_counter() - t0
    costs = np.array([r["cost"] for r in results])
    overflow = sum(r["overflow"] for r in results)
    trend = sum(_trend_unstable(r["batches"]) for r in results)
    unstable = overflow > 0 or trend > len(results) / 2
    est = t_interval(costs[np.isfinite(costs)])
    return CoallocSimResult(
        policy=str(policy).lower(), mean=est.mean, ci=(est.low, est.high), half_width=est.half_width,
        reps=len(results), per_rep=costs, unstable=bool(unstable),
        events=int(sum(r["events"] for r in results)), wall_seconds=wall,
        L1=float(np.mean([r["L1"] for r in results])), L2=float(np.mean([r["L2"] for r in results])),
        coallocations_per_rep=float(np.mean([r["coallocations"] for r in results])), seed=int(seed),
        extra={"overflow_reps": int(overflow), "trend_reps": int(trend), "completions": int(completions),
               "sim_seconds": float(sum(r["wall_seconds"] for r in results)),
               "lost_fraction": float(sum(r["lost1"] + r["lost2"] for r in results))
               / max(1.0, float(sum(r["completions"] + r["lost1"] + r["lost2"] for r in results))),
               "limit": limit},
    )
