"""Immediate-mode mapping model of a cluster (thesis §1.3.1, §2.2.2): public layer.

Classes arrive as independent Poisson streams (rates ``alpha_i``); each arrival
is mapped at once, by the policy, to one machine and queued FCFS there; the
machine runs it for ``X / mu_ij`` (``X`` of mean 1, see :mod:`.dists`).
Performance is ``Qbar``, the time-average number of tasks in system.

Three layers: :func:`simulate` validates and runs replications;
:func:`prepare` turns a :class:`~hetsched.system.System` and a policy into
plain arrays; :func:`replication` runs the compiled kernel
(:func:`._kernel.run_mapping`) for one seed.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from ..errors import ModelError
from ..stats import t_interval
from .dists import ExecDist, draw_general, exec_dist
from .policies import get_policy, tie_code

__all__ = ["simulate", "prepare", "replication", "SimResult", "integer_weights", "instability_rule"]

NSEG = 10


# --------------------------------------------------------------------------- set-up
def integer_weights(mu: np.ndarray, max_l: float = 2.0**36) -> tuple[np.ndarray, bool]:
    """Expected-execution-time weights ``w_ij`` proportional to ``1/mu_ij``.

    When every positive rate is a decimal with at most three digits and the
    least common multiple ``L`` of the scaled rates is small, ``w_ij = L/mu_ij``
    are integers and every workload sum is exact (ties are exact); otherwise
    ``w_ij = 1/mu_ij`` in floating point (ties then use a relative tolerance).
    Returns ``(w, exact)``; ``w`` is ``inf`` where ``mu_ij = 0``.
    """
    pos = mu[mu > 0]
    for d in range(4):
        scaled = pos * 10**d
        if np.all(np.abs(scaled - np.round(scaled)) < 1e-9 * np.maximum(1, scaled)):
            ints = np.round(scaled).astype(np.int64)
            L = 1
            for r in np.unique(ints):
                L = L * int(r) // math.gcd(L, int(r))
                if L > max_l:
                    break
            if L <= max_l:
                w = np.full(mu.shape, np.inf)
                m = mu > 0
                # 1/mu = 10^d / r  ->  scaled by L / 10^d:  w = L / r, an integer
                w[m] = np.array([Fraction(L) / Fraction(int(r)) for r in np.round(mu[m] * 10**d).astype(np.int64)], float)
                if np.all(w[m] == np.round(w[m])):
                    return w, True
            break
    w = np.full(mu.shape, np.inf)
    w[mu > 0] = 1.0 / mu[mu > 0]
    return w, False


def _candidates(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    N, M = mask.shape
    cand = np.zeros((N, M), np.int64)
    ncand = np.zeros(N, np.int64)
    for i in range(N):
        js = np.flatnonzero(mask[i])
        cand[i, : len(js)] = js
        ncand[i] = len(js)
    return cand, ncand


def default_bound(system) -> int:
    """Instability bound on the number in system: ``max(10000, 1000 M)``."""
    return int(max(10_000, 1_000 * system.M))


def prepare(
    system,
    policy: str,
    *,
    k: int | None = None,
    tie: str = "lowest",
    C: float | np.ndarray = 1.0,
    dist: Any = None,
    scv: float = 2.0,
    lp_solution: str = "vertex",
    horizon: float = 20_000.0,
    warmup: float = 0.0,
    max_in_system: int | None = None,
) -> dict:
    """Validate and turn ``system`` + ``policy`` into the kernel's arrays (a picklable dict)."""
    pol = get_policy(policy)
    if system.alpha_matrix is not None:
        raise ModelError("the mapping model has one arrival stream per class; 'alpha_matrix' is not supported here")
    if not (isinstance(horizon, (int, float)) and math.isfinite(horizon) and horizon > 0):
        raise ModelError(f"horizon must be a finite positive time, got {horizon!r}")
    if not (0 <= warmup < horizon):
        raise ModelError(f"warmup must lie in [0, horizon), got {warmup!r}")
    d: ExecDist = exec_dist(system.exec_dist if dist is None else dist, scv=scv)
    mu = np.ascontiguousarray(system.mu_effective, dtype=float)
    alpha = np.ascontiguousarray(system.alpha_array, dtype=float)
    N, M = mu.shape
    w, exact = integer_weights(mu)
    can = mu > 0
    pw = np.zeros((N, M))
    pi = np.zeros((N, M))
    lp = None
    if pol.uses_lp:
        from ..lp import allocation_lp

        lp = allocation_lp(system, solution=lp_solution).raise_for_status()
        mask = lp.support & can
        pw = np.ascontiguousarray(lp.delta * lp.mu, dtype=float)
        pi = np.ascontiguousarray(lp.p_static, dtype=float)
    elif pol.name == "met":
        best = np.where(can, mu, -np.inf).max(axis=1, keepdims=True)
        mask = can & (mu == best)
    elif pol.name == "kpb":
        if k is None:
            raise ModelError("policy 'kpb' needs --k (the number of machines k-bar considered per class)")
        if not (isinstance(k, (int, np.integer)) and 1 <= k <= M):
            raise ModelError(f"k must be an integer in [1, {M}] (machines per class), got {k!r}")
        mask = np.zeros((N, M), bool)
        for i in range(N):
            order = sorted((j for j in range(M) if can[i, j]), key=lambda j: (-mu[i, j], j))
            mask[i, order[:k]] = True
    else:
        mask = can.copy()
    cand, ncand = _candidates(mask)
    C_arr = np.broadcast_to(np.asarray(C, float), (N, M)).copy()
    if (C_arr < 0).any() or not np.isfinite(C_arr).all():
        raise ModelError(f"C (Guided-LPAS constants C_ij) must be finite and >= 0, got {C!r}")
    if max_in_system is None:
        max_in_system = default_bound(system)
    if not (isinstance(max_in_system, (int, np.integer)) and max_in_system >= 1):
        raise ModelError(f"max_in_system must be a positive integer, got {max_in_system!r}")
    ns_formula = float((alpha / alpha.sum()) @ {
        "met": np.zeros(N), "lp-static": np.zeros(N),
        "lpas-2k": np.minimum(ncand, 2), "guided-lpas-2k": np.minimum(ncand, 2),
    }.get(pol.name, ncand))
    return {
        "policy": pol.name,
        "code": pol.code,
        "alpha": alpha,
        "mu": mu,
        "w": w,
        "tol": 0.0 if exact else 1e-12,
        "exact": exact,
        "cand": cand,
        "ncand": ncand,
        "pw": pw,
        "pi": pi,
        "C": C_arr,
        "dist": d,
        "tie": tie_code(tie),
        "tie_name": str(tie).lower(),
        "horizon": float(horizon),
        "warmup": float(warmup),
        "max_in_system": int(max_in_system),
        "k": k,
        "ns_formula": ns_formula,
        "lam": None if lp is None else float(lp.lam),
        "stabilizable": None if lp is None else bool(lp.stabilizable),
    }


