"""Seed 002 experiments: MUSCLE vs DLL vs WRAND (Figs. 2 and 3) and a real SWF log.

* ``muscle-fig2``: Table 1 multicluster, caption parameters
  ``(W^o, W^m, W^i) = (4, 3, 1)``, ``(e_l, e_u) = (5, 100)``, sizes in ``[1, 10]``,
  ``dr`` in ``[1, 5]``, ``phi = 0.05``; 40,000 jobs (``--quick``: 3,000). Rounds follow
  Algorithm 2 step 1 (backlog trigger, ``tau`` = mean execution time). The workload
  level L (40, 80, 120, 160, 200) becomes an arrival rate by ``--set level_rule``:
  ``load`` (default) runs level L at offered load ``rho(L) = 0.5 + 0.4 (L - 40)/160``
  (:func:`level_load`, below 1 at every level); ``calibrated`` finds the rate at which
  MUSCLE's seed schedules keep L jobs queued (:func:`hetsched.muscle.scheduler.load_for_level`).
  Every policy runs at that rate; the queue each actually keeps is the ``queue``
  column. A run whose workload offers load >= 1 is unstable (row convention).
* ``muscle-fig2-batch``: the other reading of the level -- a round every ``level``
  collected jobs at offered load 0.8 (see ``docs/_parts/assumptions-muscle.md``).
* ``muscle-fig3``: five clusters of service rate 1 whose sizes are spread evenly over
  ``[a, b]`` in ``[10,42], [14,38], [18,34], [22,30], [26,26]``; ``phi = (a+1)/a``;
  level 100 (calibrated per range as in ``muscle-fig2``). Job sizes: the caption's
  ``(MIN_S, MAX_S) = (1, a)`` taken literally (``--set job_sizes=caption``, default),
  or the Fig. 2 range ``[1, 10]`` for every ``[a, b]`` (``--set job_sizes=fig2``).
* ``muscle-swf``: the NASA Ames iPSC/860 log (``../shared/traces`` next to the
  repository; ``--set swf=PATH`` for another log) on four clusters (64, 32, 16, 16
  computers; Table 1 service-rate ratios), log arrival times, backlog trigger; per-job
  records of each policy go to ``records-POLICY.parquet``.

All policies at one setting see the same job stream (common random numbers) and the
same TITAN GA (its parameters and the CP weight pairing of Eq. 1 are ``--set``
options of every MUSCLE experiment). Rows carry the paper's ``MCP`` and ``LBF`` plus
the mean over clusters of over-deadline, makespan and idle time, the late jobs and
the offered load of the run's workload.
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from .catalog import register
from .core import CHECK_FAILED, Experiment, ExperimentResult, RunOptions
from .params import Param
from .rows import metric
from ..resultsio import save_figure

_N_JOBS = Param("n_jobs", "int", "jobs per run", 1, 1_000_000)
_NO_GA = Param("no_ga", "bool", "skip the genetic-algorithm local optimisation")
#: TITAN's GA (:class:`hetsched.muscle.GAOptions`) and the CP weight pairing of Eq. 1, for every MUSCLE experiment
_GA_PARAMS = (
    Param("pop_size", "int", "GA population (schedules per generation)", 2, 10_000),
    Param("max_gen", "int", "GA generations at most", 0, 100_000),
    Param("patience", "int", "GA stops after this many generations without improvement", 1, 100_000),
    Param("p_crossover", "float", "GA order-crossover probability", 0.0, 1.0),
    Param("p_mutation", "float", "GA mutation probability (swap; size)", 0.0, 1.0),
    Param("tournament", "int", "GA tournament size of the parent selection (1 = uniform)", 1, 10_000),
    Param("elitism", "int", "GA schedules carried over unchanged per generation", 0, 10_000),
    Param("cp_pairing", "str", "Eq. 1 weights: letters (W^m x makespan, W^i x idle) or literal "
          "(W^i x makespan, W^m x idle, as printed)", choices=("letters", "literal")),
)
#: how a workload level becomes an arrival rate (Figs. 2 and 3)
LEVEL_RULES = ("load", "calibrated")
_LEVEL_PARAMS = (
    Param("level_rule", "str", "load: offered load rho(L) = load_lo + (load_hi - load_lo) (L - 40) / 160 (below 1); "
          "calibrated: the rate at which MUSCLE's seed schedules keep L jobs queued", choices=LEVEL_RULES),
    Param("load_lo", "float", "offered load at level 40 (level_rule=load)", 0.0, 0.999, lo_open=True),
    Param("load_hi", "float", "offered load at level 200 (level_rule=load)", 0.0, 0.999, lo_open=True),
)

FIG2_LEVELS = (40, 80, 120, 160, 200)
FIG3_RANGES = ((10, 42), (14, 38), (18, 34), (22, 30), (26, 26))
POLICIES = ("wrand", "dll", "muscle")
# repository-relative: <repo>/../shared/traces (this file is <repo>/src/hetsched/experiments/muscle.py)
SWF_DEFAULT = Path(__file__).resolve().parents[3] / ".." / "shared" / "traces" / "NASA-iPSC-1993-3.1-cln.swf.gz"
FIG3_JOB_SIZES = ("caption", "fig2")
GA_DEFAULT = {"pop_size": 24, "max_gen": 100, "patience": 15}
GA_KEYS = ("pop_size", "max_gen", "patience", "p_crossover", "p_mutation", "tournament", "elitism")
LOAD_LO, LOAD_HI = 0.5, 0.9  # offered load at levels 40 and 200 (level_rule=load)


def _run_point(task: dict) -> list[dict]:
    """One x-value: (calibrate the load,) build the workload, run the three policies."""
    from ..muscle import CPWeights, GAOptions, MultiCluster, WorkloadParams, generate_workload, simulate, workload_from_swf
    from ..muscle.scheduler import load_for_level

    system = MultiCluster(task["sizes"], task["rates"])
    base = dict(task["row"])
    if task.get("swf"):
        wl = workload_from_swf(task["swf"], system, max_jobs=task["n_jobs"], seed=task["wseed"])
        base["offered_load"] = wl.meta["offered_load"]
        base["clipped"] = wl.meta["clipped"]
    else:
        params = WorkloadParams(**task["wparams"])
        if task.get("target_level"):
            load, _ = load_for_level(task["target_level"], params, system, phi=task["phi"], seed=task["wseed"])
            params = WorkloadParams(**{**task["wparams"], "load": load})
        base["load"] = params.load
        wl = generate_workload(params, system, seed=np.random.SeedSequence(task["wseed"]))
    ga = GAOptions(**task["ga"]) if task["ga"] is not None else None
    weights = CPWeights(pairing=task.get("cp_pairing", "letters"))
    rows = []
    for pol in POLICIES:
        res = simulate(wl, system, pol, level=task["level"], phi=task["phi"], ga=ga, weights=weights,
                       trigger=task["trigger"], seed=task["sseed"])
        violations = res.violations
        if task.get("records_dir"):
            from ..resultsio import output_in, record_written
            from ..traces import write_records

            target, force = output_in(task["records_dir"], f"records-{res.policy}.parquet")
            write_records(res.records(wl), target, force=force,
                          meta={"kind": "muscle", "policy": res.policy, "sizes": list(system.sizes),
                                "rates": list(system.rates), "source": wl.source})
            record_written(task["records_dir"], [target])
        m = res.metrics
        row = dict(base)
        trusted = res.status == 0
        row.update({
            "policy": res.policy, "MCP": res.MCP if trusted else res.MCP_untrusted,
            "LBF": res.LBF if trusted else res.LBF_untrusted,
            "over_deadline": float(m["over_deadline"].mean()), "makespan": float(m["makespan"].mean()),
            "idle": float(m["idle"].mean()), "late_jobs": int(np.sum(res.late(wl))),
            "queue": res.params["mean_queue"], "batch": res.params["mean_batch"], "jobs": len(wl),
            "ga_runs": res.ga_runs, "ga_not_converged": res.ga_not_converged, "seconds": res.wall_seconds,
            "violations": len(violations), "check": violations[0] if violations else "feasible",
        })
        row["late_share"] = row["late_jobs"] / max(len(wl), 1)
        row["offered"] = res.offered_load
        rows.append(row)
    return rows


def _map(tasks: list[dict], opts: RunOptions) -> list[dict]:
    """Run every x-value (each seeded on its own); on a Dask cluster with ``--backend dask``."""
    if opts.backend == "dask":
        from ..runner import dask_client

        client = dask_client(opts.scheduler)
        try:
            parts = client.gather(client.map(_run_point, tasks, pure=False))
        finally:
            client.close()
        return [r for p in parts for r in p]
    workers = opts.workers if opts.workers is not None else (os.cpu_count() or 1)
    if workers <= 1 or len(tasks) == 1:
        parts = [_run_point(t) for t in tasks]
    else:
        with ProcessPoolExecutor(max_workers=min(workers, len(tasks))) as ex:
            parts = list(ex.map(_run_point, tasks))
    return [r for p in parts for r in p]


def _seeds(seed: int) -> tuple[int, int]:
    w, s = np.random.SeedSequence(seed).spawn(2)
    return int(w.generate_state(1)[0]), int(s.generate_state(1)[0])


def _ga_opts(opts: RunOptions):
    if opts.extra.get("no_ga"):
        return None
    return {**GA_DEFAULT, **{k: opts.extra[k] for k in GA_KEYS if k in opts.extra}}


def level_load(level: float, lo: float = LOAD_LO, hi: float = LOAD_HI) -> float:
    """The offered load of workload level ``level`` (``level_rule=load``): linear from ``lo`` at
    level 40 to ``hi`` at level 200, ``rho(L) = lo + (hi - lo) (L - 40) / 160`` (below 1 for
    every level of Figs. 2 and 3 when ``hi < 1``)."""
    return lo + (hi - lo) * (level - 40) / 160


def _level_setting(opts: RunOptions, level: int) -> tuple[dict, float | None]:
    """``(task fields, load)`` that put a run at workload ``level``: a stated load, or the calibration."""
    rule = str(opts.extra.get("level_rule", "load"))
    if rule == "calibrated":
        return {"target_level": level}, None
    lo = float(opts.extra.get("load_lo", LOAD_LO))
    hi = float(opts.extra.get("load_hi", LOAD_HI))
    return {}, level_load(level, lo, hi)


def _finish(exp_id: str, rows: list[dict], shown_table: str, figs, notes, meta) -> ExperimentResult:
    """Rows in the row convention (:mod:`.rows`: main metric MCP; a run at offered load >= 1 is
    unstable -- its queue grows through the run, so its MCP depends on the number of jobs),
    the result's status 3 when a schedule check failed."""
    out = []
    for r in rows:
        ok = r["offered"] < 1.0
        row = dict(r)
        metric(row, "MCP", r["MCP"], stable=ok)
        if not ok:
            row["LBF"] = None
        out.append(row)
    n_over = sum(1 for r in out if not r["stable"])
    if n_over:
        notes = list(notes) + [f"{n_over} of {len(out)} runs at offered load >= 1 (overloaded: the queue grows "
                               "through the run); their MCP/LBF are in the table but null in the rows "
                               "(value_untrusted)"]
    bad = [r for r in out if r["violations"]]
    status = CHECK_FAILED if bad else None
    message = (f"schedule check failed: {bad[0]['policy']}: {bad[0]['check']}" if bad else "")
    return ExperimentResult(exp_id, out, shown_table, figs, notes, meta, status=status, message=message,
                            keys=tuple(k for k in ("level", "range", "trace", "policy") if k in (out[0] if out else {})))


