"""Decentralized load balancing in grids: MCT, KPB, LPAS_dec (thesis §1.5, ch. 4).

Model
-----
*System.* ``M`` machines, ``N`` task classes. Machine ``j`` receives its own
Poisson stream of class-``i`` tasks with rate ``alpha_ij`` (``System.alpha_matrix``;
``alpha_ij = alpha_i / M`` when the scenario says ``alpha_per_machine =
"uniform"``). A class-``i`` task runs on machine ``j`` for an exponential time of
rate ``mu_ij = mu'_ij a_j`` (nominal rate times CPU availability, §4.3.3). Each
machine serves its queue FCFS, one task at a time.

*Decisions (§1.5.1).* When a class-``i`` task arrives at machine ``o`` (the
*origin*), ``o`` at once picks a candidate set ``S`` and sends the task to the
machine of ``S`` with the least expected completion time (§2.2.2)

.. math:: ECT_{ij} = 1/\\hat\\mu_{ij} + \\sum_{i'} Q_{i'j}/\\hat\\mu_{i'j},

computed by machine ``j`` itself from its queue ``Q_{.j}`` and its own rate
estimates ``\\hat\\mu_{.j}``. The task never moves again. Ties: lowest machine
index (``tie="lowest"``) or uniform (``tie="random"``, own stream).

* ``mct`` (§4.1): ``S`` = every machine able to run class ``i``.
* ``kpb`` (§4.1): ``S`` = the ``k`` (= ``k-bar``) machines with the largest
  ``mu_ij`` in *o's view* (ties: lower index).
* ``lpas-dec`` (§4.2): ``o`` solves the allocation LP (4.1)-(4.3) on its view
  (``alpha_i = sum_j view_alpha_ij``, ``mu = view_mu``; a vertex solution,
  identical view columns aggregated = group-symmetric) and ``S = {j :
  delta*_ij > 0}``. If ``S`` is empty, every machine.

With ``include_local=True`` the origin is always added to ``S``.

*Messages (§1.5.1, §4.1-4.2).* Every machine ``j`` of ``S`` other than the
origin costs one request and one reply: ``X += 2 |S \\ {o}|`` per arrival (MCT:
``2 (M-1)``). The origin knows its own state without messages. Piggy-backed
rates: KPB requests carry ``o``'s execution rates and replies ``j``'s; LPAS_dec
both arrival and execution rates. On receipt each side overwrites the sender's
column in its view. Messages take no time.

*Views.* Machine ``v`` holds ``view_alpha[v]``, ``view_mu[v]`` (``N x M``). At
time 0 every view holds every machine's published estimates (``initial view =
exact``). A machine always knows its own current estimates (its own column is
refreshed at every change); others learn them only through messages
(``propagation="messages"``), or at once (``propagation="instant"``, the
full-information oracle). A machine re-solves its LP at its next arrival after
any entry of its view changed.

*Rate changes (§4.3.1).* Rate-change events form a Poisson process of rate
``rate_change_rate`` (4.A: 0.035). At each, one of the ``2NM`` rates
``alpha_ij``, ``mu_ij`` is picked uniformly and set to its initial value times a
level drawn uniformly from ``alpha_levels`` (1, 1.1, 1.2) or ``mu_levels`` (1,
1.05, 1.15). A running task's remaining time is rescaled (exponential work).

*Estimation inaccuracy (§4.3.2).* Machine ``j`` publishes ``\\hat r = r (1+E)``,
``E ~ U[-I, I]`` for each of its rates ``r``, drawn anew whenever ``r`` changes
(and at time 0). ECTs and views use estimates; the simulated system the actual
rates.

*Dynamic CPU availability (§4.3.3, 4.B).* CPU events form a Poisson process of
mean interval ``cpu_change_mean_interval``; at each, every machine takes the
steady-state availability ``a`` of one of the 15 chains of Table 3.13, drawn
uniformly; between events machines run at ``mu'_ij a_j``.

*State / events.* State: queues (class, arrival time, work of each task),
actual and estimated rates, views, supports. Events: superposed arrival
(rate ``sum alpha_ij``), completion (per machine), rate change, CPU change.

*Output.* ``W`` mean completion time (arrival at the origin to completion),
per class ``W_i``, ``X`` messages, LP solves, remote transfers, instability
(bound on tasks in system, or a trend over 10 segments, as the mapping model).

Three layers: :func:`simulate` (validate, replicate, summarise) →
:func:`prepare` (arrays) → :func:`replication` (compiled kernel
:func:`._decentral_kernel.run_decentral`).
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..errors import ModelError
from ..stats import t_interval

__all__ = ["simulate", "simulate_command", "prepare", "replication", "DecentralResult", "POLICY_CODES",
           "per_machine_alpha"]

POLICY_CODES = {"mct": 0, "kpb": 1, "lpas-dec": 2}
PROPAGATION = ("messages", "instant")
TIES = ("lowest", "random")
NSEG = 10


def per_machine_alpha(system) -> np.ndarray:
    """``N x M`` arrival rates ``alpha_ij``: ``System.alpha_matrix``, else ``alpha_i / M`` (§4.3.3)."""
    if system.alpha_matrix is not None:
        return np.asarray(system.alpha_matrix, dtype=float)
    return np.repeat(system.alpha_array[:, None] / system.M, system.M, axis=1)


def _a_choices(system) -> np.ndarray:
    chains = [g.cpu_chain for g in system.groups]
    if any(c is None for c in chains):
        return np.unique(system.a)
    return np.array([c.mean_availability() for c in chains])


def prepare(
    system,
    policy: str,
    *,
    k: int | None = None,
    horizon: float = 200_000.0,
    warmup: float = 0.0,
    inaccuracy: float = 0.0,
    rate_changes: bool | None = None,
    cpu_changes: bool | None = None,
    propagation: str = "messages",
    include_local: bool = False,
    tie: str = "lowest",
    max_in_system: int | None = None,
    log: int = 0,
) -> dict:
    """Validate and turn ``system`` + ``policy`` into the kernel's arrays (a picklable dict)."""
    key = str(policy).strip().lower()
    if key not in POLICY_CODES:
        raise ModelError(f"policy {policy!r} is not a decentralized-grid policy; known: {', '.join(POLICY_CODES)}")
    mu0 = np.ascontiguousarray(system.mu, dtype=float)
    N, M = mu0.shape
    kbar = 0
    if key == "kpb":
        if k is None:
            raise ModelError("policy 'kpb' needs k (k-bar, the number of machines considered per class)")
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= M:
            raise ModelError(f"k must be an integer in [1, {M}] (machines per class), got {k!r}")
        kbar = int(k)
    elif k is not None:
        raise ModelError(f"option k applies to policy 'kpb' only, got k={k!r} with policy {key!r}")
    if not (isinstance(horizon, (int, float)) and math.isfinite(horizon) and horizon > 0):
        raise ModelError(f"horizon must be a finite positive time, got {horizon!r}")
    if not (isinstance(warmup, (int, float)) and 0 <= warmup < horizon):
        raise ModelError(f"warmup must lie in [0, horizon), got {warmup!r}")
    if not (isinstance(inaccuracy, (int, float)) and 0 <= inaccuracy < 1):
        raise ModelError(f"inaccuracy I must lie in [0, 1), got {inaccuracy!r}")
    if propagation not in PROPAGATION:
        raise ModelError(f"propagation must be one of {PROPAGATION}, got {propagation!r}")
    if str(tie).lower() not in TIES:
        raise ModelError(f"tie rule must be one of {TIES}, got {tie!r}")
    alpha0 = np.ascontiguousarray(per_machine_alpha(system))
    meta = dict(system.meta or {})
    rc_rate = float(meta.get("rate_change_rate", 0.0))
    if rate_changes is None:
        rate_changes = rc_rate > 0
    if rate_changes and rc_rate <= 0:
        raise ModelError(f"scenario {system.id!r} has no 'rate_change_rate' in its meta; rate_changes needs one")
    alpha_levels = np.asarray(meta.get("alpha_levels", [1.0, 1.0, 1.0]), float)
    mu_levels = np.asarray(meta.get("mu_levels", [1.0, 1.0, 1.0]), float)
    for name, lv in (("alpha_levels", alpha_levels), ("mu_levels", mu_levels)):
        if lv.shape != (3,) or (lv <= 0).any():
            raise ModelError(f"meta field '{name}': expected three positive levels, got {lv.tolist()}")
    cpu_mean = float(meta.get("cpu_change_mean_interval", 0.0))
    if cpu_changes is None:
        cpu_changes = cpu_mean > 0
    if cpu_changes and cpu_mean <= 0:
        raise ModelError(f"scenario {system.id!r} has no 'cpu_change_mean_interval'; cpu_changes needs one")
    a0 = np.ascontiguousarray(system.a, dtype=float)
    if max_in_system is None:
        max_in_system = int(max(10_000, 1_000 * M))
    lam = None
    try:
        from ..lp import solve_allocation

        lam = float(solve_allocation(mu0 * a0[None, :], alpha0.sum(axis=1)).lam)
    except Exception:  # pragma: no cover - diagnostic only
        lam = None
    return {
        "policy": key,
        "code": POLICY_CODES[key],
        "k": kbar if key == "kpb" else None,
        "alpha0": alpha0,
        "mu0": mu0,
        "a0": a0,
        "a_choices": np.ascontiguousarray(_a_choices(system)),
        "rc_rate": rc_rate if rate_changes else 0.0,
        "alpha_levels": alpha_levels,
        "mu_levels": mu_levels,
        "cpu_rate": 1.0 / cpu_mean if cpu_changes else 0.0,
        "inaccuracy": float(inaccuracy),
        "propagation": propagation,
        "include_local": bool(include_local),
        "tie": str(tie).lower(),
        "horizon": float(horizon),
        "warmup": float(warmup),
        "max_in_system": int(max_in_system),
        "log": int(log),
        "lambda_star": lam,
        "N": N,
        "M": M,
    }


