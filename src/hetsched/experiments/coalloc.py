"""Seed 000 (co-allocation across two clusters): §5 optimal policy tables and §6 simulations.

Ids ``coalloc-fig2``, ``coalloc-fig3``, ``coalloc-fig4`` (§5): the optimal action in
the states ``(q1, q2, g=2, x1, x2=0, x11=0)`` (rows ``q1 = 1..Delta``, columns ``q2 =
0..Delta``; 1 = co-allocate), computed by ``hetsched mdp coalloc`` and drawn as a
grid of cells (filled = co-allocate), each cell's margin and certification beside it:
Fig. 2 ``x1 = 1`` at ``rho = 0.8, mu3 = 0.7, p = 0.6``; Figs. 3 and 4 ``x1 = 0`` and
``x1 = 1`` at ``rho = 0.9, mu3 = 0.8, p = 0.8`` (``Delta = 30, beta = 0.05, c1 = 2,
c2 = 1`` throughout).

Ids ``coalloc-fig5`` ... ``coalloc-fig9`` (§6). Every point: the optimal policy is
computed on the truncated model (discounted, ``beta = 0.05``, ``Delta = 30``, as in
§5-§6) and read by the simulator as a ``[x1, q1, q2]`` table. The three policies
are simulated with common random numbers, ``R`` independent replications of ``N``
job completions (paper: ``N = 2,000,000``, ``R = 60``; ``--quick``: ``N = 100,000``,
``R = 8``).

The simulated system is the paper's (§2: "a single unbounded queue ... an
unbounded queue as well"): unbounded queues by default. Beyond the computed
region the optimal table is extended from its interior: ``q`` is read at
``min(q, clamp)``, ``clamp = Delta // 2`` by default (the paper: the policy
"remains the same for 16 <= q1, q2 <= 30"); rows near ``Delta`` are distorted by
the truncation, where blocked arrivals make co-allocation look cheap.
``--set truncated=true`` simulates the MDP's truncated system instead (at most
``Delta`` jobs waiting in queue 1 and ``Delta`` at cluster 2; further arrivals
lost and counted); ``--set clamp=K``, ``delta=D``, ``max_starts=0|1``;
``--set heuristic=c1q1`` simulates, as "Heuristic", the comparator ``c1 q1 > c2 q2``
(and ``x1 = 1``) that §6 says the paper's ``p c1 q1 > c2 q2`` outperforms (default
``pc1q1``, the paper's heuristic).

Every point reports whether each policy is stable: the core instability rule
on the simulation, and for Local also the exact verdict (Local's capacity from
the quasi-birth-death drift of :mod:`hetsched.mdp.stability`). An unstable
point has no cost (``cost`` is null, the run's value is ``cost_untrusted``) and
is marked ``x`` at the top of the plots, never drawn as a cost.

* fig5: ``mu3 = 0.7, p = 0.6, c1 = 2, c2 = 1``, ``rho = rho1 = rho2`` from 0.5 to 0.9;
* fig6: the % reduction of the optimal policy's cost relative to Local, same points;
* fig7: as fig5 with ``c1 = c2 = 1``, ``rho`` from 0.5 to 0.83;
* fig8: ``rho = 0.8``, ``mu3`` from 0.4 to 0.8;
* fig9: ``rho = 0.8, mu3 = 0.7``, ``p`` from 0.2 to 0.8.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from . import REPS, Experiment, ExperimentResult, Param, RunOptions, batch, register
from ..resultsio import save_figure
from .rows import metric, sim_metric

POLICY_NAMES = {"local": "Local", "heuristic": "Heuristic", "table": "Optimal"}
PAPER_LABELS = {"Local": "Local", "Heuristic": "pc1q1>c2q2-Best pack", "Optimal": "Optimal"}
#: --set heuristic=RULE: the simulator's policy code and the plot label of each §6 rule
HEURISTIC_RULES = {"pc1q1": ("heuristic", "pc1q1>c2q2-Best pack"), "c1q1": ("heuristic-c1q1", "c1q1>c2q2-Best pack")}

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
    delta = int(ex.get("delta", 30))
    return {
        "reps": int(ex.get("reps", 8 if opts.quick else 60)),
        "completions": int(ex.get("completions", 100_000 if opts.quick else 2_000_000)),
        "delta": delta,
        "clamp": int(ex.get("clamp", max(1, delta // 2))),
        "truncated": bool(ex.get("truncated", False)),
        "beta": float(ex.get("beta", 0.05)),
        "max_starts": int(ex.get("max_starts", 1)),
        "heuristic": str(ex.get("heuristic", "pc1q1")),
    }


# --set parameters (checked before the run; see experiments.parse_sets)
_PARAMS = (
    REPS,
    Param("completions", "int", "job completions per replication", 1, 100_000_000),
    Param("delta", "int", "truncation Delta of the MDP used to compute the policy", 2, 300),
    Param("clamp", "int", "beyond the computed region read the optimal table at min(q, clamp) (default Delta // 2)",
          1, 300),
    Param("truncated", "bool", "simulate the MDP's truncated system instead of unbounded queues"),
    Param("beta", "float", "discount rate of the MDP", 0.0, 10.0, lo_open=True),
    Param("max_starts", "int", "queue-1 job starts per decision epoch (1: the paper; 0: as many as fit)", 0, 2),
    Param("heuristic", "str", "the heuristic simulated: pc1q1 (the paper's, p c1 q1 > c2 q2) or c1q1 (the comparator "
          "c1 q1 > c2 q2 of §6)", choices=tuple(HEURISTIC_RULES)),
)


def _check_budget(st: dict[str, Any], n_points: int) -> None:
    from ..validation import check_event_budget

    # ~2 events per job; 3 policies per point
    check_event_budget(2.0 * st["reps"] * st["completions"] * 3 * n_points,
                       f"--set reps={st['reps']} completions={st['completions']}")


def _point(fig: dict[str, Any], xval: float) -> dict[str, float]:
    prm = dict(BASE)
    prm.update(fig["fixed"])
    prm[fig["x"]] = xval
    return prm


def _plan_point(prm: dict[str, float], st: dict[str, Any], opts: RunOptions, seed: int) -> dict[str, Any]:
    """Solve the MDP of one point and plan its three policies' simulations (run later, in one batch)."""
    from ..mdp.coalloc import CoallocParams, decision_table, solve_coalloc
    from ..sim.coalloc import SimParams, plan_coalloc

    loads = {k: prm[k] for k in ("mu1", "mu2", "p")}
    rest = {k: prm[k] for k in ("mu3", "c1", "c2")}
    cp = CoallocParams.from_loads(rho=prm["rho"], **loads, **rest, beta=st["beta"], delta=st["delta"])
    sol = solve_coalloc(cp)
    table = decision_table(sol.model, sol.policy)
    sp = SimParams.of(cp)
    out = {"params": cp, "solution": sol, "plans": {}}
    for code, name in POLICY_NAMES.items():
        sim_code = HEURISTIC_RULES[st["heuristic"]][0] if code == "heuristic" else code
        out["plans"][name] = plan_coalloc(
            sp, sim_code, reps=st["reps"], completions=st["completions"], seed=seed,
            table=table if code == "table" else None, clamp=st["clamp"] if code == "table" else None,
            max_starts=st["max_starts"], limit=st["delta"] if st["truncated"] else None,
        )
    return out


