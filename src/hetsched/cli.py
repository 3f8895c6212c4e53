"""The ``hetsched`` command (the command-line contract is listed in ``docs/architecture.md``).

The core commands (``scenarios``, ``lp``, ``reproduce``) live here; each engine
package adds its own commands through a ``register(app)`` function in its
``cli`` module (``hetsched.sim.cli`` adds ``simulate``, ``hetsched.mdp.cli``
adds ``mdp``, ...), so that engines stay independent of one another.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Optional

import typer
from typer.core import TyperCommand

from ._cliutil import MAX_WORKERS, bounded_int, choice, emit_json, guard, inert, run, seed_int

app = typer.Typer(
    name="hetsched",
    help="Resource management for heterogeneous computing systems: capacity (allocation LP), "
    "policies (fast simulation), optimal control (CTMDP, SRN) and the papers' experiments.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Engine packages that contribute commands; each has a ``cli.register(app)``.
_ENGINE_CLIS = (
    "hetsched.sim.cli",
    "hetsched.mdp.cli",
    "hetsched.srn.cli",
    "hetsched.muscle.cli",
    "hetsched.dispatch.cli",
    "hetsched.plot.cli",
    "hetsched.traces.cli",
    "hetsched.compare.cli",
    "hetsched.optimal.cli",
)


@app.command("scenarios")
@guard
def scenarios_cmd(json_out: bool = typer.Option(False, "--json", help="Machine-readable output.")) -> None:
    """List the shipped scenarios (id, size, source)."""
    from .scenarios import list_scenarios

    infos = list_scenarios()
    if json_out:
        emit_json([i.as_dict() for i in infos])
        return
    from rich.table import Table

    from .report.tables import make_console

    t = Table(title="Shipped scenarios", show_lines=False)
    for col in ("id", "N", "M", "groups", "variants", "source"):
        t.add_column(col, overflow="fold")
    for i in infos:
        t.add_row(*(inert(v, markup=True, newlines=False) for v in (i.id, str(i.n_classes), str(i.n_machines),
                                                                     str(i.n_groups), i.variants, i.source)))
    make_console().print(t)


@app.command("lp")
@guard
def lp_cmd(
    scenario: str = typer.Argument(..., help="Scenario id (see `hetsched scenarios`), a path to a .toml file, or 'all'."),
    solution: str = typer.Option("vertex", "--solution", callback=choice(("vertex", "central")),
                                 help="vertex (simplex basic solution) or central (interior point, no crossover)."),
    ungrouped: bool = typer.Option(False, "--ungrouped", help="Solve per machine even where the system has groups of identical machines."),
    arrivals: Optional[str] = typer.Option(None, "--arrivals", help="Arrival-rate variant (e.g. alpha2)."),
    case: Optional[int] = typer.Option(None, "--case", callback=bounded_int(1, 10_000),
                                       help="Failure/availability case number."),
    json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Solve the allocation LP: capacity lambda*, allocation delta*, and what follows from it."""
    from .lp import allocation_lp
    from .scenarios import load

    if scenario == "all":
        from .report.tables import lp_overview_rows, print_lp_overview

        rows = lp_overview_rows()
        emit_json(rows) if json_out else print_lp_overview(rows)
        return
    system = load(scenario, arrivals=arrivals, case=case)
    res = allocation_lp(system, solution=solution, grouped=not ungrouped).raise_for_status()
    if json_out:
        typer.echo(res.to_json())  # large lists on one line each, by the C encoder
    else:
        from .report.tables import print_lp

        print_lp(system, res)


class _ReproduceCommand(TyperCommand):
    """``reproduce --help`` ends with the experiment ids (the registry is read only when help is shown)."""

    def format_help(self, ctx, formatter) -> None:  # noqa: ANN001 - click's signature
        from . import experiments

        self.epilog = "Experiment ids: " + ", ".join(experiments.registry()) + "."
        super().format_help(ctx, formatter)


