"""Thesis chapter 2 (cluster mapping heuristics): Tables 2.1 and 2.6, and §2.1/§2.4.

* ``thesis-table-2.1`` — every system of Table 2.1 (2.A ... 2.I2) under MCT,
  KPB (one k-bar per system, :data:`KPB_KBAR`) and LPAS; 30 replications x
  20,000 time units (quick: 5 x 2,000).
* ``thesis-table-2.6`` — System 2.C2 under LP-Static, MCT, LPAS and LPAS-2/k,
  with the state-information discount (2.4).
* ``thesis-2.1-mct`` — the system of §2.1 on which MCT is unstable, under MCT,
  LPAS and Guided-LPAS (``C_ij = 1``, §2.4), with how often condition (iii) binds.

An unstable configuration is printed as ``unstable`` (the untrusted time
average in parentheses); its row (:mod:`.rows`) has ``stable = false``, no
``Qbar`` and the number in ``value_untrusted``.
"""

from __future__ import annotations

from typing import Any

from .catalog import register
from .cluster import batch
from .core import Experiment, ExperimentResult, RunOptions
from .params import HORIZON, REPS, Param, sizes
from .rows import sim_metric
from ..resultsio import save_figure

# k-bar per system for the KPB column of Table 2.1 (the thesis does not print
# all of them). The smallest value found stable in 4 x 20,000 runs, or the
# value the text names: 2.C1/2.I1/2.I2 unstable for k-bar < 14 (text), 2.D
# k-bar = 3 (text), 2.E and 2.H unstable for k-bar < 5 (text), 2.G k-bar = 4
# (text), 2.F1/2.F2: 2 and 3 unstable here, 4 stable; 2.B: 1 is stable; 2.A
# (two machines): 1 is the only value that differs from MCT, and it is unstable.
KPB_KBAR: dict[str, int] = {
    "2.A": 1, "2.B": 1, "2.C1": 14, "2.D": 3, "2.E": 5, "2.F1": 4, "2.F2": 4,
    "2.G": 4, "2.H": 5, "2.I1": 14, "2.I2": 14,
}
TABLE_21_SYSTEMS = tuple(KPB_KBAR)


def kpb_capacity(system, k: int) -> float:
    """lambda* of the allocation LP restricted to what KPB may use: class ``i`` only on its
    ``k`` fastest machines (equal rates: lower index first, as the KPB policy). Below 1, KPB
    with that ``k`` cannot keep the system stable (no allocation within its choices can)."""
    import numpy as np

    from ..lp import allocation_lp
    from ..system import System

    mu = np.asarray(system.mu, dtype=float)
    N, M = mu.shape
    mask = np.zeros((N, M), bool)
    for i in range(N):
        order = sorted((j for j in range(M) if mu[i, j] > 0), key=lambda j: (-mu[i, j], j))
        mask[i, order[:k]] = True
    restricted = System.from_arrays(alpha=system.alpha_array, mu=np.where(mask, mu, 0.0))
    return float(allocation_lp(restricted).lam)


def _sizes(opts: RunOptions, sids, n_policies: int) -> tuple[int, float]:
    """30 x 20,000 (quick: 5 x 2,000); ``--set reps/horizon`` win in both modes, within the event budget."""
    from ..scenarios import load

    rate = n_policies * sum(2.0 * float(load(s).alpha_array.sum()) for s in sids)
    return sizes(opts, 30, 20_000.0, 5, 2_000.0, event_rate=rate)


def _cell(res) -> str:
    if res.unstable:
        return f"unstable ({res.mean_untrusted:.4g}?)"
    return f"{res.ci[0]:.4g} - {res.ci[1]:.4g}"


def _row(system_id: str, heuristic: str, res, k: int | None = None, **more: Any) -> dict:
    row = sim_metric({"system": system_id, "heuristic": heuristic, "k": k}, "Qbar", res)
    row.update({
        "Ns": res.contacted,
        "reps": res.reps,
        "horizon": res.horizon,
        "events": res.events,
        "wall_seconds": res.wall_seconds,
    })
    row.update(more)
    return row


def _plan(system, policy, reps: int, horizon: float, opts: RunOptions, seed_offset: int = 0, **kw):
    from ..sim.mapping import plan

    # every system/policy gets the same seed: common random numbers across policies
    return plan(system, policy, reps=reps, horizon=horizon, seed=opts.seed + seed_offset, **kw)