# --------------------------------------------------------------------------- one replication
def instability_rule(seg: np.ndarray) -> bool:
    """Trend test on the ``NSEG`` segment averages of the number in system.

    A replication is flagged when the number in system both *keeps growing*
    (at least 7 of the 9 successive segment averages increase) and *has grown*
    (the last fifth of the run averages more than twice the second and third
    tenths, plus 5 tasks; the first tenth is the transient from an empty
    system). A stable system, even a heavily loaded one whose number in system
    wanders slowly (System 2.A, lambda* = 1.02), rarely satisfies both; an
    unstable one grows roughly linearly and satisfies both.
    """
    seg = np.asarray(seg, float)
    ascents = int(np.sum(np.diff(seg) > 0))
    early = float(np.mean(seg[1:3]))
    late = float(np.mean(seg[-2:]))
    return ascents >= 7 and late > 2.0 * early + 5.0


def replication(seed_seq: np.random.SeedSequence, params: dict) -> dict:
    """One replication (picklable top-level function for :func:`hetsched.runner.replicate`)."""
    from ._kernel import run_mapping
    from ._rng import make_streams

    alpha, mu = params["alpha"], params["mu"]
    N = alpha.shape[0]
    d: ExecDist = params["dist"]
    H = params["horizon"]
    gen_len = 0
    while True:
        st = make_streams(seed_seq, 2 * N + 2)  # arrivals 0..N-1, sizes N..2N-1, policy, ties
        if d.code == 3:
            if gen_len == 0:
                gen_len = int(alpha.max() * H + 8 * math.sqrt(alpha.max() * H) + 64)
            gss = np.random.SeedSequence(seed_seq.entropy, spawn_key=tuple(seed_seq.spawn_key) + (2**31 - 1,))
            gen = draw_general(d, N, gen_len, np.random.default_rng(gss))
        else:
            gen = np.zeros((N, 1))
        out_q = np.zeros(N)
        out_resp = np.zeros(N)
        out_seg = np.zeros(NSEG)
        out_int = np.zeros(7 + N, np.int64)
        out_assigned = np.zeros((N, mu.shape[1]), np.int64)
        t0 = time.perf_counter()
        c0 = time.process_time()
        run_mapping(
            params["code"], alpha, mu, params["w"], params["tol"], params["cand"], params["ncand"],
            params["pw"], params["pi"], params["C"], d.code, np.array(d.hp, float), gen,
            H, params["warmup"], params["max_in_system"], params["tie"], st,
            out_q, out_resp, out_seg, out_int, out_assigned,
        )
        wall = time.perf_counter() - t0
        cpu = time.process_time() - c0
        if out_int[0] == 2:  # general samples exhausted (about 8 sigma): redo with twice as many
            gen_len *= 2
            continue
        break
    status = int(out_int[0])
    done = out_int[7:7 + N].astype(float)
    W = np.where(done > 0, out_resp / np.maximum(done, 1), np.nan)
    arrivals = int(out_int[2])
    unstable = status == 1 or instability_rule(out_seg)
    Q = float(out_q.sum())
    span = H - params["warmup"]
    # Little's law on this run: Qbar = sum_i (completions_i / span) W_i, up to edge effects
    lam_hat = done / span
    little = float(np.nansum(lam_hat * W))
    return {
        "Q": Q,
        "Q_class": out_q.tolist(),
        "W_class": W.tolist(),
        "W": float(np.nansum(out_resp) / max(done.sum(), 1)),
        "little_Q": little,
        "events": int(out_int[1]),
        "arrivals": arrivals,
        "completions": int(out_int[3]),
        "contacted": float(out_int[4]) / max(arrivals, 1),
        "binds": int(out_int[5]),
        "peak": int(out_int[6]),
        "status": status,
        "hit_bound": status == 1,
        "unstable": bool(unstable),
        "segments": out_seg.tolist(),
        "share": (out_assigned / np.maximum(out_assigned.sum(axis=1, keepdims=True), 1)).tolist(),
        "wall": wall,
        "cpu": cpu,
    }


