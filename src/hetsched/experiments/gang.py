"""Experiments ``gang-srn`` (Figures 2-5 of Ro & Cao, seed 003: ST/SRT/UoS/GoS vs lambda) and
``gang-srn-claims`` (which of the paper's three claims each reading reproduces, and a search over
the rates the paper does not state).

For each policy the reachability graph is generated once; the sweep over the
gang arrival rate only rescales the rate of ``T`` (its guards and arcs do not
depend on lambda) and warm-starts the steady-state solver from the previous
lambda.

Readings of what the paper leaves open (``docs/assumptions.md``, ``docs/srn.md``)
are chosen with ``--set KEY=VALUE``: the unstated rates ``mu`` (mu1 = mu2),
``task_rate``, ``local_rate`` and ``arrival_mu``; ``ls_rule``
(``round-robin``/``race``), ``arrival`` (``lambda``, ``lambda*pcont``,
``mu*pcont``), ``lc2_rule`` and ``migration_guard`` (``table``/``text``);
``migration``, ``migration_follows_policy``, ``load_includes_waiting``,
``arrival_scales_with_pcont`` (``true``/``false``).
"""

from __future__ import annotations

import time

from . import Experiment, ExperimentResult, Param, RunOptions, register
from ..resultsio import save_figure

COLUMNS = ("policy", "lambda", "states", "ST", "SRT", "UoS", "GoS")

_RATE = dict(kind="float", lo=1e-6, hi=1e6)
PARAMS = (
    Param("mu", help="dispatch rate mu1 = mu2 per PCONT level (not stated; default 1)", **_RATE),
    Param("task_rate", help="service rate of one task on one server (not stated; default 1)", **_RATE),
    Param("local_rate", "float", "local job arrival rate per site (not stated; default 1)", 0.0, 1e6),
    Param("arrival_mu", help="the mu of Table 4's T rate mu*#PCONT (with arrival=mu*pcont; default 1)", **_RATE),
    Param("ls_rule", "str", "LS: round-robin (RR places) or race (GS1 and GS2 race)",
          choices=("round-robin", "race")),
    Param("arrival", "str", "rate of T: lambda (the text), lambda*pcont, mu*pcont (Table 4 as written)",
          choices=("lambda", "lambda*pcont", "mu*pcont")),
    Param("lc2_rule", "str", "LC-2 guard of GS2: table or text", choices=("table", "text")),
    Param("migration_guard", "str", "migration guard: table (Table 1) or text (Section 3.2)",
          choices=("table", "text")),
    Param("migration", "bool", "GS11/GS21 present"),
    Param("migration_follows_policy", "bool", "migration also needs the policy guard of its site"),
    Param("load_includes_waiting", "bool", "LC-1/LC-2 load counts #pl_i too"),
    Param("arrival_scales_with_pcont", "bool", "same as arrival=lambda*pcont"),
)
READING_KEYS = tuple(p.name for p in PARAMS)


def readings(extra: dict) -> dict:
    """GangParams keyword arguments from ``--set`` values; unknown keys and bad values are refused."""
    from ..errors import ModelError

    kw = {}
    for key, val in extra.items():
        if key not in READING_KEYS:
            raise ModelError(f"--set {key}: unknown for gang-srn; known: {', '.join(READING_KEYS)}")
        if key in ("mu", "task_rate", "local_rate", "arrival_mu"):
            if isinstance(val, bool) or not isinstance(val, (int, float)):
                raise ModelError(f"--set {key}={val!r}: expected a number")
            kw[key] = float(val) if key in ("task_rate", "arrival_mu") else (float(val), float(val))
        elif key in ("lc2_rule", "migration_guard", "ls_rule", "arrival"):
            kw[key] = str(val)
        else:
            if not isinstance(val, bool):
                raise ModelError(f"--set {key}={val!r}: expected true or false")
            kw[key] = val
    return kw


def _num(v) -> str:
    return "-" if v is None else f"{v:.5f}"


def _convention(row: dict, success: bool) -> dict:
    """The uniform columns of the experiment row convention (main metric SRT; exact: no CI)."""
    v = row["SRT"]
    return {"metric": "SRT", "value": v if success else None, "ci_low": None, "ci_high": None,
            "rel_half_width": None, "stable": True, "value_untrusted": None if success else v}


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
            row = {"policy": pol, "lambda": lam, "states": space.n_tangible,
                   **{k: m[k] for k in ("ST", "SRT", "UoS", "GoS")},
                   "gang_throughput": m["gang_throughput"], "blocking": m["blocking"], "residual": st.residual}
            row.update(_convention(row, st.success))
            if not st.success:
                row["SRT"] = None
            rows.append(row)
    figures = []
    opts.outdir.mkdir(parents=True, exist_ok=True)
    for fig_no, key, label in ((2, "ST", "System throughput ST"), (3, "SRT", "System response time SRT"),
                               (4, "UoS", "Utilization of servers UoS"), (5, "GoS", "Grade of service GoS")):
        fig, ax = plt.subplots(figsize=(5, 3.6))
        for pol, mk in zip(POLICIES, ("o", "s", "^")):
            pts = [(r["lambda"], r[key]) for r in rows if r["policy"] == pol and r[key] is not None]
            if not pts:
                continue
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
        lines.append(f"{lam:6.1f}  " + "  ".join(f"{_num(vals[pol][k]):>12s}" for k in ("ST", "SRT", "UoS", "GoS")
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
    params=PARAMS,
    dask="none",  # exact SRN solutions: nothing to distribute, --backend dask is refused
))


