"""Thesis chapter 4 (decentralized grids): Table 4.1, Figure 4.1, Figures 4.2-4.3.

``opts.extra`` overrides (``--set``): ``reps``, ``horizon``, ``ks`` (KPB k-bar
values of Table 4.1), ``levels`` (inaccuracy levels of Figure 4.1), and the
model options of
:func:`hetsched.sim.decentral.simulate` (``propagation``, ``include_local``,
``tie``, ...).
"""

from __future__ import annotations

from typing import Any

from . import HORIZON, REPS, Experiment, ExperimentResult, Param, RunOptions, batch, register, sizes

_MODEL_KEYS = ("propagation", "include_local", "tie", "warmup", "max_in_system", "inaccuracy", "inaccuracy_draw")
_MODEL_PARAMS = (
    Param("propagation", "str", "state propagation", choices=("messages", "instant")),
    Param("include_local", "bool", "always add the origin machine to S"),
    Param("tie", "str", "ties between equally good machines", choices=("lowest", "random")),
    Param("warmup", "float", "time deleted from the statistics", 0.0, 1e12),
    Param("max_in_system", "int", "instability bound on tasks in system", 1, 10**9),
    Param("inaccuracy", "float", "estimation inaccuracy I (§4.3.2)", 0.0, 0.999999),
    Param("inaccuracy_draw", "str", "when an estimation error is drawn (§4.3.2): afresh in every report of "
          "a machine's rates, or once per rate value", choices=("per-message", "per-rate")),
)


def _rate(sid: str, n_policies: int) -> float:
    from ..scenarios import load

    return 2.0 * float(load(sid).alpha_array.sum()) * n_policies


def _model_opts(opts: RunOptions) -> dict[str, Any]:
    return {k: opts.extra[k] for k in _MODEL_KEYS if k in opts.extra}


def _plan(system, policy, opts: RunOptions, reps: int, horizon: float, **kw):
    """One cell, planned for the experiment's batch (:func:`hetsched.sim.decentral.plan`)."""
    from ..sim.decentral import plan

    model = _model_opts(opts)
    model.update(kw)
    return plan(system, policy, reps=reps, horizon=horizon, seed=opts.seed, **model)


def _fmt(x, nd=4):
    return "unstable" if x is None else f"{x:.{nd}f}"


# ----------------------------------------------------------------------------- Table 4.1
def table_4_1(opts: RunOptions) -> ExperimentResult:
    from ..scenarios import load

    ks = [int(k) for k in opts.extra.get("ks", [2, 3] if opts.quick else [2, 3, 4, 5])]
    reps, horizon = sizes(opts, 30, 200_000.0, 4, 5_000.0, event_rate=_rate("4.A", 2 + len(ks)))
    s = load("4.A")
    runs = [("MCT", "mct", None)] + [(f"KPB (k={k})", "kpb", k) for k in ks] + [("LPAS_dec", "lpas-dec", None)]
    rows = []
    x_mct = None
    b = batch(opts, "thesis-table-4.1")
    cells = [b.add(_plan(s, pol, opts, reps, horizon, k=k), label=label) for label, pol, k in runs]
    b.run()
    for (label, pol, k), cell in zip(runs, cells):
        r = cell.result
        if pol == "mct":
            x_mct = r.messages
        row = {
            "policy": label, "k": k,
            "W": None if r.unstable else r.mean,
            "accuracy": None if r.unstable else 100 * r.rel_half_width,
        }
        for pc in r.per_class:
            row[f"W{pc['class']}"] = None if r.unstable else pc["mean"]
        row["X"] = r.messages
        row["X_accuracy"] = 100 * (r.messages_ci[1] - r.messages) / r.messages if r.messages else 0.0
        row["Delta"] = None if not x_mct else 100 * (1.0 - r.messages / x_mct)  # percent
        row["unstable"] = r.unstable
        row["lp_solves"] = r.lp_solves
        row["events"] = r.events
        rows.append(row)
    head = f"{'policy':<12} {'W':>9} {'acc':>7} " + " ".join(f"{'W' + str(i + 1):>8}" for i in range(s.N)) \
        + f" {'X':>12} {'Delta':>7}"
    lines = [f"Table 4.1 (System 4.A, {reps} x {horizon:g} time units)", head]
    for r in rows:
        lines.append(f"{r['policy']:<12} {_fmt(r['W']):>9} {_fmt(r['accuracy'], 2) + '%':>7} "
                     + " ".join(f"{_fmt(r[f'W{i + 1}']):>8}" for i in range(s.N))
                     + f" {r['X']:>12.0f} {r['Delta']:>6.1f}%")
    notes = ["Delta = 100 (1 - X / X_MCT) % (message reduction against MCT).",
             "W in time units; accuracy = 100 x CI half-width / mean (95 %), in percent."]
    return ExperimentResult("thesis-table-4.1", rows, "\n".join(lines), notes=notes,
                            meta={"reps": reps, "horizon": horizon, "seed": opts.seed})