# --------------------------------------------------------------------------- public layer
@dataclass
class SimResult:
    """Result of :func:`simulate`, in the style of ``OptimizeResult``.

    ``mean``/``ci`` estimate ``Qbar`` (``metric = "Q"``) over the replications;
    when ``unstable`` is true they are not trustworthy (``success`` is false).
    """

    success: bool
    message: str
    policy: str
    metric: str
    mean: float
    ci: tuple[float, float]
    rel_half_width: float
    per_class: list[dict]
    unstable: bool
    unstable_reps: int
    hit_bound_reps: int
    reps: int
    horizon: float
    warmup: float
    seed: int
    events: int
    wall_seconds: float
    kernel_seconds: float
    contacted: float
    contacted_formula: float
    binds: float
    little_rel_error: float
    options: dict = field(default_factory=dict)
    replications: list[dict] = field(default_factory=list)

    def to_json(self, with_replications: bool = False) -> dict:
        d = asdict(self)
        d["ci"] = list(self.ci)
        if not with_replications:
            d.pop("replications")
        if self.unstable:
            d["mean"] = None  # never a number for an unstable configuration
            d["ci"] = [None, None]
            d["mean_untrusted"] = self.mean
            d["rel_half_width"] = None
            d["per_class"] = [{"class": pc["class"], "Q": None, "Q_ci": None, "W": None, "W_ci": None,
                               "Q_untrusted": pc["Q"], "W_untrusted": pc["W"]} for pc in self.per_class]
        return d


def summarize(params: dict, runs: list[dict], *, seed: int, wall: float, metric: str = "Q") -> SimResult:
    """Aggregate replications: Student-t CIs, instability verdict, diagnostics."""
    R = len(runs)
    N = len(params["alpha"])
    n_unst = sum(r["unstable"] for r in runs)
    n_bound = sum(r["hit_bound"] for r in runs)
    # a configuration is unstable when any replication hit the bound or most show a trend
    unstable = n_bound > 0 or n_unst > R / 2
    est = t_interval([r["Q"] for r in runs])
    per_class = []
    for i in range(N):
        qi = t_interval([r["Q_class"][i] for r in runs])
        wv = [r["W_class"][i] for r in runs if r["W_class"][i] == r["W_class"][i]]
        wi = t_interval(wv) if wv else None
        per_class.append({
            "class": i + 1,
            "Q": qi.mean, "Q_ci": [qi.low, qi.high],
            "W": None if wi is None else wi.mean,
            "W_ci": None if wi is None else [wi.low, wi.high],
        })
    little = float(np.mean([abs(r["little_Q"] - r["Q"]) / max(r["Q"], 1e-12) for r in runs]))
    msg = "ok"
    if unstable:
        msg = (f"unstable: {n_bound} of {R} replications exceeded {params['max_in_system']} tasks in system, "
               f"{n_unst} of {R} show a growing number in system")
    elif params.get("stabilizable") is False:
        msg = "the allocation LP gives lambda* <= 1: the system cannot be stabilized"
    return SimResult(
        success=not unstable,
        message=msg,
        policy=params["policy"],
        metric=metric,
        mean=est.mean,
        ci=(est.low, est.high),
        rel_half_width=est.rel_half_width,
        per_class=per_class,
        unstable=bool(unstable),
        unstable_reps=int(n_unst),
        hit_bound_reps=int(n_bound),
        reps=R,
        horizon=params["horizon"],
        warmup=params["warmup"],
        seed=seed,
        events=int(sum(r["events"] for r in runs)),
        wall_seconds=wall,
        kernel_seconds=float(sum(r["wall"] for r in runs)),
        contacted=float(np.mean([r["contacted"] for r in runs])),
        contacted_formula=params["ns_formula"],
        binds=float(np.mean([r["binds"] for r in runs])),
        little_rel_error=little,
        options={
            "k": params["k"], "tie": params["tie_name"], "dist": params["dist"].name,
            "exact_weights": params["exact"], "max_in_system": params["max_in_system"],
            "lambda_star": params["lam"],
        },
        replications=runs,
    )