@app.command("reproduce", cls=_ReproduceCommand)
@guard
def reproduce_cmd(
    exp_id: Optional[str] = typer.Argument(None, help="Experiment id (see --list)."),
    list_: bool = typer.Option(False, "--list", help="List the experiment ids."),
    quick: bool = typer.Option(False, "--quick", help="Fewer replications / shorter horizon, same shape."),
    json_out: bool = typer.Option(False, "--json", help="Print {id, rows} as JSON instead of the table."),
    seed: int = typer.Option(2009, "--seed", callback=seed_int(), help="Seed of the experiment's SeedSequence."),
    workers: Optional[int] = typer.Option(None, "--workers", callback=bounded_int(1, MAX_WORKERS),
                                          help="Worker processes (default: all cores)."),
    backend: str = typer.Option("local", "--backend", callback=choice(("local", "dask")), help="local or dask."),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", help="Dask scheduler address (with --backend dask)."),
    outdir: Path = typer.Option(Path("results"), "--outdir", help="Results go to OUTDIR/ID/."),
    set_: list[str] = typer.Option([], "--set", help="Experiment parameter KEY=VALUE (e.g. reps=10, horizon=5000); "
                                   "repeatable; values are read as JSON where they parse, else as text; "
                                   "an unknown key is refused with the list of valid keys."),
    force: bool = typer.Option(False, "--force", help="Replace the results already in OUTDIR/ID/ (refused otherwise)."),
) -> None:
    """Run one paper experiment; print it in the paper's layout; write results and plots.

    Results go to OUTDIR/ID/ (CSV, Parquet, JSON with provenance and units, the
    table, plots). An existing results folder is never replaced without
    --force; Ctrl-C writes the rows finished so far, marked interrupted, and
    exits with 130.
    """
    from . import experiments

    if list_ or exp_id is None:
        reg = experiments.registry()
        if json_out:
            emit_json([{"id": e.id, "title": e.title, "source": e.source} for e in reg.values()])
        else:
            for e in reg.values():
                typer.echo(f"{e.id:24s} {e.title}  [{e.source}]")
        return
    exp = experiments.get(exp_id)
    extra = experiments.parse_sets(exp, set_)
    experiments.check_backend(exp, backend, scheduler)  # before anything is written or removed
    out = experiments.prepare_outdir(outdir / exp.id, force=force)
    from . import provenance

    prov = provenance.start(seed=seed, quick=quick, reps=extra.get("reps"), horizon=extra.get("horizon"),
                            backend=backend, workers=workers, set=extra or None)
    tracker = experiments.Tracker(enabled=not json_out, label=exp.id)
    opts = experiments.RunOptions(
        quick=quick, seed=seed, workers=workers, backend=backend, scheduler=scheduler,
        outdir=out, progress=not json_out, extra=extra, tracker=tracker,
    )
    try:
        result = experiments.run_experiment(exp, opts)
    except KeyboardInterrupt:
        tracker.close()
        result = experiments.ExperimentResult(
            id=exp.id, rows=tracker.rows, status=experiments.core.INTERRUPTED,
            table=f"{exp.title}: interrupted after {len(tracker.rows)} finished rows",
            notes=["interrupted (Ctrl-C): only the rows finished before the interrupt are here"],
            seconds=prov.elapsed())
        result.provenance = prov.finish("interrupted").as_dict()
        result.write(out)
        typer.echo(f"interrupted: {len(tracker.rows)} finished rows written to {out}", err=True)
        raise typer.Exit(130)
    finally:
        tracker.close()
    for key in ("reps", "horizon"):
        if getattr(prov, key) is None and isinstance(result.meta.get(key), (int, float)):
            setattr(prov, key, result.meta[key])
    result.provenance = prov.finish("interrupted" if result.status == experiments.core.INTERRUPTED
                                    else "complete").as_dict()
    written = result.write(out)
    if json_out:
        emit_json(result.as_dict())
    else:
        typer.echo(result.table)
        for n in result.notes:
            typer.echo(f"note: {n}")
        typer.echo(f"results: {', '.join(str(p) for p in written + list(result.figures))}")


@app.command("report")
@guard
def report_cmd(
    results_dir: Optional[list[Path]] = typer.Argument(None, help="Results folders (default: results): a folder of "
                                                       "`hetsched reproduce` results, or the --outdir of "
                                                       "`hetsched compare` / `hetsched simulate`; several allowed."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", help="HTML file to write (default report.html in the first folder)."),
    force: bool = typer.Option(False, "--force", help="Replace OUTPUT even if hetsched did not write it."),
) -> None:
    """Write one self-contained HTML report of any results: experiments, comparisons, simulations."""
    from .report.html import build_report

    skipped: list = []
    path = build_report(results_dir or [Path("results")], output, force=force, skipped=skipped)
    for s in skipped:
        typer.echo(f"skipped {s}", err=True)
    typer.echo(f"report: {path}")


@app.command("warmup")
@guard
def warmup_cmd(
    list_: bool = typer.Option(False, "--list", help="List the models whose kernels would be compiled, and the cache folder; compile nothing."),
    clear: bool = typer.Option(False, "--clear", help="Delete the cached kernels first (then compile them again)."),
) -> None:
    """Compile every built-in simulation kernel into the on-disk cache, so that first runs start at once.

    The cache is $HETSCHED_CACHE_DIR, else $XDG_CACHE_HOME/hetsched, else
    ~/.cache/hetsched; a user-written policy is added to it the first time it
    runs. An unusable cache is reported in one warning; runs then compile in memory.
    """
    import time

    from .sim import MODELS, warm_up_all
    from .sim.core.kernels import cache_dir, clear_cache

    where = cache_dir()
    typer.echo(f"kernel cache: {where if where is not None else '(none: no home directory)'}")
    if list_:
        for m in MODELS.values():
            if m.warm:
                typer.echo(f"  {m.name}: {', '.join(m.policies)}")
        return
    if clear:
        typer.echo(f"removed {clear_cache()} cached files")
    t0, c0 = time.perf_counter(), time.process_time()
    done = warm_up_all(progress=lambda text: typer.echo(f"  {text}"))
    typer.echo(f"warm: {', '.join(done)} in {time.perf_counter() - t0:.1f} s ({time.process_time() - c0:.1f} CPU-s)")


def _register_engines() -> None:
    for modname in _ENGINE_CLIS:
        importlib.import_module(modname).register(app)


_register_engines()


def main(argv: Optional[list[str]] = None) -> None:
    """Entry point: bad input of any kind is one line on stderr and exit code 2."""
    import sys

    sys.exit(run(app, argv))


if __name__ == "__main__":
    main()
