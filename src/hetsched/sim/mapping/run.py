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

__all__ = ["simulate", "plan", "replication", "summarize", "instability_rule", "warm_up_kernels", "simulate_cli",
           "prepare_trace", "records_of"]

#: the trend part of the one instability rule (:mod:`hetsched.sim.core.instability`)
instability_rule = trend_unstable


def _kernel(params: dict):
    from . import kernel as K

    if params["user"] is not None:
        return K.make_user_kernel(params["user"])
    return K.run_mapping


_EMPTY_F = np.zeros(0)
_EMPTY_I = np.zeros(0, np.int64)


def _window(seed_seq: np.random.SeedSequence, params: dict):
    """Trace arrays of this replication's window (window ``r`` for child ``r`` of the root seed)."""
    tr = params.get("trace")
    if tr is None:
        return _EMPTY_F, _EMPTY_F, _EMPTY_I, 0, 0.0
    b = tr["bounds"]
    r = int(seed_seq.spawn_key[-1]) if len(seed_seq.spawn_key) else 0
    r = min(r, len(b) - 2)
    lo, hi = int(b[r]), int(b[r + 1])
    t = tr["t"][lo:hi]
    return np.ascontiguousarray(t - t[0]), tr["x"][lo:hi], tr["c"][lo:hi], lo, float(t[0])


def replication(seed_seq: np.random.SeedSequence, params: dict) -> dict:
    """One replication (picklable top-level function for :func:`hetsched.runner.replicate`).

    With ``params["trace"]`` (:func:`prepare_trace`) replication ``r`` replays
    window ``r`` of the trace; with ``params["records"]`` it returns the
    per-task records as arrays (``rec_*``; :func:`records_of` makes the frame).
    """
    from . import kernel as K

    run = _kernel(params)
    seed_seq = seed_sequence(seed_seq)
    tr_t, tr_x, tr_c, tr_lo, tr_t0 = _window(seed_seq, params)
    trace = tr_t.shape[0] > 0
    want_rec = bool(params.get("records"))
    rec_len = 0
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
        out_tend = np.zeros(1)
        out_work = np.zeros(mu.shape[1])
        if want_rec:
            if rec_len == 0:
                rec_len = tr_t.shape[0] if trace else int(alpha.sum() * H + 8 * math.sqrt(alpha.sum() * H) + 64)
            rec_a, rec_s, rec_e = np.full(rec_len, np.nan), np.full(rec_len, np.nan), np.full(rec_len, np.nan)
            rec_m = np.full(rec_len, -1, np.int64)
            rec_c = np.full(rec_len, -1, np.int64)
        else:
            rec_a = rec_s = rec_e = _EMPTY_F
            rec_m = rec_c = _EMPTY_I
        t0 = time.perf_counter()
        c0 = time.process_time()
        run(
            params["code"], alpha, mu, params["mu_policy"], params["w"], params["incremental"], params["cand"],
            params["ncand"],
            params["pw"], params["pi"], params["C"], d.code, dpar, gen,
            H, params["warmup"], params["max_in_system"], params["tie"], st,
            out_q, out_resp, out_seg, out_int, out_assigned,
            tr_t, tr_x, tr_c, rec_a, rec_s, rec_e, rec_m, rec_c, out_tend, out_work,
        )
        wall = time.perf_counter() - t0
        cpu = time.process_time() - c0
        if out_int[K.O_STATUS] == K.ST_EXHAUSTED:  # general samples exhausted (about 8 sigma): twice as many
            gen_len *= 2
            continue
        if out_int[K.O_STATUS] == K.ST_RECORDS_FULL:  # more arrivals than the record arrays hold: twice as many
            rec_len *= 2
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
    trend = status == K.ST_OK and not trace and trend_unstable(out_seg)
    Q = float(out_q.sum())
    t_end = float(out_tend[0])
    span = (t_end if trace else H) - params["warmup"]
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
        **({"jobs": int(tr_t.shape[0]), "t_end": t_end, "window_start": tr_t0, "work": out_work.tolist(),
            "span": float(tr_t[-1])} if trace else {}),
        **(_rec_arrays(rec_a, rec_s, rec_e, rec_m, rec_c, tr_lo, tr_t0, arrivals)
           if want_rec else {}),
    }


def _rec_arrays(rec_a, rec_s, rec_e, rec_m, rec_c, lo, t0, arrivals) -> dict:
    """Records of the tasks finished in the run (every task of a trace window), on the trace's time axis."""
    n = min(arrivals, rec_a.shape[0])
    done = np.flatnonzero(np.isfinite(rec_e[:n]))
    return {"rec_task": done + lo, "rec_a": rec_a[done] + t0, "rec_s": rec_s[done] + t0, "rec_e": rec_e[done] + t0,
            "rec_m": rec_m[done], "rec_c": rec_c[done], "rec_unfinished": int(n - done.size)}


