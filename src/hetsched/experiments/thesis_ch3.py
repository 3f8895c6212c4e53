"""Thesis chapter 3 (desktop grids): Tables 3.2-3.6, 3.11, 3.12, 3.14, §3.4.4, Figures 3.1-3.4.

Every table cell is ``R`` independent replications (thesis: 30 replications of
20,000 time units) of :func:`hetsched.sim.desktop.simulate`; ``W`` is
the mean task completion time, ``acc`` the relative half-width of its 95 %
confidence interval, ``Delta`` the improvement over Gcmu,
``(W_Gcmu - W) / W_Gcmu``. ``--quick`` keeps the shape with 2 replications of a
short horizon.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .catalog import register
from .cluster import batch
from .core import Experiment, ExperimentResult, RunOptions
from .params import HORIZON, REPS, Param, sizes
from .rows import metric
from ..resultsio import save_figure

THESIS_REPS = 30
THESIS_HORIZON = 20_000.0



#: --set keys of every chapter-3 experiment
_PARAMS = (REPS, HORIZON, Param("tie", "str", "ties between classes and idle machines",
                                choices=("random", "lowest", "highest")),
           Param("lp_solution", "str", "the optimal LP solution LPAS_DG uses: a vertex of the per-machine LP "
                 "(thesis §3.3, default) or the group-symmetric solution", choices=("vertex", "symmetric")))

def _cfg(opts: RunOptions, reps: int = THESIS_REPS, horizon: float = THESIS_HORIZON,
         qreps: int = 2, qhorizon: float = 1_000.0, runs: list[tuple] | None = None) -> tuple[int, float]:
    """``(reps, horizon)``; ``--set`` values win (also under ``--quick``). ``runs``: the
    ``(scenario, arrivals, case, policies)`` simulated, for the event budget."""
    rate = None
    if runs:
        from ..scenarios import load

        rate = sum(2.0 * float(load(s, arrivals=a, case=c).alpha_array.sum()) * n for s, a, c, n in runs)
    return sizes(opts, reps, horizon, qreps, qhorizon, event_rate=rate)


class _Cells:
    """The cells of one chapter-3 experiment: ``add`` plans a cell (:func:`hetsched.sim.desktop.plan`),
    ``run`` runs every cell x replication at once, ``get(key)`` is the cell's summary (:func:`_summary`)."""

    def __init__(self, opts: RunOptions, label: str) -> None:
        self.opts, self.batch, self.cells = opts, batch(opts, label), {}

    def add(self, key, system, policy, reps, horizon, **model) -> None:
        from ..sim.desktop import plan

        for name in ("tie", "lp_solution"):  # lp_solution: unless the cell sets its LP reading itself
            if name in self.opts.extra and name not in model and not (name == "lp_solution" and "lp_grouping" in model):
                model[name] = self.opts.extra[name]
        self.cells[key] = self.batch.add(plan(system, policy, reps=reps, seed=self.opts.seed, horizon=horizon,
                                              **model), label=" ".join(str(k) for k in key))

    def run(self) -> "_Cells":
        self.batch.run()
        return self

    def get(self, key) -> dict:
        return _summary(self.cells[key].result)


def _pc_mean(pc: dict) -> float:
    v = pc.get("mean")
    if v is None:
        v = pc.get("mean_untrusted")
    return float("nan") if v is None else v


def _summary(res) -> dict:
    return {"policy": res.policy, "mean": res.mean_untrusted if res.unstable else res.mean, "accuracy": res.rel_half_width, "unstable": res.unstable,
            "reps": res.reps, "message": res.message, "ci": res.ci,
            "per_class": [{"class": pc["class"], "mean": _pc_mean(pc)}
                          for pc in res.per_class]}