def _point_row(fig: dict[str, Any], xval: float, name: str, r, st: dict[str, Any], sol) -> dict[str, Any]:
    row = {
        fig["x"]: xval, "policy": name,
        "cost": None if r.unstable else r.mean, "ci_low": None if r.unstable else r.ci[0],
        "ci_high": None if r.unstable else r.ci[1],
        "half_width": None if r.unstable else (r.ci[1] - r.ci[0]) / 2,
        "stable": r.success, "unstable": r.unstable, "cost_untrusted": r.mean_untrusted if r.unstable else None,
        "reason": r.message, "local_capacity_rho1": r.extra.get("local_capacity_rho1"),
        "local_stable_exact": r.extra.get("local_stable_exact"), "reps": r.reps,
        "completions": st["completions"], "coallocations_per_rep": r.coallocations_per_rep,
        "L1": r.L1, "L2": r.L2, "lost_fraction": r.lost_fraction,
        "mdp_certified": bool(sol.result.success), "heuristic_rule": st["heuristic"],
    }
    return sim_metric(row, "cost", r)  # the uniform columns (experiments.rows); "cost" keeps the paper's name


def _run_fig(exp_id: str, opts: RunOptions) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    fig = FIGS[exp_id]
    st = _settings(opts)
    _check_budget(st, len(fig["values"]))
    points, rows = [], []
    b = batch(opts, exp_id)
    for xval in fig["values"]:  # the MDPs here, then every point x policy x replication in one batch
        # common random numbers: every policy and every point use the same root seed
        res = _plan_point(_point(fig, xval), st, opts, opts.seed)
        sol = res["solution"]
        res["cells"] = {name: b.add(pl, lambda r, x=xval, n=name, sol=sol: _point_row(fig, x, n, r, st, sol),
                                    label=f"{fig['x']}={xval:g} {name}")
                        for name, pl in res["plans"].items()}
        points.append(res)
    b.run()
    for xval, res in zip(fig["values"], points):
        res["sims"] = {name: c.result for name, c in res.pop("cells").items()}
        res.pop("plans")
        rows += [_point_row(fig, xval, name, r, st, res["solution"]) for name, r in res["sims"].items()]
    return rows, points, st