# ----------------------------------------------------------------------------- Figure 4.1
def fig_4_1(opts: RunOptions) -> ExperimentResult:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..scenarios import load

    levels = [float(x) for x in opts.extra.get("levels", [0.0, 0.4, 0.8] if opts.quick
                                               else [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9])]
    reps, horizon = sizes(opts, 30, 200_000.0, 3, 4_000.0, event_rate=_rate("4.A", 2 * len(levels)))
    s = load("4.A")
    rows = []
    b = batch(opts, "thesis-fig-4.1")
    pols = (("LPAS_dec", "lpas-dec", None), ("KPB (k=3)", "kpb", 3))
    cells = {(I, label): b.add(_plan(s, pol, opts, reps, horizon, k=k, inaccuracy=I), label=f"I={I} {label}")
             for I in levels for label, pol, k in pols}
    b.run()
    for I in levels:
        for label, pol, k in pols:
            r = cells[I, label].result
            rows.append({"I": I, "policy": label, "W": None if r.unstable else r.mean,
                         "W_low": None if r.unstable else r.ci[0], "W_high": None if r.unstable else r.ci[1],
                         "X": r.messages, "unstable": r.unstable})
    opts.outdir.mkdir(parents=True, exist_ok=True)
    path = opts.outdir / "fig-4.1.png"
    fig, ax = plt.subplots(figsize=(6, 4))
    for label in ("LPAS_dec", "KPB (k=3)"):
        pts = [r for r in rows if r["policy"] == label and r["W"] is not None]
        ax.errorbar([100 * r["I"] for r in pts], [r["W"] for r in pts],
                    yerr=[[r["W"] - r["W_low"] for r in pts], [r["W_high"] - r["W"] for r in pts]],
                    marker="o", capsize=3, label=label)
    ax.set_xlabel("maximum inaccuracy I (%)")
    ax.set_ylabel("average task completion time W")
    ax.set_title("System 4.A under estimation inaccuracy (cf. thesis Fig. 4.1)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    lines = [f"Figure 4.1 (System 4.A, {reps} x {horizon:g}): W versus maximum inaccuracy I",
             f"{'I':>5} {'LPAS_dec':>10} {'KPB (k=3)':>10}"]
    for I in levels:
        w = {r["policy"]: r["W"] for r in rows if r["I"] == I}
        lines.append(f"{100 * I:>4.0f}% {_fmt(w['LPAS_dec']):>10} {_fmt(w['KPB (k=3)']):>10}")
    return ExperimentResult("thesis-fig-4.1", rows, "\n".join(lines), figures=[path],
                            meta={"reps": reps, "horizon": horizon, "seed": opts.seed})


