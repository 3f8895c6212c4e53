"""``hetsched simulate``: one scenario, one policy, independent replications.

The command dispatches on the policy through the model registry of
:mod:`hetsched.sim` (mapping policies run the cluster mapping model of thesis
ch. 2; later models add their own policies). Contract: ``../shared/DESIGN.md``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .._cliutil import (MAX_HORIZON, MAX_REPS, MAX_WORKERS, bounded_int, check_event_budget, choice, emit_json,
                        estimated_events, finite_float, guard, positive_float, seed_int)
from .core.seeds import DEFAULT_SEED


def register(app: typer.Typer) -> None:
    app.command("simulate")(simulate_cmd)


@guard
def simulate_cmd(
    scenario: str = typer.Argument(..., help="Scenario id (see `hetsched scenarios`) or a path to a .toml file."),
    policy: str = typer.Option(..., "--policy", help="Policy name, e.g. met, mct, kpb, lpas, lpas-2k, lp-static, "
                               "guided-lpas, guided-lpas-2k."),
    reps: int = typer.Option(30, "--reps", callback=bounded_int(1, MAX_REPS), help="Independent replications."),
    horizon: float = typer.Option(20000.0, "--horizon", callback=positive_float(MAX_HORIZON), help="Simulated time units per replication."),
    seed: int = typer.Option(DEFAULT_SEED, "--seed", callback=seed_int(), help="Seed of the SeedSequence spawned per replication."),
    workers: Optional[int] = typer.Option(None, "--workers", callback=bounded_int(1, MAX_WORKERS), help="Local worker processes (default: all cores)."),
    backend: str = typer.Option("local", "--backend", callback=choice(("local", "dask")), help="local or dask."),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", help="Dask scheduler address (tcp://host:port)."),
    k: Optional[int] = typer.Option(None, "--k", callback=bounded_int(1, 1_000_000), help="KPB: number of machines k-bar considered per class."),
    arrivals: Optional[str] = typer.Option(None, "--arrivals", help="Arrival-rate variant of the scenario."),
    case: Optional[int] = typer.Option(None, "--case", callback=bounded_int(1, 10_000), help="Failure/availability case of the scenario."),
    dist: Optional[str] = typer.Option(None, "--dist", callback=choice(("exp", "det", "hyperexp")), help="Execution times: exp, det or hyperexp (default: the scenario's)."),
    tie: Optional[str] = typer.Option(None, "--tie", callback=choice(("random", "lowest", "highest")), help="Ties between equally good machines: random (default), lowest, highest."),
    warmup: Optional[float] = typer.Option(None, "--warmup", callback=finite_float(0, MAX_HORIZON), help="Delete [0, warmup) from the statistics (default 0)."),
    c: Optional[float] = typer.Option(None, "--c", callback=positive_float(1e6), help="Guided-LPAS constant C_ij (same for all i, j; default 1)."),
    trace: Optional[Path] = typer.Option(None, "--trace", help="Replay an SWF log (.swf or .swf.gz) instead of "
                                         "Poisson arrivals; --reps = consecutive windows of the log."),
    rho: Optional[float] = typer.Option(None, "--load", callback=finite_float(0, 1e6, lo_open=True), help="With --trace: rescale time so that the allocation "
                                         "LP for the log's class mix gives 1/lambda* = RHO (default: the log's own "
                                         "time axis)."),
    classes: Optional[str] = typer.Option(None, "--classes", help="With --trace: class of a job by runtime "
                                          "(default), procs, user, queue or partition."),
    windows: Optional[str] = typer.Option(None, "--windows", help="With --trace: batch (default; one replay of "
                                          "the whole log, batch means over --reps windows) or independent (each "
                                          "window replayed from an empty system)."),
    records: Optional[Path] = typer.Option(None, "--records", help="Write one record per task (task, class, "
                                           "arrival, start, end, machine, attempts, rep; a trace adds job_id, "
                                           "wait, response, bounded_slowdown) to this .parquet or .csv file."),
    json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
    no_progress: bool = typer.Option(False, "--no-progress", help="No progress bar."),
    outdir: Optional[Path] = typer.Option(None, "--outdir", help="Also write the result (CSV, Parquet, JSON with "
                                          "provenance) into this folder, for `hetsched report`."),
    force: bool = typer.Option(False, "--force", help="With --outdir: replace the results already there; with "
                               "--records: replace that file."),
) -> None:
    """Simulate SCENARIO under one policy; print Qbar (or W) with its 95% confidence interval."""
    from ..errors import HetschedError
    from ..scenarios import load
    from . import model_for_policy

    if backend not in ("local", "dask"):
        raise HetschedError(f"--backend: expected 'local' or 'dask', got {backend!r}")
    model_for_policy(policy)  # unknown policy: fail before loading the scenario
    system = load(scenario, arrivals=arrivals, case=case)
    model = model_for_policy(policy, system)
    if trace is None:
        check_event_budget(estimated_events(float(sum(system.alpha_array)), horizon, reps),
                           f"--reps {reps} x --horizon {horizon:g}")
    options = {name: v for name, v in (("k", k), ("dist", dist), ("tie", tie), ("warmup", warmup), ("C", c))
               if v is not None}
    tw = None
    if (rho is not None or classes is not None or windows is not None) and trace is None:
        raise HetschedError("--load, --classes and --windows apply to a trace replay only (give --trace FILE)")
    if windows is not None:
        options["windows"] = windows
    if records is not None:  # checked before the run, so that a bad path never costs a finished run
        from ..traces.records import check_records_path

        check_records_path(records, force=force)
        options["records"] = True
    if trace is not None:
        from ..traces import workload

        tw = workload(trace, system, classes="runtime" if classes is None else classes, load=rho)
        options["trace"] = tw
    prov = None
    if outdir is not None:  # checked before the run (one line), so that a bad folder never costs a finished run
        from .. import provenance
        from ..resultsio import prepare_outdir

        prepare_outdir(outdir, force=force)
        prov = provenance.start(seed=seed, reps=reps, horizon=horizon, backend=backend, workers=workers)
    elif force and records is None:
        raise HetschedError("--force applies with --outdir or --records only")
    entry = model.load_entry()
    res = entry(system, policy.strip().lower(), reps=reps, horizon=horizon, seed=seed, workers=workers,
                backend=backend, scheduler=scheduler, progress=not (json_out or no_progress), options=options)
    # models return the one result type (hetsched.sim.core.result.SimResult); older entries a dict
    out = res if isinstance(res, dict) else res.as_dict()
    for key, val in (("scenario", system.id), ("reps", reps), ("horizon", horizon), ("seed", seed)):
        out.setdefault(key, val)
    if records is not None:
        from ..traces import write_records

        write_records(res.records, records, meta={"model": out.get("model"), "scenario": system.id,
                                                   "policy": out["policy"], "seed": seed, "reps": reps,
                                                   "trace": None if trace is None else str(trace),
                                                   "load": out.get("load"), "machines": system.M,
                                                   **_names(system)}, force=force)
        out["records"] = str(records)
    if outdir is not None and not isinstance(res, dict):
        _write_outdir(res, out, system, outdir, prov)
    if json_out:
        emit_json(out)
        return
    if tw is not None and rho is None:  # the log on its own time axis: the LP's verdict for its class mix
        typer.echo(f"{trace}: {len(tw)} jobs; {tw.verdict}")
    _print(out)


def _names(system) -> dict:
    """The system's class names (where the user gave them) and machine names, for files a report reads."""
    cn = system.class_names
    given = getattr(system, "class_names_given", cn is not None)
    mn = getattr(system, "machine_names", None) or system.machine_labels()
    return {"class_names": list(cn) if cn and given else None, "machine_names": list(mn)}