def _row(label: dict, s: dict, w_ref: float | None, *, ref_stable: bool = True,
         printed: float | None = None) -> tuple[dict, dict]:
    """``(row, shown)``: the row of the results (:mod:`.rows`: an unstable row's ``W``, ``acc``,
    ``Delta`` and per-class means are null, its number in ``value_untrusted``) and the values the
    table prints (an unstable row's numbers, marked ``!``)."""
    shown = dict(label)
    shown["policy"] = s["policy"]
    shown["W"] = s["mean"]
    shown["acc"] = 100 * s["accuracy"]  # percent, as the thesis prints it (one convention with Delta)
    shown["Delta"] = (w_ref - s["mean"]) / w_ref * 100 if w_ref else (0.0 if w_ref is None else float("nan"))
    for pc in s["per_class"]:
        shown[f"W_{pc['class']}"] = pc["mean"]
    shown["unstable"] = s["unstable"]
    shown["reps"] = s["reps"]
    ok = not s["unstable"]
    row = dict(label)
    row["policy"] = s["policy"]
    metric(row, "W", s["mean"], ci=s["ci"], rel_half_width=s["accuracy"], stable=ok, printed=printed)
    row["acc"] = shown["acc"] if ok and math.isfinite(shown["acc"]) else None
    row["Delta"] = shown["Delta"] if ok and ref_stable and math.isfinite(shown["Delta"]) else None
    for pc in s["per_class"]:
        row[f"W_{pc['class']}"] = pc["mean"] if ok else None
    row["reps"] = s["reps"]
    return row, shown


def _fmt_table(title: str, rows: list[dict], keys: list[str]) -> str:
    wcols = sorted({k for r in rows for k in r if k.startswith("W_")}, key=lambda k: int(k[2:]))
    head = keys + ["policy", "W", "acc%", "Delta%"] + wcols
    lines = [title, "  ".join(f"{h:>9s}" for h in head)]
    for r in rows:
        cells = [f"{str(r.get(k)):>9s}" for k in keys] + [f"{r['policy']:>9s}"]
        w = f"{r['W']:.3f}" + ("!" if r["unstable"] else "")
        cells += [f"{w:>9s}", f"{r['acc']:9.2f}", f"{r['Delta']:9.2f}"]
        cells += [f"{r.get(k, float('nan')):9.3f}" for k in wcols]
        lines.append("  ".join(cells))
    lines.append("('!' = unstable: queues grew through the run or a replication stopped at the bound; "
                 "not a steady-state mean)")
    return "\n".join(lines)


def _bar_plot(rows: list[dict], keys: list[str], path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = []
    for r in rows:
        lab = "/".join(str(r[k]) for k in keys)
        if lab not in labels:
            labels.append(lab)
    pols = list(dict.fromkeys(r["policy"] for r in rows))
    fig, ax = plt.subplots(figsize=(max(6, len(labels) * 1.2), 4))
    width = 0.8 / max(1, len(pols))
    for k, p in enumerate(pols):
        ys = []
        for lab in labels:
            v = [r["W"] for r in rows if r["policy"] == p and "/".join(str(r[q]) for q in keys) == lab and r["stable"]]
            ys.append(v[0] if v else np.nan)
        ax.bar(np.arange(len(labels)) + k * width, ys, width, label=p)
    ax.set_xticks(np.arange(len(labels)) + width * (len(pols) - 1) / 2)
    ax.set_xticklabels(labels, rotation=30, fontsize=8)
    ax.set_ylabel("W (mean task completion time)")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, path)
    plt.close(fig)


def _policy_table(exp_id: str, title: str, configs: list[dict], policies: list[str], opts: RunOptions,
                  keys: list[str], model_for=None, printed=None, **cfg_kw) -> ExperimentResult:
    """``printed(cfg, policy)``: the paper's W for that row, or None."""
    from ..scenarios import load

    runs = [(c["scenario"], c.get("arrivals"), c.get("case"), len(set(policies) | {"gcmu"})) for c in configs]
    reps, horizon = _cfg(opts, runs=runs, **cfg_kw)
    rows, shown = [], []
    order = ["gcmu"] + [q for q in policies if q != "gcmu"]
    cells = _Cells(opts, exp_id)
    for n, cfg in enumerate(configs):
        system = load(cfg["scenario"], arrivals=cfg.get("arrivals"), case=cfg.get("case"))
        for p in order:
            cells.add((n, p), system, p, reps, horizon, **dict(cfg.get("model", {})))
    cells.run()
    for n, cfg in enumerate(configs):
        res = {p: cells.get((n, p)) for p in order}
        w_ref = res["gcmu"]["mean"] if not res["gcmu"]["unstable"] else float("nan")
        label = {k: cfg.get(k) for k in keys}
        for p in policies:
            row, sh = _row(label, res[p], w_ref, printed=printed(cfg, p) if printed else None)
            rows.append(row)
            shown.append(sh)
    figs = [opts.outdir / "W.png"]
    _bar_plot(rows, keys, figs[0], title)
    table = _fmt_table(f"{title}  [{reps} reps x {horizon:g} time units]", shown, keys)
    return ExperimentResult(exp_id, rows, table, figs, notes=[f"{reps} replications of {horizon:g} time units"],
                            meta={"reps": reps, "horizon": horizon}, keys=tuple(keys) + ("policy",))


