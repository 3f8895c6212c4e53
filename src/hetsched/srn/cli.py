"""``hetsched srn ...`` commands.

Contract: ``hetsched srn gang --policy LS|LC1|LC2 --arrival-rate L [--json]``,
``hetsched srn export gang [gang options] --format pnml|prism-explicit|drn -o PATH`` and
``hetsched srn solve FILE.pnml|FILE.PNPRO [--page NAME] [--json]``.

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

srn_app = typer.Typer(help="Stochastic reward nets: net files (PNML, GreatSPN) and the grid gang-scheduling model (Ro & Cao).",
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
                             arrival_scales_with_pcont, migration_ignores_policy, ls_rule="round-robin",
                             arrival="lambda", arrival_mu=1.0):
    """Validated :class:`~hetsched.srn.gang.GangParams` from the command-line options."""
    from .gang import ARRIVALS, LC2_RULES, LS_RULES, MIGRATION_GUARDS, POLICIES, GangParams

    pol = str(policy).upper().replace("-", "")
    if pol not in POLICIES:
        raise ModelError(f"--policy: expected one of {', '.join(POLICIES)}, got {policy!r}")
    if migration_guard not in MIGRATION_GUARDS:
        raise ModelError(f"--migration-guard: expected one of {', '.join(MIGRATION_GUARDS)}, got {migration_guard!r}")
    if lc2_rule not in LC2_RULES:
        raise ModelError(f"--lc2-rule: expected one of {', '.join(LC2_RULES)}, got {lc2_rule!r}")
    if ls_rule not in LS_RULES:
        raise ModelError(f"--ls-rule: expected one of {', '.join(LS_RULES)}, got {ls_rule!r}")
    if arrival not in ARRIVALS:
        raise ModelError(f"--arrival: expected one of {', '.join(ARRIVALS)}, got {arrival!r}")
    if arrival_scales_with_pcont and arrival not in ("lambda", "lambda*pcont"):
        raise ModelError(f"--arrival-scales-with-pcont contradicts --arrival {arrival}")
    arrival_mu = _real("--arrival-mu", arrival_mu)
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
    bound = (capacity + 1) * K * (servers + 1) ** 2 * (local_capacity + 1) ** 2 * (
        2 if pol == "LS" and ls_rule == "round-robin" else 1)
    if bound > MAX_MARKING_BOUND:
        raise ModelError(f"--servers {servers} --capacity {capacity} --local-capacity {local_capacity}: up to "
                         f"{bound:.3g} markings (bound (C+1) K (n+1)^2 (q+1)^2), more than this command explores "
                         f"({MAX_MARKING_BOUND:.0e}); the paper's model has 2.4e6 by this bound, 274,020 reachable")
    return GangParams(policy=pol, arrival_rate=arrival_rate, local_rate=(local_rate, local_rate),
                      task_rate=task_rate, mu=(mu, mu), migration_guard=migration_guard,
                      migration=not no_migration, servers=(servers, servers), gang_size=gang_size,
                      capacity=capacity, local_capacity=(local_capacity, local_capacity), lc2_rule=lc2_rule,
                      load_includes_waiting=load_includes_waiting,
                      arrival="lambda*pcont" if arrival_scales_with_pcont else arrival, arrival_mu=arrival_mu,
                      ls_rule=ls_rule, migration_follows_policy=not migration_ignores_policy)


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
_PCONT = typer.Option(False, "--arrival-scales-with-pcont", help="Same as --arrival 'lambda*pcont'.")
_ARR = typer.Option("lambda", "--arrival", help="Rate of T: lambda (the text), lambda*pcont, or mu*pcont (Table 4 "
                                                "as written, mu = --arrival-mu; lambda then does not enter).")
_ARRMU = typer.Option(1.0, "--arrival-mu", help="The mu of Table 4's T rate mu*#PCONT (with --arrival mu*pcont).")
_LSRULE = typer.Option("round-robin", "--ls-rule", help="LS: round-robin (RR places, strict alternation) or race "
                                                        "(GS1 and GS2 race, no RR places).")
_MIGPOL = typer.Option(False, "--migration-ignores-policy",
                       help="GS11/GS21 need only the migration guard, not the policy guard of their site.")


@srn_app.command("gang")
@guard
def gang_cmd(
    policy: str = _POLICY, arrival_rate: float = _ARRIVAL, local_rate: float = _LOCAL, task_rate: float = _TASK,
    mu: float = _MU, migration_guard: str = _MGUARD, no_migration: bool = _NOMIG, servers: int = _SERVERS,
    gang_size: int = _GANG, capacity: int = _CAP, local_capacity: int = _LCAP, lc2_rule: str = _LC2,
    load_includes_waiting: bool = _WAITING, arrival_scales_with_pcont: bool = _PCONT,
    migration_ignores_policy: bool = _MIGPOL, ls_rule: str = _LSRULE, arrival: str = _ARR,
    arrival_mu: float = _ARRMU,
    json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Solve the gang-scheduling SRN: ST, SRT, UoS, GoS (eqs 1-4)."""
    from .gang import solve_gang

    p = gang_params_from_options(policy, arrival_rate, local_rate, task_rate, mu, migration_guard, no_migration,
                                 servers, gang_size, capacity, local_capacity, lc2_rule, load_includes_waiting,
                                 arrival_scales_with_pcont, migration_ignores_policy, ls_rule, arrival, arrival_mu)
    out = solve_gang(p)
    if not all(math.isfinite(out.raw[k]) for k in ("ST", "SRT", "UoS", "GoS")):
        from ..errors import SolverError

        raise SolverError(f"the steady-state solver failed (residual {out.stats['residual']!r}); "
                          f"no measures for these rates")
    if json_out:
        emit_json(out.as_dict())
        return
    st = out.stats
    typer.echo(f"policy {out['policy']}, lambda = {out['lambda']:g}: {out['states']} tangible states "
               f"({st['vanishing']} vanishing), solver {st['solver']} (residual {st['residual']:.1e})")
    for k in ("ST", "SRT", "UoS", "GoS"):
        typer.echo(f"  {k:4s} {out[k]:.6f}")
    typer.echo(f"  gang throughput {out['gang_throughput']:.6f}, mean GQ {out['mean_GQ']:.4f}, "
               f"blocking {out['blocking']:.3e}")
    if not out.success:
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
    migration_ignores_policy: bool = _MIGPOL, ls_rule: str = _LSRULE, arrival: str = _ARR,
    arrival_mu: float = _ARRMU,
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
                                 arrival_scales_with_pcont, migration_ignores_policy, ls_rule, arrival, arrival_mu)
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