def records_of(runs: list[dict]):
    """The per-task records of replications (``records=True``) as one frame with a ``rep`` column
    (and removes the record arrays from ``runs``)."""
    import pandas as pd

    from ...traces import records_frame

    parts = []
    for r, run in enumerate(runs):
        df = records_frame(run.pop("rec_task"), run.pop("rec_c"), run.pop("rec_a"), run.pop("rec_s"),
                           run.pop("rec_e"), run.pop("rec_m"))
        df.insert(0, "rep", np.full(len(df), r, np.int64))
        parts.append(df)
    return pd.concat(parts, ignore_index=True)


def summarize(params: dict, runs: list[dict], *, seed: int, wall: float, scenario: str = "") -> SimResult:
    """Aggregate replications: Student-t CIs, instability verdict, diagnostics.

    A trace replay (``params["trace"]``) reports ``W`` (mean response time) as
    its metric, plus ``jobs``, ``load``, ``lp_lambda``; its instability verdict
    is the allocation LP's for the trace's class mix (a finite trace always
    drains, so no run can show growth), and its records, if asked for, are
    ``res.records``.
    """
    R = len(runs)
    N = len(params["alpha"])
    tr = params.get("trace")
    records = records_of(runs) if params.get("records") else None
    unstable, n_bound, n_trend = verdict([r["hit_bound"] for r in runs], [r["trend"] for r in runs])
    metric = "Q" if tr is None else "W"
    policy_load = busiest = None
    if tr is not None:  # the utilisation the policy's routing offers its busiest machine, over the whole trace
        work = np.sum([r["work"] for r in runs], axis=0)
        span = sum(r["span"] for r in runs)
        busiest = int(np.argmax(work))
        policy_load = float(work[busiest] / span) if span > 0 else float("inf")
    per_class = [per_class_entry(i, [r[f"{metric}_class"][i] for r in runs],
                                 Q=[r["Q_class"][i] for r in runs], W=[r["W_class"][i] for r in runs])
                 for i in range(N)]
    little = float(np.mean([abs(r["little_Q"] - r["Q"]) / max(r["Q"], 1e-12) for r in runs]))
    msg = "ok"
    if unstable:
        msg = (f"unstable: {n_bound} of {R} replications exceeded {params['max_in_system']} tasks in system, "
               f"{n_trend} of {R} show a growing number in system")
    elif tr is not None and not tr["stable"]:
        unstable = True
        msg = (f"unstable: the allocation LP for the trace's class mix gives lambda* = {tr['lp_lambda']:.6g} <= 1 "
               f"(load {tr['load']:.4g}): the offered work exceeds the capacity under every allocation")
    elif params.get("stabilizable") is False:
        unstable = True
        msg = (f"unstable: the allocation LP gives lambda* = {params['lam']:.6g} <= 1, so no policy can "
               f"stabilise this system (the runs did not show it yet)")
    contacted = [r["contacted"] for r in runs]
    trace_extra = {}
    if tr is not None:
        trace_extra = {"jobs": int(sum(r["jobs"] for r in runs)), "load": tr["load"], "lp_lambda": tr["lp_lambda"],
                       "target_load": tr["target_load"], "classes": tr["rule"], "trace": tr["source"],
                       "windows": R, "verdict": tr["verdict"], "Q": float(np.mean([r["Q"] for r in runs])),
                       "policy_load": policy_load, "busiest_machine": busiest}
    if records is not None:
        trace_extra["records_unfinished"] = int(sum(r.pop("rec_unfinished") for r in runs))
    res = from_replications(
        runs, model="mapping", policy=params["policy"], metric=metric, key=metric, per_class=per_class,
        wall_seconds=wall, unstable=unstable, message=msg, scenario=scenario, horizon=params["horizon"], seed=seed,
        options={"k": params["k"], "tie": params["tie_name"], "dist": params["dist"].name,
                 "warmup": params["warmup"], "incremental_sums": params["incremental"], "time_scale": params["time_scale"],
                 "max_in_system": params["max_in_system"], "lambda_star": params["lam"]},
        extra={
            "unstable_reps": int(n_trend), "hit_bound_reps": int(n_bound), "warmup": params["warmup"],
            "kernel_seconds": float(sum(r["wall"] for r in runs)),
            "contacted": float(np.mean(contacted)) if params["ns_formula"] is not None else None,
            "contacted_formula": params["ns_formula"],
            "binds": float(np.mean([r["binds"] for r in runs])),
            "little_rel_error": little,
            **trace_extra,
        },
    )
    res.records = records
    return res


