"""``hetsched srn ...`` commands.

Contract: ``hetsched srn gang --policy LS|LC1|LC2 --arrival-rate L [--json]`` and
``hetsched srn export gang [gang options] --format pnml|prism-explicit|drn -o PATH``.

Every numeric option is checked before anything is built (NaN, inf, zero or
negative where meaningless, and sizes whose state space could not be explored
on this machine): one line naming the option and value, exit 2.
"""

from __future__ import annotations

import math
from pathlib import Path

import typer

from .._cliutil import emit_json, guard
from ..errors import ModelError

srn_app = typer.Typer(help="Stochastic reward nets: the grid gang-scheduling model (Ro & Cao).",
                      no_args_is_help=True)
export_app = typer.Typer(help="Write a net or its CTMC in a format other tools load (Storm, GreatSPN, PRISM).",
                         no_args_is_help=True)

#: refuse up front when the product bound on the markings exceeds this (the paper's model: 2.4e6;
#: about a tenth of the bound is reachable, and explore() stops at 5e6 markings)
MAX_MARKING_BOUND = 5e7

FORMATS = ("pnml", "pnpro", "prism-explicit", "drn")


#: rates outside this range make the generator's entries differ by more than double precision resolves
RATE_RANGE = (1e-6, 1e6)


def _real(option: str, v: float, *, zero_ok: bool = False) -> float:
    if v is None or not math.isfinite(v) or v < 0 or (v == 0 and not zero_ok):
        raise ModelError(f"{option}: must be a finite number {'>= 0' if zero_ok else '> 0'}, got {v!r}")
    lo, hi = RATE_RANGE
    if v != 0 and not lo <= v <= hi:
        raise ModelError(f"{option}: must lie in [{lo:g}, {hi:g}] (rates further apart than that cannot be "
                         f"solved in double precision), got {v!r}")
    return float(v)


def _int(option: str, v: int, lo: int, hi: int | None = None) -> int:
    if v < lo or (hi is not None and v > hi):
        rng = f">= {lo}" if hi is None else f"in {lo}..{hi}"
        raise ModelError(f"{option}: must be an integer {rng}, got {v!r}")
    return int(v)


def gang_params_from_options(policy, arrival_rate, local_rate, task_rate, mu, migration_guard, no_migration,
                             servers, gang_size, capacity, local_capacity, lc2_rule, load_includes_waiting,
                             arrival_scales_with_pcont, migration_ignores_policy):
    """Validated :class:`~hetsched.srn.gang.GangParams` from the command-line options."""
    from .gang import LC2_RULES, MIGRATION_GUARDS, POLICIES, GangParams

    pol = str(policy).upper().replace("-", "")
    if pol not in POLICIES:
        raise ModelError(f"--policy: expected one of {', '.join(POLICIES)}, got {policy!r}")
    if migration_guard not in MIGRATION_GUARDS:
        raise ModelError(f"--migration-guard: expected one of {', '.join(MIGRATION_GUARDS)}, got {migration_guard!r}")
    if lc2_rule not in LC2_RULES:
        raise ModelError(f"--lc2-rule: expected one of {', '.join(LC2_RULES)}, got {lc2_rule!r}")
    arrival_rate = _real("--arrival-rate", arrival_rate)
    local_rate = _real("--local-rate", local_rate, zero_ok=True)
    task_rate = _real("--task-rate", task_rate)
    mu = _real("--mu", mu)
    servers = _int("--servers", servers, 1, 1000)
    gang_size = _int("--gang-size", gang_size, 1, servers)
    capacity = _int("--capacity", capacity, 1, 10**6)
    local_capacity = _int("--local-capacity", local_capacity, 0, 10**6)
    # reachable markings <= (C+1) K (n+1)^2 (q+1)^2 (x2 for LS's round-robin token): refuse what cannot fit
    K = 7
    bound = (capacity + 1) * K * (servers + 1) ** 2 * (local_capacity + 1) ** 2 * (2 if pol == "LS" else 1)
    if bound > MAX_MARKING_BOUND:
        raise ModelError(f"--servers {servers} --capacity {capacity} --local-capacity {local_capacity}: up to "
                         f"{bound:.3g} markings (bound (C+1) K (n+1)^2 (q+1)^2), more than this command explores "
                         f"({MAX_MARKING_BOUND:.0e}); the paper's model has 2.4e6 by this bound, 274,020 reachable")
    return GangParams(policy=pol, arrival_rate=arrival_rate, local_rate=(local_rate, local_rate),
                      task_rate=task_rate, mu=(mu, mu), migration_guard=migration_guard,
                      migration=not no_migration, servers=(servers, servers), gang_size=gang_size,
                      capacity=capacity, local_capacity=(local_capacity, local_capacity), lc2_rule=lc2_rule,
                      load_includes_waiting=load_includes_waiting,
                      arrival_scales_with_pcont=arrival_scales_with_pcont,
                      migration_follows_policy=not migration_ignores_policy)


