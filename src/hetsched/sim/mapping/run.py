"""Layers 2-3 of the mapping model: one replication (the compiled kernel) and the summary."""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from ...errors import ModelError
from ..core.instability import NSEG, trend_unstable, verdict
from ..core.result import SimResult, from_replications, per_class_entry
from ..core.rng import DEFAULT_SEED, make_streams, seed_sequence
from ..core.variates import ExecDist, draw_general
from .model import prepare
from .policies import DEFAULT_TIE

__all__ = ["simulate", "replication", "summarize", "instability_rule", "warm_up_kernels", "simulate_cli"]

#: the trend part of the one instability rule (:mod:`hetsched.sim.core.instability`)
instability_rule = trend_unstable


def _kernel(params: dict):
    from . import kernel as K

    if params["user"] is not None:
        return K.make_user_kernel(params["user"])
    return K.run_mapping


def replication(seed_seq: np.random.SeedSequence, params: dict) -> dict:
    """One replication (picklable top-level function for :func:`hetsched.runner.replicate`)."""
    from . import kernel as K

    run = _kernel(params)
    seed_seq = seed_sequence(seed_seq)
    alpha, mu = params["alpha"], params["mu"]
    N = alpha.shape[0]
    d: ExecDist = params["dist"]
    H = params["horizon"]
    dpar = np.array(d.par, float)
    gen_len = 0
    while True:
        st = make_streams(seed_seq, K.n_streams(N))  # arrivals 0..N-1, sizes N..2N-1, policy, ties
        if params["general"]:
            if gen_len == 0:
                gen_len = int(alpha.max() * H + 8 * math.sqrt(alpha.max() * H) + 64)
            gss = np.random.SeedSequence(seed_seq.entropy, spawn_key=tuple(seed_seq.spawn_key) + (2**31 - 1,))
            gen = draw_general(d, N, gen_len, np.random.default_rng(gss))
        else:
            gen = np.zeros((N, 1))
        out_q = np.zeros(N)
        out_resp = np.zeros(N)
        out_seg = np.zeros(NSEG)
        out_int = np.zeros(K.O_DONE + N, np.int64)
        out_assigned = np.zeros((N, mu.shape[1]), np.int64)
        t0 = time.perf_counter()
        c0 = time.process_time()
        run(
            params["code"], alpha, mu, params["w"], params["incremental"], params["cand"], params["ncand"],
            params["pw"], params["pi"], params["C"], d.code, dpar, gen,
            H, params["warmup"], params["max_in_system"], params["tie"], st,
            out_q, out_resp, out_seg, out_int, out_assigned,
        )
        wall = time.perf_counter() - t0
        cpu = time.process_time() - c0
        if out_int[K.O_STATUS] == K.ST_EXHAUSTED:  # general samples exhausted (about 8 sigma): twice as many
            gen_len *= 2
            continue
        break
    status = int(out_int[K.O_STATUS])
    if status == K.ST_BAD_CHOICE:
        i, j = int(out_int[K.O_BAD_CLASS]), int(out_int[K.O_BAD_VALUE])
        M = mu.shape[1]
        why = (f"outside 0..{M - 1}" if not 0 <= j < M else f"machine {j} cannot run class {i + 1} (mu[{i}, {j}] = 0)")
        raise ModelError(f"mapping policy {params['policy']!r} returned machine {j} for a task of class {i + 1} "
                         f"(index {i}): {why}")
    done = out_int[K.O_DONE:K.O_DONE + N].astype(float)
    W = np.where(done > 0, out_resp / np.maximum(done, 1), np.nan)
    arrivals = int(out_int[K.O_ARRIVALS])
    trend = status == K.ST_OK and trend_unstable(out_seg)
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
        "events": int(out_int[K.O_EVENTS]),
        "arrivals": arrivals,
        "completions": int(out_int[K.O_COMPLETIONS]),
        "contacted": float(out_int[K.O_CONTACTED]) / max(arrivals, 1),
        "binds": int(out_int[K.O_BINDS]),
        "peak": int(out_int[K.O_PEAK]),
        "status": status,
        "hit_bound": status == K.ST_BOUND,
        "trend": bool(trend),
        "unstable": bool(status == K.ST_BOUND or trend),
        "segments": out_seg.tolist(),
        "share": (out_assigned / np.maximum(out_assigned.sum(axis=1, keepdims=True), 1)).tolist(),
        "wall": wall,
        "cpu": cpu,
    }