def _label(name: str, rows: list[dict[str, Any]]) -> str:
    """The paper's legend label of a policy (the heuristic's follows --set heuristic)."""
    if name == "Heuristic" and rows:
        return HEURISTIC_RULES[rows[0].get("heuristic_rule", "pc1q1")][1]
    return PAPER_LABELS[name]


def _table(rows: list[dict[str, Any]], x: str, title: str) -> str:
    xs = sorted({r[x] for r in rows})
    names = list(POLICY_NAMES.values())
    head = f"{x:>6s} " + "".join(f"{_label(n, rows):>34s}" for n in names)
    lines = [title, head]
    for xv in xs:
        cells = []
        for n in names:
            r = next(r for r in rows if r[x] == xv and r["policy"] == n)
            cells.append("unstable" if r["unstable"] else f"{r['cost']:>12.4g} ± {r['half_width']:<8.3g}")
        lines.append(f"{xv:>6g} " + "".join(f"{c:>34s}" for c in cells))
    return "\n".join(lines)


def _mark_unstable(ax, xs: list[float], color, label: str | None, level: int = 0) -> None:
    """Unstable points: an ``x`` near the top of the axes (one row per policy), never at a cost value."""
    if xs:
        ax.scatter(xs, [0.95 - 0.06 * level] * len(xs), marker="x", s=70, color=color,
                   transform=ax.get_xaxis_transform(), label=label, zorder=5)


def _xlim(ax, xs: list[float]) -> None:
    pad = 0.05 * (max(xs) - min(xs) or 1.0)
    ax.set_xlim(min(xs) - pad, max(xs) + pad)


def _plot(rows: list[dict[str, Any]], x: str, title: str, path: Path, ycol: str = "cost") -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for k, (name, marker) in enumerate(zip(POLICY_NAMES.values(), "osD")):
        rs = sorted((r for r in rows if r["policy"] == name), key=lambda r: r[x])
        ok = [r for r in rs if not r["unstable"]]
        line = ax.errorbar([r[x] for r in ok], [r[ycol] for r in ok], yerr=[r["half_width"] for r in ok],
                           marker=marker, capsize=3, label=_label(name, rows))
        _mark_unstable(ax, [r[x] for r in rs if r["unstable"]], line[0].get_color(), f"{name}: unstable", k)
    _xlim(ax, [r[x] for r in rows])
    ax.set_xlabel({"rho": "rho (= rho1 = rho2)", "mu3": "mu3", "p": "p"}[x])
    ax.set_ylabel("average cost (stable points only)")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)
    return path