# One set of model options for `srn gang` and `srn export gang` (typer reads them from the signature).
_POLICY = typer.Option("LS", "--policy", help="LS (round robin), LC1 or LC2 (Table 5).")
_ARRIVAL = typer.Option(1.0, "--arrival-rate", help="Gang arrival rate lambda.")
_LOCAL = typer.Option(1.0, "--local-rate", help="Local job arrival rate per site (assumption).")
_TASK = typer.Option(1.0, "--task-rate", help="Service rate of one task on one server (assumption).")
_MU = typer.Option(1.0, "--mu", help="Dispatch rate mu1 = mu2 per PCONT level (assumption).")
_MGUARD = typer.Option("table", "--migration-guard", help="table (Table 1) or text (Section 3.2).")
_NOMIG = typer.Option(False, "--no-migration", help="Drop GS11/GS21.")
_SERVERS = typer.Option(16, "--servers", help="Servers per site n1 = n2 (paper: 16).")
_GANG = typer.Option(5, "--gang-size", help="Tasks per gang np (paper: 5).")
_CAP = typer.Option(64, "--capacity", help="Capacity C of the gang queue GQ (paper: 64).")
_LCAP = typer.Option(2, "--local-capacity", help="Local queue capacity q1 = q2 (paper: 2).")
_LC2 = typer.Option("table", "--lc2-rule",
                    help="LC-2 guard of GS2: table (th1 < TL <= th2, Table 5) or text (TL > th1, Section 4.3).")
_WAITING = typer.Option(False, "--load-includes-waiting", help="LC-1/LC-2 load counts #pl_i too (#LQ_i + #pl_i).")
_PCONT = typer.Option(False, "--arrival-scales-with-pcont", help="Table 4 literally: T fires at lambda*#PCONT.")
_MIGPOL = typer.Option(False, "--migration-ignores-policy",
                       help="GS11/GS21 need only the migration guard, not the policy guard of their site.")