def _cases(scenario: str, arr_cases: dict[str, list[int]]) -> list[dict]:
    return [{"scenario": scenario, "arrivals": a, "case": c} for a, cs in arr_cases.items() for c in cs]


_P3 = ["fcfs", "gcmu", "lpas-dg"]
_SYS = {
    "3.2": ("3.A", {"alpha1": [1, 2, 3, 4, 5], "alpha2": [1, 2, 3]}),
    "3.3": ("3.B", {"alpha1": [1, 2], "alpha2": [1, 2]}),
    "3.4": ("3.C", {"alpha1": [1, 2], "alpha2": [1, 2]}),
    "3.5": ("3.D", {"alpha1": [1, 2], "alpha2": [1, 2]}),
    "3.6": ("3.E", {"alpha1": [1, 2], "alpha2": [1, 2]}),
}


def _make_table(num: str):
    sid, ac = _SYS[num]

    def run(opts: RunOptions) -> ExperimentResult:
        return _policy_table(f"thesis-table-{num}", f"Table {num}: System {sid}", _cases(sid, ac), _P3, opts,
                             ["arrivals", "case"], printed=lambda cfg, p: _printed(num, cfg, p))

    return run


for _num, (_sid, _) in _SYS.items():
    register(Experiment(f"thesis-table-{_num}", f"Desktop grid System {_sid}: FCFS, Gcmu, LPAS_DG",
                        f"Al-Azzoni thesis §3.4, Table {_num}", _make_table(_num), params=_PARAMS))


#: how Table 3.11's hyperexponential up/down times (mean and SCV 5 given) are completed
H2_FORMS = ("balanced", "gamma", "fixed-p")


def _table_3_11(opts: RunOptions) -> ExperimentResult:
    h2 = {"h2_form": str(opts.extra.get("h2", "balanced")), "h2_p": float(opts.extra.get("h2_p", 0.1))}
    dists = [d for d in ("exp", "hyperexp", "det") if d in opts.extra.get("dists", ("exp", "hyperexp", "det"))]
    cases = [c for c in (1, 2, 3) if c in opts.extra.get("cases", (1, 2, 3))]
    configs = [{"scenario": "3.A-dist", "case": c, "dist": d, "model": {"exec_dist": d, **h2}}
               for d in dists for c in cases]
    r = _policy_table("thesis-table-3.11", "Table 3.11: System 3.A, other distributions", configs, _P3, opts,
                      ["dist", "case"], printed=lambda cfg, p: _printed("3.11", cfg, p))
    if "h2" in opts.extra or "h2_p" in opts.extra:
        r.notes.append(f"hyperexponential up/down times (SCV 5) completed by h2={h2['h2_form']}"
                       + (f" (p = {h2['h2_p']:g})" if h2["h2_form"] == "fixed-p" else ""))
    r.meta.update(h2)
    return r


register(Experiment("thesis-table-3.11", "System 3.A with hyperexponential up/down times and 3 execution-time families",
                    "Al-Azzoni thesis §3.4.2, Table 3.11", _table_3_11,
                    params=(*_PARAMS,
                            Param("h2", "str", "how the SCV-5 hyperexponential up/down times are completed: balanced "
                                  "means (default), gamma third moment, or fixed-p", choices=H2_FORMS),
                            Param("h2_p", "float", "h2=fixed-p: probability of the long phase, in (0, 1/3)", 0.0,
                                  0.3333, lo_open=True),
                            Param("cases", "ints", "cases to run (1, 2, 3)", 1, 3),
                            Param("dists", "strs", "execution-time families to run", choices=("exp", "hyperexp", "det")))))


def _table_3_12(opts: RunOptions) -> ExperimentResult:
    return _policy_table("thesis-table-3.12", "Table 3.12: System 3.F (3,000 machines)",
                         _cases("3.F", {"default": [1, 2]}) if False else
                         [{"scenario": "3.F", "case": c} for c in (1, 2)], _P3, opts, ["case"],
                         qreps=2, qhorizon=20.0)


