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
    """``(params, state, lp, events, streams, out)`` of a new replication, before :func:`kernel.init`."""
    from . import layout as L
    from ..core.instability import seg_new
    from ..core.pool import pool_new
    from .kernel import new_event_list

    seed_seq = seed_sequence(seed_seq)
    prm = p.params
    N, M, C = p.N, p.M, p.C
    st = make_streams(seed_seq, L.N_STREAMS)

    def one(dtype=np.int64):
        return np.zeros(1, dtype)

    s = L.State(mi=np.zeros((M, L.N_MI), np.int64), mf=np.zeros((M, L.N_MF)), pool=pool_new(p.bound, N),
                p_arr=np.zeros(p.bound), p_size=np.zeros(p.bound), head_arr=np.zeros(N),
                chead=np.full(C, -1, np.int64), ctail=np.full(C, -1, np.int64), cidle=np.zeros(C, np.int64),
                ninit=np.zeros(C, np.int64), buf=np.zeros(max(N, M), np.int64),
                ctl=L.Control(*(one() for _ in L.Control._fields)))
    out = L.Out(events=one(), arrivals=one(), starts=one(), resubmissions=one(), avail_events=one(),
                lp_solves=one(), pivots=one(), lp_failures=one(), support_changes=one(), lookups=one(), peak=one(),
                t_now=one(float), lam=one(float), size_sum=one(float), cls_n=np.zeros(N, np.int64),
                cls_w=np.zeros(N), up_time=np.zeros(M), sg=seg_new(p.warmup, p.horizon))
    m_, nv1 = (N + C, N * C + 1 + N + C + 1) if p.lp_mode == 1 else (1, 2)
    KT = ROBUST_TABLE if p.lp_mode == 2 else 1
    elig = np.ascontiguousarray(prm.mu_colT > 0)
    XM, XC = (M, C) if p.grouping == "expanded" else (1, 1)  # the expanded vertex's arrays (else stubs)
    lp = L.LPState(T=np.zeros((m_, nv1)), obj=np.zeros(nv1), basis=np.zeros(m_, np.int64), cap=np.zeros(C),
                   support=elig.copy(), elig_static=elig, keys_cap=np.zeros((KT, C)),
                   key_used=np.zeros(KT, np.bool_), sup_table=np.zeros((KT, C, N), np.bool_),
                   xs=np.zeros((XC, N)), xs_int=np.zeros((2, XC, N), np.int64), qa=np.zeros((XC, N), np.int64),
                   qb=np.full((XC, N), -1, np.int64), nup=np.zeros(XC, np.int64), fen=np.zeros(XM + XC, np.int64),
                   msup=np.zeros((XM, N), np.bool_), xprev=np.full((XM, N), -1, np.int64),
                   xnext=np.full((XM, N), -1, np.int64), xhead=np.full((XC, N), -1, np.int64),
                   xtail=np.full((XC, N), -1, np.int64), xcnt=np.zeros((XC, N), np.int64),
                   xninit=np.zeros((XC, N), np.int64), irank=np.zeros(XM, np.int64))
    return prm, s, lp, new_event_list(M, N), st, out