def prepare_trace(params: dict, tw, reps: int) -> dict:
    """Params of :func:`prepare` turned into a replay of the :class:`~hetsched.traces.TraceWorkload` ``tw``
    in ``reps`` consecutive windows (replication ``r`` replays window ``r``, :meth:`TraceWorkload.windows`)."""
    n = len(tw)
    if isinstance(reps, bool) or not isinstance(reps, (int, np.integer)) or not 1 <= reps <= n // 2:
        raise ModelError(f"reps: a trace of {n} jobs splits into 1 to {n // 2} windows (replications), got {reps!r}")
    if tw.N != len(params["alpha"]):
        raise ModelError(f"trace: prepared for {tw.N} classes, the system has {len(params['alpha'])}")
    bounds = np.r_[0, np.cumsum([len(p) for p in np.array_split(np.arange(n), int(reps))])].astype(np.int64)
    ns = params["ns_formula"]
    if ns is not None:  # machines contacted per arrival: weighted by the trace's job counts, not by alpha
        nc = params["ncand"]
        per = {"met": 0 * nc, "lp-static": 0 * nc, "lpas-2k": np.minimum(nc, 2),
               "guided-lpas-2k": np.minimum(nc, 2)}.get(params["policy"], nc)
        ns = float(np.bincount(tw.klass, minlength=len(nc)) @ per / n)
    return {**params, "ns_formula": ns, "horizon": float(np.finfo(float).max), "warmup": 0.0,
            "max_in_system": max(int(params["max_in_system"]), n + 1),
            "trace": {"t": np.ascontiguousarray(tw.arrival, dtype=float), "x": np.ascontiguousarray(tw.size, dtype=float),
                      "c": np.ascontiguousarray(tw.klass, dtype=np.int64), "bounds": bounds,
                      "stable": tw.stable, "load": tw.load, "lp_lambda": tw.lp_lambda, "target_load": tw.target_load,
                      "rule": tw.rule, "source": tw.source, "verdict": tw.verdict}}


def warm_up_kernels(params: dict | None = None) -> None:
    """Compile (or load from the numba cache) the kernel in this process; for ``params``' kernel if given."""
    from ...system import MachineGroup, System

    tiny = System(id="warm-up", alpha=(1.0,), groups=(MachineGroup("m", 2, (2.0,)),))
    p = prepare(tiny, "mct", horizon=1.0) if params is None else {**params, "horizon": 1e-9, "warmup": 0.0,
                                                                    "trace": None, "records": False}
    replication(np.random.SeedSequence(0), p)