register(Experiment("thesis-table-3.12", "Large desktop grid System 3.F (100 copies of 3.A)",
                    "Al-Azzoni thesis §3.4.3, Table 3.12", _table_3_12, params=_PARAMS))


def _table_3_14(opts: RunOptions) -> ExperimentResult:
    configs = []
    for num in ("3.3", "3.4", "3.5", "3.6"):
        sid, ac = _SYS[num]
        for c in _cases(sid, ac):
            c["system"] = sid
            configs.append(c)
    return _policy_table("thesis-table-3.14", "Table 3.14: modified (robust) LPAS_DG",
                         configs, ["gcmu", "lpas-dg-robust"], opts, ["system", "arrivals", "case"],
                         qreps=2, qhorizon=300.0)


register(Experiment("thesis-table-3.14", "Robust LPAS_DG (central LP solution) on Systems 3.B-3.E",
                    "Al-Azzoni thesis §3.4.6, Table 3.14", _table_3_14, params=_PARAMS))


def _cpuinfo(opts: RunOptions) -> ExperimentResult:
    configs = [{"scenario": "3.A-cpuinfo", "cpu_info": True, "model": {"cpu_info": True}},
               {"scenario": "3.A-cpuinfo", "cpu_info": False, "model": {"cpu_info": False}}]
    r = _policy_table("thesis-3.4.4", "§3.4.4: value of CPU-availability information", configs,
                      ["gcmu", "lpas-dg"], opts, ["cpu_info"])
    r.notes.append("thesis: Delta = 20.51 % with CPU information, -156.41 % without")
    return r


register(Experiment("thesis-3.4.4", "LPAS_DG with and without CPU-availability estimates (System 3.A, alpha = 0.75 alpha1)",
                    "Al-Azzoni thesis §3.4.4", _cpuinfo, params=_PARAMS))


