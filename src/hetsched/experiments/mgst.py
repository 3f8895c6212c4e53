"""Thesis §3.5.1 (MGST, Tables 3.15-3.18): LPAS_DG on real workers vs the simulator.

For each setting (HiHi, LoHi, HiLo, LoLo) and case (MFD/MPD = machines fully /
partially dedicated, FD/FE = failures disabled / enabled) the same system is

* simulated (the desktop-grid model found by :func:`hetsched.sim.model_for_policy`,
  LPAS_DG): ``Sim`` is the 95 % confidence interval of the mean response time
  per class;
* run for real by :class:`hetsched.dispatch.Dispatcher` on a loopback Dask
  ``LocalCluster`` (one worker process per machine group, one thread per
  machine of the group — HiHi uses one slot of six workers), heterogeneity
  emulated by per-worker speed factors, Poisson arrivals, one time unit =
  ``time_unit`` seconds: ``MGST`` is the measured mean response time (arrival to
  result obtained, ``t7``) in time units, tasks arriving in the first 10 % of the
  run not counted. Failures (FE) are emulated per machine (exponential up times
  of rate ``fail_rate``, down times of mean 2 time units): a failing machine's
  running task is given back to its queue.

Failure rate (§3.5.1 prints "0.05 failures per time unit"). With 0.05 the
simulator gives e.g. 0.40 (LoLo MPD/FE overall) where Tables 3.15-3.18 print
0.32; with 0.02 (the rate of the thesis's other failure experiments, same mean
fault time 2) it reproduces the printed ``Sim`` columns. Both readings are
simulated for every FE case (``Sim`` at ``fail_rate``, ``Sim_alt`` at the
other); the real runs use ``fail_rate`` (default 0.05, as printed).

``--backend dask --scheduler ADDR``: the simulator's replications and the real
runs both use that cluster. The real runs need at least 7 workers with at least
3 threads each (machine group ``g`` = the ``g``-th worker by name); otherwise
the run is refused before anything starts.

The overhead split of §3.5.2 (``t2-t1`` .. ``t7-t6``, ms) and the ratio
``p = (t5-t4)/(t7-t1)`` are reported per run. The paper's printed numbers are
listed beside ours (``paper_Sim``, ``paper_MGST``). The dispatcher runs as MGST
did (no rate monitoring); ``extra={"adapt": True}`` switches recommendations 1-3 on.
Options (``RunOptions.extra``): ``time_unit`` (s), ``duration`` (time units per
run), ``reps``, ``horizon``, ``slowdown`` (true rates = estimates / slowdown,
the over-estimation of §3.5.2), ``settings``, ``cases``, ``fail_rate`` (0.05 or
0.02), ``adapt``, ``processes``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from . import HORIZON, REPS, Experiment, ExperimentResult, Param, RunOptions, register
from ..errors import HetschedError
from ..resultsio import save_figure

# 1-based machine numbers with a_j < 1 in the MPD cases (§3.5.1)
_MPD_HIHI = {4: 0.5, 5: 0.5, 6: 0.5}
_MPD_21 = {4: 0.5, 11: 0.5, 15: 0.5, 7: 0.75, 14: 0.75, 18: 0.75}

SETTINGS = {
    # name: (rates scenario, machines per group, alpha, cases)
    "HiHi": ("3.A", 1, [2.25, 4.50, 7.20, 12.60], ["MFD/FD", "MPD/FD", "MFD/FE", "MPD/FE"]),
    "LoHi": ("3.C", 3, [22.5, 22.5, 18.0, 18.0], ["MFD/FD", "MPD/FD"]),
    "HiLo": ("3.D", 3, [10.50, 21.00, 26.25, 26.25], ["MFD/FD", "MPD/FD"]),
    "LoLo": ("3.E", 3, [18.00, 20.25, 15.75, 22.50], ["MFD/FD", "MPD/FD", "MFD/FE", "MPD/FE"]),
}

# Tables 3.15-3.18: (Sim low, Sim high, MGST) per class 1..4 and overall
PAPER = {
    ("HiHi", "MFD/FD"): [(0.56, 0.57, 0.58), (0.33, 0.34, 0.34), (0.18, 0.18, 0.22), (0.11, 0.11, 0.17), (0.20, 0.21, 0.24)],
    ("HiHi", "MPD/FD"): [(0.97, 0.98, 0.99), (0.22, 0.22, 0.37), (0.27, 0.27, 0.29), (0.16, 0.16, 0.43), (0.27, 0.27, 0.42)],
    ("HiHi", "MFD/FE"): [(0.61, 0.61, 0.61), (0.35, 0.35, 0.45), (0.19, 0.20, 0.20), (0.13, 0.13, 0.15), (0.23, 0.23, 0.25)],
    ("HiHi", "MPD/FE"): [(1.10, 1.11, 1.03), (1.10, 1.11, 0.50), (0.32, 0.32, 0.46), (0.26, 0.27, 1.36), (0.35, 0.36, 0.94)],
    ("LoHi", "MFD/FD"): [(0.22, 0.22, 0.31), (0.12, 0.12, 0.22), (0.30, 0.30, 0.37), (0.29, 0.29, 0.35), (0.22, 0.22, 0.31)],
    ("LoHi", "MPD/FD"): [(0.24, 0.24, 0.36), (0.13, 0.13, 0.26), (0.37, 0.37, 0.44), (0.35, 0.35, 0.47), (0.26, 0.27, 0.37)],
    ("HiLo", "MFD/FD"): [(0.49, 0.49, 0.50), (0.28, 0.28, 0.31), (0.24, 0.24, 0.32), (0.14, 0.14, 0.35), (0.25, 0.25, 0.35)],
    ("HiLo", "MPD/FD"): [(0.79, 0.80, 1.22), (0.42, 0.42, 0.77), (0.27, 0.27, 0.53), (0.19, 0.19, 0.73), (0.35, 0.35, 0.74)],
    ("LoLo", "MFD/FD"): [(0.25, 0.25, 0.27), (0.23, 0.23, 0.28), (0.23, 0.23, 0.28), (0.21, 0.22, 0.25), (0.23, 0.23, 0.27)],
    ("LoLo", "MPD/FD"): [(0.28, 0.28, 0.39), (0.30, 0.30, 0.39), (0.27, 0.27, 0.35), (0.32, 0.32, 0.36), (0.30, 0.30, 0.37)],
    ("LoLo", "MFD/FE"): [(0.25, 0.25, 0.35), (0.24, 0.24, 0.34), (0.24, 0.24, 0.33), (0.24, 0.24, 0.29), (0.24, 0.24, 0.33)],
    ("LoLo", "MPD/FE"): [(0.31, 0.31, 0.52), (0.32, 0.32, 0.63), (0.32, 0.32, 0.57), (0.34, 0.34, 0.52), (0.32, 0.32, 0.56)],
}
FAIL_RATE, MEAN_FAULT = 0.05, 2.0   # as printed in §3.5.1
FAIL_RATES = (0.05, 0.02)           # the printed reading, and the one that matches Tables 3.15-3.18
_N_GROUPS, _THREADS = 7, 3


def mgst_system(setting: str, case: str, fail_rate: float = FAIL_RATE):
    """The :class:`~hetsched.system.System` of one MGST setting and case."""
    from ..scenarios import load
    from ..system import Failures, System

    sid, per, alpha, cases = SETTINGS[setting]
    if case not in cases:
        from ..errors import ModelError

        raise ModelError(f"case: setting {setting} has cases {cases}, got {case!r}")
    base = load(sid)
    groups = tuple(replace(g, count=per) for g in base.groups[: 6 if setting == "HiHi" else 7])
    M = sum(g.count for g in groups)
    avail = None
    if case.startswith("MPD"):
        table = _MPD_HIHI if setting == "HiHi" else _MPD_21
        avail = tuple(table.get(j + 1, 1.0) for j in range(M))
    failures = Failures(fail_rate, MEAN_FAULT) if case.endswith("FE") else None
    return System(id=f"mgst-{setting}", alpha=tuple(alpha), groups=groups, availability=avail, failures=failures,
                  title=f"MGST {setting} {case}", source="Al-Azzoni thesis §3.5.1")


def _failure_hooks(names, time_unit, duration, seed, fail_rate=FAIL_RATE):
    """(offset, hook) pairs: each machine alternates Exp(fail_rate) up and Exp(1/mean) down periods."""
    rng = np.random.default_rng(seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed))
    hooks = []
    for name in names:
        t = rng.exponential(1.0 / fail_rate)
        while t < duration:
            down = rng.exponential(MEAN_FAULT)
            hooks.append((t * time_unit, lambda d, n=name: d.set_machine_up(n, False)))
            hooks.append(((t + down) * time_unit, lambda d, n=name: d.set_machine_up(n, True, "repaired")))
            t += down + rng.exponential(1.0 / fail_rate)
    return hooks


MAX_WALL_SECONDS = 24 * 3600  # the real-dispatch runs of one experiment (wall clock), refused above


def run_setting(client, setting: str, case: str, *, time_unit: float, duration: float, seed: Any,
                adapt: bool = False, slowdown: float = 1.0, fail_rate: float = FAIL_RATE,
                worker_names: list[str] | None = None) -> dict:
    """One real run; returns per-class and overall mean responses (time units) and the overhead split.

    ``worker_names``: the Dask worker names of machine groups 0, 1, ... (default
    ``"0"``, ``"1"``, ... — the embedded cluster's names).
    """
    from ..dispatch.dispatcher import Dispatcher, Emulation
    from ..dispatch.emulate import poisson_arrivals

    system = mgst_system(setting, case, fail_rate)
    mu, a, alpha = system.mu, system.a, system.alpha_array
    # Dask worker g = machine group g; its threads are the group's machines "g#0".."g#k-1"
    per = system.groups[0].count
    gid = system.group_of
    wn = worker_names or [str(g) for g in range(len(system.groups))]
    names = [wn[g] if per == 1 else f"{wn[g]}#{j % per}" for j, g in enumerate(gid)]
    rates = {wn[g]: system.mu_groups[:, g].tolist() for g in range(len(system.groups))}
    slots = {wn[g]: per for g in range(len(system.groups))}
    avail = {n: float(a[j]) for j, n in enumerate(names)}
    true = {w: (np.asarray(r) / slowdown).tolist() for w, r in rates.items()}
    n_tasks = max(20, int(round(alpha.sum() * duration)))
    ss = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    s_arr, s_fail = ss.spawn(2)
    arrivals = poisson_arrivals(alpha, n_tasks, time_unit, s_arr)
    hooks = (_failure_hooks(names, time_unit, arrivals[-1][0] / time_unit, s_fail, fail_rate)
             if system.failures else [])
    d = Dispatcher(client, ["1", "2", "3", "4"], rates, policy="lpas-dg", alpha=alpha, availability=avail,
                   time_unit=time_unit, emulation=Emulation(true, avail, time_unit), ignore_unknown_workers=True, slots=slots,
                   adapt_arrivals=adapt, adapt_rates=adapt, delay_correction=adapt, timeout_factor=20.0,
                   timeout_min=2.0 * time_unit)
    try:
        res = d.run(arrivals, hooks=hooks, warmup=0.1 * arrivals[-1][0], timeout=20 * arrivals[-1][0] + 60)
    finally:
        d.close()
    o = res.overhead
    return {
        "per_class": [pc["mean_response"] / time_unit for pc in res.per_class],
        "overall": res.mean_response / time_unit,
        "overhead_ms": {k: 1000 * v for k, v in o.items()},
        "p": o["t5-t4"] / sum(o.values()) if all(np.isfinite(list(o.values()))) else float("nan"),
        "tasks": res.submitted, "completed": res.completed, "lost": res.lost, "resubmitted": res.resubmitted,
        "lp_solves": res.lp_solves, "wall": res.seconds, "success": res.success, "message": res.message,
    }


def _predict(setting, case, reps, horizon, opts, fail_rate=FAIL_RATE) -> dict:
    """The simulator's LPAS_DG prediction, through the model registry (``hetsched simulate``'s entry)."""
    from ..sim import model_for_policy

    system = mgst_system(setting, case, fail_rate)
    workers = opts.workers if opts.workers is not None else (1 if opts.quick else None)  # no pool start-up
    entry = model_for_policy("lpas-dg", system).load_entry()
    res = entry(system, "lpas-dg", reps=reps, horizon=horizon, seed=opts.seed, workers=workers,
                backend=opts.backend, scheduler=opts.scheduler, progress=False, options={})
    return res.as_dict()


def _check_options(ex: dict) -> None:
    from ..errors import ModelError

    fr = ex.get("fail_rate", FAIL_RATE)
    if fr not in FAIL_RATES:
        raise ModelError(f"--set fail_rate: expected one of {list(FAIL_RATES)} (0.05 as printed in §3.5.1, 0.02 "
                         f"the reading that matches Tables 3.15-3.18), got {fr!r}")
    for key in ("time_unit", "duration", "horizon", "slowdown"):
        if key in ex:
            v = ex[key]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (0 < v < 1e7):
                raise ModelError(f"--set {key}: expected a number > 0, got {v!r}")
    if "reps" in ex:
        v = ex["reps"]
        if isinstance(v, bool) or not isinstance(v, int) or not 2 <= v <= 1000:
            raise ModelError(f"--set reps: expected an integer in [2, 1000], got {v!r}")
    for key, known in (("settings", list(SETTINGS)), ("cases", ["MFD/FD", "MPD/FD", "MFD/FE", "MPD/FE"])):
        if key in ex:
            v = ex[key]
            if not isinstance(v, list) or not v or any(x not in known for x in v):
                raise ModelError(f"--set {key}: expected a non-empty list of {known}, got {v!r}")


def _connect(opts):
    """``(cluster, client, worker_names)``: an embedded LocalCluster, or the ``--scheduler`` cluster."""
    from ..errors import ModelError

    if opts.backend != "dask":
        from ..dispatch.emulate import local_cluster

        cluster, client = local_cluster(_N_GROUPS, processes=bool(opts.extra.get("processes", not opts.quick)),
                                        threads_per_worker=_THREADS)
        return cluster, client, None
    if not opts.scheduler:
        raise ModelError("--backend dask needs --scheduler tcp://HOST:PORT")
    from ..dispatch.emulate import quiet_dask

    quiet_dask()
    try:
        from distributed import Client

        client = Client(opts.scheduler, timeout="10s", set_as_default=False)
    except Exception as exc:  # noqa: BLE001 - unreachable or bad address: one line
        raise ModelError(f"--scheduler: cannot reach the Dask scheduler at {opts.scheduler!r}: {exc}") from None
    from ..dispatch.dasklayer import cluster_workers

    # read on the scheduler: Client.scheduler_info() may answer without workers (a background refresh)
    info = cluster_workers(client, wait=10.0, n=_N_GROUPS)
    workers = sorted(info.values(), key=lambda x: (0, int(x[0]), "") if x[0].isdigit() else (1, 0, x[0]))
    fit = [n for n, t in workers if t >= _THREADS]
    if len(fit) < _N_GROUPS:
        client.close()
        raise ModelError(f"--scheduler {opts.scheduler}: mgst needs {_N_GROUPS} workers with >= {_THREADS} threads "
                         f"(one per machine group), the cluster has {len(fit)} (of {len(workers)} workers)")
    return None, client, fit[:_N_GROUPS]


def run(opts: RunOptions) -> ExperimentResult:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ex = opts.extra
    _check_options(ex)
    quick = opts.quick
    time_unit = float(ex.get("time_unit", 1.0 if quick else 2.0))
    duration = float(ex.get("duration", 4.0 if quick else 30.0))
    reps = int(ex.get("reps", 3 if quick else 10))
    horizon = float(ex.get("horizon", 500.0 if quick else 5_000.0))
    adapt = bool(ex.get("adapt", False))
    slowdown = float(ex.get("slowdown", 1.0))
    fail_rate = float(ex.get("fail_rate", FAIL_RATE))
    alt_rate = [r for r in FAIL_RATES if r != fail_rate][0]
    settings = ex.get("settings") or list(SETTINGS)
    cases = ex.get("cases")
    # --quick: the first FD case and every FE case of each setting (the failure readings are the open question)
    runs = [(s, c) for s in settings for c in SETTINGS[s][3]
            if (c in cases if cases else (not quick or c == SETTINGS[s][3][0] or c.endswith("FE")))]
    wall = len(runs) * duration * time_unit  # every run dispatches for real: duration x time_unit seconds
    if wall > MAX_WALL_SECONDS:
        raise HetschedError(f"--set duration={duration:g}: {len(runs)} real dispatch runs of {duration:g} time units "
                            f"x {time_unit:g} s take about {wall / 3600:,.0f} h of wall-clock time (and memory for "
                            f"~{sum(sum(SETTINGS[st][2]) for st, _ in runs) * duration:,.0f} tasks); at most "
                            f"{MAX_WALL_SECONDS / 3600:g} h")
    rows, ovh_rows = [], []
    seeds = np.random.SeedSequence(opts.seed).spawn(len(runs))
    # one worker per machine group (7), one thread per machine of the group (3)
    cluster, client, worker_names = _connect(opts)
    try:
        for (setting, case), sd in zip(runs, seeds):
            pred = _predict(setting, case, reps, horizon, opts, fail_rate)
            alt = _predict(setting, case, reps, horizon, opts, alt_rate) if case.endswith("FE") else None
            real = run_setting(client, setting, case, time_unit=time_unit, duration=duration, seed=sd, adapt=adapt,
                               slowdown=slowdown, fail_rate=fail_rate, worker_names=worker_names)
            paper = PAPER[(setting, case)]
            labels = ["1", "2", "3", "4", "Overall"]

            def cis(p):
                out = [(pc["mean"], pc["ci"][0], pc["ci"][1]) for pc in p["per_class"]]
                return out + [(p["mean"], p["ci"][0], p["ci"][1])]

            sims = cis(pred)
            alts = cis(alt) if alt is not None else None
            meas = real["per_class"] + [real["overall"]]
            for k, lab in enumerate(labels):
                row = {"setting": setting, "case": case, "Class": lab, "Sim": sims[k][0],
                       "Sim_low": sims[k][1], "Sim_high": sims[k][2], "MGST": meas[k],
                       "ratio": meas[k] / sims[k][0] if sims[k][0] else float("nan"),
                       "paper_Sim_low": paper[k][0], "paper_Sim_high": paper[k][1], "paper_MGST": paper[k][2],
                       "sim_unstable": pred["unstable"],
                       "fail_rate": fail_rate if case.endswith("FE") else None,
                       "Sim_alt": None, "Sim_alt_low": None, "Sim_alt_high": None, "alt_fail_rate": None}
                if alts is not None:
                    row.update(Sim_alt=alts[k][0], Sim_alt_low=alts[k][1], Sim_alt_high=alts[k][2],
                               alt_fail_rate=alt_rate)
                rows.append(row)
            ovh_rows.append({"setting": setting, "case": case, **{f"{k} ms": v for k, v in real["overhead_ms"].items()},
                             "p": real["p"], "tasks": real["tasks"], "lost": real["lost"],
                             "resubmitted": real["resubmitted"], "lp_solves": real["lp_solves"], "wall_s": real["wall"]})
    finally:
        client.close()
        if cluster is not None:
            cluster.close()

    lines = [f"MGST (thesis §3.5.1, Tables 3.15-3.18): mean response time (time units), LPAS_DG; "
             f"1 time unit = {time_unit:g} s, {duration:g} units per run; Sim = {reps} reps x {horizon:g}; "
             f"FE: failure rate {fail_rate:g} (Sim, measured) and {alt_rate:g} (Sim alt), mean fault time "
             f"{MEAN_FAULT:g}",
             f"{'setting':8s} {'case':7s} {'Class':7s} {'Sim (95% CI)':>16s} {'measured':>9s} {'ratio':>6s}   "
             f"{'paper Sim':>12s} {'paper MGST':>10s}   {'Sim alt (95% CI)':>16s}"]
    for r in rows:
        alt_txt = (f"   ({r['Sim_alt_low']:.3f}, {r['Sim_alt_high']:.3f}) @{r['alt_fail_rate']:g}"
                   if r["Sim_alt"] is not None else "")
        lines.append(f"{r['setting']:8s} {r['case']:7s} {r['Class']:7s} ({r['Sim_low']:.3f}, {r['Sim_high']:.3f})  "
                     f"{r['MGST']:9.3f} {r['ratio']:6.2f}   ({r['paper_Sim_low']:.2f}, {r['paper_Sim_high']:.2f}) "
                     f"{r['paper_MGST']:10.2f}" + alt_txt + ("  (sim unstable)" if r["sim_unstable"] else ""))
    fe = [r for r in rows if r["Sim_alt"] is not None]
    if fe:
        def err(col):
            return float(np.mean([abs(r[col] / ((r["paper_Sim_low"] + r["paper_Sim_high"]) / 2) - 1) for r in fe]))

        e_main, e_alt = err("Sim"), err("Sim_alt")
        best = fail_rate if e_main <= e_alt else alt_rate
        lines.append(f"failure cases: mean |Sim / paper Sim - 1| = {e_main:.1%} at failure rate {fail_rate:g}, "
                     f"{e_alt:.1%} at {alt_rate:g}: the printed tables match failure rate {best:g}")
    lines.append("")
    lines.append("Overhead split per task (§3.5.2, ms): t2-t1 learn idle, t3-t2 decide, t4-t3 send+start, "
                 "t5-t4 execute, t6-t5 completion notice, t7-t6 fetch result; p = (t5-t4)/(t7-t1)")
    for o in ovh_rows:
        lines.append(f"{o['setting']:8s} {o['case']:7s} " + " ".join(f"{k} {o[k]:7.2f}" for k in o if k.endswith("ms"))
                     + f"  p {o['p']:.3f}  tasks {o['tasks']} lost {o['lost']} resubmitted {o['resubmitted']}")
    table = "\n".join(lines)

    opts.outdir.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(8, 3.5))
    overall = [r for r in rows if r["Class"] == "Overall"]
    x = np.arange(len(overall))
    ax.bar(x - 0.2, [r["Sim"] for r in overall], 0.4, label="simulator")
    ax.bar(x + 0.2, [r["MGST"] for r in overall], 0.4, label="measured (Dask)")
    ax.set_xticks(x, [f"{r['setting']}\n{r['case']}" for r in overall], fontsize=7)
    ax.set_ylabel("mean response (time units)")
    ax.legend()
    fig.tight_layout()
    path = opts.outdir / "mgst_overall.png"
    save_figure(fig, path, dpi=120)
    plt.close(fig)
    return ExperimentResult(
        "mgst", rows, table, figures=[path],
        notes=["measured response includes every dispatch overhead (t1..t7); the simulator has none",
               "paper values are from MGST on Macintosh machines; ours from emulated workers on this host"],
        meta={"overhead": ovh_rows, "time_unit": time_unit, "duration": duration, "reps": reps, "horizon": horizon,
              "adapt": adapt, "slowdown": slowdown, "fail_rate": fail_rate, "alt_fail_rate": alt_rate,
              "backend": opts.backend})


register(Experiment("mgst", "MGST deployment: LPAS_DG on Dask workers vs simulation (HiHi, LoHi, HiLo, LoLo)",
                    "Al-Azzoni thesis §3.5.1-§3.5.2, Tables 3.15-3.18", run,
                    params=(REPS, HORIZON,
                            Param("time_unit", "float", "seconds per time unit", 0.0, 3600.0, lo_open=True),
                            Param("duration", "float", "time units per run", 0.0, 1e6, lo_open=True),
                            Param("adapt", "bool", "rate monitoring (recommendations 1-3)"),
                            Param("slowdown", "float", "true rates = estimates / slowdown", 0.0, 1e3, lo_open=True),
                            Param("settings", "strs", "settings to run", choices=tuple(SETTINGS)),
                            Param("cases", "strs", "cases to run",
                                  choices=("MFD/FD", "MPD/FD", "MFD/FE", "MPD/FE")),
                            Param("fail_rate", "float", "failures per time unit of the real runs "
                                  "(0.05 printed in §3.5.1; 0.02 matches Tables 3.15-3.18)", 0.0, 1.0, lo_open=True),
                            Param("processes", "bool", "Dask workers as processes")),
                    dask="own"))  # the real runs need a cluster of its own shape; it connects itself
