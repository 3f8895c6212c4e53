"""Layers 2-3 of the desktop-grid model: one replication (the compiled kernel) and the summary."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ...errors import ModelError
from ..core.instability import NSEG, trend_unstable, verdict
from ..core.result import STATUS_UNSTABLE, SimResult, from_replications, per_class_entry
from ..core.rng import DEFAULT_SEED, make_streams, seed_sequence
from .model import OPTIONS, Prepared, prepare

__all__ = ["replication", "summarize", "simulate", "simulate_cli", "one_run", "warm_up_kernels"]

ROBUST_TABLE = 1 << 12  # slots of the robust variant's support table


def _central_support(mu_col: np.ndarray, alpha: np.ndarray, cap: np.ndarray, size: np.ndarray) -> np.ndarray:
    """Support ``[C, N]`` of the central (IPM, no crossover) solution for capacities ``cap``."""
    from ...errors import SolverError
    from ...lp import solve_allocation

    a = np.clip(cap / size, 0.0, 1.0)
    try:
        res = solve_allocation(mu_col, alpha, a=a, counts=size, solution="central").raise_for_status()
    except (ModelError, SolverError):
        # some class has no available machine, or IPM gave no answer on a trivial
        # LP (e.g. one column): no restriction beyond the available columns
        return np.ascontiguousarray(((mu_col > 0) & (cap > 0)[None, :]).T)
    sup = (res.delta > res.zero_tol) & (mu_col > 0)
    return np.ascontiguousarray(sup.T)


def fresh_state(p: Prepared, seed_seq):
    """``(model, state, lp, events, streams)`` of a new replication, before :func:`kernel.init`."""
    from . import kernel as K
    from ..core.instability import seg_new

    seed_seq = seed_sequence(seed_seq)
    m = K.Model(*p.model)
    N, M, C = p.N, p.M, p.C
    st = make_streams(seed_seq, K.N_STREAMS)
    s = K.State(
        mi=np.zeros((M, K.N_MI), np.int64), mf=np.zeros((M, K.N_MF)),
        p_arr=np.empty(p.bound), p_next=np.empty(p.bound, np.int64), free=np.empty(p.bound, np.int64),
        qhead=np.full(N, -1, np.int64), qtail=np.full(N, -1, np.int64), ql=np.zeros(N, np.int64),
        head_arr=np.zeros(N), chead=np.full(C, -1, np.int64), ctail=np.full(C, -1, np.int64),
        cidle=np.zeros(C, np.int64), ninit=np.zeros(C, np.int64), ist=np.zeros(K.N_IST, np.int64),
        fst=np.zeros(K.N_FST), sg=seg_new(p.warmup, p.horizon), cls_n=np.zeros(N, np.int64), cls_w=np.zeros(N),
        up_time=np.zeros(M))
    m_, nv1 = (N + C, N * C + 1 + N + C + 1) if p.lp_mode == 1 else (1, 2)
    KT = ROBUST_TABLE if p.lp_mode == 2 else 1
    elig = np.ascontiguousarray(m.mu_colT > 0)
    XM, XC = (M, C) if p.grouping == "expanded" else (1, 1)  # the expanded vertex's arrays (else stubs)
    lp = K.LPState(T=np.zeros((m_, nv1)), obj=np.zeros(nv1), basis=np.zeros(m_, np.int64), cap=np.zeros(C),
                   support=elig.copy(), elig_static=elig, keys_cap=np.zeros((KT, C)),
                   key_used=np.zeros(KT, np.bool_), sup_table=np.zeros((KT, C, N), np.bool_),
                   xs=np.zeros((XC, N)), xs_int=np.zeros((2, XC, N), np.int64), qa=np.zeros((XC, N), np.int64),
                   qb=np.full((XC, N), -1, np.int64), nup=np.zeros(XC, np.int64), fen=np.zeros(XM + XC, np.int64),
                   msup=np.zeros((XM, N), np.bool_), xprev=np.full((XM, N), -1, np.int64),
                   xnext=np.full((XM, N), -1, np.int64), xhead=np.full((XC, N), -1, np.int64),
                   xtail=np.full((XC, N), -1, np.int64), xcnt=np.zeros((XC, N), np.int64),
                   xninit=np.zeros((XC, N), np.int64), irank=np.zeros(XM, np.int64))
    return m, s, lp, K.new_event_list(M, N), st


def replication(seed_seq, p: Prepared) -> dict:
    """One replication (picklable top-level function for :func:`hetsched.runner.replicate`)."""
    from . import kernel as K
    from ..core.instability import seg_close

    init, run = K.kernels(p.user)
    m, s, lp, ev, st = fresh_state(p, seed_seq)
    N, M, C = p.N, p.M, p.C
    KT = lp.key_used.shape[0]
    t0 = time.perf_counter()
    c0 = time.process_time()
    rc = init(m, s, lp, ev, st)
    if rc == K.LP_FAILED:
        raise ModelError(f"desktop grid {p.scenario!r}: the allocation LP of the initial state has no optimum")
    lp_seconds = 0.0
    central = 0
    while True:
        rc = run(m, s, lp, ev, st)
        if rc != K.NEED_SUPPORT:
            break
        ts = time.perf_counter()
        if s.ist[K.TABLE_COUNT] * 2 >= KT:  # table half full: start afresh (keys are then rarely reused)
            lp.key_used[:] = False
            s.ist[K.TABLE_COUNT] = 0
            slot, _ = K.table_lookup(lp.cap, lp.keys_cap, lp.key_used)
        else:
            slot = int(s.ist[K.MISS_SLOT])
        lp.keys_cap[slot] = lp.cap
        lp.sup_table[slot] = _central_support(m.mu_colT.T, m.alpha, lp.cap, p.size)
        lp.key_used[slot] = True
        s.ist[K.TABLE_COUNT] += 1
        central += 1
        lp_seconds += time.perf_counter() - ts
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    if rc == K.BAD_CHOICE:
        j, v = int(s.ist[K.ERR_MACHINE]), int(s.ist[K.ERR_VALUE])
        E = lp.support if p.user.uses_lp else lp.elig_static
        p.user.explain(v, s.ql, m.muT[j:j + 1], E[m.col[j]:m.col[j] + 1], machine=j)
        raise p.user.error(j, v, "not a class the machine may take")  # pragma: no cover - explain raises
    hit_bound = rc == K.BOUND
    t_end = float(s.fst[K.T_NOW]) if hit_bound else p.horizon
    n_end = int(s.ql.sum() + (s.mi[:, K.BUSY] >= 0).sum())
    seg = np.zeros(NSEG)
    if not hit_bound:
        seg_close(s.sg, p.horizon, n_end, seg)
    for j in range(M):  # close the availability integrals
        if s.mi[j, K.UP] == 1:
            s.up_time[j] += t_end - s.mf[j, K.UPSINCE]
    done = s.cls_n.astype(float)
    W_class = np.where(done > 0, s.cls_w / np.maximum(done, 1), np.nan)
    trend = (not hit_bound) and trend_unstable(seg)
    if hit_bound:
        why = f"more than {p.bound} tasks in system at t = {t_end:.6g}"
    elif trend:
        why = "the number in system grew through the run (segment averages " + \
              ", ".join(f"{x:.3g}" for x in seg[[0, 4, 9]]) + " at 1/10, 5/10, 10/10)"
    else:
        why = ""
    lp_solves = central if p.lp_mode == 2 else int(s.ist[K.LP_SOLVES])
    return {
        "W": float(s.cls_w.sum() / done.sum()) if done.sum() else float("nan"),
        "W_class": W_class.tolist(),
        "completed": s.cls_n.tolist(),
        "events": int(s.ist[K.EVENTS]),
        "arrivals": int(s.ist[K.ARRIVALS]),
        "resubmissions": int(s.ist[K.RESUB]),
        "avail_events": int(s.ist[K.AVAIL_EVENTS]),
        "starts": int(s.ist[K.STARTS]),
        "lp_solves": lp_solves,
        "lp_pivots": int(s.ist[K.PIVOTS]),
        "lp_failures": int(s.ist[K.LP_FAIL]),
        "lp_seconds": lp_seconds,
        "lookups": int(s.ist[K.LOOKUPS]),
        "support_changes": int(s.ist[K.SUP_CHANGES]),
        "support_nonzeros": (int(lp.msup[s.mi[:, K.UP] == 1].sum()) if p.grouping == "expanded" else
                             int(lp.support[m.col][s.mi[:, K.UP] == 1].sum()) if p.lp_mode else None),
        "lambda": float(s.fst[K.LAM]),
        "columns": C,
        "queued_end": int(s.ql.sum()),
        "in_system_end": n_end,
        "up_end": int(s.mi[:, K.UP].sum()),
        "up_fraction": (s.up_time / t_end).tolist(),
        "peak": int(s.ist[K.PEAK]),
        "segments": seg.tolist(),
        "hit_bound": bool(hit_bound),
        "trend": bool(trend),
        "unstable": bool(hit_bound or trend),
        "why": why,
        "t_end": t_end,
        "wall": wall,
        "cpu": cpu,
    }


def one_run(system, policy, seed=None, **options) -> dict:
    """One replication of ``system`` under ``policy`` (a dict of the replication's measures)."""
    return replication(seed_sequence(seed), prepare(system, policy, **options))


def summarize(p: Prepared, runs: list[dict], *, seed, wall: float) -> SimResult:
    """Student-t CIs over replications, the instability verdict, diagnostics."""
    R = len(runs)
    unstable, n_bound, n_trend = verdict([r["hit_bound"] for r in runs], [r["trend"] for r in runs])
    if unstable:
        first = next((r["why"] for r in runs if r["hit_bound"]), None) or next(r["why"] for r in runs if r["trend"])
        message = (f"unstable: {n_bound} of {R} replications exceeded {p.bound} tasks in system, {n_trend} of {R} "
                   f"show a growing number in system (e.g. {first})")
        per_class = [{"class": i + 1, "mean": None, "ci": None} for i in range(p.N)]
    else:
        message = "ok"
        per_class = [per_class_entry(i, [r["W_class"][i] for r in runs]) for i in range(p.N)]
    extra = {
        "lp_solves": int(sum(r["lp_solves"] for r in runs)),
        "lp_pivots": int(sum(r["lp_pivots"] for r in runs)),
        "lp_seconds": float(sum(r["lp_seconds"] for r in runs)),
        "avail_events": int(sum(r["avail_events"] for r in runs)),
        "resubmissions": int(sum(r["resubmissions"] for r in runs)),
        "kernel_seconds": float(sum(r["wall"] for r in runs)),
        "lambda_capacity": p.lambda_capacity,
        "unstable_reps": int(n_bound + n_trend),
    }
    return from_replications(runs, model="desktop", policy=p.policy, metric="W", key="W", per_class=per_class,
                             wall_seconds=wall, unstable=unstable, message=message, scenario=p.scenario,
                             horizon=p.horizon, seed=seed, options=p.options, extra=extra)


def _capacity_verdict(p: Prepared, seed) -> SimResult | None:
    """Unstable before any simulation when the long-run capacity LP says no policy keeps up."""
    lam = p.lambda_capacity
    if not (lam == lam and lam < 1.0):
        return None
    msg = (f"unstable: no policy can keep up -- the allocation LP with each machine's long-run capacity "
           f"a_j E[up]/(E[up]+E[down]) gives lambda* = {lam:.4g} < 1 (the arrivals are {100 / lam:.1f} % of "
           f"what the machines can serve); not simulated")
    return SimResult(status=STATUS_UNSTABLE, message=msg, policy=p.policy, metric="W", mean=float("nan"),
                     ci=(float("nan"), float("nan")),
                     per_class=[{"class": i + 1, "mean": None, "ci": None} for i in range(p.N)], events=0,
                     wall_seconds=0.0, model="desktop", scenario=p.scenario, reps=0, horizon=p.horizon, seed=seed,
                     options=p.options, extra={"lambda_capacity": lam})


def _warm(p: Prepared) -> None:
    """One empty replication of ``p`` in this process (horizon 1e-9)."""
    from dataclasses import replace

    fopt = p.model[-1].copy()
    fopt[0] = 1e-9  # kernel.F_HORIZON
    replication(seed_sequence(0), replace(p, model=p.model[:-1] + (fopt,), horizon=1e-9, warmup=0.0))


def warm_up_kernels() -> None:
    """Compile (or load from the numba cache) the kernel in this process."""
    from ...system import MachineGroup, System

    s = System(id="warm", alpha=(1.0,), groups=(MachineGroup("A", 2, (2.0,)),))
    for pol in ("gcmu", "lpas-dg"):
        one_run(s, pol, seed=0, horizon=1.0)


def simulate(system, policy, *, reps: int = 30, horizon: float = 20_000.0, seed: int | None = DEFAULT_SEED,
             workers: int | None = None, backend: str = "local", scheduler: str | None = None,
             progress: bool = False, **options: Any) -> SimResult:
    """Simulate the desktop grid ``system`` under a pull ``policy`` (thesis ch. 3).

    Parameters
    ----------
    system : System
        Rates, groups, availability ``a`` (static or CPU chains), failures.
    policy : {"fcfs", "gcmu", "lpas-dg", "lpas-dg-robust"} or PullPolicy
        A built-in name or a user policy made by
        :func:`hetsched.policies.pull.pull_policy`.
    reps, horizon, seed
        ``reps`` independent replications of ``[0, horizon]`` from
        ``SeedSequence(seed).spawn(reps)`` (thesis: 30 x 20,000).
    **options
        ``warmup`` (tasks arriving before it are not counted);
        ``tie`` (``random`` default, ``lowest``, ``highest``: ties between
        classes with equal keys and between machines equal under
        ``machine_rule``); ``machine_rule`` (``longest-idle`` default,
        ``fastest``, ``lowest-index``, ``random``: which idle machine receives
        an arriving task); ``resubmit`` (``front`` default: a task lost to a
        failure re-enters its queue in arrival order, ``back``);
        ``lp_grouping`` (``auto``, ``machines``, ``groups``) and ``lp_order``
        (``index``, ``reverse``, int seed): which optimal vertex LPAS_DG uses;
        ``cpu_info`` (False: the policies' LP assumes ``a_j = 1``, §3.4.4);
        ``inaccuracy`` (``I`` of §3.4.6); ``exec_dist`` (``exp``, ``det``,
        ``hyperexp``; default the scenario's) and ``exec_scv``; ``track_lp``
        (maintain the vertex LP for FCFS/Gcmu too, to measure its cost);
        ``max_in_system`` (the instability bound, default ``max(10000, 1000 M)``).

    Returns
    -------
    SimResult
        ``metric = "W"`` (mean completion time, departure minus original
        arrival, of the tasks arriving after ``warmup`` and finishing by the
        horizon), per-class ``W_i``; ``status = 1`` (unstable) with the reason
        in ``message`` and no per-class numbers when a replication exceeded
        the bound or most show a growing number in system, or at once (no
        simulation) when the allocation LP with the machines' long-run
        capacities gives ``lambda* < 1``.
    """
    from ...runner import replicate

    pl = plan(system, policy, reps=reps, horizon=horizon, seed=seed, **options)
    if pl.job is None:
        return pl.result
    pl.warm()  # compile or load the kernel here, so that wall_seconds is the simulation's
    t0 = time.perf_counter()
    job = pl.job
    runs = replicate(job.fn, job.params, job.reps, job.seed, workers=workers, backend=backend, scheduler=scheduler,
                     progress=progress, label=job.label)
    return pl.finish(runs, time.perf_counter() - t0)


def plan(system, policy, *, reps: int = 30, horizon: float = 20_000.0, seed: int | None = DEFAULT_SEED,
         **options: Any):
    """:func:`simulate` split at its replications (for :class:`hetsched.runner.Batch`): a
    :class:`hetsched.runner.Planned` whose ``finish(runs, seconds)`` makes the same result, or
    whose ``result`` is the early verdict when the capacity LP finds the system unstable."""
    from ...runner import Job, Planned

    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ModelError(f"option {unknown[0]!r} does not apply to the desktop-grid model; "
                         f"options: {', '.join(o for o in OPTIONS if o != 'horizon')}")
    if isinstance(reps, bool) or not isinstance(reps, (int, np.integer)) or reps < 1:
        raise ModelError(f"reps: must be a positive integer, got {reps!r}")
    p = prepare(system, policy, horizon=horizon, **options)
    early = _capacity_verdict(p, seed)
    if early is not None:
        return Planned(job=None, result=early)
    return Planned(job=Job(replication, p, int(reps), seed, f"{system.id} {p.policy}"),
                   finish=lambda runs, seconds: summarize(p, runs, seed=seed, wall=seconds),
                   warm=lambda: _warm(p), warm_key=("desktop",))


def simulate_cli(system, policy, *, reps, horizon, seed, workers, backend, scheduler, progress, options):
    """Model entry of the :mod:`hetsched.sim` registry (``hetsched simulate``)."""
    opts = dict(options)
    if "dist" in opts:
        opts["exec_dist"] = opts.pop("dist")
    unknown = sorted(set(opts) - set(OPTIONS))
    if unknown:
        raise ModelError(f"option --{unknown[0].replace('_', '-')} does not apply to the desktop-grid policies "
                         f"(fcfs, gcmu, lpas-dg, lpas-dg-robust)")
    return simulate(system, policy, reps=reps, horizon=20_000.0 if horizon is None else horizon, seed=seed,
                    workers=workers, backend=backend, scheduler=scheduler, progress=progress, **opts)