def _load_modules() -> None:
    """Import what a run needs (the LP solver, scipy.stats for the intervals) before timing it."""
    import scipy.stats  # noqa: F401

    from ... import lp  # noqa: F401


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
    trace: Any = None,
    load: float | None = None,
    classes: str = "runtime",
    records: bool = False,
    windows: str = "batch",
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
    trace : path, DataFrame or TraceWorkload, optional
        Replay a real workload (an SWF log, :func:`hetsched.traces.read_swf`)
        instead of Poisson streams: arrival times, sizes ``X`` (execution time
        ``X / mu_ij``) and classes from :func:`hetsched.traces.workload`
        (``classes`` = the class rule, ``load`` = the target ``1/lambda*``).
        The LP-based policies use the allocation LP of the trace's class mix.
        ``reps`` replications = ``reps`` consecutive windows of the trace
        (``horizon``/``warmup`` do not apply: each window runs until its last
        task is done). Metric ``W``; ``extra`` adds ``jobs``, ``load``, ``lp_lambda``.
    windows : {"batch", "independent"}
        How a trace gives ``reps`` replications: ``batch`` (default) replays
        the whole log once and splits its jobs into ``reps`` consecutive
        windows of equal counts for batch means (``mean`` is the log's own
        mean response time); ``independent`` replays each window from an
        empty system (independent runs, but each window loses the backlog it
        inherits in the log: W is biased low, strongly for heavy-tailed logs).
    records : bool
        Keep one record per task (``res.records``, a DataFrame with the
        columns of :data:`hetsched.traces.RECORD_COLUMNS` and ``rep``; tasks
        unfinished at the horizon are left out and counted in
        ``records_unfinished``).

    Returns
    -------
    SimResult
        ``metric = "Q"`` (time-average number in system); ``per_class`` has
        ``Q``/``W`` per class; ``extra``: ``contacted`` (machines contacted
        per arrival) and formula (2.5), Guided-LPAS ``binds``, Little's-law
        check ``little_rel_error``.
    """
    from ...runner import check_run, replicate

    _load_modules()  # start-up: module imports are not part of wall_seconds
    t_start = time.perf_counter()
    pl = plan(system, policy, reps=reps, horizon=horizon, seed=seed, warmup=warmup, k=k, tie=tie, C=C, dist=dist,
              scv=scv, lp_solution=lp_solution, max_in_system=max_in_system, trace=trace, load=load,
              classes=classes, records=records, windows=windows)
    job = pl.job
    n_workers = check_run(job.reps, job.seed, workers, backend, scheduler)
    # start-up, not timed: compile (or load from the numba cache) here, so that forked workers inherit
    # it; start the pool and load the kernel in every worker
    t_warm = time.perf_counter()
    warm_up_kernels(job.params if job.params["user"] is not None else None)
    if backend == "local" and n_workers > 1:
        replicate(replication, {**job.params, "horizon": 1e-9, "trace": None, "records": False}, n_workers, 0,
                  workers=n_workers, progress=False)
    startup = time.perf_counter() - t_warm
    runs = replicate(job.fn, job.params, job.reps, job.seed, workers=workers, backend=backend,
                     scheduler=scheduler, progress=progress, label=job.label)
    res = pl.finish(runs, 0.0)
    # wall_seconds: everything after start-up (validation, LP, replications, summary)
    res.wall_seconds = time.perf_counter() - t_start - startup
    res.extra["startup_seconds"] = startup
    return res


def plan(system, policy, *, reps: int = 30, horizon: float = 20_000.0, seed: int | None = DEFAULT_SEED,
         warmup: float = 0.0, k: int | None = None, tie: str = DEFAULT_TIE, C: float | np.ndarray = 1.0,
         dist: Any = None, scv: float = 2.0, lp_solution: str = "vertex", max_in_system: int | None = None,
         trace: Any = None, load: float | None = None, classes: str = "runtime", records: bool = False,
         windows: str = "batch"):
    """:func:`simulate` split at its replications (for :class:`hetsched.runner.Batch`).

    Validates and prepares exactly as :func:`simulate` (same arguments but the
    runner's) and returns a :class:`hetsched.runner.Planned`: its ``job``
    (replication function, params, seed, reps) and ``finish(runs, seconds)``,
    which makes the :class:`SimResult` that :func:`simulate` returns for the
    same replications (``wall_seconds`` = ``seconds``).
    """
    from ...runner import Job, Planned

    tw = None
    if trace is not None:
        from ...traces import TraceWorkload, workload

        tw = trace if isinstance(trace, TraceWorkload) else workload(trace, system, classes=classes, load=load)
        if tw.N != system.N:
            raise ModelError(f"trace: prepared for {tw.N} classes, system {system.id!r} has {system.N}")
        # the LP-based policies allocate for the trace's class mix (its work arrival vector)
        system = system.with_(alpha=tuple(float(a) for a in tw.alpha), alpha_matrix=None)
    elif load is not None:
        raise ModelError("load applies to a trace replay only (give trace=...)")
    if not isinstance(records, (bool, np.bool_)):
        raise ModelError(f"records must be True or False, got {records!r}")
    params = prepare(system, policy, k=k, tie=tie, C=C, dist=dist, scv=scv, lp_solution=lp_solution,
                     horizon=horizon, warmup=warmup, max_in_system=max_in_system)
    params["records"] = bool(records)
    params["trace"] = None
    batches = 0
    if tw is not None:
        if windows not in ("batch", "independent"):
            raise ModelError(f"windows: expected 'batch' or 'independent', got {windows!r}")
        prepare_trace(params, tw, reps)  # validates reps against the trace
        batches = int(reps)  # the statistics of the replay need its records (hetsched.traces.replay)
        if windows == "batch":
            reps = 1
        params = prepare_trace({**params, "records": True}, tw, reps)
    root = seed_sequence(seed)
    if isinstance(reps, bool) or not isinstance(reps, (int, np.integer)) or reps < 1:
        raise ModelError(f"reps must be a positive integer, got {reps!r}")
    scenario = system.id

    def finish(runs: list[dict], seconds: float) -> SimResult:
        res = summarize(params, runs, seed=int(root.entropy), wall=seconds, scenario=scenario)
        if tw is not None:
            from .replay import summarize_replay

            res.horizon = None
            res.extra["windows_rule"] = windows
            summarize_replay(res, tw, batches, machines=params["mu"].shape[1], rule=windows,
                             keep_records=bool(records))
        return res

    # warm: this run's own kernel signature (array types differ between policies), so that forked
    # workers inherit it loaded
    return Planned(job=Job(replication, params, int(reps), int(root.entropy), f"{system.id} {params['policy']}"),
                   finish=finish, warm=lambda: warm_up_kernels(params), warm_key=("mapping", id(params)))


_CLI_OPTIONS = {"k", "dist", "tie", "warmup", "C", "scv", "lp_solution", "max_in_system", "trace", "load", "classes",
                "records", "windows"}


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
