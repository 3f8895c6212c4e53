"""``hetsched optimal SYSTEM``: the exact optimal routing of a small mapping system."""

from __future__ import annotations

from typing import Optional

import typer

from .._cliutil import bounded_int, emit_json, finite_float, guard


def register(app: typer.Typer) -> None:
    app.command("optimal")(optimal_cmd)


@guard
def optimal_cmd(
    system: str = typer.Argument(..., help="Scenario id (see `hetsched scenarios`) or a .toml file."),
    load: Optional[float] = typer.Option(None, "--load", callback=finite_float(0, 10, lo_open=True),
                                         help="Rescale the arrival rates so that 1/lambda* = LOAD."),
    buffer: Optional[int] = typer.Option(None, "--buffer", callback=bounded_int(1, 10_000),
                                         help="Tasks per machine in the truncated model (default: grown until the "
                                         "truncation is negligible)."),
    tol: float = typer.Option(1e-3, "--tol", callback=finite_float(0, 1, lo_open=True, hi_open=True),
                              help="Largest boundary mass and estimated truncation error accepted."),
    max_states: int = typer.Option(300_000, "--max-states", callback=bounded_int(1, 50_000_000),
                                   help="Largest model built; larger ones are refused with their size."),
    penalty: float = typer.Option(0.0, "--penalty", callback=finite_float(0, 1e9),
                                  help="Cost of one blocked arrival in the truncated model."),
    arrivals: Optional[str] = typer.Option(None, "--arrivals", help="Arrival-rate variant of the scenario."),
    case: Optional[int] = typer.Option(None, "--case", callback=bounded_int(1, 10_000), help="Scenario case."),
    size_only: bool = typer.Option(False, "--size", help="Print the size of the model and stop (nothing built)."),
    json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """The optimal routing of SYSTEM (least long-run mean number in system), exactly, by a CTMDP.

    Poisson arrivals per class, a FCFS queue per machine, exponential execution times; the state is the class sequence at each machine (queue lengths where rates depend on the machine only), truncated at --buffer tasks per machine with the truncation measured. Exit 0 when the answer is trusted, 1 otherwise (unstable, truncation not negligible, not converged).
    """
    from ..scenarios import load as load_scenario
    from .model import count_text
    from .solve import optimal_routing, routing_size

    sysm = load_scenario(system, arrivals=arrivals, case=case)
    if size_only:
        size = routing_size(sysm, buffer, load=load, tol=tol)
        if json_out:
            emit_json(size)
        else:
            typer.echo(f"{sysm.id}: buffer {size['buffer']}: {count_text(size['states'])} states, at most "
                       f"{count_text(size['pairs'])} state-action pairs (load {size['load']:.4g}; alphabets "
                       f"{size['alphabets']})")
        return
    res = optimal_routing(sysm, buffer=buffer, load=load, tol=tol, max_states=max_states, penalty=penalty)
    if json_out:
        emit_json(res.as_dict())
    else:
        typer.echo(str(res))
    if not res.success:
        raise typer.Exit(1)
