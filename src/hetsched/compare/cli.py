"""``hetsched compare SYSTEM --policy A --policy B ...``: policies ranked on common random numbers."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .._cliutil import (MAX_HORIZON, MAX_REPS, MAX_WORKERS, bounded_int, check_event_budget, choice, emit_json,
                        estimated_events, finite_float, guard, positive_float, seed_int)
from ..sim.core.seeds import DEFAULT_SEED

#: co-allocation parameters accepted by ``--set`` (SYSTEM = ``coalloc``)
COALLOC_KEYS = ("rho", "rho1", "rho2", "mu1", "mu2", "mu3", "p", "c1", "c2", "beta", "delta")


def register(app: typer.Typer) -> None:
    app.command("compare")(compare_cmd)


def _coalloc(sets: list[str]):
    from .._cliutil import check_float, check_int
    from ..errors import HetschedError
    from ..mdp.coalloc import CoallocParams

    kw: dict = {}
    for item in sets:
        key, eq, val = str(item).partition("=")
        key = key.strip()
        if not eq or key not in COALLOC_KEYS:
            raise HetschedError(f"--set: expected KEY=VALUE with KEY one of {', '.join(COALLOC_KEYS)}, got "
                                f"{str(item)[:100]!r}")
        kw[key] = check_int(val, f"--set {key}", 1, 200) if key == "delta" else check_float(val, f"--set {key}", 0,
                                                                                            1e6)
    loads = {k: kw.pop(k) for k in ("rho", "rho1", "rho2") if k in kw}
    if not loads:
        loads = {"rho": 0.8}
    return CoallocParams.from_loads(**loads, **kw)


@guard
def compare_cmd(
    system: str = typer.Argument(..., help="Scenario id (see `hetsched scenarios`), a .toml file, or 'coalloc' "
                                 "(two-cluster co-allocation; parameters with --set)."),
    policy: list[str] = typer.Option([], "--policy", help="A policy name (repeatable): mct, lpas, lpas-2k, kpb, "
                                     "lpas-dg, gcmu, lpas-dec, local, heuristic, ..."),
    policy_file: list[str] = typer.Option([], "--policy-file", help="FILE.py:NAME, a @hs.mapping_policy or "
                                          "@hs.pull_policy function in a Python file (repeatable; the file runs)."),
    reps: int = typer.Option(30, "--reps", callback=bounded_int(1, MAX_REPS),
                             help="Replications (with --trace: windows of the log)."),
    horizon: Optional[float] = typer.Option(None, "--horizon", callback=positive_float(MAX_HORIZON),
                                            help="Simulated time units per replication (default: the model's)."),
    seed: int = typer.Option(DEFAULT_SEED, "--seed", callback=seed_int(), help="Seed; every policy uses it."),
    metric: list[str] = typer.Option([], "--metric", help="Metric to compare (repeatable; the first ranks): Q, W, "
                                     "cost, messages (default: the model's own)."),
    trace: Optional[Path] = typer.Option(None, "--trace", help="Replay an SWF log (.swf or .swf.gz); every policy "
                                         "replays the same windows (mapping policies)."),
    rho: Optional[float] = typer.Option(None, "--load", callback=finite_float(0, 1e6, lo_open=True),
                                        help="With --trace: the load 1/lambda* to rescale the log to."),
    classes: Optional[str] = typer.Option(None, "--classes", help="With --trace: class of a job by runtime "
                                          "(default), procs, user, queue or partition."),
    k: Optional[int] = typer.Option(None, "--k", callback=bounded_int(1, 1_000_000), help="KPB: k-bar."),
    tie: Optional[str] = typer.Option(None, "--tie", callback=choice(("random", "lowest", "highest")),
                                      help="Ties between equally good machines (built-in policies)."),
    dist: Optional[str] = typer.Option(None, "--dist", callback=choice(("exp", "det", "hyperexp")),
                                       help="Execution times (default: the scenario's)."),
    warmup: Optional[float] = typer.Option(None, "--warmup", callback=finite_float(0, MAX_HORIZON),
                                           help="Delete [0, warmup) from the statistics."),
    arrivals: Optional[str] = typer.Option(None, "--arrivals", help="Arrival-rate variant of the scenario."),
    case: Optional[int] = typer.Option(None, "--case", callback=bounded_int(1, 10_000), help="Scenario case."),
    set_: list[str] = typer.Option([], "--set", help="SYSTEM coalloc: KEY=VALUE for rho (default 0.8), rho1, "
                                   "rho2, mu1, mu2, mu3, p, c1, c2, beta, delta."),
    confidence: float = typer.Option(0.95, "--confidence", callback=finite_float(0.5, 0.9999),
                                     help="Confidence level of every interval."),
    workers: Optional[int] = typer.Option(None, "--workers", callback=bounded_int(1, MAX_WORKERS),
                                          help="Local worker processes (default: all cores)."),
    backend: str = typer.Option("local", "--backend", callback=choice(("local", "dask")), help="local or dask."),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", help="Dask scheduler address (with --backend "
                                            "dask; without it a local Dask cluster of --workers processes)."),
    outdir: Optional[Path] = typer.Option(None, "--outdir", help="Write CSV, Parquet, JSON (with provenance), "
                                          "the plots and report.html into this folder."),
    force: bool = typer.Option(False, "--force", help="Replace the results already in --outdir."),
    json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
    no_progress: bool = typer.Option(False, "--no-progress", help="No progress bar."),
) -> None:
    """Compare policies on SYSTEM: each policy's metric with its CI, paired differences, a ranking with ties.

    Every policy sees the same random streams (the same seed per replication; with --trace the same windows of the log), so differences are paired. An unstable policy is ranked last and shown without a number.
    """
    from ..errors import HetschedError
    from .core import compare

    if scheduler and backend != "dask":
        raise HetschedError(f"--scheduler {scheduler!r} applies only with --backend dask")
    if set_ and system != "coalloc":
        raise HetschedError("--set applies to SYSTEM coalloc only (a scenario's parameters are in its file)")
    if (rho is not None or classes is not None) and trace is None:
        raise HetschedError("--load and --classes apply to a trace replay only (give --trace FILE)")
    from .policyfile import load_policy

    pols: list = [p for p in policy]
    for spec in policy_file:
        pols.append(load_policy(spec))
    if len(pols) < 2:
        raise HetschedError(f"--policy/--policy-file: a comparison needs at least two policies, got {len(pols)}")
    if system == "coalloc":
        if arrivals is not None or case is not None or trace is not None:
            raise HetschedError("--arrivals, --case and --trace do not apply to SYSTEM coalloc")
        sysm = _coalloc(set_)
    else:
        from ..scenarios import load

        sysm = load(system, arrivals=arrivals, case=case)
        if trace is None:
            h = 20_000.0 if horizon is None else horizon
            check_event_budget(estimated_events(float(sum(sysm.alpha_array)), h, reps) * len(pols),
                               f"{len(pols)} policies x --reps {reps} x --horizon {h:g}")
    if outdir is not None:  # checked (and emptied with --force) before the run, as `reproduce` does, so that
        from ..resultsio import prepare_outdir  # a bad folder never costs a finished run

        prepare_outdir(outdir, force=force)
    from .. import provenance

    prov = provenance.start(seed=seed, reps=reps, horizon=horizon, backend=backend, workers=workers)
    options = {"k": k, "tie": tie, "dist": dist, "warmup": warmup}
    res = compare(sysm, pols, reps=reps, horizon=horizon, seed=seed, trace=trace, load=rho,
                  classes="runtime" if classes is None else classes, metrics=metric or None, confidence=confidence,
                  workers=workers, backend=backend, scheduler=scheduler,
                  progress=not (json_out or no_progress), **options)
    text = str(res)
    written = []
    if outdir is not None:
        written = write_outdir(res, outdir, text=text, provenance=prov)
    if json_out:
        d = res.as_dict()
        if outdir is not None:
            d["written"] = [str(p) for p in written]
        emit_json(d)
        return
    typer.echo(text)
    if written:
        typer.echo(f"results: {outdir} ({', '.join(p.name for p in written)})")


def frame_rows(result) -> list[dict]:
    """A result's tidy frame as JSON-ready rows (missing values as None)."""
    df = result.to_frame()
    return df.astype(object).where(df.notna(), None).to_dict("records")