def _params(values: list[str]) -> dict:
    out = {}
    for v in values or []:
        k, eq, x = v.partition("=")
        if not eq or not k.strip():
            raise ModelError(f"--param: expected NAME=VALUE, got {v!r}")
        try:
            num = float(x)
        except ValueError:
            raise ModelError(f"--param {k.strip()}: expected a number, got {x!r}") from None
        out[k.strip()] = int(num) if x.strip().lstrip("+-").isdigit() else num
    return out


def _measures(values: list[str]) -> dict:
    import re

    out = {}
    for v in values or []:
        m = re.match(r"\s*([^={}]+?)\s*=\s*(?=[-+.\d\w]*\s*\*?\s*[EPX]\{)(.*)$", v)
        name, text = (m.group(1), m.group(2)) if m else (v.strip(), v)
        out[name] = text
    return out


def _show(res, echo) -> None:
    from ..results import fmt

    st = res.steady
    echo(f"{res.net.meta.get('file', res.net.name)}" + (f", page {res.net.meta['page']!r}" if res.net.meta.get("page")
                                                         else "")
         + f": {res.space.n_tangible} tangible markings ({res.space.n_vanishing} vanishing), solver {st.method} "
           f"(residual {st.residual:.1e}), {res.seconds:.3g} s")
    if st.closed_classes > 1:
        echo(f"  {res.message}")
    if not res.success:
        echo(f"  warning: {res.message}; the numbers below are untrusted", err=True)
    w = max([len(k) for k in list(res.raw_tokens) + list(res.raw_throughputs) + list(res.raw_measures)] + [10])
    echo(f"  {'place':{w}s}  expected tokens")
    for k, v in res.raw_tokens.items():
        echo(f"  {k:{w}s}  {fmt(v, 10)}")
    echo(f"  {'transition':{w}s}  throughput")
    for k, v in res.raw_throughputs.items():
        echo(f"  {k:{w}s}  {fmt(v, 10)}")
    if res.raw_measures:
        echo(f"  {'measure':{w}s}  value")
        for k, v in res.raw_measures.items():
            echo(f"  {k:{w}s}  {fmt(v, 10)}")
    for note in res.net.meta.get("notes", []):
        echo(f"  note: {note}")