def _plot(rows: list[dict], path, title: str, group_key: str = "system") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    groups = list(dict.fromkeys(r[group_key] for r in rows))
    heur = list(dict.fromkeys(r["heuristic"].split(" ")[0] for r in rows))
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(groups) * len(heur) / 2), 4))
    width = 0.8 / len(heur)
    for h_i, h in enumerate(heur):
        xs, ys, es, xs_u = [], [], [], []
        for g_i, g in enumerate(groups):
            for r in rows:
                if r[group_key] == g and r["heuristic"].split(" ")[0] == h:
                    x = g_i + (h_i - (len(heur) - 1) / 2) * width
                    if not r["stable"]:
                        xs_u.append(x)
                    else:
                        xs.append(x)
                        ys.append(r["Qbar"])
                        es.append(r["Qbar"] - r["ci_low"])
        bars = ax.bar(xs, ys, width, yerr=es, capsize=2, label=h)
        if xs_u:
            ax.scatter(xs_u, [1.0] * len(xs_u), marker="x", color=bars.patches[0].get_facecolor() if bars.patches else "k",
                       label=f"{h} unstable")
    ax.set_yscale("log")
    ax.set_xticks(np.arange(len(groups)))
    ax.set_xticklabels(groups)
    ax.set_ylabel("Qbar (time-average number in system)")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    plt.close(fig)


# --------------------------------------------------------------------------- Table 2.1
def run_table_21(opts: RunOptions) -> ExperimentResult:
    from ..errors import HetschedError
    from ..lp import allocation_lp
    from ..scenarios import load

    systems = opts.extra.get("systems", TABLE_21_SYSTEMS)
    kbar = {sid: int(opts.extra.get("kbar", KPB_KBAR[sid])) for sid in systems}
    for sid in systems:
        if kbar[sid] > load(sid).M:
            raise HetschedError(f"--set kbar: {kbar[sid]} exceeds the {load(sid).M} machines of System {sid}")
    reps, horizon = _sizes(opts, systems, 3)
    rows = []
    lines = [
        f"Table 2.1: Comparison of the mapping heuristics - 95% CI of Qbar ({reps} replications x {horizon:g} time units)",
        f"{'System':8s} {'MCT':>24s} {'KPB':>30s} {'LPAS':>24s}",
    ]
    b = batch(opts, "thesis-table-2.1")
    cells = {}
    for sid in systems:  # plan every cell, then run all cells x replications at once
        system = load(sid)
        k = kbar[sid]
        cells[sid] = (b.add(_plan(system, "mct", reps, horizon, opts), lambda r, s=sid: _row(s, "MCT", r)),
                      b.add(_plan(system, "kpb", reps, horizon, opts, k=k), lambda r, s=sid, k=k: _row(s, "KPB", r, k=k)),
                      b.add(_plan(system, "lpas", reps, horizon, opts), lambda r, s=sid: _row(s, "LPAS", r)))
    b.run()
    for sid in systems:
        k = kbar[sid]
        mct, kpb, lpas = (c.result for c in cells[sid])
        system = load(sid)
        lam = allocation_lp(system).lam  # capacity: what any policy can carry; KPB's within its k choices
        rows += [_row(sid, "MCT", mct, lambda_star=lam), _row(sid, "KPB", kpb, k=k, lambda_star=lam,
                                                               lambda_kpb=kpb_capacity(system, k)),
                 _row(sid, "LPAS", lpas, lambda_star=lam)]
        lines.append(f"{sid:8s} {_cell(mct):>24s} {_cell(kpb) + f' (k={k})':>30s} {_cell(lpas):>24s}")
    opts.outdir.mkdir(parents=True, exist_ok=True)
    fig = opts.outdir / "table-2.1.png"
    _plot(rows, fig, "Table 2.1: Qbar under MCT, KPB, LPAS (x = unstable)")
    notes = [
        "KPB uses one k-bar per system (column k): "
        + ", ".join(f"{s} {k}" for s, k in kbar.items())
        + " (smallest stable or the value named in the text; see docs/simulation.md).",
        "'unstable (x?)': the number in system grew through the run (or hit the bound); x is not a steady-state value.",
        "Ties between machines with equal expected completion time: uniformly random among the tied machines "
        "(the default; --tie lowest|highest in `hetsched simulate`).",
    ]
    return ExperimentResult("thesis-table-2.1", rows, "\n".join(lines), [fig], notes,
                            {"reps": reps, "horizon": horizon, "seed": opts.seed, "kbar": kbar},
                            keys=("system", "heuristic"))