def summarize(params: dict, runs: list[dict], *, seed: int, wall: float, scenario: str = "") -> SimResult:
    """Aggregate replications: Student-t CIs, instability verdict, diagnostics."""
    R = len(runs)
    N = len(params["alpha"])
    unstable, n_bound, n_trend = verdict([r["hit_bound"] for r in runs], [r["trend"] for r in runs])
    per_class = [per_class_entry(i, [r["Q_class"][i] for r in runs],
                                 Q=[r["Q_class"][i] for r in runs], W=[r["W_class"][i] for r in runs])
                 for i in range(N)]
    little = float(np.mean([abs(r["little_Q"] - r["Q"]) / max(r["Q"], 1e-12) for r in runs]))
    msg = "ok"
    if unstable:
        msg = (f"unstable: {n_bound} of {R} replications exceeded {params['max_in_system']} tasks in system, "
               f"{n_trend} of {R} show a growing number in system")
    elif params.get("stabilizable") is False:
        unstable = True
        msg = (f"unstable: the allocation LP gives lambda* = {params['lam']:.6g} <= 1, so no policy can "
               f"stabilise this system (the runs did not show it yet)")
    contacted = [r["contacted"] for r in runs]
    return from_replications(
        runs, model="mapping", policy=params["policy"], metric="Q", key="Q", per_class=per_class,
        wall_seconds=wall, unstable=unstable, message=msg, scenario=scenario, horizon=params["horizon"], seed=seed,
        options={"k": params["k"], "tie": params["tie_name"], "dist": params["dist"].name,
                 "warmup": params["warmup"], "incremental_sums": params["incremental"],
                 "max_in_system": params["max_in_system"], "lambda_star": params["lam"]},
        extra={
            "unstable_reps": int(n_trend), "hit_bound_reps": int(n_bound), "warmup": params["warmup"],
            "kernel_seconds": float(sum(r["wall"] for r in runs)),
            "contacted": float(np.mean(contacted)) if params["ns_formula"] is not None else None,
            "contacted_formula": params["ns_formula"],
            "binds": float(np.mean([r["binds"] for r in runs])),
            "little_rel_error": little,
        },
    )


def warm_up_kernels(params: dict | None = None) -> None:
    """Compile (or load from the numba cache) the kernel in this process; for ``params``' kernel if given."""
    from ...system import MachineGroup, System

    tiny = System(id="warm-up", alpha=(1.0,), groups=(MachineGroup("m", 2, (2.0,)),))
    p = prepare(tiny, "mct", horizon=1.0) if params is None else {**params, "horizon": 1e-9, "warmup": 0.0}
    replication(np.random.SeedSequence(0), p)


