"""Thesis chapter 4 (decentralized grids): Table 4.1, Figure 4.1, Figures 4.2-4.3, the loads of §4.3.1.

``opts.extra`` overrides (``--set``): ``reps``, ``horizon``, ``ks`` (KPB k-bar
values of Table 4.1), ``levels`` (inaccuracy levels of Figure 4.1), and the
model options of
:func:`hetsched.sim.decentral.simulate` (``propagation``, ``include_local``,
``tie``, ...).
"""

from __future__ import annotations

from typing import Any

from .catalog import register
from .cluster import batch
from .core import Experiment, ExperimentResult, RunOptions
from .params import HORIZON, REPS, Param, sizes
from .rows import metric
from ..resultsio import save_figure

_MODEL_KEYS = ("propagation", "include_local", "tie", "warmup", "max_in_system", "inaccuracy", "inaccuracy_draw")
_MODEL_PARAMS = (
    Param("propagation", "str", "state propagation", choices=("messages", "instant")),
    Param("include_local", "bool", "always add the origin machine to S"),
    Param("tie", "str", "ties between equally good machines", choices=("lowest", "random")),
    Param("warmup", "float", "time deleted from the statistics", 0.0, 1e12),
    Param("max_in_system", "int", "instability bound on tasks in system", 1, 10**7),  # ~40 B a slot
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
        metric(row, "W", r.mean, ci=r.ci, rel_half_width=r.rel_half_width, stable=not r.unstable,
               untrusted=r.mean_untrusted)
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
            rows.append(metric({"I": I, "policy": label, "W": None, "X": r.messages}, "W", r.mean, ci=r.ci,
                               rel_half_width=r.rel_half_width, stable=not r.unstable, untrusted=r.mean_untrusted))
    opts.outdir.mkdir(parents=True, exist_ok=True)
    path = opts.outdir / "fig-4.1.png"
    fig, ax = plt.subplots(figsize=(6, 4))
    for label in ("LPAS_dec", "KPB (k=3)"):
        pts = [r for r in rows if r["policy"] == label and r["W"] is not None]
        ax.errorbar([100 * r["I"] for r in pts], [r["W"] for r in pts],
                    yerr=[[r["W"] - r["ci_low"] for r in pts], [r["ci_high"] - r["W"] for r in pts]],
                    marker="o", capsize=3, label=label)
    ax.set_xlabel("maximum inaccuracy I (%)")
    ax.set_ylabel("average task completion time W")
    ax.set_title("System 4.A under estimation inaccuracy (cf. thesis Fig. 4.1)")
    ax.legend()
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
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
        shown = []  # (quantity, LPAS_dec / MCT) as printed
        ok = not (m.unstable or d.unstable)
        for lab, vm, vd in zip(labels, vals_m, vals_d):
            rel = (vd / vm) if (vm and vd is not None and vm is not None) else None
            shown.append((lab, rel))
            rows.append(metric({"system": sid, "figure": fig_no, "quantity": lab,
                                "MCT": vm if not m.unstable else None, "LPAS_dec": vd if not d.unstable else None,
                                "stable_MCT": not m.unstable, "stable_LPAS_dec": not d.unstable},
                               "relative", rel, stable=ok))
        lines.append(f"System {sid} (Figure {fig_no}): " + ", ".join(
            f"{lab} {rel:.3f}" for lab, rel in shown if rel is not None)
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
        save_figure(fig, path, dpi=120)
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


# ----------------------------------------------------------------------------- §4.3.1 loads
#: the loads §4.3.1 prints, with the rate scales it names: (alpha scale, mu scale) -> load (fraction)
PRINTED_431 = {(1.0, 1.15): 0.7759, (1.2, 1.0): 0.8923}


def loads_4_3_1(opts: RunOptions) -> ExperimentResult:
    """The load of System 4.A, ``1 / lambda*``, when every arrival rate is ``a alpha^1`` and every
    execution rate ``m mu^1``, for the scales of §4.3.1 (``a`` in 1, 1.1, 1.2; ``m`` in 1, 1.05,
    1.15); each from its own allocation LP, checked against ``a / (m lambda*(alpha^1, mu^1))``."""
    import numpy as np

    from ..lp import allocation_lp
    from ..scenarios import load
    from ..system import System

    s = load("4.A")
    A = np.asarray(s.alpha_matrix, dtype=float)
    mu = np.asarray(s.mu, dtype=float)
    a_levels = [float(x) for x in s.meta.get("alpha_levels", (1.0, 1.1, 1.2))]
    m_levels = [float(x) for x in s.meta.get("mu_levels", (1.0, 1.05, 1.15))]
    lam1 = allocation_lp(s).lam
    rows = []
    for a in a_levels:
        for m in m_levels:
            scaled = System.from_arrays(alpha=A.sum(axis=1) * a, mu=mu * m, alpha_matrix=A * a)
            lam = allocation_lp(scaled).lam
            row = {"alpha_scale": a, "mu_scale": m, "lambda": lam, "load_closed_form": a / (m * lam1)}
            rows.append(metric(row, "load", 1.0 / lam, printed=PRINTED_431.get((a, m))))
    lo = min(rows, key=lambda r: r["load"])
    hi = max(rows, key=lambda r: r["load"])
    lines = [f"§4.3.1: load 1/lambda* of System 4.A (lambda*(alpha^1, mu^1) = {lam1:.4f}) under scaled rates",
             f"{'alpha':>7s} " + " ".join(f"{'mu x' + format(m, 'g'):>10s}" for m in m_levels)]
    for a in a_levels:
        cells = []
        for m in m_levels:
            r = next(r for r in rows if r["alpha_scale"] == a and r["mu_scale"] == m)
            cells.append(f"{100 * r['load']:9.2f}%")
        lines.append(f"{'x' + format(a, 'g'):>7s} " + " ".join(f"{c:>10s}" for c in cells))
    lines.append(f"lowest {100 * lo['load']:.2f}% (alpha x{lo['alpha_scale']:g}, mu x{lo['mu_scale']:g}); "
                 f"highest {100 * hi['load']:.2f}% (alpha x{hi['alpha_scale']:g}, mu x{hi['mu_scale']:g})")
    lines.append("thesis: lowest 77.59% (printed for alpha x1, mu x1.15), highest 89.23% (alpha x1.2, mu x1)")
    notes = ["load = 1/lambda* of the allocation LP for the class totals of the scaled arrival rates (a fraction)",
             "77.59% is the load of alpha x1.2 with mu x1.15 (1.2 / (1.3449 x 1.15)); alpha x1 with mu x1.15 "
             "gives 1 / (1.3449 x 1.15) = 64.66%: a paper error (docs/assumptions.md, 'Paper errors')"]
    return ExperimentResult("thesis-4.3.1", rows, "\n".join(lines), notes=notes,
                            meta={"lambda_alpha1_mu1": lam1}, keys=("alpha_scale", "mu_scale"))


register(Experiment("thesis-4.3.1", "The loads of System 4.A under the rate changes of §4.3.1 (1/lambda*)",
                    "Al-Azzoni thesis §4.3.1", loads_4_3_1, dask="none"))