def instability_rule(seg) -> bool:
    from .mapping import instability_rule as rule

    return rule(seg)


def replication(seed_seq: np.random.SeedSequence, params: dict) -> dict:
    """One replication (picklable top-level function for :func:`hetsched.runner.replicate`)."""
    from . import _decentral_kernel as K
    from ._rng import make_streams

    N, M = params["N"], params["M"]
    st = make_streams(seed_seq, K.N_STREAMS)
    out_resp = np.zeros(N)
    out_done = np.zeros(N, np.int64)
    out_seg = np.zeros(NSEG)
    out_int = np.zeros(K.N_OUT_INT, np.int64)
    out_float = np.zeros(2)
    L = params["log"]
    log_t, log_x = np.zeros(L), np.zeros(L)
    log_i, log_o, log_d = (np.zeros(L, np.int64) for _ in range(3))
    t0 = time.perf_counter()
    K.run_decentral(
        params["code"], params["k"] or 0, params["include_local"], params["propagation"] == "instant",
        params["tie"] == "random",
        params["alpha0"], params["mu0"], params["a0"], params["a_choices"],
        params["rc_rate"], params["alpha_levels"], params["mu_levels"],
        params["cpu_rate"], params["inaccuracy"],
        params["horizon"], params["warmup"], params["max_in_system"], st,
        out_resp, out_done, out_seg, out_int, out_float,
        log_t, log_i, log_o, log_d, log_x,
    )
    wall = time.perf_counter() - t0
    status = int(out_int[K.O_STATUS])
    done = out_done.astype(float)
    W_class = np.where(done > 0, out_resp / np.maximum(done, 1), np.nan)
    arrivals = int(out_int[K.O_ARRIVALS])
    res = {
        "W": float(out_resp.sum() / max(done.sum(), 1)),
        "W_class": W_class.tolist(),
        "Q": float(np.mean(out_seg)),
        "messages": int(out_int[K.O_MESSAGES]),
        "events": int(out_int[K.O_EVENTS]),
        "arrivals": arrivals,
        "completions": int(out_int[K.O_COMPLETIONS]),
        "lp_solves": int(out_int[K.O_LPSOLVES]),
        "lp_pivots": int(out_int[K.O_PIVOTS]),
        "lp_warm": int(out_int[K.O_WARM]),
        "lp_checks": int(out_int[K.O_CHECKS]),
        "lp_structured": int(out_int[K.O_GUB]),
        "rate_change_events": int(out_int[K.O_RC_EVENTS]),
        "cpu_events": int(out_int[K.O_CPU_EVENTS]),
        "view_updates": int(out_int[K.O_VIEW_UPDATES]),
        "mean_candidates": float(out_int[K.O_SUPPORT_SIZE]) / max(arrivals, 1),
        "remote_fraction": float(out_int[K.O_REMOTE]) / max(arrivals, 1),
        "peak": int(out_int[K.O_PEAK]),
        "status": status,
        "hit_bound": status == 1,
        "unstable": bool(status == 1 or instability_rule(out_seg)),
        "segments": out_seg.tolist(),
        "wall": wall,
    }
    if L:
        n = int(out_int[K.O_LOGGED])
        res["log"] = {"t": log_t[:n], "i": log_i[:n], "o": log_o[:n], "d": log_d[:n], "x": log_x[:n]}
    return res