@srn_app.command("gang")
@guard
def gang_cmd(
    policy: str = _POLICY, arrival_rate: float = _ARRIVAL, local_rate: float = _LOCAL, task_rate: float = _TASK,
    mu: float = _MU, migration_guard: str = _MGUARD, no_migration: bool = _NOMIG, servers: int = _SERVERS,
    gang_size: int = _GANG, capacity: int = _CAP, local_capacity: int = _LCAP, lc2_rule: str = _LC2,
    load_includes_waiting: bool = _WAITING, arrival_scales_with_pcont: bool = _PCONT,
    migration_ignores_policy: bool = _MIGPOL,
    json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Solve the gang-scheduling SRN: ST, SRT, UoS, GoS (eqs 1-4)."""
    from .gang import solve_gang

    p = gang_params_from_options(policy, arrival_rate, local_rate, task_rate, mu, migration_guard, no_migration,
                                 servers, gang_size, capacity, local_capacity, lc2_rule, load_includes_waiting,
                                 arrival_scales_with_pcont, migration_ignores_policy)
    out = solve_gang(p)
    if not all(math.isfinite(out[k]) for k in ("ST", "SRT", "UoS", "GoS")):
        from ..errors import SolverError

        raise SolverError(f"the steady-state solver failed (residual {out['stats']['residual']!r}); "
                          f"no measures for these rates")
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


def _targets(fmt: str, path: Path, reward_names) -> list[Path]:
    if fmt == "prism-explicit":
        prefix = path.with_suffix("") if path.suffix == ".tra" else path
        return ([Path(f"{prefix}.tra"), Path(f"{prefix}.lab")]
                + [Path(f"{prefix}.{k}.rew") for k in reward_names] + [Path(f"{prefix}.sta")])
    return [path]


def gang_rewards() -> dict:
    """State rewards written with the CTMC exports (all >= 0): the terms of eqs (1)-(3)."""
    from .gang import QUEUE_REWARD, ST_REWARD
    from .net import mark, rate

    return {"ST": ST_REWARD, "queue": QUEUE_REWARD, "gangs": rate("T"),
            "busy": mark("LQ1") + mark("LQ2"), "free": mark("N1") + mark("N2")}


@export_app.command("gang")
@guard
def export_gang_cmd(
    policy: str = _POLICY, arrival_rate: float = _ARRIVAL, local_rate: float = _LOCAL, task_rate: float = _TASK,
    mu: float = _MU, migration_guard: str = _MGUARD, no_migration: bool = _NOMIG, servers: int = _SERVERS,
    gang_size: int = _GANG, capacity: int = _CAP, local_capacity: int = _LCAP, lc2_rule: str = _LC2,
    load_includes_waiting: bool = _WAITING, arrival_scales_with_pcont: bool = _PCONT,
    migration_ignores_policy: bool = _MIGPOL,
    fmt: str = typer.Option(..., "--format", help="pnml (GSPN for Storm/GreatSPN), pnpro (GreatSPN project, "
                                                  "written by Storm), prism-explicit (.tra/.lab/.rew that Storm "
                                                  "loads) or drn (Storm)."),
    output: Path = typer.Option(..., "-o", "--output", help="File to write (prism-explicit: the prefix)."),
    force: bool = typer.Option(False, "--force", help="Overwrite existing files."),
    no_unfold: bool = typer.Option(False, "--no-unfold", help="pnml, pnpro: refuse SRN-only features instead of "
                                                              "unfolding them (the gang model has them)."),
    json_out: bool = typer.Option(False, "--json", help="Machine-readable summary."),
) -> None:
    """Write the gang-scheduling model for Storm, GreatSPN or PRISM (see docs/srn.md)."""
    if fmt not in FORMATS:
        raise ModelError(f"--format: expected one of {', '.join(FORMATS)}, got {fmt!r}")
    p = gang_params_from_options(policy, arrival_rate, local_rate, task_rate, mu, migration_guard, no_migration,
                                 servers, gang_size, capacity, local_capacity, lc2_rule, load_includes_waiting,
                                 arrival_scales_with_pcont, migration_ignores_policy)
    rewards = gang_rewards()
    targets = _targets(fmt, Path(output), rewards)
    from ..safeio import check_output

    for t in targets:  # before any work: exists without --force, a link (dangling or not), a device, a folder
        check_output(t, force=force, what="-o file")
    from . import export
    from .gang import gang_net
    from .reach import explore, to_ctmc

    net = gang_net(p)
    space = explore(net)
    summary = {"format": fmt, "policy": p.policy, "lambda": p.arrival_rate, "states": space.n_tangible,
               "vanishing": space.n_vanishing, "files": [str(t) for t in targets]}
    try:
        if fmt in ("pnml", "pnpro"):
            form = export.gspn_form(net, unfold=not no_unfold, space=space)
            (export.to_gspn_pnml if fmt == "pnml" else export.to_pnpro)(form, targets[0], overwrite=force)
            summary.update(places=len(form.places), transitions=len(form.transitions), unfolded=form.unfolded)
            how = f"stormpy.gspn.load_gspn_file({str(targets[0])!r})" + (" or the GreatSPN editor" if fmt == "pnpro"
                                                                           else "")
        else:
            ctmc = to_ctmc(space)
            if fmt == "drn":
                export.to_drn(ctmc, targets[0], rewards=rewards, overwrite=force)
                how = f"stormpy.build_model_from_drn({str(targets[0])!r})"
            else:
                export.to_storm_explicit(ctmc, targets[0].with_suffix(""), rewards=rewards, overwrite=force)
                how = (f"stormpy.build_model_from_explicit({str(targets[0])!r}, {str(targets[1])!r}, "
                       f"state_rewards={str(targets[2])!r})")
    except OSError as exc:
        raise ModelError(f"-o: cannot write {output}: {exc.strerror or exc}") from None
    summary["load_with"] = how
    if json_out:
        emit_json(summary)
        return
    extra = ""
    if fmt in ("pnml", "pnpro"):
        extra = (f", GSPN with {summary['places']} places and {summary['transitions']} transitions"
                 + (f" (unfolded: {', '.join(f'{k} -> {v}' for k, v in form.unfolded.items())})"
                    if form.unfolded else ""))
    typer.echo(f"wrote {', '.join(summary['files'])}: policy {p.policy}, lambda = {p.arrival_rate:g}, "
               f"{space.n_tangible} tangible states{extra}")
    typer.echo(f"load with {how}")


srn_app.add_typer(export_app, name="export")


def register(app: typer.Typer) -> None:
    app.add_typer(srn_app, name="srn")