def simulate(
    system,
    policy,
    *,
    reps: int = 30,
    horizon: float = 20_000.0,
    seed: int | None = DEFAULT_SEED,
    warmup: float = 0.0,
    k: int | None = None,
    tie: str = DEFAULT_TIE,
    C: float | np.ndarray = 1.0,
    dist: Any = None,
    scv: float = 2.0,
    lp_solution: str = "vertex",
    max_in_system: int | None = None,
    workers: int | None = None,
    backend: str = "local",
    scheduler: str | None = None,
    progress: bool = False,
) -> SimResult:
    """Simulate the immediate-mode mapping model of ``system`` under ``policy``.

    Parameters
    ----------
    system : System
        E.g. ``hetsched.load("2.C1")``.
    policy : str or MappingPolicy
        ``met``, ``mct``, ``kpb`` (needs ``k`` = k-bar, the number of machines
        considered per class), ``lpas``, ``lpas-2k``, ``lp-static``,
        ``guided-lpas``, ``guided-lpas-2k`` (see :mod:`.policies`), or a
        function decorated with :func:`~.policies.mapping_policy`.
    reps, horizon, seed, warmup
        ``reps`` independent replications of ``[0, horizon]`` from
        ``SeedSequence(seed)`` (default seed 2009); statistics on
        ``[warmup, horizon]`` (thesis: 30 x 20,000, no warm-up deletion).
    tie : {"random", "lowest", "highest"}
        Rule between machines with equal expected completion time (default
        ``random``: uniform among the tied machines, own seeded stream).
    C : float or (N, M) array
        Guided-LPAS constants ``C_ij`` (thesis §2.4 uses 1).
    dist : "exp" | "det" | "hyperexp" | scipy-like, optional
        Execution-time distribution (default: the system's); ``scv`` is the
        hyperexponential's squared coefficient of variation.
    max_in_system : int, optional
        Instability bound (default ``max(10000, 1000 M)``): a replication that
        exceeds it stops and is flagged.
    workers, backend, scheduler, progress
        See :func:`hetsched.runner.replicate`.

    Returns
    -------
    SimResult
        ``metric = "Q"`` (time-average number in system); ``per_class`` has
        ``Q``/``W`` per class; ``extra``: ``contacted`` (machines contacted
        per arrival) and formula (2.5), Guided-LPAS ``binds``, Little's-law
        check ``little_rel_error``.
    """
    from ...runner import _check, replicate

    t_start = time.perf_counter()
    params = prepare(system, policy, k=k, tie=tie, C=C, dist=dist, scv=scv, lp_solution=lp_solution,
                     horizon=horizon, warmup=warmup, max_in_system=max_in_system)
    root = seed_sequence(seed)
    n_workers = _check(reps, int(root.entropy), workers, backend, scheduler)
    # start-up, not timed: compile (or load from the numba cache) here, so that forked workers inherit
    # it; start the pool and load the kernel in every worker
    t_warm = time.perf_counter()
    warm_up_kernels(params if params["user"] is not None else None)
    if backend == "local" and n_workers > 1:
        replicate(replication, {**params, "horizon": 1e-9}, n_workers, 0, workers=n_workers, progress=False)
    startup = time.perf_counter() - t_warm
    runs = replicate(replication, params, reps, int(root.entropy), workers=workers, backend=backend,
                     scheduler=scheduler, progress=progress, label=f"{system.id} {params['policy']}")
    res = summarize(params, runs, seed=int(root.entropy), wall=0.0, scenario=system.id)
    # wall_seconds: everything after start-up (validation, LP, replications, summary)
    res.wall_seconds = time.perf_counter() - t_start - startup
    res.extra["startup_seconds"] = startup
    return res


_CLI_OPTIONS = {"k", "dist", "tie", "warmup", "C", "scv", "lp_solution", "max_in_system"}


def simulate_cli(system, policy, *, reps: int, horizon: float | None, seed: int, workers: int | None,
                 backend: str, scheduler: str | None, progress: bool, options: dict) -> SimResult:
    """Model entry for ``hetsched simulate`` (see :mod:`hetsched.sim`): a :class:`SimResult`."""
    bad = sorted(set(options) - _CLI_OPTIONS)
    if bad:
        raise ModelError(f"option(s) {', '.join('--' + b for b in bad)} do not apply to policy {policy!r} "
                         f"(mapping model)")
    return simulate(system, policy, reps=reps, horizon=20_000.0 if horizon is None else horizon, seed=seed,
                    workers=workers,
                    backend=backend, scheduler=scheduler, progress=progress, **options)
