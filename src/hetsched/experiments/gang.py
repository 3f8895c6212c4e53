"""Experiment ``gang-srn``: Figures 2-5 of Ro & Cao (seed 003), ST/SRT/UoS/GoS vs lambda.

For each policy the reachability graph is generated once; the sweep over the
gang arrival rate only rescales the rate of ``T`` (its guards and arcs do not
depend on lambda) and warm-starts the steady-state solver from the previous
lambda.

Readings of what the paper leaves open (``docs/assumptions.md``, ``docs/srn.md``)
are chosen with ``--set KEY=VALUE``: ``mu``, ``task_rate``, ``local_rate``
(numbers), ``lc2_rule`` (``table``/``text``), ``migration_guard``
(``table``/``text``), ``migration``, ``migration_follows_policy``,
``load_includes_waiting``, ``arrival_scales_with_pcont`` (``true``/``false``).
Other keys are refused.
"""

from __future__ import annotations

import time

from . import Experiment, ExperimentResult, RunOptions, register
from ..resultsio import save_figure

COLUMNS = ("policy", "lambda", "states", "ST", "SRT", "UoS", "GoS")

READING_KEYS = ("mu", "task_rate", "local_rate", "lc2_rule", "migration_guard", "migration",
                "migration_follows_policy", "load_includes_waiting", "arrival_scales_with_pcont")


def readings(extra: dict) -> dict:
    """GangParams keyword arguments from ``--set`` values; unknown keys and bad values are refused."""
    from ..errors import ModelError

    kw = {}
    for key, val in extra.items():
        if key not in READING_KEYS:
            raise ModelError(f"--set {key}: unknown for gang-srn; known: {', '.join(READING_KEYS)}")
        if key in ("mu", "task_rate", "local_rate"):
            if isinstance(val, bool) or not isinstance(val, (int, float)):
                raise ModelError(f"--set {key}={val!r}: expected a number")
            kw[key] = float(val) if key == "task_rate" else (float(val), float(val))
        elif key in ("lc2_rule", "migration_guard"):
            kw[key] = str(val)
        else:
            if not isinstance(val, bool):
                raise ModelError(f"--set {key}={val!r}: expected true or false")
            kw[key] = val
    return kw


def run(opts: RunOptions) -> ExperimentResult:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..srn import SRNResult, explore, steady_state, to_ctmc
    from ..srn.gang import LAMBDAS, POLICIES, GangParams, gang_measures, gang_net

    lams = (1.0, 3.0, 5.5) if opts.quick else LAMBDAS
    kw = readings(dict(opts.extra))
    GangParams(**kw)   # validate the readings before any work (the message names the field)
    rows = []
    notes = []
    t0 = time.perf_counter()
    for pol in POLICIES:
        base = GangParams(policy=pol, arrival_rate=lams[0], **kw)
        space0 = explore(gang_net(base))
        x = None
        for lam in lams:
            p = base.with_(arrival_rate=lam)
            space = space0.scale_rate("T", lam / lams[0])
            ctmc = to_ctmc(space)
            st = steady_state(ctmc, x0=x)
            x = st.pi
            m = gang_measures(SRNResult(space, ctmc, st), p)
            if not st.success:
                notes.append(f"{pol} lambda={lam}: solver {st.message}")
            rows.append({"policy": pol, "lambda": lam, "states": space.n_tangible,
                         **{k: m[k] for k in ("ST", "SRT", "UoS", "GoS")},
                         "gang_throughput": m["gang_throughput"], "blocking": m["blocking"],
                         "residual": st.residual})
    figures = []
    opts.outdir.mkdir(parents=True, exist_ok=True)
    for fig_no, key, label in ((2, "ST", "System throughput ST"), (3, "SRT", "System response time SRT"),
                               (4, "UoS", "Utilization of servers UoS"), (5, "GoS", "Grade of service GoS")):
        fig, ax = plt.subplots(figsize=(5, 3.6))
        for pol, mk in zip(POLICIES, ("o", "s", "^")):
            pts = [(r["lambda"], r[key]) for r in rows if r["policy"] == pol]
            ax.plot(*zip(*pts), marker=mk, label={"LC1": "LC-1", "LC2": "LC-2"}.get(pol, pol))
        ax.set_xlabel("gang arrival rate $\\lambda$")
        ax.set_ylabel(key)
        ax.set_title(f"Fig. {fig_no}. {label}")
        ax.grid(alpha=0.3)
        ax.legend()
        fig.tight_layout()
        path = opts.outdir / f"fig{fig_no}_{key}.png"
        save_figure(fig, path, dpi=120)
        plt.close(fig)
        figures.append(path)
    lines = [f"{'lambda':>6s}  " + "  ".join(f"{k + ' ' + pol:>12s}" for k in ("ST", "SRT", "UoS", "GoS")
                                              for pol in POLICIES)]
    for lam in lams:
        vals = {(r["policy"]): r for r in rows if r["lambda"] == lam}
        lines.append(f"{lam:6.1f}  " + "  ".join(f"{vals[pol][k]:12.5f}" for k in ("ST", "SRT", "UoS", "GoS")
                                                 for pol in POLICIES))
    states = {pol: next(r["states"] for r in rows if r["policy"] == pol) for pol in POLICIES}
    table = ("Ro & Cao (2010), Figs 2-5: gang scheduling SRN, C=64, K=7, 2 x 16 servers, np=5\n"
             f"tangible states: {states}\n" + "\n".join(lines))
    p0 = GangParams(**kw)
    notes.append(f"rates the paper does not state are assumptions (docs/assumptions.md): local arrival "
                 f"{p0.local_rate[0]:g}/site, task service {p0.task_rate:g}, mu1 = mu2 = {p0.mu[0]:g} per PCONT level")
    if kw:
        notes.append("readings: " + ", ".join(f"{k}={v}" for k, v in kw.items()))
    return ExperimentResult(id="gang-srn", rows=rows, table=table, figures=figures, notes=notes,
                            meta={"seconds": time.perf_counter() - t0, "lambdas": list(lams), "readings": kw})


register(Experiment(
    id="gang-srn",
    title="Gang scheduling with migration in a grid (SRN): ST, SRT, UoS, GoS vs lambda",
    source="Ro & Cao 2010, Figs 2-5 (seed 003)",
    run=run,
    dask="none",  # exact SRN solutions: nothing to distribute, --backend dask is refused
))