def _notes(rows: list[dict[str, Any]], x: str, st: dict[str, Any]) -> list[str]:
    system = (f"the MDP's truncated system (arrivals lost beyond Delta={st['delta']})" if st["truncated"]
              else f"unbounded queues (the paper's system), optimal table read at min(q, {st['clamp']})")
    notes = [f"{st['reps']} replications x {st['completions']:,} completions per point; optimal policy from "
             f"the discounted model (beta={st['beta']}, Delta={st['delta']}); {system}; "
             f"{'one job start' if st['max_starts'] == 1 else 'as many starts as fit'} per decision epoch"]
    worst = max((r.get("lost_fraction") or 0.0 for r in rows), default=0.0)
    if worst > 0:
        notes.append(f"largest fraction of arrivals lost at the truncation: {worst:.2e}")
    caps = sorted({round(r["local_capacity_rho1"], 4) for r in rows if r.get("local_capacity_rho1")})
    if caps:
        notes.append(f"Local's exact capacity (cluster 1, QBD drift): rho1 < {', '.join(map(str, caps))}")
    for r in rows:
        if r["unstable"]:
            exact = ("" if r.get("local_stable_exact") is None
                     else f"; exact verdict: {'stable' if r['local_stable_exact'] else 'unstable'}")
            notes.append(f"{x}={r[x]:g} {r['policy']}: {r['reason']}{exact}")
    return notes


def _make_fig_runner(exp_id: str):
    def run(opts: RunOptions) -> ExperimentResult:
        fig = FIGS[exp_id]
        rows, _, st = _run_fig(exp_id, opts)
        png = _plot(rows, fig["x"], fig["title"], Path(opts.outdir) / f"{exp_id}.png")
        return ExperimentResult(exp_id, rows, _table(rows, fig["x"], fig["title"]), [png],
                                _notes(rows, fig["x"], st), meta={"settings": st, "seed": opts.seed, "reps": st["reps"]})

    return run


def _run_fig6(opts: RunOptions) -> ExperimentResult:
    rows5, _, st = _run_fig("coalloc-fig5", opts)
    rows = []
    for rho in sorted({r["rho"] for r in rows5}):
        loc = next(r for r in rows5 if r["rho"] == rho and r["policy"] == "Local")
        opt = next(r for r in rows5 if r["rho"] == rho and r["policy"] == "Optimal")
        unstable = bool(loc["unstable"] or opt["unstable"])
        red = None if unstable else 100.0 * (loc["cost"] - opt["cost"]) / loc["cost"]
        rows.append(metric({"rho": rho, "reduction": red, "local": loc["cost"], "optimal": opt["cost"],
                            "local_stable": not loc["unstable"], "optimal_stable": not opt["unstable"],
                            "unstable": unstable}, "reduction", red, stable=not unstable))
    lines = ["Fig. 6: % reduction of the average cost by the optimal policy relative to Local "
             "(mu3=0.7, p=0.6, c1=2, c2=1)", f"{'rho':>6s} {'reduction %':>12s} {'Local':>12s} {'Optimal':>12s}"]
    for r in rows:
        if r["unstable"]:
            who = " and ".join(n for n, k in (("Local", "local_stable"), ("Optimal", "optimal_stable")) if not r[k])
            lines.append(f"{r['rho']:>6g} {'-':>12s} {'unstable' if not r['local_stable'] else format(r['local'], '.4g'):>12s} "
                         f"{'unstable' if not r['optimal_stable'] else format(r['optimal'], '.4g'):>12s}  ({who} unstable)")
        else:
            lines.append(f"{r['rho']:>6g} {r['reduction']:>12.2f} {r['local']:>12.4g} {r['optimal']:>12.4g}")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(opts.outdir) / "coalloc-fig6.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    ok = [r for r in rows if not r["unstable"]]
    ax.plot([r["rho"] for r in ok], [r["reduction"] for r in ok], "o-", label="Optimal vs Local")
    _mark_unstable(ax, [r["rho"] for r in rows if r["unstable"]], "red", "Local or Optimal unstable")
    _xlim(ax, [r["rho"] for r in rows])
    ax.set_xlabel("rho (= rho1 = rho2)")
    ax.set_ylabel("% reduction in average cost")
    ax.set_title("Fig. 6: % reduction by the optimal policy (mu3=0.7, p=0.6, c1=2, c2=1)", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)
    return ExperimentResult("coalloc-fig6", rows, "\n".join(lines), [path], _notes(rows5, "rho", st),
                            meta={"settings": st, "seed": opts.seed, "reps": st["reps"]})


