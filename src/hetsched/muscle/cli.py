"""``hetsched muscle run``: one multicluster run (generated workload or an SWF log)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .._cliutil import MAX_HORIZON, bounded_int, emit_json, finite_float, guard, positive_float, seed_int

muscle_app = typer.Typer(help="MUSCLE multicluster scheduling of moldable jobs (seed 002).", no_args_is_help=True)


#: at most this many clusters and processors per cluster: a round builds a composition table with one row per
#: processor count up to the largest cluster, so the time grows with it (4,000 jobs on sizes 10000,16,12,10:
#: 166 s and 0.6 GB, `/usr/bin/time hetsched muscle run --sizes 10000,16,12,10`, against 6.7 s on Table 1's;
#: 100,000 did not finish 200 jobs in 60 s)
MAX_CLUSTERS = 1_000
MAX_CLUSTER_SIZE = 10_000
MAX_RATE = 1e6


def _parse_list(text: str, name: str, kind: str) -> tuple:
    """``--sizes`` (integers in [1, MAX_CLUSTER_SIZE]) or ``--rates`` (finite, > 0): every item checked, named
    ``--sizes[j]``; empty items are refused (a stray comma is more likely a typo than a wish)."""
    from ..errors import ModelError
    from ..validation import check_float, check_int

    items = str(text).split(",")
    if len(items) > MAX_CLUSTERS:
        raise ModelError(f"{name}: at most {MAX_CLUSTERS:,} clusters, got {len(items):,} values")
    out = []
    for j, v in enumerate(items):
        if not v.strip():
            raise ModelError(f"{name}: value {j + 1} of {text[:200]!r} is empty; expected comma-separated "
                             f"{'integers' if kind == 'int' else 'numbers'}, e.g. "
                             f"{'20,16,12,10' if kind == 'int' else '1.0,1.2,1.4,1.6'}")
        if kind == "int":
            out.append(check_int(v, f"{name}[{j}]", 1, MAX_CLUSTER_SIZE))
        else:
            out.append(check_float(v, f"{name}[{j}]", 0.0, MAX_RATE, lo_open=True))
    return tuple(out)


def _system(sizes: str, rates: str):
    """The multicluster of ``--sizes`` and ``--rates``; a length mismatch names both options and lengths."""
    from ..errors import ModelError
    from . import MultiCluster

    sz, rt = _parse_list(sizes, "--sizes", "int"), _parse_list(rates, "--rates", "float")
    if len(sz) != len(rt):
        raise ModelError(f"--sizes/--rates: --sizes gives {len(sz)} cluster(s) but --rates {len(rt)} rate(s); "
                         "give one service rate per cluster")
    return MultiCluster(sz, rt)


#: measured by `hetsched muscle run --jobs 100000 [--no-ga] --json` (jobs_per_second ~2,000 with the GA, 46 s and
#: 227 MB peak; ~4,500 without it), on a shared 2-core machine
JOBS_PER_SECOND = 2_000
JOBS_PER_SECOND_NO_GA = 4_500
BYTES_PER_JOB = 200
ESTIMATE_FROM_JOBS = 200_000  # runs longer than ~100 s announce their estimate before starting


def _estimate(n_jobs: int, no_ga: bool) -> None:
    """A long run announces its time and memory estimate up front (stderr), before any scheduling."""
    if n_jobs < ESTIMATE_FROM_JOBS:
        return
    rate = JOBS_PER_SECOND_NO_GA if no_ga else JOBS_PER_SECOND
    mb = 200 + n_jobs * BYTES_PER_JOB / 1e6
    typer.echo(f"estimate: {n_jobs:,} jobs take about {n_jobs / rate / 60:.0f} min and {mb:,.0f} MB "
               f"(~{rate:,} jobs/s measured); Ctrl-C stops it", err=True)


MAX_GENERATED_JOBS = 5_000_000  # ~1 GB of schedule state; more is refused before allocating; also caps --level
MAX_LOAD = 100.0  # offered utilisation of a generated workload: 100 x the capacity is overload enough


@muscle_app.command("run")
@guard
def run_cmd(
    policy: str = typer.Option("muscle", "--policy", help="wrand, dll or muscle."),
    jobs: Optional[int] = typer.Option(None, "--jobs", help="Number of jobs (generated; default 4000) or max jobs "
                                       "read from the log (default: all)."),
    level: int = typer.Option(0, "--level", callback=bounded_int(0, MAX_GENERATED_JOBS),
                              help="Jobs per round (batch trigger; required) or cap per round (backlog; 0 = none)."),
    load: float = typer.Option(0.8, "--load", callback=positive_float(MAX_LOAD),
                               help="Offered utilisation of the generated workload, in (0, 100]."),
    sizes: str = typer.Option("20,16,12,10", "--sizes", help="Cluster sizes (Table 1 by default)."),
    rates: str = typer.Option("1.0,1.2,1.4,1.6", "--rates", help="Service rates per cluster."),
    max_s: int = typer.Option(10, "--max-s", callback=bounded_int(1, MAX_CLUSTER_SIZE),
                              help="MAX_S of the generated workload."),
    phi: float = typer.Option(0.05, "--phi", callback=positive_float(1e3), help="Scalability factor of Eq. 3."),
    swf: Optional[Path] = typer.Option(None, "--swf", help="Read jobs from an SWF log (.swf or .swf.gz)."),
    skip_malformed: bool = typer.Option(False, "--skip-malformed", help="Skip (and count) malformed SWF lines "
                                        "instead of stopping at the first."),
    no_ga: bool = typer.Option(False, "--no-ga", help="Keep the seed schedules (no TITAN GA)."),
    trigger: str = typer.Option("backlog", "--trigger", help="backlog (Algorithm 2 step 1) or batch (a round every LEVEL jobs)."),
    tau: Optional[float] = typer.Option(None, "--tau", callback=finite_float(0.0, MAX_HORIZON),
                                        help="Backlog threshold (default: mean execution time)."),
    seed: int = typer.Option(0, "--seed", callback=seed_int(), help="Seed (workload and scheduler streams), "
                             "0..2^63-1."),
    records: Optional[Path] = typer.Option(None, "--records", help="Write per-job records (job, cluster, processors, "
                                           "start, end, deadline met, wait, response, bounded slowdown) to this "
                                           ".parquet or .csv file."),
    force: bool = typer.Option(False, "--force", help="With --records: replace that file if it exists."),
    json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Simulate one policy on a multicluster and print MCP, LBF and per-cluster metrics.

    The schedule is then checked (every job once, none before its arrival, Eq. 3
    run times, no cluster over-subscribed); a violation is reported as the run's
    status (exit code 1), after the results and records are written.
    """
    import numpy as np

    from ..errors import ModelError
    from . import GAOptions, MultiCluster, WorkloadParams, generate_workload, simulate
    from .swf import workload_from_swf

    if seed < 0:
        raise ModelError(f"--seed: expected an integer >= 0, got {seed}")
    if jobs is not None and jobs < 1:
        raise ModelError(f"--jobs: expected an integer >= 1, got {jobs}")
    if swf is None and jobs is not None and jobs > MAX_GENERATED_JOBS:
        raise ModelError(f"--jobs: at most {MAX_GENERATED_JOBS:,} generated jobs, got {jobs:,}")
    if records is not None:  # checked before the run, so that a bad path never costs a finished run
        from ..traces.records import check_records_path

        check_records_path(records, force=force)
    elif force:
        raise ModelError("--force applies with --records only")
    system = _system(sizes, rates)
    wseed, sseed = np.random.SeedSequence(seed).spawn(2)
    if swf is not None:
        wl = workload_from_swf(swf, system, max_jobs=jobs, seed=int(wseed.generate_state(1)[0]),
                               on_error="skip" if skip_malformed else "raise")
        offered = wl.meta["offered_load"]
        if not json_out:
            from ..traces.workload import drop_text

            typer.echo(f"log {swf}: {len(wl)} of {wl.meta['jobs_read']:,} jobs read ({drop_text(wl.meta['dropped'])}"
                       + (f"; {wl.meta['malformed']} malformed lines skipped" if wl.meta["malformed"] else "")
                       + f"), offered load {offered:.3f} of the clusters' capacity")
        if offered > 1.0:
            typer.echo(f"warning: the log offers load {offered:.2f} to clusters {list(system.sizes)} "
                       f"(capacity {system.capacity:.1f} average-rate computers): more work arrives than they "
                       "can do, so the queue grows through the run and most deadlines are missed", err=True)
        if wl.meta["clipped"]:
            typer.echo(f"note: {wl.meta['clipped']} job(s) ask for more processors than the largest cluster "
                       f"({system.m_max}); they run clipped to {system.m_max}", err=True)
    else:
        if max_s > system.m_max:  # named by the option here (the workload layer names its field max_s)
            raise ModelError(f"--max-s: {max_s} exceeds the largest cluster of --sizes ({system.m_max} computers)")
        wl = generate_workload(WorkloadParams(n_jobs=jobs or 4000, max_s=max_s, load=load), system, seed=wseed)
        offered = load
    _estimate(len(wl), no_ga)
    from ..progress import Progress

    with Progress("scheduling", len(wl), unit="jobs", enabled=len(wl) >= 2000) as bar:
        res = simulate(wl, system, policy, level=level if level > 0 else None, phi=phi,
                       ga=None if no_ga else GAOptions(), trigger=trigger, tau=tau, seed=sseed,
                       progress=bar.callback())
    violations = res.violations
    written = None
    if records is not None:
        from ..traces import write_records

        written = write_records(res.records(wl), records,
                                meta={"kind": "muscle", "policy": res.policy, "sizes": list(system.sizes),
                                      "rates": list(system.rates), "source": wl.source, "seed": seed},
                                force=force)
    out = res.summary()
    late = int(np.sum(res.late(wl)))
    out.update({"jobs_total": len(wl), "source": wl.source, "sizes": list(system.sizes),
                "rates": list(system.rates), "late_jobs": late,
                "jobs_per_second": len(wl) / res.wall_seconds if res.wall_seconds > 0 else None,
                "offered_load": offered, "clipped": int(wl.meta.get("clipped", 0)),
                "skipped": int(wl.meta.get("skipped", 0)), "malformed": int(wl.meta.get("malformed", 0)),
                "dropped": dict(wl.meta.get("dropped", {})), "jobs_read": wl.meta.get("jobs_read"),
                "records": str(written) if written else None,
                "status": res.status, "success": res.success, "message": res.message, "seconds": res.seconds,
                "violations": violations})
    if json_out:
        emit_json(out)
    else:
        typer.echo(f"policy {res.policy}: {len(wl)} jobs from {wl.source}, {res.rounds} rounds "
                   f"(mean {out['mean_batch']:.1f} jobs per round, time-average queue {out['mean_queue']:.1f}), "
                   f"GA runs {res.ga_runs} ({res.ga_not_converged} stopped at max_gen)")
        if res.status == 1:  # overloaded: the numbers are shown, marked, never as estimates
            head = f"MCP {res.MCP_untrusted:.1f}?   LBF {res.LBF_untrusted:.1f}?   (overloaded: untrusted)"
        else:
            head = f"MCP {res.MCP:.1f}   LBF {res.LBF:.1f}"
        typer.echo(f"{head}   late jobs {out['late_jobs']}   {out['jobs_per_second']:.0f} jobs/s")
        h = res.hpc
        if h:
            mark = "" if res.status == 0 else "?"
            typer.echo(f"wait {h['mean_wait']:.4g}{mark}   response {h['mean_response']:.4g}{mark}   bounded slowdown "
                       f"(tau = {h['tau']:g}) {h['mean_bsld']:.4g}{mark}   utilisation per cluster "
                       + " ".join(f"{u:.2f}{mark}" for u in h["utilisation"]))
        typer.echo(f"{'cluster':>7s} {'m':>4s} {'rate':>5s} {'jobs':>6s} {'makespan':>10s} {'idle':>12s} "
                   f"{'over-deadline':>14s} {'CP':>12s}")
        m = res.metrics
        for j in range(system.n):
            typer.echo(f"{j + 1:7d} {system.sizes[j]:4d} {system.rates[j]:5.2f} {m['jobs'][j]:6d} "
                       f"{m['makespan'][j]:10.1f} {m['idle'][j]:12.1f} {m['over_deadline'][j]:14.1f} {m['CP'][j]:12.1f}")
        if written:
            typer.echo(f"records: {written}")
        if violations:
            for v in violations:
                typer.echo(f"VIOLATION: {v}", err=True)
    if violations:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.add_typer(muscle_app, name="muscle")