# ------------------------------------------------------------------------------ gang-srn-claims
#: the combinations of readings whose claims are reported: the LS rule x the rate of T, with migration
#: following the policy (default), and the LS rules with migration ignoring it (the reading that lets
#: LC-2 win at low load, docs/srn.md)
COMBOS = ([dict(ls_rule=ls, arrival=arr, migration_follows_policy=True, migration_guard="table")
           for ls in ("round-robin", "race") for arr in ("lambda", "lambda*pcont", "mu*pcont")]
          + [dict(ls_rule=ls, arrival="lambda", migration_follows_policy=False, migration_guard=g)
             for g in ("table", "text") for ls in ("round-robin", "race")])
#: the readings searched over the unstated rates (lambda does not enter mu*pcont): the LS rule x the
#: rate of T, and the LS rule with migration ignoring the policy under the text's migration guard
#: (the reading closest to C1 and C3 at the default rates)
SEARCHED = ([dict(ls_rule=ls, arrival=arr, migration_follows_policy=True, migration_guard="table")
             for ls in ("round-robin", "race") for arr in ("lambda", "lambda*pcont")]
            + [dict(ls_rule=ls, arrival="lambda", migration_follows_policy=False, migration_guard="text")
               for ls in ("round-robin", "race")])


def _label(rd: dict) -> str:
    return (f"LS {rd['ls_rule']}, T rate {rd['arrival']}, migration "
            f"{'follows the policy' if rd['migration_follows_policy'] else 'ignores the policy'}"
            + (", text guard" if rd.get("migration_guard") == "text" else ""))


def _mark(v) -> str:
    return {True: "yes", False: "no", None: "-"}[v]


def run_claims(opts: RunOptions) -> ExperimentResult:
    """C1-C3 for every combination of the readings at the default rates, then the rate search."""
    from ..srn.gang import GangParams
    from ..srn.readings import HIGH, LOW, SEARCH_GRID, claims, search, sweep

    kw = readings(dict(opts.extra))
    base = GangParams(**kw)
    t0 = time.perf_counter()
    combos = COMBOS[:2] if opts.quick else COMBOS
    default_rates = [dict(mu=base.mu[0], task_rate=base.task_rate, local_rate=base.local_rate[0])]
    rows, lines = [], []
    lines.append("Claims at the default rates (mu1 = mu2 = task rate = local rate = 1):")
    lines.append(f"{'reading':72s}  C1  C2  C3  all")
    grid = {k: (v[1],) for k, v in SEARCH_GRID.items()} if opts.quick else SEARCH_GRID
    searched = SEARCHED[:1] if opts.quick else SEARCHED
    n_rates = 1
    for v in grid.values():
        n_rates *= len(v)
    tracker = opts.tracker
    if tracker is not None:
        tracker.total(len(combos) + len(searched) * n_rates)
    for rd in combos:
        sw = sweep(base.with_(**rd), (*LOW, HIGH), default_rates)
        c = claims(sw)
        rows.append({"part": "readings", **rd, **default_rates[0], **c,
                     **{f"SRT {r['policy']} @{r['lambda']:g}": r["SRT"] for r in sw},
                     **{f"ST {r['policy']} @{r['lambda']:g}": r["ST"] for r in sw}})
        lines.append(f"{_label(rd):72s}  {_mark(c['C1']):3s} {_mark(c['C2']):3s} {_mark(c['C3']):3s} {_mark(c['all'])}")
        if tracker is not None:
            tracker.done([rows[-1]])
    found = search(searched, grid, base=base,
                   progress=(lambda: tracker.done([])) if tracker is not None else None)
    for r in found:
        rows.append({"part": "search", **r})
    lines.append("")
    lines.append("Search over the unstated rates " + ", ".join(f"{k} in {list(v)}" for k, v in grid.items())
                 + " (C1 evaluated only where C2 and C3 hold):")
    lines.append(f"{'reading':72s}  settings  C2  C3  C2&C3  all three")
    for rd in searched:
        sub = [r for r in found if all(r[k] == v for k, v in rd.items())]
        lines.append(f"{_label(rd):72s}  {len(sub):8d}  {sum(r['C2'] for r in sub):2d}  {sum(r['C3'] for r in sub):2d}  "
                     f"{sum(r['C2'] and r['C3'] for r in sub):5d}  {sum(r['all'] for r in sub):9d}")
    hits = [r for r in found if r["all"]]
    lines.append("")
    lines.append(f"settings satisfying all three claims: {len(hits)}" + "".join(
        f"\n  {_label(r)}; mu={r['mu']:g}, task_rate={r['task_rate']:g}, local_rate={r['local_rate']:g}"
        for r in hits))
    notes = ["arrival=mu*pcont (Table 4 as written) makes T's rate arrival_mu*#PCONT: lambda does not enter the "
             "model, every lambda gives the same SRT, so C1 (LC-2 lowest at low lambda) and C2 (LS lowest at high "
             "lambda) cannot both hold - it is left out of the search"]
    return ExperimentResult(id="gang-srn-claims", rows=rows, table="\n".join(lines), notes=notes,
                            meta={"seconds": time.perf_counter() - t0, "grid": {k: list(v) for k, v in grid.items()},
                                  "low": list(LOW), "high": HIGH, "readings": kw})


register(Experiment(
    id="gang-srn-claims",
    title="Gang SRN: which readings reproduce the paper's claims (C1 LC-2 lowest SRT for lambda < 3, C2 LS lowest "
          "SRT at high lambda, C3 dynamic policies higher ST); search over the unstated rates",
    source="Ro & Cao 2010, Section 5.2 (seed 003)",
    run=run_claims,
    params=PARAMS,
    dask="none",
))