# --------------------------------------------------------------------------- §5: optimal policy tables

#: Figures 2-4: the parameters (Delta = 30, mu1 = mu2 = 1, beta = 0.05, c1 = 2, c2 = 1 throughout) and the x1 shown
TABLE_FIGS: dict[str, dict[str, Any]] = {
    "coalloc-fig2": {"x1": 1, "rho": 0.8, "mu3": 0.7, "p": 0.6, "fig": "Fig. 2"},
    "coalloc-fig3": {"x1": 0, "rho": 0.9, "mu3": 0.8, "p": 0.8, "fig": "Fig. 3"},
    "coalloc-fig4": {"x1": 1, "rho": 0.9, "mu3": 0.8, "p": 0.8, "fig": "Fig. 4"},
}
NEAR_TIE = 0.005  # |margin| below 0.5 %: marked as a near tie, as `hetsched mdp coalloc` does

_TABLE_PARAMS = (
    Param("delta", "int", "truncation Delta of the MDP (the paper: 30)", 2, 200),
    Param("beta", "float", "discount rate of the MDP (the paper: 0.05)", 0.0, 10.0, lo_open=True),
)


def _table_title(spec: dict[str, Any], delta: int, beta: float) -> str:
    return (f"{spec['fig']}: optimal policy, x1 = {spec['x1']} (Delta = {delta}, mu1 = mu2 = 1, mu3 = {spec['mu3']:g}, "
            f"p = {spec['p']:g}, rho1 = rho2 = {spec['rho']:g}, beta = {beta:g}, c1 = 2, c2 = 1)")


