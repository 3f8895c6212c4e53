"""``hetsched muscle run``: one multicluster run (generated workload or an SWF log)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .._cliutil import emit_json, guard

muscle_app = typer.Typer(help="MUSCLE multicluster scheduling of moldable jobs (seed 002).", no_args_is_help=True)


def _parse_tuple(text: str, cast, name: str):
    from ..errors import ModelError

    try:
        return tuple(cast(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise ModelError(f"{name}: expected comma-separated numbers, got {text!r}") from None


@muscle_app.command("run")
@guard
def run_cmd(
    policy: str = typer.Option("muscle", "--policy", help="wrand, dll or muscle."),
    jobs: int = typer.Option(4000, "--jobs", help="Number of jobs (generated) or max jobs read (SWF)."),
    level: int = typer.Option(0, "--level", help="Jobs per round (batch trigger; required) or cap per round (backlog; 0 = none)."),
    load: float = typer.Option(0.8, "--load", help="Offered utilisation of the generated workload."),
    sizes: str = typer.Option("20,16,12,10", "--sizes", help="Cluster sizes (Table 1 by default)."),
    rates: str = typer.Option("1.0,1.2,1.4,1.6", "--rates", help="Service rates per cluster."),
    max_s: int = typer.Option(10, "--max-s", help="MAX_S of the generated workload."),
    phi: float = typer.Option(0.05, "--phi", help="Scalability factor of Eq. 3."),
    swf: Optional[Path] = typer.Option(None, "--swf", help="Read jobs from an SWF log (.swf or .swf.gz)."),
    no_ga: bool = typer.Option(False, "--no-ga", help="Keep the seed schedules (no TITAN GA)."),
    trigger: str = typer.Option("backlog", "--trigger", help="backlog (Algorithm 2 step 1) or batch (a round every LEVEL jobs)."),
    tau: Optional[float] = typer.Option(None, "--tau", help="Backlog threshold (default: mean execution time)."),
    seed: int = typer.Option(0, "--seed", help="Seed (workload and scheduler streams)."),
    json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Simulate one policy on a multicluster and print MCP, LBF and per-cluster metrics."""
    import numpy as np

    from . import GAOptions, MultiCluster, WorkloadParams, check_schedule, generate_workload, simulate
    from .swf import workload_from_swf

    system = MultiCluster(_parse_tuple(sizes, int, "--sizes"), _parse_tuple(rates, float, "--rates"))
    wseed, sseed = np.random.SeedSequence(seed).spawn(2)
    if swf is not None:
        wl = workload_from_swf(swf, system, max_jobs=jobs, seed=int(wseed.generate_state(1)[0]))
    else:
        wl = generate_workload(WorkloadParams(n_jobs=jobs, max_s=max_s, load=load), system, seed=wseed)
    res = simulate(wl, system, policy, level=level if level > 0 else None, phi=phi, ga=None if no_ga else GAOptions(),
                   trigger=trigger, tau=tau, seed=sseed)
    check_schedule(res, wl, system, phi)
    out = res.summary()
    out.update({"jobs_total": len(wl), "source": wl.source, "sizes": list(system.sizes),
                "rates": list(system.rates), "late_jobs": int(np.sum(res.finish > wl.deadline + 1e-9)),
                "jobs_per_second": len(wl) / res.wall_seconds if res.wall_seconds > 0 else None})
    if json_out:
        emit_json(out)
        return
    typer.echo(f"policy {res.policy}: {len(wl)} jobs from {wl.source}, {res.rounds} rounds "
               f"(mean {out['mean_batch']:.1f} jobs per round, time-average queue {out['mean_queue']:.1f}), GA runs {res.ga_runs} "
               f"({res.ga_not_converged} stopped at max_gen)")
    typer.echo(f"MCP {res.MCP:.1f}   LBF {res.LBF:.1f}   late jobs {out['late_jobs']}   "
               f"{out['jobs_per_second']:.0f} jobs/s")
    typer.echo(f"{'cluster':>7s} {'m':>4s} {'rate':>5s} {'jobs':>6s} {'makespan':>10s} {'idle':>12s} "
               f"{'over-deadline':>14s} {'CP':>12s}")
    m = res.metrics
    for j in range(system.n):
        typer.echo(f"{j + 1:7d} {system.sizes[j]:4d} {system.rates[j]:5.2f} {m['jobs'][j]:6d} "
                   f"{m['makespan'][j]:10.1f} {m['idle'][j]:12.1f} {m['over_deadline'][j]:14.1f} {m['CP'][j]:12.1f}")


def register(app: typer.Typer) -> None:
    app.add_typer(muscle_app, name="muscle")