def _n_jobs(opts: RunOptions, quick: int, full: int) -> int:
    return int(opts.extra.get("n_jobs", quick if opts.quick else full))


def _wparams(n_jobs: int, max_s: int, load: float = 0.8) -> dict:
    return {"n_jobs": n_jobs, "min_s": 1, "max_s": max_s, "e_l": 5.0, "e_u": 100.0, "alpha": 1.0,
            "min_dr": 1.0, "max_dr": 5.0, "load": load}


def _plot(rows, xkey, outdir: Path, name: str, title: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    xs = list(dict.fromkeys(r[xkey] for r in rows))
    for pol, mk in zip(POLICIES, ("s", "^", "o")):
        for ax, metric in zip(axes, ("MCP", "LBF")):
            ys = [next(r[metric] for r in rows if r[xkey] == x and r["policy"] == pol) for x in xs]
            ax.plot(range(len(xs)), ys, marker=mk, label=pol.upper())
    for ax, metric, lab in zip(axes, ("MCP", "LBF"), ("(a)", "(b)")):
        ax.set_xticks(range(len(xs)), [str(x) for x in xs])
        ax.set_xlabel(xkey)
        ax.set_ylabel(metric)
        ax.set_title(f"{lab} {metric}")
        ax.legend()
    fig.suptitle(title)
    fig.tight_layout()
    outdir.mkdir(parents=True, exist_ok=True)
    path = outdir / name
    save_figure(fig, path, dpi=110)
    plt.close(fig)
    return path


def _table(rows, xkey, title) -> str:
    lines = [title, f"{xkey:>10s} {'policy':>8s} {'MCP':>13s} {'LBF':>12s} {'over-deadline':>14s} "
                    f"{'late':>6s} {'queue':>7s} {'load':>6s}"]
    for r in rows:
        load = r.get("load")
        lines.append(f"{str(r[xkey]):>10s} {r['policy']:>8s} {r['MCP']:13.1f} {r['LBF']:12.1f} "
                     f"{r['over_deadline']:14.1f} {r['late_jobs']:6d} {r['queue']:7.1f} "
                     f"{'' if load is None else format(load, '6.3f'):>6s}")
    return "\n".join(lines)


def _rule_note(opts: RunOptions, what: str) -> str:
    if str(opts.extra.get("level_rule", "load")) == "calibrated":
        return (f"level_rule=calibrated: {what} = target mean MUSCLE queue length, reached by the arrival rate "
                "in column 'load' (MUSCLE's seed schedules; bisection); 'queue' = the time-average queue each "
                "policy actually kept")
    lo, hi = float(opts.extra.get("load_lo", LOAD_LO)), float(opts.extra.get("load_hi", LOAD_HI))
    return (f"level_rule=load: {what} L runs at offered load rho(L) = {lo:g} + {hi - lo:g} (L - 40) / 160 (column "
            "'load', below 1); 'queue' = the time-average queue each policy kept; the other reading: "
            "--set level_rule=calibrated")


def _common(opts: RunOptions) -> dict:
    """Task fields every MUSCLE run shares: GA options and the CP pairing."""
    return {"ga": _ga_opts(opts), "cp_pairing": str(opts.extra.get("cp_pairing", "letters"))}


def run_fig2(opts: RunOptions) -> ExperimentResult:
    from ..muscle.workload import TABLE1

    n_jobs = _n_jobs(opts, 3000, 40_000)
    wseed, sseed = _seeds(opts.seed)
    tasks = []
    for lvl in FIG2_LEVELS:
        fields, load = _level_setting(opts, lvl)
        wp = _wparams(n_jobs, 10) if load is None else _wparams(n_jobs, 10, load)
        tasks.append({"sizes": TABLE1.sizes, "rates": TABLE1.rates, "wparams": wp, "wseed": wseed,
                      "sseed": sseed, "level": None, "trigger": "backlog", "phi": 0.05,
                      "row": {"level": lvl}, **fields, **_common(opts)})
    rows = _map(tasks, opts)
    figs = [_plot(rows, "level", opts.outdir, "fig2.png",
                  "Fig. 2: MUSCLE vs DLL vs WRAND under workload levels (Table 1)")]
    notes = [f"{n_jobs} jobs per run; one run per point (the paper's single 40,000-job run)",
             _rule_note(opts, "level"),
             "published values are withheld: compare shapes, not numbers"]
    return _finish("muscle-fig2", rows, _table(rows, "level", "Fig. 2 (MCP, LBF; lower is better)"),
                   figs, notes, {"n_jobs": n_jobs, "seed": opts.seed, "trigger": "backlog",
                                 "level_rule": str(opts.extra.get("level_rule", "load"))})


def run_fig2_batch(opts: RunOptions) -> ExperimentResult:
    from ..muscle.workload import TABLE1

    n_jobs = _n_jobs(opts, 3000, 40_000)
    load = float(opts.extra.get("load", 0.8))
    wseed, sseed = _seeds(opts.seed)
    tasks = [{"sizes": TABLE1.sizes, "rates": TABLE1.rates, "wparams": _wparams(n_jobs, 10, load), "wseed": wseed,
              "sseed": sseed, "level": lvl, "trigger": "batch", "phi": 0.05,
              "row": {"level": lvl}, **_common(opts)} for lvl in FIG2_LEVELS]
    rows = _map(tasks, opts)
    figs = [_plot(rows, "level", opts.outdir, "fig2-batch.png",
                  f"Fig. 2, batch reading: a round every LEVEL jobs (load {load})")]
    notes = [f"{n_jobs} jobs per run, offered load {load}; a round every 'level' collected jobs"]
    return _finish("muscle-fig2-batch", rows, _table(rows, "level", "Fig. 2, batch reading"), figs, notes,
                   {"n_jobs": n_jobs, "load": load, "seed": opts.seed, "trigger": "batch"})


def run_fig3(opts: RunOptions) -> ExperimentResult:
    from ..errors import HetschedError
    from ..muscle.workload import evenly_spaced_sizes

    n_jobs = _n_jobs(opts, 3000, 40_000)
    job_sizes = str(opts.extra.get("job_sizes", "caption"))
    if job_sizes not in FIG3_JOB_SIZES:
        raise HetschedError(f"--set job_sizes: expected one of {', '.join(FIG3_JOB_SIZES)}, got {job_sizes!r}")
    wseed, sseed = _seeds(opts.seed)
    fields, load = _level_setting(opts, 100)
    tasks = []
    for a, b in FIG3_RANGES:
        max_s = a if job_sizes == "caption" else 10
        wp = _wparams(n_jobs, max_s) if load is None else _wparams(n_jobs, max_s, load)
        tasks.append({"sizes": evenly_spaced_sizes(a, b, 5), "rates": (1.0,) * 5, "wparams": wp,
                      "wseed": wseed, "sseed": sseed, "level": None, "trigger": "backlog",
                      "phi": (a + 1) / a, "row": {"range": f"[{a},{b}]", "a": a, "b": b, "max_s": max_s},
                      **fields, **_common(opts)})
    rows = _map(tasks, opts)
    reading = ("job sizes in [1, a] (the caption taken literally)" if job_sizes == "caption"
               else "job sizes in [1, 10] (the Fig. 2 range) for every [a, b]")
    figs = [_plot(rows, "range", opts.outdir, "fig3.png" if job_sizes == "caption" else "fig3-fig2sizes.png",
                  f"Fig. 3: heterogeneity of cluster size (5 clusters, level 100; {reading})")]
    if load is None:
        first = f"{n_jobs} jobs per run; level 100 reached by the arrival rate ('load'); phi=(a+1)/a as in the caption"
    else:
        first = f"{n_jobs} jobs per run; level 100 at offered load {load:g} ('load'); phi=(a+1)/a as in the caption"
    notes = [first, _rule_note(opts, "level"),
             f"reading: {reading}; the other: --set job_sizes={'fig2' if job_sizes == 'caption' else 'caption'}"]
    return _finish("muscle-fig3", rows, _table(rows, "range", f"Fig. 3 (MCP, LBF; lower is better; {reading})"),
                   figs, notes, {"n_jobs": n_jobs, "seed": opts.seed, "job_sizes": job_sizes,
                                 "level_rule": str(opts.extra.get("level_rule", "load"))})


def run_swf(opts: RunOptions) -> ExperimentResult:
    from ..errors import HetschedError

    path = Path(opts.extra.get("swf", SWF_DEFAULT))
    if not path.exists():
        raise HetschedError(f"swf: trace not found: {path} (the shipped logs live in ../shared/traces next to the "
                            "repository; give another with --set swf=PATH)")
    n_jobs = _n_jobs(opts, 2000, 18_239)
    wseed, sseed = _seeds(opts.seed)
    sizes, rates = (64, 32, 16, 16), (1.0, 1.2, 1.4, 1.6)
    tasks = [{"sizes": sizes, "rates": rates, "swf": str(path), "n_jobs": n_jobs, "wseed": wseed, "sseed": sseed,
              "level": None, "trigger": "backlog", "phi": 0.05, "row": {"trace": path.name},
              "records_dir": str(opts.outdir), **_common(opts)}]
    rows = _map(tasks, opts)
    figs = [_plot(rows, "trace", opts.outdir, "swf.png", f"MUSCLE on {path.name}")]
    r0 = rows[0]
    notes = [f"first {n_jobs} usable jobs; clusters {sizes} with rates {rates}; {r0['clipped']} job(s) larger than "
             f"64 processors clipped to 64; offered load {r0['offered_load']:.3f} of the capacity; "
             "deadlines by Eq. 5 on the logged run time; backlog trigger, tau = mean run time",
             "per-job records: records-POLICY.parquet"]
    bad = [r for r in rows if r["violations"]]
    if bad:
        notes.append("SCHEDULE CHECK FAILED: " + "; ".join(f"{r['policy']}: {r['check']}" for r in bad))
    return _finish("muscle-swf", rows, _table(rows, "trace", f"Real log {path.name}"), figs, notes,
                   {"n_jobs": n_jobs, "seed": opts.seed, "trace": str(path)})


register(Experiment("muscle-fig2", "MUSCLE vs DLL vs WRAND: MCP and LBF under workload levels",
                    "seed-002 He et al., Fig. 2, Table 1", run_fig2,
                    params=(_N_JOBS, _NO_GA) + _LEVEL_PARAMS + _GA_PARAMS))
register(Experiment("muscle-fig2-batch", "Fig. 2 with the level read as a batch size (a round every LEVEL jobs)",
                    "seed-002 He et al., Fig. 2 (alternative reading)", run_fig2_batch,
                    params=(_N_JOBS, _NO_GA, Param("load", "float", "offered load", 0.0, 10.0, lo_open=True))
                    + _GA_PARAMS))
register(Experiment("muscle-fig3", "MUSCLE vs DLL vs WRAND: heterogeneity of cluster size",
                    "seed-002 He et al., Fig. 3", run_fig3,
                    params=(_N_JOBS, _NO_GA, Param("job_sizes", "str", "job-size range: the caption's (1, a) or Fig. 2's "
                                                   "[1, 10]", choices=tuple(FIG3_JOB_SIZES)))
                    + _LEVEL_PARAMS + _GA_PARAMS))
register(Experiment("muscle-swf", "MUSCLE vs DLL vs WRAND on a real SWF log (NASA iPSC/860)",
                    "seed-002 method on a Parallel Workloads Archive trace", run_swf,
                    params=(_N_JOBS, _NO_GA, Param("swf", "str", "SWF trace file (.swf or .swf.gz)")) + _GA_PARAMS))