def _fig_3_4(opts: RunOptions) -> ExperimentResult:
    from ..scenarios import load

    levels = [0.0, 0.5, 1.0] if opts.quick else [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    reps, horizon = _cfg(opts, qreps=2, qhorizon=200.0, runs=[("3.H", None, None, 1 + 2 * len(levels))])
    system = load("3.H")
    cells = _Cells(opts, "thesis-fig-3.4")
    cells.add(("gcmu",), system, "gcmu", reps, horizon)
    for I in levels:
        for p in ("lpas-dg", "lpas-dg-robust"):
            cells.add((I, p), system, p, reps, horizon, inaccuracy=I)
    cells.run()
    g = cells.get(("gcmu",))
    rows, shown = [], []
    for I in levels:
        for p in ("lpas-dg", "lpas-dg-robust"):
            row, sh = _row({"I": I}, cells.get((I, p)), g["mean"], ref_stable=not g["unstable"])
            rows.append(row)
            shown.append(sh)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for p, lab in (("lpas-dg", "LPAS_DG"), ("lpas-dg-robust", "modified LPAS_DG")):
        ax.plot([100 * r["I"] for r in rows if r["policy"] == p], [r["Delta"] for r in rows if r["policy"] == p],
                "o-", label=lab)
    ax.axhline(0, color="k", lw=0.5)
    ax.set_xlabel("maximum inaccuracy I (%)")
    ax.set_ylabel("improvement over Gcmu, Delta (%)")
    ax.set_title("Figure 3.4: System 3.H")
    ax.legend()
    path = opts.outdir / "fig-3.4.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)
    table = _fmt_table(f"Figure 3.4: System 3.H, Gcmu W = {g['mean']:.4f}  [{reps} reps x {horizon:g}]", shown, ["I"])
    return ExperimentResult("thesis-fig-3.4", rows, table, [path], meta={"reps": reps, "horizon": horizon},
                            keys=("policy",))


register(Experiment("thesis-fig-3.4", "Inaccurate CPU-availability estimates: LPAS_DG vs robust LPAS_DG (System 3.H)",
                    "Al-Azzoni thesis §3.4.6, Figure 3.4", _fig_3_4, params=_PARAMS))


def _make_fig_g(full: bool):
    def run(opts: RunOptions) -> ExperimentResult:
        from ..scenarios import load

        runs = [("3.G1", "alpha1", None, 3), ("3.G2", "alpha1", None, 3), ("3.G2", "alpha2", None, 3)]
        if full:
            reps, horizon = _cfg(opts, reps=1, horizon=2e9, qreps=1, qhorizon=2e7, runs=runs)
        else:
            reps, horizon = _cfg(opts, reps=5, horizon=2e8, qreps=2, qhorizon=5e5, runs=runs)
        rows, shown = [], []
        figs3 = (("3.1", "3.G1", "alpha1"), ("3.2", "3.G2", "alpha1"), ("3.3", "3.G2", "alpha2"))
        cells = _Cells(opts, "thesis-fig-3.1-3.3")
        for fig, sid, arr in figs3:
            system = load(sid, arrivals=arr)
            for p in ("gcmu", "fcfs", "lpas-dg"):
                cells.add((fig, p), system, p, reps, horizon)
        cells.run()
        for fig, sid, arr in figs3:
            res = {p: cells.get((fig, p)) for p in ("gcmu", "fcfs", "lpas-dg")}
            wg = res["gcmu"]["mean"]
            for p in ("fcfs", "gcmu", "lpas-dg"):
                r, sh = _row({"figure": fig, "system": sid, "arrivals": arr}, res[p], wg,
                             ref_stable=not res["gcmu"]["unstable"])
                sh["relative_W"] = sh["W"] / wg
                r["relative_W"] = sh["relative_W"] if r["stable"] and not res["gcmu"]["unstable"] else None
                rows.append(r)
                shown.append(sh)
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        figs = []
        for fig in ("3.1", "3.2", "3.3"):
            rr = [r for r in rows if r["figure"] == fig]
            f, ax = plt.subplots(figsize=(5, 3.5))
            ax.bar([r["policy"] for r in rr], [np.nan if r["relative_W"] is None else r["relative_W"] for r in rr])
            for k, r in enumerate(rr):
                if not r["stable"]:
                    ax.text(k, 0.05, "unstable", ha="center", rotation=90)
            ax.set_ylabel("W / W(Gcmu)")
            ax.set_title(f"Figure {fig}: System {rr[0]['system']} under {rr[0]['arrivals']}")
            f.tight_layout()
            path = opts.outdir / f"fig-{fig}.png"
            path.parent.mkdir(parents=True, exist_ok=True)
            save_figure(f, path)
            plt.close(f)
            figs.append(path)
        acc = max(r["acc"] for r in shown if np.isfinite(r["acc"])) if reps > 1 else float("nan")
        table = _fmt_table(f"Figures 3.1-3.3: Systems 3.G1/3.G2  [{reps} reps x {horizon:g} time units; "
                           f"largest CI accuracy {acc:.2f} %]", shown, ["figure", "system", "arrivals"])
        return ExperimentResult("thesis-fig-3.1-3.3" + ("-full" if full else ""), rows, table, figs,
                                notes=[f"largest relative CI half-width: {acc:.3f} % (thesis: <= 0.1 % at 2e9)"],
                                meta={"reps": reps, "horizon": horizon}, keys=("figure", "system", "arrivals", "policy"))

    return run


register(Experiment("thesis-fig-3.1-3.3", "Realistic Systems 3.G1/3.G2 (300 machines, Table 3.13), 5 x 2e8 time units",
                    "Al-Azzoni thesis §3.4.5, Figures 3.1-3.3", _make_fig_g(False), params=_PARAMS))
register(Experiment("thesis-fig-3.1-3.3-full", "Systems 3.G1/3.G2 for the thesis's 2e9 time units (long)",
                    "Al-Azzoni thesis §3.4.5, Figures 3.1-3.3", _make_fig_g(True), params=_PARAMS))


# ----------------------------------------------------------------------------- which LP solution LPAS_DG uses
#: printed (Gcmu W, LPAS_DG W) of Tables 3.3-3.6 and 3.11; §3.4.4 prints Delta only
PRINTED_LPAS = {
    ("3.3", "3.B", "alpha1", 1, "exp"): (.22, .13), ("3.3", "3.B", "alpha1", 2, "exp"): (.37, .28),
    ("3.3", "3.B", "alpha2", 1, "exp"): (.28, .22), ("3.3", "3.B", "alpha2", 2, "exp"): (.45, .39),
    ("3.4", "3.C", "alpha1", 1, "exp"): (.21, .22), ("3.4", "3.C", "alpha1", 2, "exp"): (.27, .31),
    ("3.4", "3.C", "alpha2", 1, "exp"): (.26, .32), ("3.4", "3.C", "alpha2", 2, "exp"): (.47, .52),
    ("3.5", "3.D", "alpha1", 1, "exp"): (.21, .23), ("3.5", "3.D", "alpha1", 2, "exp"): (.48, .54),
    ("3.5", "3.D", "alpha2", 1, "exp"): (.34, .54), ("3.5", "3.D", "alpha2", 2, "exp"): (.75, .77),
    ("3.6", "3.E", "alpha1", 1, "exp"): (.20, .22), ("3.6", "3.E", "alpha1", 2, "exp"): (.27, .33),
    ("3.6", "3.E", "alpha2", 1, "exp"): (.34, .45), ("3.6", "3.E", "alpha2", 2, "exp"): (1.18, 1.12),
    ("3.11", "3.A-dist", None, 1, "exp"): (.23, .15), ("3.11", "3.A-dist", None, 2, "exp"): (.25, .18),
    ("3.11", "3.A-dist", None, 3, "exp"): (.32, .22), ("3.11", "3.A-dist", None, 1, "hyperexp"): (.23, .15),
    ("3.11", "3.A-dist", None, 2, "hyperexp"): (.26, .19), ("3.11", "3.A-dist", None, 3, "hyperexp"): (.34, .26),
    ("3.11", "3.A-dist", None, 1, "det"): (.22, .15), ("3.11", "3.A-dist", None, 2, "det"): (.24, .17),
    ("3.11", "3.A-dist", None, 3, "det"): (.29, .22),
}
PRINTED_CPUINFO_DELTA = {True: 20.51, False: -156.41}


def _printed(table: str, cfg: dict, policy: str) -> float | None:
    """The W the thesis printed for ``policy`` (Gcmu or LPAS_DG) in ``cfg`` of ``table``, if stored."""
    key = (table, cfg["scenario"], cfg.get("arrivals"), cfg.get("case"), cfg.get("dist", "exp"))
    pair = PRINTED_LPAS.get(key)
    if pair is None:
        return None
    return {"gcmu": pair[0], "lpas-dg": pair[1]}.get(policy)


def _check_variant(v: str) -> str:
    from ..errors import HetschedError

    if v in ("groups", "machines", "reverse") or (v.isdigit() and len(v) <= 18):
        return v
    raise HetschedError(f"expected groups, machines, reverse or a non-negative integer, got {v!r}")


def _variant_model(v: str) -> dict:
    if v in ("groups", "machines"):
        return {"lp_grouping": v}
    return {"lp_grouping": "machines", "lp_order": v if v == "reverse" else int(v)}


def _lp_reading(opts: RunOptions) -> ExperimentResult:
    """LPAS_DG under each reading of "the" optimal solution, against the printed numbers."""
    from ..scenarios import load

    variants = list(opts.extra.get("variants", ["groups", "machines"]))
    runs = [(sid, arr, case, 1 + len(variants)) for (_t, sid, arr, case, _e) in PRINTED_LPAS]
    runs.append(("3.A-cpuinfo", None, None, 2 * (1 + len(variants))))
    reps, horizon = _cfg(opts, reps=4, horizon=5_000.0, qreps=2, qhorizon=500.0, runs=runs)
    only = ",".join(opts.extra["tables"]) if "tables" in opts.extra else None
    rows = []
    cells = _Cells(opts, "thesis-ch3-lp-reading")
    chosen = [k for k in PRINTED_LPAS if not (only and k[0] not in str(only).split(","))]
    for key in chosen:
        tab, sid, arr, case, ex = key
        s = load(sid, arrivals=arr, case=case)
        for v in variants:
            cells.add((key, v), s, "lpas-dg", reps, horizon, exec_dist=ex, **_variant_model(v))
    cpuinfo = not only or "3.4.4" in str(only).split(",")
    if cpuinfo:
        s = load("3.A-cpuinfo")
        cells.add(("cpuinfo", "gcmu"), s, "gcmu", reps, horizon)
        for info in (True, False):
            for v in variants:
                cells.add(("cpuinfo", info, v), s, "lpas-dg", reps, horizon, cpu_info=info, **_variant_model(v))
    cells.run()
    for key in chosen:
        tab, sid, arr, case, ex = key
        w_pr = PRINTED_LPAS[key][1]
        row = {"table": tab, "system": sid, "arrivals": arr or "-", "case": str(case), "exec": ex,
               "printed_W": float(w_pr), "printed_Delta": float("nan"), "gcmu_W": float("nan")}
        for v in variants:
            o = cells.get((key, v))
            row[f"W_{v}"] = o["mean"]
            row[f"unstable_{v}"] = o["unstable"]
            row[f"Delta_{v}"] = float("nan")
        rows.append(row)
    if cpuinfo:
        g = cells.get(("cpuinfo", "gcmu"))["mean"]
        for info in (True, False):
            row = {"table": "3.4.4", "system": "3.A-cpuinfo", "arrivals": "0.75 alpha1", "case": f"info={info}",
                   "exec": "exp", "printed_W": float("nan"), "printed_Delta": PRINTED_CPUINFO_DELTA[info],
                   "gcmu_W": float(g)}
            for v in variants:
                o = cells.get(("cpuinfo", info, v))
                row[f"W_{v}"] = o["mean"]
                row[f"Delta_{v}"] = 100 * (g - o["mean"]) / g
                row[f"unstable_{v}"] = o["unstable"]
            rows.append(row)
    head = ["table", "system", "arrivals", "case", "exec", "printed"] + [f"LPAS_DG[{v}]" for v in variants]
    lines = [f"LPAS_DG: printed vs ours per LP reading  [{reps} reps x {horizon:g} time units, seed {opts.seed}]",
             " | ".join(head)]
    for r in rows:
        if r["table"] == "3.4.4":
            cells = [f"Delta {r['printed_Delta']:+.2f}%"] + [f"{r[f'W_{v}']:.3f} (Delta {r[f'Delta_{v}']:+.1f}%)"
                                                             for v in variants]
        else:
            cells = [f"{r['printed_W']:.2f}"] + [f"{r[f'W_{v}']:.3f}" + ("!" if r[f"unstable_{v}"] else "")
                                                 for v in variants]
        lines.append(" | ".join([r["table"], r["system"], str(r["arrivals"]), str(r["case"]), r["exec"]] + cells))
    rows = [_reading_row(r, variants) for r in rows]
    return ExperimentResult("thesis-ch3-lp-reading", rows, "\n".join(lines), [],
                            notes=["groups = group-symmetric vertex (one LP column per machine group); "
                                   "machines = per-machine vertex with >= NM+1-N-M zeros (thesis §3.3, default); "
                                   "reverse/int = the same with the LP columns reordered (another optimal vertex)"],
                            meta={"reps": reps, "horizon": horizon, "variants": variants})


def _reading_row(shown: dict, variants: list[str]) -> dict:
    """The results row of one line of the LP-reading table (:mod:`.rows`): per reading ``v`` its ``W_v``
    (and ``Delta_v``) null when unstable (``stable_v`` false); the main metric is the first reading's
    W (Delta for §3.4.4) against the printed value."""
    row = {k: v for k, v in shown.items() if not k.startswith(("W_", "Delta_", "unstable_"))}
    for v in variants:
        ok = not shown[f"unstable_{v}"]
        row[f"W_{v}"] = shown[f"W_{v}"] if ok else None
        row[f"Delta_{v}"] = shown[f"Delta_{v}"] if ok else None
        row[f"stable_{v}"] = ok
    v0 = variants[0]
    ok = not shown[f"unstable_{v0}"]
    if shown["table"] == "3.4.4":
        return metric(row, f"Delta_{v0}", shown[f"Delta_{v0}"], stable=ok, printed=shown["printed_Delta"])
    return metric(row, f"W_{v0}", shown[f"W_{v0}"], stable=ok, printed=shown["printed_W"])


register(Experiment("thesis-ch3-lp-reading",
                    "Which optimal LP solution LPAS_DG uses: printed LPAS_DG W of Tables 3.3-3.6, 3.11, §3.4.4 vs ours",
                    "Al-Azzoni thesis §3.3 (end), Tables 3.3-3.6, 3.11, §3.4.4", _lp_reading,
                    params=(*_PARAMS,
                            Param("variants", "strs", "LP readings: groups, machines, reverse or an integer "
                                  "(column order seed)", check=_check_variant),
                            Param("tables", "strs", "tables to compare",
                                  choices=tuple(sorted({k[0] for k in PRINTED_LPAS}) + ["3.4.4"])))))