def _write_outdir(res, out: dict, system, outdir: Path, prov) -> None:
    """``--outdir``: the result as a results folder for ``hetsched report`` (:mod:`hetsched.resultsio`)."""
    from ..resultsio import write_results

    df = res.to_frame()
    doc = {"id": f"simulate {system.id} {out['policy']}", "kind": "simulate", **out, **_names(system),
           "rows": df.astype(object).where(df.notna(), None).to_dict("records"),
           "provenance": prov.finish("complete").as_dict()}
    write_results(outdir, doc, table=repr(res))
    out["outdir"] = str(outdir)


def _fmt(x) -> str:
    return "-" if x is None else f"{x:.4g}"


def _print(out: dict) -> None:
    metric = out.get("metric", "Q")
    name = {"Q": "Qbar (time-average number in system)", "W": "W (mean completion time)"}.get(metric, metric)
    head = f"{out.get('scenario', '')} under {out['policy']}"
    typer.echo(head)
    if out.get("unstable"):
        msg = str(out.get("message", "")).removeprefix("unstable: ")
        typer.echo(f"  UNSTABLE: {msg}")
        if out.get("mean_untrusted") is not None:
            typer.echo(f"  (untrusted {metric} over the run: {_fmt(out['mean_untrusted'])})")
    elif out.get("status") == 3:  # a trace replay whose windows cannot support an interval
        typer.echo(f"  {name}: {_fmt(out['mean'])}  (the replay's own mean; no confidence interval, see below)")
    else:
        lo, hi = out["ci"]
        rel = out.get("rel_half_width", out.get("accuracy"))
        typer.echo(f"  {name}: {_fmt(out['mean'])}  95% CI [{_fmt(lo)}, {_fmt(hi)}]"
                   + (f"  (+-{100 * rel:.2f}%)" if rel is not None else ""))
    for pc in out.get("per_class", []):
        untrusted = {k[: -len("_untrusted")]: v for k, v in pc.items() if k.endswith("_untrusted")}
        if untrusted:
            typer.echo(f"  class {pc['class']}: " + "   ".join(f"{k} ({_fmt(v)}?)" for k, v in untrusted.items()
                                                           if k != "mean"))
            continue
        parts = []
        if pc.get("mean") is not None:  # the metric, with its CI
            parts.append(f"{metric} {_fmt(pc['mean'])}"
                         + (f" [{_fmt(pc['ci'][0])}, {_fmt(pc['ci'][1])}]" if pc.get("ci") else ""))
        for other in ("Q", "W"):
            if other != metric and pc.get(other) is not None:
                parts.append(f"{other} {_fmt(pc[other])}")
        if parts:  # an unstable configuration has no per-class numbers
            typer.echo(f"  class {pc['class']}: " + "   ".join(parts))
    extra = []
    if out.get("contacted") is not None and out.get("contacted_formula") is not None:
        extra.append(f"machines contacted per arrival {out['contacted']:.3f} (formula {out['contacted_formula']:.3f})")
    if out.get("binds"):
        extra.append(f"Guided-LPAS (iii) binds {out['binds']:.1f} times per replication")
    if "messages" in out:
        extra.append(f"messages {out['messages']}")
    for e in extra:
        typer.echo(f"  {e}")
    if out.get("jobs") is not None:  # trace replay
        from ..traces.replay import replay_lines

        typer.echo(f"  trace: {out['jobs']:,} jobs, {out.get('windows', out.get('reps'))} {out.get('windows_rule')} "
                   f"windows, load "
                   f"1/lambda* = {out['load']:.4g} (lambda* = {out['lp_lambda']:.4g}), classes by {out.get('classes')}")
        for line in replay_lines(out):
            typer.echo(f"  {line}")
        typer.echo(f"  {out['events']:,} events in {out['wall_seconds']:.2f} s")
    else:
        typer.echo(f"  {out.get('reps', '?')} replications x {out.get('horizon', '?')} time units, seed "
                   f"{out.get('seed', '?')}: {out['events']:,} events in {out['wall_seconds']:.2f} s")
    if out.get("records"):
        typer.echo(f"  records: {out['records']}")
    if out.get("outdir"):
        typer.echo(f"  results: {out['outdir']} (for `hetsched report`)")