def warm_up_kernels() -> None:
    """Compile (or load from the numba cache) the kernel in this process."""
    from ..scenarios import load

    sysm = load("2.B")
    p = prepare(sysm, "mct", horizon=1.0)
    replication(np.random.SeedSequence(0), p)


def simulate(
    system,
    policy: str,
    *,
    reps: int = 30,
    horizon: float = 20_000.0,
    seed: int = 2009,
    warmup: float = 0.0,
    k: int | None = None,
    tie: str = "lowest",
    C: float | np.ndarray = 1.0,
    dist: Any = None,
    scv: float = 2.0,
    lp_solution: str = "vertex",
    max_in_system: int | None = None,
    workers: int | None = None,
    backend: str = "local",
    scheduler: str | None = None,
    progress: bool = True,
) -> SimResult:
    """Simulate the immediate-mode mapping model of ``system`` under ``policy``.

    Parameters
    ----------
    system : System
        E.g. ``hetsched.scenarios.load("2.C1")``.
    policy : str
        ``met``, ``mct``, ``kpb`` (needs ``k`` = k-bar, the number of machines
        considered per class), ``lpas``, ``lpas-2k``, ``lp-static``,
        ``guided-lpas``, ``guided-lpas-2k`` (see :mod:`.policies`).
    reps, horizon, seed, warmup
        ``reps`` independent replications of ``[0, horizon]`` from
        ``SeedSequence(seed)``; statistics on ``[warmup, horizon]`` (thesis:
        30 x 20,000, no warm-up deletion).
    tie : {"lowest", "highest", "random"}
        Rule between machines with equal expected completion time.
    C : float or (N, M) array
        Guided-LPAS constants ``C_ij`` (thesis §2.4 uses 1).
    dist : "exp" | "det" | "hyperexp" | scipy-like, optional
        Execution-time distribution (default: the system's); ``scv`` is the
        hyperexponential's squared coefficient of variation (2 = twice the
        exponential's variance).
    max_in_system : int, optional
        Instability bound (default ``max(10000, 1000 M)``): a replication that
        exceeds it stops and is flagged.
    workers, backend, scheduler, progress
        See :func:`hetsched.runner.replicate`.

    Returns
    -------
    SimResult
    """
    from ..runner import default_workers, replicate

    params = prepare(system, policy, k=k, tie=tie, C=C, dist=dist, scv=scv, lp_solution=lp_solution,
                     horizon=horizon, warmup=warmup, max_in_system=max_in_system)
    n_workers = default_workers() if workers is None else workers
    warm_up_kernels()  # compile or load from cache here, so that forked workers inherit it
    if backend == "local" and n_workers > 1 and reps > 1:
        # start the pool and load the compiled kernels in every worker, untimed
        replicate(replication, prepare(system, "mct", horizon=1.0), min(reps, n_workers), 0,
                  workers=n_workers, progress=False)
    t0 = time.perf_counter()
    runs = replicate(replication, params, reps, seed, workers=workers, backend=backend, scheduler=scheduler,
                     progress=progress, label=f"{system.id} {params['policy']}")
    wall = time.perf_counter() - t0
    return summarize(params, runs, seed=seed, wall=wall)


_CLI_OPTIONS = {"k", "dist", "tie", "warmup", "C", "scv", "lp_solution", "max_in_system"}


def simulate_cli(system, policy: str, *, reps: int, horizon: float, seed: int, workers: int | None,
                 backend: str, scheduler: str | None, progress: bool, options: dict) -> dict:
    """Model entry for ``hetsched simulate`` (see :mod:`hetsched.sim`): the contract's JSON object."""
    bad = sorted(set(options) - _CLI_OPTIONS)
    if bad:
        raise ModelError(f"option(s) {', '.join('--' + b for b in bad)} do not apply to policy {policy!r} "
                         f"(mapping model)")
    res = simulate(system, policy, reps=reps, horizon=horizon, seed=seed, workers=workers,
                   backend=backend, scheduler=scheduler, progress=progress, **options)
    out = res.to_json()
    out["scenario"] = system.id
    out["model"] = "mapping"
    return out
