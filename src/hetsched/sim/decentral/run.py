"""Layers 2-3 of the decentralized-grid model: one replication (the compiled kernel) and the summary."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ...errors import ModelError
from ..core.instability import trend_unstable, verdict
from ..core.result import SimResult, from_replications, per_class_entry
from ..core.rng import DEFAULT_SEED, make_streams, seed_sequence
from .model import OPTIONS, Prepared, prepare

__all__ = ["replication", "summarize", "simulate", "simulate_cli", "one_run", "warm_up_kernels"]


def replication(seed_seq, p: Prepared) -> dict:
    """One replication (picklable top-level function for :func:`hetsched.runner.replicate`)."""
    from . import kernel as K

    N = p.N
    init, run = K.kernels(p.params.policy)
    st = make_streams(seed_sequence(seed_seq), K.N_STREAMS)
    s = K.new_state(p.params)
    out = K.new_out(N, p.log)
    t0 = time.perf_counter()
    c0 = time.process_time()
    init(p.params, s, st, out)
    run(p.params, s, st, out)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    status = int(out.status[0])
    done = out.done.astype(float)
    W_class = np.where(done > 0, out.resp / np.maximum(done, 1), np.nan)
    arrivals = int(out.arrivals[0])
    trend = status == 0 and trend_unstable(out.seg)
    res = {
        "W": float(out.resp.sum() / done.sum()) if done.sum() else float("nan"),
        "W_class": W_class.tolist(),
        "Q": float(np.mean(out.seg)),
        "messages": int(out.messages[0]),
        "events": int(out.events[0]),
        "arrivals": arrivals,
        "completions": int(out.completions[0]),
        "lp_solves": int(out.lp_solves[0]),
        "lp_pivots": int(out.pivots[0]),
        "lp_warm": int(out.lp_warm[0]),
        "lp_checks": int(out.lp_checks[0]),
        "lp_structured": int(out.lp_structured[0]),
        "rate_change_events": int(out.rc_events[0]),
        "cpu_events": int(out.cpu_events[0]),
        "view_updates": int(out.view_updates[0]),
        "mean_candidates": float(out.support_size[0]) / max(arrivals, 1),
        "remote_fraction": float(out.remote[0]) / max(arrivals, 1),
        "peak": int(out.peak[0]),
        "status": status,
        "hit_bound": status == 1,
        "trend": bool(trend),
        "unstable": bool(status == 1 or trend),
        "segments": out.seg.tolist(),
        "wall": wall,
        "cpu": cpu,
    }
    if p.log:
        n = int(out.logged[0])
        res["log"] = {"t": out.log_t[:n], "i": out.log_i[:n], "o": out.log_o[:n], "d": out.log_d[:n],
                      "x": out.log_x[:n]}
    return res


def one_run(system, policy, seed=None, **options) -> dict:
    """One replication of ``system`` under ``policy`` (a dict of the replication's measures)."""
    return replication(seed_sequence(seed), prepare(system, policy, **options))


def summarize(p: Prepared, runs: list[dict], *, seed, wall: float) -> SimResult:
    """Student-t CIs over replications, the instability verdict, messages and diagnostics."""
    R = len(runs)
    unstable, n_bound, n_trend = verdict([r["hit_bound"] for r in runs], [r["trend"] for r in runs])
    message = "ok"
    if unstable:
        message = (f"unstable: {n_bound} of {R} replications exceeded {p.bound} tasks in system, "
                   f"{n_trend} of {R} show a growing number in system")
        per_class = [{"class": i + 1, "mean": None, "ci": None} for i in range(p.N)]
    else:
        per_class = [per_class_entry(i, [r["W_class"][i] for r in runs]) for i in range(p.N)]
    msg = per_class_entry(0, [float(r["messages"]) for r in runs])
    extra = {
        "messages": msg["mean"], "messages_ci": msg["ci"],
        "lp_solves": float(np.mean([r["lp_solves"] for r in runs])),
        "mean_candidates": float(np.mean([r["mean_candidates"] for r in runs])),
        "remote_fraction": float(np.mean([r["remote_fraction"] for r in runs])),
        "kernel_seconds": float(sum(r["wall"] for r in runs)),
        "unstable_reps": int(n_bound + n_trend),
    }
    if p.class_names:
        extra["class_names"] = list(p.class_names)
    for r in runs:
        r.pop("log", None)
    return from_replications(runs, model="decentral", policy=p.policy, metric="W", key="W", per_class=per_class,
                             wall_seconds=wall, unstable=unstable, message=message, scenario=p.scenario,
                             horizon=p.horizon, seed=seed, options=p.options, extra=extra)


def _warm(p: Prepared) -> None:
    """One empty replication of ``p``'s kernel in this process (compiles it or loads it from the cache)."""
    from dataclasses import replace

    replication(seed_sequence(0), replace(p, params=p.params._replace(horizon=1e-9, warmup=0.0), horizon=1e-9,
                                          warmup=0.0, log=0))


def warm_up_kernels() -> None:
    """Compile (or load from the numba cache) the kernel in this process."""
    from ...system import System, groups_from_matrix

    s = System(id="warm", alpha=(1.0,), groups=groups_from_matrix([[2.0, 3.0]]))
    for pol, k in (("mct", None), ("kpb", 1), ("lpas-dec", None)):  # one kernel per policy
        one_run(s, pol, seed=0, horizon=1.0, k=k)


def simulate(system, policy: str, *, reps: int = 30, horizon: float = 200_000.0, seed: int | None = DEFAULT_SEED,
             k: int | None = None, workers: int | None = None, backend: str = "local", scheduler: str | None = None,
             progress: bool = False, **options: Any) -> SimResult:
    """Simulate the decentralized grid ``system`` under ``policy`` (thesis ch. 4).

    Parameters
    ----------
    system : System
        With per-machine streams (``alpha_matrix``) or ``alpha_i / M`` each,
        e.g. ``hetsched.load("4.A")``.
    policy : {"mct", "kpb", "lpas-dec"}
    reps, horizon, seed
        ``reps`` replications of ``[0, horizon]`` from ``SeedSequence(seed)``
        (thesis 4.A: 30 x 200,000).
    k : int
        ``k-bar`` of KPB (machines per class).
    **options
        ``warmup``, ``inaccuracy`` (``I`` of §4.3.2), ``inaccuracy_draw``
        (``per-message`` default: a fresh error in every report of a
        machine's rates; ``per-rate``: one error per rate value, kept until
        the rate changes), ``rate_changes`` /
        ``cpu_changes`` (default: on when the scenario's meta defines them),
        ``propagation`` (``messages`` | ``instant``), ``include_local``,
        ``tie`` (``random`` default | ``lowest`` | ``highest``),
        ``max_in_system``. See the module docstring.

    Returns
    -------
    SimResult
        ``metric = "W"``; ``messages`` (mean total per replication) and
        ``messages_ci`` read as attributes; unstable configurations have
        ``status = 1``, the reason in ``message`` and no per-class numbers.
    """
    from ...runner import replicate

    pl = plan(system, policy, reps=reps, horizon=horizon, seed=seed, k=k, **options)
    job = pl.job
    t0 = time.perf_counter()
    runs = replicate(job.fn, job.params, job.reps, job.seed, workers=workers, backend=backend, scheduler=scheduler,
                     progress=progress, label=job.label)
    return pl.finish(runs, time.perf_counter() - t0)


def plan(system, policy: str, *, reps: int = 30, horizon: float = 200_000.0, seed: int | None = DEFAULT_SEED,
         k: int | None = None, **options: Any):
    """:func:`simulate` split at its replications (for :class:`hetsched.runner.Batch`): a
    :class:`hetsched.runner.Planned` whose ``finish(runs, seconds)`` makes the same result."""
    from ...runner import Job, Planned

    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ModelError(f"option {unknown[0]!r} does not apply to the decentralized-grid model; "
                         f"options: k, {', '.join(OPTIONS)}")
    if isinstance(reps, bool) or not isinstance(reps, (int, np.integer)) or reps < 1:
        raise ModelError(f"reps: must be a positive integer, got {reps!r}")
    p = prepare(system, policy, k=k, horizon=horizon, **options)
    return Planned(job=Job(replication, p, int(reps), seed, f"{system.id} {p.policy}"),
                   finish=lambda runs, seconds: summarize(p, runs, seed=seed, wall=seconds),
                   warm=lambda: _warm(p), warm_key=("decentral", p.policy))


_CLI_OPTIONS = {"warmup", "inaccuracy", "inaccuracy_draw", "rate_changes", "cpu_changes", "propagation", "include_local", "tie",
                "max_in_system"}


def simulate_cli(system, policy: str, *, reps: int, horizon: float | None, seed: int, workers: int | None,
                 backend: str, scheduler: str | None, progress: bool, options: dict) -> SimResult:
    """Model entry in the :mod:`hetsched.sim` registry signature (``hetsched simulate``)."""
    opts = dict(options)
    k = opts.pop("k", None)
    bad = sorted(set(opts) - _CLI_OPTIONS)
    if bad:
        raise ModelError(f"option(s) {', '.join('--' + b for b in bad)} do not apply to the decentralized-grid model")
    return simulate(system, policy, reps=reps, horizon=200_000.0 if horizon is None else horizon, seed=seed, k=k,
                    workers=workers, backend=backend, scheduler=scheduler, progress=progress, **opts)