def _plot_table(sol, key: str, title: str, path: Path) -> Path:
    """The table as the paper draws it: rows q1 (1 at the top), columns q2; a filled cell co-allocates."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap

    tab = np.asarray(sol.tables[key])
    mar, cert = sol.margins[key], sol.certified[key]
    D = tab.shape[0]
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(7.4, 6.8))
    ax.imshow(tab, cmap=ListedColormap(["#ffffff", "#1f4e9c"]), vmin=0, vmax=1, aspect="equal",
              extent=(-0.5, D + 0.5, D + 0.5, 0.5), interpolation="nearest")
    ax.set_xticks(np.arange(D + 1), minor=True)
    ax.set_yticks(np.arange(1, D + 1), minor=True)
    ax.grid(which="minor", color="#bbbbbb", lw=0.3)
    ii, jj = np.nonzero(np.abs(mar) < NEAR_TIE)
    ax.scatter(jj, ii + 1, marker=".", s=6, color="#d98c00", label=f"margin < {100 * NEAR_TIE:g} % (near tie)")
    ii, jj = np.nonzero(~np.asarray(cert, bool))
    if ii.size:
        ax.scatter(jj, ii + 1, marker="x", s=12, color="red", label="not certified by the error bound")
    ax.xaxis.set_label_position("top")
    ax.xaxis.tick_top()
    ax.set_xlabel("q2 (jobs at cluster 2)")
    ax.set_ylabel("q1 (jobs waiting at cluster 1)")
    ax.set_title(title + "\nfilled: co-allocate", fontsize=8)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)
    return path


def _make_table_runner(exp_id: str):
    def run(opts: RunOptions) -> ExperimentResult:
        from ..mdp.coalloc import CoallocParams, solve_coalloc
        from ..mdp.stability import coalloc_stability

        spec = TABLE_FIGS[exp_id]
        ex = dict(opts.extra)
        delta, beta = int(ex.get("delta", 30)), float(ex.get("beta", 0.05))
        prm = CoallocParams.from_loads(rho=spec["rho"], mu3=spec["mu3"], p=spec["p"], c1=2.0, c2=1.0, beta=beta,
                                       delta=delta)
        sol = solve_coalloc(prm)
        st = coalloc_stability(prm)
        key = f"x1={spec['x1']}"
        tab, mar, cert = sol.tables[key], sol.margins[key], sol.certified[key]
        rows = []
        for i in range(delta):
            for j in range(delta + 1):
                a = int(tab[i, j])
                row = {"figure": spec["fig"], "x1": spec["x1"], "q1": i + 1, "q2": j,
                       "coallocate": bool(a), "margin": float(mar[i, j]), "certified": bool(cert[i, j]),
                       "near_tie": bool(abs(mar[i, j]) < NEAR_TIE)}
                # the uniform columns (experiments.rows): an exact table, no confidence interval; "stable" is
                # not refuted (the truncated model's optimum), see the notes for the unbounded system
                rows.append(metric(row, "action", a, stable=st["stable"] is not False))
        title = _table_title(spec, delta, beta)
        png = _plot_table(sol, key, title, Path(opts.outdir) / f"{exp_id}.png")
        n1 = int(np.asarray(tab).sum())
        notes = [
            f"co-allocate in {n1} of {tab.size} cells; {int((np.abs(mar) < NEAR_TIE).sum())} cells within "
            f"{100 * NEAR_TIE:g} % (near ties), {int((~np.asarray(cert, bool)).sum())} not certified; "
            f"{sol.result.method}, {sol.result.iterations} iterations, error bound {sol.result.error_bound:.2g}",
            f"stability on unbounded queues: {st['message']}",
            "the same table: hetsched mdp coalloc " + " ".join(
                f"--{k} {v:g}" for k, v in (("rho", spec["rho"]), ("mu3", spec["mu3"]), ("p", spec["p"])))
            + (f" --delta {delta}" if delta != 30 else "") + (f" --beta {beta:g}" if beta != 0.05 else ""),
        ]
        text = sol.table_text(keys=(key,), near=NEAR_TIE, margins=False)
        return ExperimentResult(exp_id, rows, title + "\n" + text, [png], notes,
                                meta={"delta": delta, "beta": beta, "x1": spec["x1"], "params": prm.as_dict()})

    return run


for _id, _spec in TABLE_FIGS.items():
    register(Experiment(_id, f"Optimal co-allocation policy, x1 = {_spec['x1']} (rho = {_spec['rho']:g}, "
                             f"mu3 = {_spec['mu3']:g}, p = {_spec['p']:g})",
                        f"seed-000 §5, {_spec['fig']}", _make_table_runner(_id), params=_TABLE_PARAMS,
                        dask="none"))

for _id in ("coalloc-fig5", "coalloc-fig7", "coalloc-fig8", "coalloc-fig9"):
    register(Experiment(_id, FIGS[_id]["title"].split(": ", 1)[1].capitalize() + " — Local, heuristic, Optimal",
                        "seed-000 §6, " + FIGS[_id]["title"].split(":")[0], _make_fig_runner(_id), params=_PARAMS))
register(Experiment("coalloc-fig6", "% reduction in average cost by the optimal policy over Local",
                    "seed-000 §6, Fig. 6", _run_fig6, params=_PARAMS))