def write_outdir(res, outdir: Path, *, text: str, provenance=None) -> list[Path]:
    """The comparison's files in ``outdir`` (checked before the run by :func:`hetsched.resultsio.prepare_outdir`):
    results (CSV, Parquet, JSON with provenance, through :func:`hetsched.resultsio.write_results`), the plots
    (PNG) and ``report.html``."""
    import io

    import matplotlib.pyplot as plt

    from ..report.html import build_report
    from ..resultsio import output_in, record_written, write_results
    from ..safeio import write_bytes
    from .metrics import METRICS

    outdir = Path(outdir)
    figs = {"compare-means.png": res.plot_means(), "compare-differences.png": res.plot_differences()}
    if any(p.per_class for p in res.policies) and len(res.policies[0].per_class) > 1:
        figs["compare-classes.png"] = res.plot_classes()
    written = []
    for name, fig in figs.items():
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=110)
        plt.close(fig)
        target, ours = output_in(outdir, name)  # replaced only if hetsched wrote it (the folder's manifest)
        written.append(write_bytes(target, buf.getvalue(), force=ours, what="figure"))
    record_written(outdir, written)
    m = METRICS[res.metric]
    doc = {"id": f"compare {res.system}", "kind": "compare", **res.as_dict(), "rows": frame_rows(res),
           "units": {"value": f"{m.unit} ({res.metric}: {m.description}; rank, share: dimensionless)"},
           "figures": list(figs), "notes": [f"paired differences on common random numbers; {res.confidence:g} "
                                             f"intervals"],
           "provenance": None if provenance is None else provenance.finish("complete").as_dict()}
    written = write_results(outdir, doc, table=text) + written
    written.append(build_report(outdir, outdir / "report.html"))
    record_written(outdir, written[-1:])
    return written
