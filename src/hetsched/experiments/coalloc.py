"""Seed 000 (co-allocation across two clusters), §6: simulation of Local, heuristic, Optimal.

Ids ``coalloc-fig5`` ... ``coalloc-fig9``. Every point: the optimal policy is
computed on the truncated model (discounted, ``beta = 0.05``, ``Delta = 30``, as in
§5-§6) and read by the simulator as a ``[x1, q1, q2]`` table. The three policies
are simulated with common random numbers, ``R`` independent replications of ``N``
job completions (paper: ``N = 2,000,000``, ``R = 60``; ``--quick``: ``N = 100,000``,
``R = 8``), on the *same truncated system* as the MDP by default (at most
``Delta`` jobs waiting in queue 1 and ``Delta`` at cluster 2; further arrivals are
lost and counted). ``opts.extra["untruncated"] = True`` simulates unbounded queues
with the table clamped beyond ``Delta``: the discounted policy is then unreliable
near and beyond the truncation (it stops co-allocating at ``q1 = Delta``, and at
high ``mu3`` co-allocates whatever ``q2`` is) and can trap the system in an
unstable regime (``docs/assumptions.md``).

* fig5: ``mu3 = 0.7, p = 0.6, c1 = 2, c2 = 1``, ``rho = rho1 = rho2`` from 0.5 to 0.9;
* fig6: the % reduction of the optimal policy's cost relative to Local, same points;
* fig7: as fig5 with ``c1 = c2 = 1``, ``rho`` from 0.5 to 0.83;
* fig8: ``rho = 0.8``, ``mu3`` from 0.4 to 0.8;
* fig9: ``rho = 0.8, mu3 = 0.7``, ``p`` from 0.2 to 0.8.

A point whose queues grow through the run (e.g. Local beyond its capacity) is
reported with ``unstable = true`` and the note says so: its number is not a
steady-state cost.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from . import REPS, Experiment, ExperimentResult, Param, RunOptions, register

POLICY_NAMES = {"local": "Local", "heuristic": "Heuristic", "table": "Optimal"}
PAPER_LABELS = {"Local": "Local", "Heuristic": "pc1q1>c2q2-Best pack", "Optimal": "Optimal"}

BASE = dict(mu1=1.0, mu2=1.0, mu3=0.7, p=0.6, c1=2.0, c2=1.0)

FIGS: dict[str, dict[str, Any]] = {
    "coalloc-fig5": {"x": "rho", "values": [0.5, 0.6, 0.7, 0.8, 0.85, 0.9], "fixed": {},
                     "title": "Fig. 5: average cost vs load (mu3=0.7, p=0.6, c1=2, c2=1)"},
    "coalloc-fig7": {"x": "rho", "values": [0.5, 0.6, 0.7, 0.8, 0.83], "fixed": {"c1": 1.0},
                     "title": "Fig. 7: average cost vs load, equal costs (mu3=0.7, p=0.6, c1=c2=1)"},
    "coalloc-fig8": {"x": "mu3", "values": [0.4, 0.5, 0.6, 0.7, 0.8], "fixed": {"rho": 0.8},
                     "title": "Fig. 8: average cost vs co-allocated service rate (rho=0.8, p=0.6, c1=2, c2=1)"},
    "coalloc-fig9": {"x": "p", "values": [0.2, 0.4, 0.6, 0.8], "fixed": {"rho": 0.8},
                     "title": "Fig. 9: average cost vs fraction of one-node jobs (rho=0.8, mu3=0.7, c1=2, c2=1)"},
}


def _settings(opts: RunOptions) -> dict[str, Any]:
    ex = dict(opts.extra)
    return {
        "reps": int(ex.get("reps", 8 if opts.quick else 60)),
        "completions": int(ex.get("completions", 100_000 if opts.quick else 2_000_000)),
        "delta": int(ex.get("delta", 30)),
        "untruncated": bool(ex.get("untruncated", False)),
        "beta": float(ex.get("beta", 0.05)),
        "max_starts": int(ex.get("max_starts", 1)),
    }


# --set parameters (checked before the run; see experiments.parse_sets)
_PARAMS = (
    REPS,
    Param("completions", "int", "job completions per replication", 1, 100_000_000),
    Param("delta", "int", "truncation Delta of the MDP used to compute the policy", 2, 300),
    Param("untruncated", "bool", "simulate unbounded queues"),
    Param("beta", "float", "discount rate of the MDP", 0.0, 10.0, lo_open=True),
    Param("max_starts", "int", "co-allocation starts per decision", 1, 1000),
)


def _check_budget(st: dict[str, Any], n_points: int) -> None:
    from .._cliutil import check_event_budget

    # ~2 events per job; 3 policies per point
    check_event_budget(2.0 * st["reps"] * st["completions"] * 3 * n_points,
                       f"--set reps={st['reps']} completions={st['completions']}")


def _point(fig: dict[str, Any], xval: float) -> dict[str, float]:
    prm = dict(BASE)
    prm.update(fig["fixed"])
    prm[fig["x"]] = xval
    return prm


def _simulate_point(prm: dict[str, float], st: dict[str, Any], opts: RunOptions, seed: int) -> dict[str, Any]:
    from ..mdp.coalloc import CoallocParams, decision_table, solve_coalloc
    from ..sim.coalloc import SimParams, simulate_coalloc

    loads = {k: prm[k] for k in ("mu1", "mu2", "p")}
    rest = {k: prm[k] for k in ("mu3", "c1", "c2")}
    cp = CoallocParams.from_loads(rho=prm["rho"], **loads, **rest, beta=st["beta"], delta=st["delta"])
    sol = solve_coalloc(cp)
    table = decision_table(sol.model, sol.policy)
    sp = SimParams.of(cp)
    out = {"params": cp, "solution": sol, "sims": {}}
    workers = opts.workers
    for code, name in POLICY_NAMES.items():
        out["sims"][name] = simulate_coalloc(
            sp, code, reps=st["reps"], completions=st["completions"], seed=seed, workers=workers,
            table=table if code == "table" else None, max_starts=st["max_starts"],
            limit=None if st["untruncated"] else st["delta"], backend=opts.backend,
            scheduler=opts.scheduler, progress=opts.progress,
        )
    return out


def _run_fig(exp_id: str, opts: RunOptions) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    fig = FIGS[exp_id]
    st = _settings(opts)
    _check_budget(st, len(fig["values"]))
    points, rows = [], []
    for xval in fig["values"]:
        prm = _point(fig, xval)
        # common random numbers: every policy and every point use the same root seed
        res = _simulate_point(prm, st, opts, opts.seed)
        points.append(res)
        sol = res["solution"]
        for name, r in res["sims"].items():
            rows.append({
                fig["x"]: xval, "policy": name, "cost": r.mean, "ci_low": r.ci[0], "ci_high": r.ci[1],
                "half_width": r.half_width, "unstable": r.unstable, "reps": r.reps,
                "completions": st["completions"], "coallocations_per_rep": r.coallocations_per_rep,
                "L1": r.L1, "L2": r.L2, "lost_fraction": r.extra["lost_fraction"],
                "mdp_certified": bool(sol.result.success),
            })
    return rows, points, st


def _table(rows: list[dict[str, Any]], x: str, title: str) -> str:
    xs = sorted({r[x] for r in rows})
    names = list(POLICY_NAMES.values())
    head = f"{x:>6s} " + "".join(f"{PAPER_LABELS[n]:>34s}" for n in names)
    lines = [title, head]
    for xv in xs:
        cells = []
        for n in names:
            r = next(r for r in rows if r[x] == xv and r["policy"] == n)
            flag = " UNSTABLE" if r["unstable"] else ""
            cells.append(f"{r['cost']:>12.4g} ± {r['half_width']:<8.3g}{flag:>9s}   ")
        lines.append(f"{xv:>6g} " + "".join(f"{c:>34s}" for c in cells))
    return "\n".join(lines)


def _plot(rows: list[dict[str, Any]], x: str, title: str, path: Path, ycol: str = "cost") -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for name, marker in zip(POLICY_NAMES.values(), "osD"):
        rs = sorted((r for r in rows if r["policy"] == name), key=lambda r: r[x])
        xs = np.array([r[x] for r in rs])
        ys = np.array([r[ycol] for r in rs])
        err = np.array([r["half_width"] for r in rs])
        ax.errorbar(xs, ys, yerr=err, marker=marker, capsize=3, label=PAPER_LABELS[name])
        bad = [r for r in rs if r["unstable"]]
        if bad:
            ax.scatter([r[x] for r in bad], [r[ycol] for r in bad], s=140, facecolors="none", edgecolors="red",
                       zorder=5, label="unstable" if name == "Local" else None)
    ax.set_xlabel({"rho": "rho (= rho1 = rho2)", "mu3": "mu3", "p": "p"}[x])
    ax.set_ylabel("average cost")
    if any(r["unstable"] for r in rows):
        ax.set_yscale("log")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _notes(rows: list[dict[str, Any]], x: str, st: dict[str, Any]) -> list[str]:
    system = ("untruncated queues, table clamped beyond Delta" if st["untruncated"]
              else f"truncated system as in the MDP (arrivals lost beyond Delta={st['delta']})")
    notes = [f"{st['reps']} replications x {st['completions']:,} completions per point; optimal policy from "
             f"the discounted model (beta={st['beta']}, Delta={st['delta']}); {system}"]
    worst = max((r.get("lost_fraction", 0.0) for r in rows), default=0.0)
    if worst > 0:
        notes.append(f"largest fraction of arrivals lost at the truncation: {worst:.2e}")
    for r in rows:
        if r["unstable"]:
            notes.append(f"{x}={r[x]:g} {r['policy']}: queues grow through the run (unstable); the number is not "
                         f"a steady-state cost")
    return notes


def _make_fig_runner(exp_id: str):
    def run(opts: RunOptions) -> ExperimentResult:
        fig = FIGS[exp_id]
        rows, _, st = _run_fig(exp_id, opts)
        png = _plot(rows, fig["x"], fig["title"], Path(opts.outdir) / f"{exp_id}.png")
        return ExperimentResult(exp_id, rows, _table(rows, fig["x"], fig["title"]), [png],
                                _notes(rows, fig["x"], st), meta={"settings": st, "seed": opts.seed})

    return run


def _run_fig6(opts: RunOptions) -> ExperimentResult:
    rows5, _, st = _run_fig("coalloc-fig5", opts)
    rows = []
    for rho in sorted({r["rho"] for r in rows5}):
        loc = next(r for r in rows5 if r["rho"] == rho and r["policy"] == "Local")
        opt = next(r for r in rows5 if r["rho"] == rho and r["policy"] == "Optimal")
        red = 100.0 * (loc["cost"] - opt["cost"]) / loc["cost"]
        rows.append({"rho": rho, "reduction": red, "local": loc["cost"], "optimal": opt["cost"],
                     "unstable": bool(loc["unstable"] or opt["unstable"])})
    lines = ["Fig. 6: % reduction of the average cost by the optimal policy relative to Local "
             "(mu3=0.7, p=0.6, c1=2, c2=1)", f"{'rho':>6s} {'reduction %':>12s} {'Local':>12s} {'Optimal':>12s}"]
    for r in rows:
        flag = "  (Local unstable: not a steady-state figure)" if r["unstable"] else ""
        lines.append(f"{r['rho']:>6g} {r['reduction']:>12.2f} {r['local']:>12.4g} {r['optimal']:>12.4g}{flag}")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(opts.outdir) / "coalloc-fig6.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    ok = [r for r in rows if not r["unstable"]]
    bad = [r for r in rows if r["unstable"]]
    ax.plot([r["rho"] for r in ok], [r["reduction"] for r in ok], "o-", label="Optimal vs Local")
    if bad:
        ax.plot([r["rho"] for r in bad], [r["reduction"] for r in bad], "x", color="red", label="Local unstable")
    ax.set_xlabel("rho (= rho1 = rho2)")
    ax.set_ylabel("% reduction in average cost")
    ax.set_title("Fig. 6: % reduction by the optimal policy (mu3=0.7, p=0.6, c1=2, c2=1)", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return ExperimentResult("coalloc-fig6", rows, "\n".join(lines), [path], _notes(rows5, "rho", st),
                            meta={"settings": st, "seed": opts.seed})


for _id in ("coalloc-fig5", "coalloc-fig7", "coalloc-fig8", "coalloc-fig9"):
    register(Experiment(_id, FIGS[_id]["title"].split(": ", 1)[1].capitalize() + " — Local, heuristic, Optimal",
                        "seed-000 §6, " + FIGS[_id]["title"].split(":")[0], _make_fig_runner(_id), params=_PARAMS))
register(Experiment("coalloc-fig6", "% reduction in average cost by the optimal policy over Local",
                    "seed-000 §6, Fig. 6", _run_fig6, params=_PARAMS))