@srn_app.command("solve")
@guard
def solve_cmd(
    file: Path = typer.Argument(..., help="A PNML file (Storm, PIPE, PNML 2009) or a GreatSPN project (.PNPRO)."),
    page: str = typer.Option(None, "--page", help="The page (GreatSPN) or net id (PNML) to solve; default: every "
                                                  "net page of the file."),
    param: list[str] = typer.Option(None, "--param", help="NAME=VALUE for a parameter (GreatSPN template) or a "
                                                          "constant of the file; repeatable."),
    measure: list[str] = typer.Option(None, "--measure", help="A performance index in GreatSPN's syntax, "
                                                              "optionally named: 'busy=E{#P1 + #P2}', "
                                                              "'P{#Q > 0}', 'X{T1}'; repeatable."),
    method: str = typer.Option("auto", "--method", help="Steady-state solver: auto, direct, iad or sor."),
    max_states: int = typer.Option(5_000_000, "--max-states", help="Stop beyond this many markings."),
    max_tokens: int = typer.Option(None, "--max-tokens", help="Stop when a place holds more tokens than this."),
    json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Solve the nets of a PNML or GreatSPN file: expected tokens, throughputs, the file's measures."""
    from ..errors import HetschedError
    from .analysis import solve
    from .files import pages, read
    from .steady import METHODS

    if method not in METHODS:
        raise ModelError(f"--method: expected one of {', '.join(METHODS)}, got {method!r}")
    _int("--max-states", max_states, 1, 2**31 - 2)
    if max_tokens is not None:
        _int("--max-tokens", max_tokens, 0)
    params, extra = _params(param), _measures(measure)
    names = [page] if page is not None else [p.name for p in pages(file) if p.kind == "net"]
    single = page is not None or len(names) <= 1
    out, refused = [], []
    for name in names or [None]:
        try:
            net = read(file, page=name if not single or page is not None else None, params=params)
            res = solve(net, method=method, max_states=max_states, max_tokens=max_tokens, measures=extra)
        except HetschedError as exc:
            if single:
                raise
            msg = str(exc).removeprefix(f"{file}, page {name!r}: ")
            refused.append((name, msg))
            out.append({"page": name, "success": False, "refused": True, "message": msg})
            if not json_out:
                typer.echo(f"{file}, page {name!r}: not solved: {msg}")
            continue
        out.append({**res.as_dict(), "page": name} if name is not None else res.as_dict())
        if not json_out:
            _show(res, typer.echo)
    if not single and len(refused) == len(names):
        raise ModelError(f"{file}: no page is a net this solver takes: "
                         + "; ".join(f"{n!r}: {m}" for n, m in refused))
    if json_out:
        emit_json({"file": str(file), "pages": out})


def register(app: typer.Typer) -> None:
    app.add_typer(srn_app, name="srn")
