"""``hetsched srn ...`` commands (contract: ``hetsched srn gang --policy LS|LC1|LC2 --arrival-rate L [--json]``)."""

from __future__ import annotations

import typer

from .._cliutil import emit_json, guard

srn_app = typer.Typer(help="Stochastic reward nets: the grid gang-scheduling model (Ro & Cao).",
                      no_args_is_help=True)


@srn_app.command("gang")
@guard
def gang_cmd(
    policy: str = typer.Option("LS", "--policy", help="LS (round robin), LC1 or LC2 (Table 5)."),
    arrival_rate: float = typer.Option(1.0, "--arrival-rate", help="Gang arrival rate lambda."),
    local_rate: float = typer.Option(1.0, "--local-rate", help="Local job arrival rate per site (assumption)."),
    task_rate: float = typer.Option(1.0, "--task-rate", help="Service rate of one task on one server (assumption)."),
    mu: float = typer.Option(1.0, "--mu", help="Dispatch rate mu1 = mu2 per PCONT level (assumption)."),
    migration_guard: str = typer.Option("table", "--migration-guard", help="table (Table 1) or text (Section 3.2)."),
    no_migration: bool = typer.Option(False, "--no-migration", help="Drop GS11/GS21."),
    json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Solve the gang-scheduling SRN: ST, SRT, UoS, GoS (eqs 1-4)."""
    from .gang import GangParams, solve_gang

    p = GangParams(policy=policy, arrival_rate=arrival_rate, local_rate=(local_rate, local_rate),
                   task_rate=task_rate, mu=(mu, mu), migration_guard=migration_guard,
                   migration=not no_migration)
    out = solve_gang(p)
    if json_out:
        emit_json(out)
        return
    st = out["stats"]
    typer.echo(f"policy {out['policy']}, lambda = {out['lambda']:g}: {out['states']} tangible states "
               f"({st['vanishing']} vanishing), solver {st['solver']} (residual {st['residual']:.1e})")
    for k in ("ST", "SRT", "UoS", "GoS"):
        typer.echo(f"  {k:4s} {out[k]:.6f}")
    typer.echo(f"  gang throughput {out['gang_throughput']:.6f}, mean GQ {out['mean_GQ']:.4f}, "
               f"blocking {out['blocking']:.3e}")
    if not out["success"]:
        typer.echo("warning: the steady-state solver did not reach its tolerance", err=True)


def register(app: typer.Typer) -> None:
    app.add_typer(srn_app, name="srn")
