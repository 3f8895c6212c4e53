"""Co-allocation across two heterogeneous clusters (seed 000, §2 and §6): public layer.

The system (§2), simulated job by job:

* **state**: ``q1`` jobs waiting at cluster 1 (FCFS, unbounded), ``q2`` jobs at
  cluster 2 (FCFS, unbounded; the one in service included), ``x1`` / ``x2``
  one- and two-node jobs running locally on cluster 1's two nodes, ``x11`` the
  co-allocated job (one node of cluster 1 plus cluster 2's node);
* **events and rates**: arrivals to cluster 1 (Poisson ``lambda1``; a job needs
  one node with probability ``p``, else two), to cluster 2 (Poisson
  ``lambda2``, one node); every job carries Exp(1) work and runs for
  ``work / mu1`` locally on cluster 1, ``work / mu2`` on cluster 2, ``work /
  mu3`` co-allocated; a co-allocation preempts the cluster-2 job in service,
  which later resumes with its remaining work (checkpointing);
* **decisions**: after every arrival and completion, at most ``max_starts``
  (default 1, the paper's "at most 1 job ... at each decision epoch"; 0 = as
  many as fit) jobs of queue 1 start; a two-node head job may be co-allocated
  when a node of cluster 1 is free and nobody is co-allocated;
* **cost**: the time average of ``c1 (q1 + x1 + x2 + x11) + c2 q2`` over
  ``[warmup, horizon]``.

Policies (``POLICIES``): ``local`` never co-allocates; ``heuristic``
co-allocates iff ``p c1 q1 > c2 q2`` and ``x1 = 1`` (§6, "best pack");
``heuristic-c1q1`` iff ``c1 q1 > c2 q2`` and ``x1 = 1`` (the comparator §6 says the
heuristic outperforms);
``table`` reads the optimal ``[x1, q1, q2]`` decision table of the MDP
(:func:`hetsched.mdp.coalloc.decision_table`), extended beyond the computed
region from its interior: ``q`` is read at ``min(q, clamp)`` (default ``clamp =
Delta // 2``: the paper reports the policy "remains the same for 16 <= q1, q2
<= 30" at ``Delta = 30``; the rows near ``Delta`` are distorted by the
truncation, where blocked arrivals make co-allocation look cheap); ``always``
co-allocates whenever it may.

Queues are **unbounded** by default (the paper's system); ``limit=Delta``
simulates the MDP's truncated system instead (arrivals beyond ``Delta`` lost
and counted). Size: ``completions`` jobs, simulated as the time horizon
``completions / (lambda1 + lambda2)`` (the expected time for that many
completions in a stable system) after a warm-up of 5 %. Instability: the core
rule (:mod:`hetsched.sim.core.instability`: a bound on the number in system, or
a growing trend); Local's exact capacity is in :mod:`hetsched.mdp.stability`.

Three layers: :func:`simulate_coalloc` validates and replicates;
:func:`prepare` turns parameters and a policy into arrays;
:func:`replication` runs the compiled kernel (:mod:`.kernel`) for one seed.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import ModelError
from ..core import DEFAULT_SEED, default_bound, make_streams, seed_sequence, trend_unstable, verdict
from ..core.result import SimResult, from_replications

__all__ = ["POLICIES", "SimParams", "prepare", "replication", "simulate_one", "simulate_coalloc"]

POLICIES = {"local": 0, "heuristic": 1, "table": 2, "always": 3, "heuristic-c1q1": 4}
WARMUP_FRACTION = 0.05


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
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
                raise ModelError(f"{name}: must be a finite number >= 0, got {v!r}")
        for name in ("mu1", "mu2", "mu3"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ModelError(f"{name}: must be a finite number > 0, got {v!r}")
        if not (isinstance(self.p, (int, float)) and 0 <= self.p <= 1):
            raise ModelError(f"p: must lie in [0, 1], got {self.p!r}")
        if self.lam1 + self.lam2 <= 0:
            raise ModelError("lam1, lam2: at least one arrival rate must be > 0")

    @classmethod
    def of(cls, prm: Any) -> "SimParams":
        """From any object with the same attribute names (e.g. ``CoallocParams``)."""
        return cls(*(float(getattr(prm, n)) for n in ("lam1", "lam2", "mu1", "mu2", "mu3", "p", "c1", "c2")))

    def rates(self) -> np.ndarray:
        return np.array([self.lam1, self.lam2, self.mu1, self.mu2, self.mu3, self.p, self.c1, self.c2])


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
    t = np.asarray(table)
    if t.ndim != 3 or t.shape[0] != 2 or t.shape[1] != t.shape[2] or t.shape[1] < 2:
        raise ModelError(f"table: expected shape (2, Delta+1, Delta+1), got {t.shape}")
    if not np.isin(t, (0, 1)).all():
        raise ModelError("table: entries must be 0 or 1")
    return np.ascontiguousarray(t, dtype=np.int8)


def prepare(params: SimParams | Any, policy: str = "local", *, completions: int = 200_000,
            table: np.ndarray | None = None, clamp: int | None = None, max_starts: int = 1,
            limit: int | None = None, bound: int | None = None) -> dict[str, Any]:
    """Validate once; return the kernel's arguments (arrays and scalars) as a dict."""
    prm = params if isinstance(params, SimParams) else SimParams.of(params)
    code = _policy_code(policy)
    tab = _check_table(table, code)
    delta = tab.shape[1] - 1
    if code != POLICIES["table"]:
        clamp = delta  # no table is read
    elif clamp is None:
        clamp = max(1, delta // 2)
    elif not (isinstance(clamp, (int, np.integer)) and 1 <= clamp <= delta):
        raise ModelError(f"clamp: must be an integer in [1, Delta = {delta}], got {clamp!r}")
    if not (isinstance(completions, (int, np.integer)) and 1 <= completions <= 10**10):
        raise ModelError(f"completions: must be an integer in [1, 1e10], got {completions!r}")
    if max_starts not in (0, 1, 2):
        raise ModelError(f"max_starts: must be 0 (as many as fit), 1 (the paper) or 2, got {max_starts!r}")
    if limit is not None and not (isinstance(limit, (int, np.integer)) and limit >= 1):
        raise ModelError(f"limit: must be an integer >= 1 (or None for unbounded queues), got {limit!r}")
    bound = default_bound(3) if bound is None else int(bound)
    if bound < 10:
        raise ModelError(f"bound: must be >= 10, got {bound}")
    horizon = float(completions) / (prm.lam1 + prm.lam2)
    return {
        "params": prm, "policy": str(policy).lower(), "code": code, "table": tab, "clamp": int(clamp),
        "max_starts": int(max_starts), "horizon": horizon, "warmup": WARMUP_FRACTION * horizon,
        "limit": int(limit or 0), "bound": bound, "completions": int(completions),
    }


def replication(ss: np.random.SeedSequence, prep: dict[str, Any]) -> dict[str, Any]:
    """One replication (top level, picklable: used by :func:`hetsched.runner.replicate`)."""
    from .kernel import N_OUT, NSEG, run_coalloc

    cap = prep["bound"] + 2
    out = np.zeros(N_OUT)
    st = make_streams(ss, 2)
    t0 = time.perf_counter()
    run_coalloc(prep["params"].rates(), prep["code"], prep["table"], prep["clamp"], prep["max_starts"],
                prep["horizon"], prep["warmup"], prep["limit"], prep["bound"], st,
                np.zeros(cap, np.int8), np.zeros(cap), np.zeros(cap), out)
    seg = out[N_OUT - NSEG:]
    return {
        "cost": float(out[0]), "L1": float(out[1]), "L2": float(out[2]), "time": float(out[3]),
        "completions": int(out[4]), "events": int(out[5]), "coallocations": int(out[6]),
        "hit_bound": bool(out[7]), "lost1": int(out[8]), "lost2": int(out[9]), "in_system_end": int(out[10]),
        "trend": bool(not out[7] and trend_unstable(seg)), "segments": seg.tolist(),
        "wall_seconds": time.perf_counter() - t0,
    }


def simulate_one(params: SimParams | Any, policy: str = "local", completions: int = 200_000,
                 seed: int | np.random.SeedSequence | None = DEFAULT_SEED, **options: Any) -> dict[str, Any]:
    """One replication of ``completions`` jobs (options as :func:`prepare`)."""
    return replication(seed_sequence(seed), prepare(params, policy, completions=completions, **options))


def simulate_coalloc(
    params: SimParams | Any,
    policy: str = "local",
    reps: int = 10,
    completions: int = 200_000,
    seed: int | None = DEFAULT_SEED,
    workers: int | None = 1,
    table: np.ndarray | None = None,
    clamp: int | None = None,
    max_starts: int = 1,
    limit: int | None = None,
    bound: int | None = None,
    backend: str = "local",
    scheduler: str | None = None,
    progress: bool = False,
) -> SimResult:
    """Independent replications of one policy: the long-run average cost and its 95 % t interval.

    Replication ``r`` uses ``SeedSequence(seed).spawn(reps)[r]`` whatever
    ``workers`` or ``backend``; the same arrivals and works under every policy
    (common random numbers). Returns the one result type (metric ``cost``);
    ``status`` 1 (unstable) when a replication exceeds ``bound`` jobs in
    system or most replications trend upward; for Local, the exact capacity of
    :mod:`hetsched.mdp.stability` is reported beside it (``local_capacity_rho1``).
    """
    from ...runner import replicate

    pl = plan_coalloc(params, policy, reps=reps, completions=completions, seed=seed, table=table, clamp=clamp,
                      max_starts=max_starts, limit=limit, bound=bound)
    pl.warm()  # compile/load first
    job = pl.job
    t0 = time.perf_counter()
    runs = replicate(job.fn, job.params, job.reps, job.seed, workers=workers, backend=backend, scheduler=scheduler,
                     progress=progress, label=job.label)
    return pl.finish(runs, time.perf_counter() - t0)


def plan_coalloc(params: SimParams | Any, policy: str = "local", reps: int = 10, completions: int = 200_000,
                 seed: int | None = DEFAULT_SEED, table: np.ndarray | None = None, clamp: int | None = None,
                 max_starts: int = 1, limit: int | None = None, bound: int | None = None):
    """:func:`simulate_coalloc` split at its replications (for :class:`hetsched.runner.Batch`): a
    :class:`hetsched.runner.Planned` whose ``finish(runs, seconds)`` makes the same result."""
    from ...mdp.stability import local_stability
    from ...runner import Job, Planned

    if not (isinstance(reps, (int, np.integer)) and 1 <= reps <= 100_000):
        raise ModelError(f"reps: must be an integer in [1, 100000], got {reps!r}")
    prep = prepare(params, policy, completions=completions, table=table, clamp=clamp, max_starts=max_starts,
                   limit=limit, bound=bound)
    seed = DEFAULT_SEED if seed is None else seed
    seed_sequence(seed)  # validates

    def finish(runs: list[dict], wall: float) -> SimResult:
        unstable, n_bound, n_trend = verdict([r["hit_bound"] for r in runs], [r["trend"] for r in runs])
        prm = prep["params"]
        extra: dict[str, Any] = {
            "L1": float(np.mean([r["L1"] for r in runs])), "L2": float(np.mean([r["L2"] for r in runs])),
            "coallocations_per_rep": float(np.mean([r["coallocations"] for r in runs])),
            "completions": prep["completions"], "limit": prep["limit"] or None, "clamp": prep["clamp"],
            "bound_reps": n_bound, "trend_reps": n_trend,
            "lost_fraction": float(sum(r["lost1"] + r["lost2"] for r in runs))
            / max(1.0, float(sum(r["completions"] + r["lost1"] + r["lost2"] for r in runs))),
        }
        if prep["policy"] == "local" and not prep["limit"] and prep["max_starts"] in (0, 1):
            ls = local_stability(prm.lam1, prm.lam2, prm.mu1, prm.mu2, prm.p, prep["max_starts"])
            extra["local_capacity_rho1"] = ls["capacity_rho1"]
            extra["local_stable_exact"] = ls["stable"]
        if unstable:
            why = (f"{n_bound} of {len(runs)} replications exceeded {prep['bound']} jobs in system" if n_bound
                   else f"{n_trend} of {len(runs)} replications grow through the run")
            message = f"unstable: {why}"
        else:
            message = "ok"
        return from_replications(
            runs, model="coalloc", policy=prep["policy"], metric="cost", key="cost", per_class=[],
            wall_seconds=wall, unstable=unstable, message=message, horizon=prep["horizon"],
            seed=int(seed),
            options={"max_starts": prep["max_starts"], "limit": prep["limit"] or None, "clamp": prep["clamp"]},
            extra=extra,
        )

    return Planned(job=Job(replication, prep, int(reps), int(seed), f"coalloc {prep['policy']}"), finish=finish,
                   warm=lambda: replication(np.random.SeedSequence(0), {**prep, "horizon": 1.0, "warmup": 0.05}),
                   warm_key=("coalloc",))