# ----------------------------------------------------------------------------- Figures 4.2-4.3
def fig_4_2_4_3(opts: RunOptions) -> ExperimentResult:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from ..scenarios import load

    reps, horizon = sizes(opts, 5, 2e8, 2, 2e6, event_rate=_rate("4.B1", 2) + _rate("4.B2", 2))
    rows = []
    figures = []
    lines = [f"Figures 4.2-4.3 (Systems 4.B1/4.B2, M = 300, {reps} x {horizon:g} time units): "
             "LPAS_dec relative to MCT"]
    opts.outdir.mkdir(parents=True, exist_ok=True)
    b = batch(opts, "thesis-fig-4.2-4.3")
    figs = (("4.2", "4.B1"), ("4.3", "4.B2"))
    cells = {}
    for fig_no, sid in figs:
        s = load(sid)
        cells[sid] = (s, {pol: b.add(_plan(s, pol, opts, reps, horizon), label=f"{sid} {pol}")
                          for pol in ("mct", "lpas-dec")})
    b.run()
    for fig_no, sid in figs:
        s, cs = cells[sid]
        res = {pol: c.result for pol, c in cs.items()}
        m, d = res["mct"], res["lpas-dec"]
        labels = ["W"] + [f"W{i + 1}" for i in range(s.N)] + ["X"]
        vals_m = [m.mean] + [pc["mean"] for pc in m.per_class] + [m.messages]
        vals_d = [d.mean] + [pc["mean"] for pc in d.per_class] + [d.messages]
        for lab, vm, vd in zip(labels, vals_m, vals_d):
            rows.append({"system": sid, "figure": fig_no, "metric": lab, "MCT": vm, "LPAS_dec": vd,
                         "relative": (vd / vm) if (vm and vd is not None and vm is not None) else None,
                         "unstable_MCT": m.unstable, "unstable_LPAS_dec": d.unstable})
        lines.append(f"System {sid} (Figure {fig_no}): " + ", ".join(
            f"{r['metric']} {r['relative']:.3f}" for r in rows if r["system"] == sid and r["relative"] is not None)
            + ("  [MCT unstable]" if m.unstable else "") + ("  [LPAS_dec unstable]" if d.unstable else ""))
        path = opts.outdir / f"fig-{fig_no}.png"
        fig, ax = plt.subplots(figsize=(6, 4))
        rel = [r["relative"] if r["relative"] is not None else np.nan for r in rows if r["system"] == sid]
        ax.bar(labels, [1.0] * len(labels), width=0.4, align="edge", label="MCT", color="0.7")
        ax.bar(labels, rel, width=-0.4, align="edge", label="LPAS_dec", color="C0")
        ax.set_ylabel("relative to MCT")
        ax.set_title(f"System {sid} (cf. thesis Fig. {fig_no})")
        ax.legend()
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        plt.close(fig)
        figures.append(path)
    notes = ["The thesis simulates 2e9 time units: run thesis-fig-4.2-4.3-full for that length."]
    return ExperimentResult(opts.extra.get("_id", "thesis-fig-4.2-4.3"), rows, "\n".join(lines), figures=figures, notes=notes,
                            meta={"reps": reps, "horizon": horizon, "seed": opts.seed})


register(Experiment("thesis-table-4.1", "Decentralized System 4.A: MCT, KPB, LPAS_dec with message counts",
                    "Al-Azzoni thesis §4.3.1, Table 4.1", table_4_1,
                    params=(REPS, HORIZON, Param("ks", "ints", "KPB k-bar values", 1, 10_000)) + _MODEL_PARAMS))
register(Experiment("thesis-fig-4.1", "System 4.A under estimation inaccuracy: LPAS_dec vs KPB (k=3)",
                    "Al-Azzoni thesis §4.3.2, Figure 4.1", fig_4_1,
                    params=(REPS, HORIZON, Param("levels", "floats", "inaccuracy levels I", 0.0, 0.999999))
                    + tuple(p for p in _MODEL_PARAMS if p.name != "inaccuracy")))
def fig_4_2_4_3_full(opts: RunOptions) -> ExperimentResult:
    from dataclasses import replace

    extra = {"horizon": 2e9, "_id": "thesis-fig-4.2-4.3-full", **opts.extra}
    return fig_4_2_4_3(replace(opts, extra=extra))


register(Experiment("thesis-fig-4.2-4.3-full", "Systems 4.B1/4.B2 for the thesis's 2e9 time units (long)",
                    "Al-Azzoni thesis §4.3.3, Figures 4.2-4.3", fig_4_2_4_3_full,
                    params=(REPS, HORIZON) + _MODEL_PARAMS))
register(Experiment("thesis-fig-4.2-4.3", "Realistic decentralized grids 4.B1/4.B2 (300 machines), LPAS_dec / MCT",
                    "Al-Azzoni thesis §4.3.3, Figures 4.2-4.3", fig_4_2_4_3,
                    params=(REPS, HORIZON) + _MODEL_PARAMS))