def replication(seed_seq, p: Prepared) -> dict:
    """One replication (picklable top-level function for :func:`hetsched.runner.replicate`)."""
    from . import kernel as K
    from . import layout as L
    from ..core.instability import seg_close

    init, run = K.kernels(p.code, p.user)
    prm, s, lp, ev, st, out = fresh_state(p, seed_seq)
    N, M, C = p.N, p.M, p.C
    KT = lp.key_used.shape[0]
    t0 = time.perf_counter()
    c0 = time.process_time()
    rc = init(prm, s, lp, ev, st, out)
    if rc == L.LP_FAILED:
        raise ModelError(f"desktop grid {p.scenario!r}: the allocation LP of the initial state has no optimum")
    lp_seconds = 0.0
    central = 0
    ctl = s.ctl
    while True:
        rc = run(prm, s, lp, ev, st, out)
        if rc != L.NEED_SUPPORT:
            break
        ts = time.perf_counter()
        if ctl.table_count[0] * 2 >= KT:  # table half full: start afresh (keys are then rarely reused)
            from .lpkeep import table_lookup

            lp.key_used[:] = False
            ctl.table_count[0] = 0
            slot, _ = table_lookup(lp.cap, lp.keys_cap, lp.key_used)
        else:
            slot = int(ctl.miss_slot[0])
        lp.keys_cap[slot] = lp.cap
        lp.sup_table[slot] = _central_support(prm.mu_colT.T, prm.alpha, lp.cap, p.size)
        lp.key_used[slot] = True
        ctl.table_count[0] += 1
        central += 1
        lp_seconds += time.perf_counter() - ts
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    if rc == L.BAD_CHOICE:
        j, v = int(ctl.err_machine[0]), int(ctl.err_value[0])
        E = lp.support if p.user.uses_lp else lp.elig_static
        e = prm.col[j]
        if p.grouping == "expanded" and p.user.uses_lp:
            E, e = lp.msup, j
        p.user.explain(v, s.pool.qlen, prm.muT[j:j + 1], E[e:e + 1], machine=j)
        raise p.user.error(j, v, "not a class the machine may take")  # pragma: no cover - explain raises
    hit_bound = rc == L.BOUND
    t_end = float(out.t_now[0]) if hit_bound else p.horizon
    busy = s.mi[:, L.BUSY] >= 0
    n_end = int(s.pool.qlen.sum() + busy.sum())
    seg = np.zeros(NSEG)
    if not hit_bound:
        seg_close(out.sg, p.horizon, n_end, seg)
    up_time = out.up_time.copy()
    up = s.mi[:, L.UP] == 1
    up_time[up] += t_end - s.mf[up, L.UPSINCE]  # close the availability integrals
    done = out.cls_n.astype(float)
    W_class = np.where(done > 0, out.cls_w / np.maximum(done, 1), np.nan)
    trend = (not hit_bound) and trend_unstable(seg)
    if hit_bound:
        why = f"more than {p.bound} tasks in system at t = {t_end:.6g}"
    elif trend:
        why = "the number in system grew through the run (segment averages " + \
              ", ".join(f"{x:.3g}" for x in seg[[0, 4, 9]]) + " at 1/10, 5/10, 10/10)"
    else:
        why = ""
    lp_solves = central if p.lp_mode == 2 else int(out.lp_solves[0])
    if p.grouping == "expanded":
        nonzeros = int(lp.msup[up].sum())
    elif p.lp_mode:
        nonzeros = int(lp.support[prm.col][up].sum())
    else:
        nonzeros = None
    return {
        "W": float(out.cls_w.sum() / done.sum()) if done.sum() else float("nan"),
        "W_class": W_class.tolist(),
        "completed": out.cls_n.tolist(),
        "events": int(out.events[0]),
        "arrivals": int(out.arrivals[0]),
        "resubmissions": int(out.resubmissions[0]),
        "avail_events": int(out.avail_events[0]),
        "starts": int(out.starts[0]),
        "lp_solves": lp_solves,
        "lp_pivots": int(out.pivots[0]),
        "lp_failures": int(out.lp_failures[0]),
        "lp_seconds": lp_seconds,
        "lookups": int(out.lookups[0]),
        "support_changes": int(out.support_changes[0]),
        "support_nonzeros": nonzeros,
        "lambda": float(out.lam[0]),
        "size_sum": float(out.size_sum[0]),
        "columns": C,
        "queued_end": int(s.pool.qlen.sum()),
        "in_system_end": n_end,
        "up_end": int(up.sum()),
        "up_fraction": (up_time / t_end).tolist(),
        "peak": int(out.peak[0]),
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
    if p.class_names:
        extra["class_names"] = list(p.class_names)
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
                     options=p.options, extra={"lambda_capacity": lam,
                                               **({"class_names": list(p.class_names)} if p.class_names else {})})


def _family(p: Prepared) -> str:
    """The compiled kernel a configuration runs on (one per policy family, one per user policy)."""
    from .layout import LPAS_DG, LPAS_DG_ROBUST

    if p.user is not None:
        return f"user-{p.user.token}"
    return "lp" if p.code in (LPAS_DG, LPAS_DG_ROBUST) else "plain"


def _warm(p: Prepared) -> None:
    """One empty replication of ``p`` in this process (horizon 1e-9)."""
    from dataclasses import replace

    replication(seed_sequence(0), replace(p, params=p.params._replace(horizon=1e-9, warmup=0.0), horizon=1e-9,
                                          warmup=0.0))


def warm_up_kernels() -> None:
    """Compile (or load from the numba cache) the kernel in this process."""
    from ...system import MachineGroup, System

    s = System(id="warm", alpha=(1.0,), groups=(MachineGroup("A", 2, (2.0,)),))
    for pol in ("gcmu", "lpas-dg"):  # one policy per kernel family
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
                   warm=lambda: _warm(p), warm_key=("desktop", _family(p)))


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
