"""Real workloads through the mapping heuristics (issue 13): ``hetsched reproduce traces``.

System 2.C1 of the thesis (30 machines in 4 groups, 3 classes) fed by each of
the three shipped logs (``../shared/traces`` next to the repository: NASA
iPSC/860 1993, UniLu Gaia 2014, LCG 2005) instead of Poisson streams, under
MET, MCT, KPB (k-bar = 14, the value of Table 2.1), LPAS, LPAS-2/k and
LP-Static, at loads ``RHO = 1/lambda*`` of 0.7, 0.8 and 0.9 (the log's time
axis rescaled so that the allocation LP for the log's class mix gives that
load; classes by run-time quantiles; :func:`hetsched.traces.workload`).

Measure: mean response time ``W`` (time units = mean run time of the log on a
rate-1 machine), the log's own mean over one replay of the whole log, with a
95 % batch-means interval where the log supports one
(:mod:`hetsched.traces.estimate`: at most 30 consecutive windows of equal job
counts, fewer and larger when von Neumann's independence test or the
Shapiro-Wilk normality test rejects, at least 10; otherwise no interval, and
the row says why in ``ci_note``); quick: the first 3,000 jobs of each log, at
most 10 windows. The paired differences ``W(LPAS) - W(other)`` are estimated
the same way on the per-job differences, so both policies are cut at the same
windows. A replay is unstable when the LP says so for the log's mix, or when
the policy overloads a machine (``policy_load > 1``: work sent to its busiest
machine over the log's arrival span) and the number in system grows through
the log (the trend rule). Rows also carry the waiting time, the bounded
slowdown and the jobs dropped by reason. The finding is written into
``docs/traces.md``.

Parameters (``--set``): ``reps`` (windows), ``jobs`` (a prefix of each log),
``loads``, ``policies``, ``logs`` (file names), ``traces_dir``.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import HetschedError
from .catalog import register
from .cluster import batch
from .core import Experiment, ExperimentResult, RunOptions
from .params import REPS, Param
from .rows import metric, sim_metric
from ..resultsio import save_figure

# repository-relative: <repo>/../shared/traces (this file is <repo>/src/hetsched/experiments/traces.py)
TRACES_DIR = Path(__file__).resolve().parents[3] / ".." / "shared" / "traces"
LOGS = {"NASA": "NASA-iPSC-1993-3.1-cln.swf.gz", "Gaia": "UniLu-Gaia-2014-2.swf.gz", "LCG": "LCG.swf.gz"}
POLICIES = ("met", "mct", "kpb", "lpas", "lpas-2k", "lp-static")
LOADS = (0.7, 0.8, 0.9)
KBAR = 14  # 2.C1, Table 2.1 (thesis text: KPB unstable for k-bar < 14)
LABEL = {"met": "MET", "mct": "MCT", "kpb": "KPB", "lpas": "LPAS", "lpas-2k": "LPAS-2/k", "lp-static": "LP-Static"}


def _read(path: Path, jobs: int | None):
    from ..traces import read_swf

    if not path.is_file():
        raise HetschedError(f"traces: log not found: {path} (the shipped logs live in ../shared/traces next to the "
                            f"repository; --set traces_dir=DIR)")
    if jobs is None:
        return read_swf(path)
    return next(iter(read_swf(path, chunksize=int(jobs))))


def _plot(rows: list[dict], path: Path, logs: list[str], loads: list[float], policies: list[str]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(logs), figsize=(4.2 * len(logs), 3.8), squeeze=False)
    for ax, log in zip(axes[0], logs):
        for k, pol in enumerate(policies):
            xs, ys, lo, hi = [], [], [], []
            for rho in loads:
                r = next(r for r in rows if r["log"] == log and r["policy"] == LABEL[pol] and r["load"] == rho
                         and not r.get("paired"))
                if not r["stable"]:
                    continue
                xs.append(rho + (k - len(policies) / 2) * 0.006)
                ys.append(r["W"])
                # no interval where the log cannot support one: the point alone (hollow marker)
                lo.append(r["W"] - r["ci_low"] if r["ci_low"] is not None else 0.0)
                hi.append(r["ci_high"] - r["W"] if r["ci_high"] is not None else 0.0)
            if xs:
                color = f"C{k % 10}"  # one colour per policy in every panel (a left-out policy shifts nothing)
                ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", ms=3, capsize=2, label=LABEL[pol], ls="-",
                            color=color)
                bare = [(x, y) for x, y, a, b in zip(xs, ys, lo, hi) if a == 0.0 and b == 0.0]
                if bare:
                    ax.plot(*zip(*bare), "o", ms=6, mfc="white", color=color)
        ax.set_yscale("log")
        ax.set_xticks(loads)
        ax.set_xlabel("load 1/lambda*")
        ax.set_title(log, fontsize="medium")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("mean response time W (95% CI)")
    handles = {}
    for ax in axes[0]:  # every policy that appears in any panel, in the policies' order
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    if handles:
        order = [LABEL[p] for p in policies if LABEL[p] in handles]
        axes[0][-1].legend([handles[x] for x in order], order, fontsize="small", loc="upper left")
    fig.suptitle("2.C1 fed by real logs (unstable policies left out; hollow: no CI supported)", fontsize="medium")
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    plt.close(fig)


def run(opts: RunOptions) -> ExperimentResult:
    from ..scenarios import load
    from ..sim.mapping import plan
    from ..traces import workload

    ex = opts.extra
    reps = int(ex.get("reps", 10 if opts.quick else 30))
    jobs = ex.get("jobs", 3000 if opts.quick else None)
    loads = [float(x) for x in ex.get("loads", LOADS)]
    policies = [str(p).lower() for p in ex.get("policies", POLICIES)]
    unknown = [p for p in policies if p not in LABEL]
    if unknown:
        raise HetschedError(f"traces: unknown policies {unknown}; choose from {list(LABEL)}")
    tdir = Path(ex.get("traces_dir", TRACES_DIR))
    logs = [str(x) for x in ex.get("logs", list(LOGS))]
    system = load("2.C1")
    rows: list[dict] = []
    b = batch(opts, "traces")
    cells = {}
    for log in logs:  # plan every (log, load, policy), then replay them all in one batch
        df = _read(tdir / LOGS.get(log, log), jobs)
        for rho in loads:
            tw = workload(df, system, load=rho)
            for pol in policies:
                cells[log, rho, pol] = b.add(plan(system, pol, trace=tw, reps=reps, seed=opts.seed,
                                                  k=KBAR if pol == "kpb" else None), label=f"{log} {rho:g} {pol}")
    b.run()
    for log in logs:
        for rho in loads:
            for pol in policies:
                res = cells[log, rho, pol].result
                row = sim_metric({"log": log, "load": rho, "policy": LABEL[pol], "jobs": res.jobs,
                                  "jobs_in_log": res.jobs_in_log, "dropped": dict(res.dropped),
                                  "windows": res.reps, "windows_requested": res.windows_requested}, "W", res)
                rows.append({
                    **row,
                    "status": res.status, "ci_note": None if res.status == 0 else res.message,
                    "wait": res.wait, "bsld": res.bsld,
                    "policy_load": res.policy_load, "Ns": res.contacted,
                    "per_class_W": [pc.get("W") for pc in res.per_class],
                    "events": res.events, "wall_seconds": res.wall_seconds,
                    "W_windows": list(res.W_windows), "sim": res,
                })
    opts.outdir.mkdir(parents=True, exist_ok=True)
    fig = opts.outdir / "traces.png"
    _plot([r for r in rows if not r.get("paired")], fig, logs, loads, policies)
    lines = [f"Mean response time W on 2.C1 fed by real logs ({reps} windows per log"
             + (f", first {jobs} jobs" if jobs else "") + "; 95% CI; time unit = the log's mean run time)"]
    head = f"{'log':6s} {'load':>5s} " + " ".join(f"{LABEL[p]:>22s}" for p in policies)
    lines.append(head)
    for log in logs:
        for rho in loads:
            cells = []
            for pol in policies:
                r = next(r for r in rows if r["log"] == log and r["load"] == rho and r["policy"] == LABEL[pol])
                if not r["stable"]:
                    cells.append(f"{'unstable (' + format(r['value_untrusted'], '.3g') + '?)':>22s}")
                elif r["ci_low"] is None:
                    cells.append(f"{r['W']:9.4g} (no CI)".rjust(22))
                else:
                    cells.append(f"{r['W']:9.4g} [{r['ci_low']:.3g},{r['ci_high']:.3g}]".rjust(22))
            lines.append(f"{log:6s} {rho:5.2f} " + " ".join(cells))
    # paired comparison (all policies replay the same jobs): LPAS against each other policy
    from ..traces.estimate import paired_estimate

    if "lpas" in policies and len(policies) > 1:
        lines.append("")
        lines.append("LPAS against each policy, paired over the same windows: W(LPAS) - W(other) "
                     "[95% CI] (negative = LPAS better; no CI where the windows cannot support one)")
        lines.append(f"{'log':6s} {'load':>5s} " + " ".join(f"{LABEL[p]:>22s}" for p in policies if p != "lpas"))
        for log in logs:
            for rho in loads:
                sel = {r["policy"]: r for r in rows if r["log"] == log and r["load"] == rho}
                base = sel["LPAS"]
                cells = []
                for pol in policies:
                    if pol == "lpas":
                        continue
                    other = sel[LABEL[pol]]
                    head = {"log": log, "load": rho, "policy": f"LPAS - {LABEL[pol]}", "paired": True}
                    if not (base["stable"] and other["stable"]):
                        rows.append(metric({**head, "windows": None, "status": 1, "ci_note": "unstable policy"},
                                           "W", None, stable=False))
                        cells.append("unstable".rjust(22))
                        continue
                    d = paired_estimate(base["sim"].estimates["W"], other["sim"].estimates["W"])
                    ok = d.status == 0
                    rows.append(metric({**head, "windows": d.windows, "status": d.status,
                                        "ci_note": None if ok else d.message}, "W", d.mean,
                                       ci=(d.low, d.high) if ok else None))
                    cells.append((f"{d.mean:+9.3g} [{d.low:+.3g},{d.high:+.3g}]" if ok
                                  else f"{d.mean:+9.3g} (no CI)").rjust(22))
                lines.append(f"{log:6s} {rho:5.2f} " + " ".join(cells))
    for r in rows:
        r.pop("sim", None)
    n_ci = sum(1 for r in rows if not r.get("paired") and r["stable"] and r["ci_low"] is not None)
    n_st = sum(1 for r in rows if not r.get("paired") and r["stable"])
    notes = [f"CI: batch means over at most {reps} consecutive windows (equal job counts) of one replay of each "
             f"log, fewer when the tests of independence and normality reject, at least 10; {n_ci} of {n_st} "
             "stable cells get one (the others: the windows cannot support a CI, see ci_note); classes by "
             "run-time quantiles; load 1/lambda* of the allocation LP for the log's class mix",
             "unstable: policy_load (work sent to the busiest machine / the log's arrival span) > 1 and the "
             "number in system grows through the log (the trend rule on 10 segments)"]
    return ExperimentResult("traces", rows, "\n".join(lines), [fig], notes,
                            meta={"system": "2.C1", "reps": reps, "jobs": jobs, "loads": loads, "kbar": KBAR,
                                  "seed": opts.seed})


register(Experiment("traces", "2.C1 fed by real SWF logs (NASA, Gaia, LCG): MET, MCT, KPB, LPAS, LPAS-2/k, "
                    "LP-Static at loads 0.7-0.9", "issue 13 (Parallel Workloads Archive logs)", run,
                    params=(REPS,
                            Param("jobs", "int", "first JOBS jobs of each log (default: all; 3000 with --quick)",
                                  1, 10_000_000),
                            Param("loads", "floats", "loads 1/lambda* to replay at", 0.0, 1.0, lo_open=True),
                            Param("policies", "strs", "mapping policies", choices=tuple(POLICIES)),
                            Param("logs", "strs", "log files under traces_dir", choices=tuple(LOGS)),
                            Param("traces_dir", "str", "folder of the logs (default ../shared/traces)"))))