@dataclass
class DecentralResult:
    """Result of :func:`simulate` (``OptimizeResult`` style); ``metric = "W"``.

    ``mean``/``ci``: mean completion time ``W`` over replications (Student-t,
    95 %); ``messages``: mean total ``X`` per replication; ``unstable``: any
    replication hit the bound or most show a growing number in system.
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
    reps: int
    horizon: float
    seed: int
    events: int
    wall_seconds: float
    kernel_seconds: float
    messages: float
    messages_ci: tuple[float, float]
    lp_solves: float
    mean_candidates: float
    remote_fraction: float
    options: dict = field(default_factory=dict)
    replications: list[dict] = field(default_factory=list)

    def to_json(self, with_replications: bool = False) -> dict:
        d = asdict(self)
        d["ci"] = list(self.ci)
        d["messages_ci"] = list(self.messages_ci)
        if not with_replications:
            d.pop("replications")
        else:
            for r in d["replications"]:
                r.pop("log", None)
        if self.unstable:
            d["mean"] = None
            d["ci"] = [None, None]
            d["mean_untrusted"] = self.mean
            d["rel_half_width"] = None
            d["per_class"] = [{"class": pc["class"], "W": None, "W_ci": None, "W_untrusted": pc["W"]}
                              for pc in self.per_class]
        return d


def summarize(params: dict, runs: list[dict], *, seed: int, wall: float) -> DecentralResult:
    R = len(runs)
    n_unst = sum(r["unstable"] for r in runs)
    n_bound = sum(r["hit_bound"] for r in runs)
    unstable = n_bound > 0 or n_unst > R / 2
    est = t_interval([r["W"] for r in runs])
    per_class = []
    for i in range(params["N"]):
        wv = [r["W_class"][i] for r in runs if r["W_class"][i] == r["W_class"][i]]
        wi = t_interval(wv) if wv else None
        per_class.append({"class": i + 1, "W": None if wi is None else wi.mean,
                          "W_ci": None if wi is None else [wi.low, wi.high]})
    msg = t_interval([float(r["messages"]) for r in runs])
    text = "ok"
    if unstable:
        text = (f"unstable: {n_bound} of {R} replications exceeded {params['max_in_system']} tasks in system, "
                f"{n_unst} of {R} show a growing number in system")
    return DecentralResult(
        success=not unstable, message=text, policy=params["policy"], metric="W",
        mean=est.mean, ci=(est.low, est.high), rel_half_width=est.rel_half_width,
        per_class=per_class, unstable=bool(unstable), unstable_reps=int(n_unst), reps=R,
        horizon=params["horizon"], seed=seed,
        events=int(sum(r["events"] for r in runs)), wall_seconds=wall,
        kernel_seconds=float(sum(r["wall"] for r in runs)),
        messages=msg.mean, messages_ci=(msg.low, msg.high),
        lp_solves=float(np.mean([r["lp_solves"] for r in runs])),
        mean_candidates=float(np.mean([r["mean_candidates"] for r in runs])),
        remote_fraction=float(np.mean([r["remote_fraction"] for r in runs])),
        options={"k": params["k"], "inaccuracy": params["inaccuracy"], "propagation": params["propagation"],
                 "include_local": params["include_local"], "tie": params["tie"],
                 "rate_changes": params["rc_rate"] > 0, "cpu_changes": params["cpu_rate"] > 0,
                 "warmup": params["warmup"], "max_in_system": params["max_in_system"],
                 "lambda_star": params["lambda_star"]},
        replications=runs,
    )


def warm_up_kernels() -> None:
    """Compile (or load from the numba cache) the kernel in this process."""
    from ..system import System, groups_from_matrix

    s = System(id="warm", alpha=(1.0,), groups=groups_from_matrix([[2.0, 3.0]]))
    for pol in ("mct", "lpas-dec"):
        replication(np.random.SeedSequence(0), prepare(s, pol, horizon=1.0))


def simulate(
    system,
    policy: str,
    *,
    reps: int = 30,
    horizon: float = 200_000.0,
    seed: int = 2009,
    k: int | None = None,
    workers: int | None = None,
    backend: str = "local",
    scheduler: str | None = None,
    progress: bool = True,
    **options: Any,
) -> DecentralResult:
    """Simulate the decentralized grid ``system`` under ``policy`` (thesis ch. 4).

    Parameters
    ----------
    system : System
        With per-machine streams (``alpha_matrix``) or ``alpha_i / M`` each,
        e.g. ``hetsched.scenarios.load("4.A")``.
    policy : {"mct", "kpb", "lpas-dec"}
    reps, horizon, seed
        ``reps`` replications of ``[0, horizon]`` from ``SeedSequence(seed)``
        (thesis 4.A: 30 x 200,000).
    k : int
        ``k-bar`` of KPB (machines per class).
    **options
        ``warmup``, ``inaccuracy`` (``I`` of §4.3.2), ``rate_changes`` /
        ``cpu_changes`` (default: on when the scenario's meta defines them),
        ``propagation`` (``messages`` | ``instant``), ``include_local``,
        ``tie`` (``lowest`` | ``random``), ``max_in_system``. See the module
        docstring.
    """
    from ..runner import default_workers, replicate

    params = prepare(system, policy, k=k, horizon=horizon, **options)
    n_workers = default_workers() if workers is None else workers
    warm_up_kernels()
    if backend == "local" and n_workers > 1 and reps > 1:
        from ..system import System, groups_from_matrix

        s = System(id="warm", alpha=(1.0,), groups=groups_from_matrix([[2.0, 3.0]]))
        replicate(replication, prepare(s, "lpas-dec", horizon=1.0), min(reps, n_workers), 0,
                  workers=n_workers, progress=False)
    t0 = time.perf_counter()
    runs = replicate(replication, params, reps, seed, workers=workers, backend=backend, scheduler=scheduler,
                     progress=progress, label=f"{system.id} {params['policy']}")
    wall = time.perf_counter() - t0
    return summarize(params, runs, seed=seed, wall=wall)


_CLI_OPTIONS = {"warmup", "inaccuracy", "rate_changes", "cpu_changes", "propagation", "include_local", "tie",
                "max_in_system"}


def simulate_command(system, policy: str, *, reps: int = 30, horizon: float | None = None, seed: int = 2009,
                     workers: int | None = None, backend: str = "local", scheduler: str | None = None,
                     k: int | None = None, progress: bool = True, **options: Any) -> dict:
    """``hetsched simulate`` for systems with per-machine streams: the contract's JSON object.

    Keys: ``policy``, ``metric`` (``"W"``), ``mean``, ``ci``, ``per_class``,
    ``unstable``, ``events``, ``wall_seconds``, ``messages`` (mean total ``X``
    per replication), plus diagnostics. ``horizon`` defaults to 200,000.
    """
    bad = sorted(set(options) - _CLI_OPTIONS)
    if bad:
        raise ModelError(f"option(s) {', '.join('--' + b for b in bad)} do not apply to the decentralized-grid model")
    res = simulate(system, policy, reps=reps, horizon=200_000.0 if horizon is None else horizon, seed=seed, k=k,
                   workers=workers, backend=backend, scheduler=scheduler, progress=progress, **options)
    out = res.to_json()
    out["scenario"] = system.id
    out["model"] = "decentral"
    return out


def simulate_cli(system, policy: str, *, reps: int, horizon: float, seed: int, workers: int | None,
                 backend: str, scheduler: str | None, progress: bool, options: dict) -> dict:
    """Model entry in the :mod:`hetsched.sim` registry signature."""
    opts = dict(options)
    k = opts.pop("k", None)
    return simulate_command(system, policy, reps=reps, horizon=horizon, seed=seed, workers=workers,
                            backend=backend, scheduler=scheduler, k=k, progress=progress, **opts)