# --------------------------------------------------------------------------- Table 2.6
def run_table_26(opts: RunOptions) -> ExperimentResult:
    from ..lp import allocation_lp
    from ..scenarios import load

    reps, horizon = _sizes(opts, ["2.C2"], 4)
    system = load("2.C2")
    lp = allocation_lp(system)
    M = system.M
    rows = []
    lines = [
        f"Table 2.6: Simulation results for System 2.C2 ({reps} replications x {horizon:g} time units)",
        f"{'Heuristic':12s} {'95% CI of Qbar':>26s} {'Ns (2.5)':>9s} {'Ns sim':>8s} {'Discnt':>8s}",
    ]
    formula = {"lp-static": 0.0, "mct": float(M), "lpas": lp.ns_lpas(), "lpas-2k": lp.ns_lpas2k()}
    names = {"lp-static": "LP-Static", "mct": "MCT", "lpas": "LPAS", "lpas-2k": "LPAS-2/k"}
    b = batch(opts, "thesis-table-2.6")
    cells = {pol: b.add(_plan(system, pol, reps, horizon, opts), lambda r, p=pol: _row("2.C2", names[p], r))
             for pol in ("lp-static", "mct", "lpas", "lpas-2k")}
    b.run()
    for pol in ("lp-static", "mct", "lpas", "lpas-2k"):
        res = cells[pol].result
        ns = formula[pol]
        disc = lp.discount(ns)
        rows.append(_row("2.C2", names[pol], res, Ns_formula=ns, Discnt=disc))
        lines.append(f"{names[pol]:12s} {_cell(res):>26s} {ns:9.2f} {res.contacted:8.2f} {disc:7.0f}%")
    opts.outdir.mkdir(parents=True, exist_ok=True)
    fig = opts.outdir / "table-2.6.png"
    _plot(rows, fig, "Table 2.6: System 2.C2", group_key="system")
    notes = [f"lambda* = {lp.lam:.4f}; discount (2.4) = (1 - Ns/M) x 100%, M = {M}; LP-Static contacts no machine."]
    return ExperimentResult("thesis-table-2.6", rows, "\n".join(lines), [fig], notes,
                            {"reps": reps, "horizon": horizon, "seed": opts.seed, "lambda": lp.lam})


# --------------------------------------------------------------------------- §2.1 / §2.4
def run_mct_instability(opts: RunOptions) -> ExperimentResult:
    from ..lp import allocation_lp
    from ..scenarios import load

    reps, horizon = _sizes(opts, ["2.1-mct"], 4)
    system = load("2.1-mct")
    lp = allocation_lp(system)
    rows = []
    lines = [
        f"System of Section 2.1 (MCT unstable although lambda* = {lp.lam:.4f} > 1); "
        f"{reps} replications x {horizon:g} time units",
        f"{'Heuristic':14s} {'95% CI of Qbar':>26s} {'(iii) binds / replication':>26s}",
    ]
    pols = (("mct", "MCT"), ("lpas", "LPAS"), ("guided-lpas", "Guided-LPAS"), ("guided-lpas-2k", "Guided-LPAS-2/k"))
    b = batch(opts, "thesis-2.1-mct")
    cells = {pol: b.add(_plan(system, pol, reps, horizon, opts, C=1.0), lambda r, n=name: _row("2.1-mct", n, r))
             for pol, name in pols}
    b.run()
    for pol, name in pols:
        res = cells[pol].result
        binds = res.binds if pol.startswith("guided") else None
        rows.append(_row("2.1-mct", name, res, binds=binds))
        lines.append(f"{name:14s} {_cell(res):>26s} {'' if binds is None else f'{binds:.1f}':>26s}")
    opts.outdir.mkdir(parents=True, exist_ok=True)
    fig = opts.outdir / "mct-instability.png"
    _plot(rows, fig, "Section 2.1 system: MCT vs LPAS vs Guided-LPAS", group_key="system")
    notes = [
        "Guided-LPAS with C_ij = 1: 'binds' counts arrivals whose LPAS choice is excluded by condition (iii).",
    ]
    return ExperimentResult("thesis-2.1-mct", rows, "\n".join(lines), [fig], notes,
                            {"reps": reps, "horizon": horizon, "seed": opts.seed, "lambda": lp.lam})


register(Experiment("thesis-table-2.1", "Comparison of the mapping heuristics (MCT, KPB, LPAS) on Systems 2.A-2.I2",
                    "Al-Azzoni thesis, Table 2.1 (§2.2.2)", run_table_21,
                    params=(REPS, HORIZON, Param("systems", "strs", "systems of Table 2.1 to run",
                                                  choices=TABLE_21_SYSTEMS),
                            Param("kbar", "int", "KPB k-bar for every system run (default: one per system, "
                                  "see KPB_KBAR)", 1, 1_000_000))))
register(Experiment("thesis-table-2.6", "LPAS-related heuristics on System 2.C2 with the state-information discount",
                    "Al-Azzoni thesis, Table 2.6 (§2.3.2)", run_table_26, params=(REPS, HORIZON)))
register(Experiment("thesis-2.1-mct", "MCT instability (Sharifnia's system) and Guided-LPAS",
                    "Al-Azzoni thesis, §2.1 and §2.4", run_mct_instability, params=(REPS, HORIZON)))
