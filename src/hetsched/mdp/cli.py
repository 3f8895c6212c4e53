"""``hetsched mdp coalloc`` (the optimal co-allocation policy of seed 000, §5 tables) and ``hetsched mdp solve FILE``."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .._cliutil import guard

mdp_app = typer.Typer(help="Markov decision processes: seed 000's co-allocation model, and DRN/PRISM files.",
                      no_args_is_help=True)


def format_tables(sol, near: float = 0.005) -> str:
    """The §5 figures as text (:meth:`~hetsched.mdp.coalloc.CoallocSolution.table_text`)."""
    return sol.table_text(near=near)


#: measured peak memory of ``mdp coalloc`` per state of the truncated model (about 1.1 kB at
#: Delta = 200 and 300, ``/usr/bin/time -f %M hetsched mdp coalloc --delta D --json``), with a margin
BYTES_PER_STATE = 1500
BASE_BYTES = 300e6
METHODS = ("gauss-seidel", "jacobi", "policy-iteration", "modified-policy-iteration")


#: measured: `hetsched mdp coalloc --rho 0.8 --delta 40|80 --method policy-iteration --json` took 24 s and 143 s
#: (19,926 and 78,246 states: time ~ states^1.3) on a shared 2-core machine
PI_SECONDS_40, PI_STATES_40 = 24.0, 19_926


def available_memory() -> float:
    """Bytes of memory available to a new process (Linux ``MemAvailable``; else physical memory)."""
    import os

    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return float(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return 8e9


def memory_estimate(delta: int) -> tuple[int, float]:
    """``(states, bytes)`` of the truncated model: ``6 (Delta+1) (2 Delta+1)`` states (§4)."""
    n = 6 * (delta + 1) * (2 * delta + 1)
    return n, BASE_BYTES + BYTES_PER_STATE * n


#: rates, loads, costs and the discount rate must lie in this range (beyond it value iteration needs
#: more sweeps than a run can take, or the uniformized probabilities lose all precision)
VALUE_RANGE = (1e-6, 1e6)
#: largest ratio between the event rates (lambda1, lambda2, mu1, mu2, mu3); 1e6 took 100,000 sweeps
#: without converging at Delta = 30, 700 converges in 5 s
MAX_RATE_RATIO = 1e4


def _real(option: str, v, *, zero_ok: bool = False):
    import math

    from ..errors import ModelError

    if v is None:
        return None
    if not math.isfinite(v) or v < 0 or (v == 0 and not zero_ok):
        raise ModelError(f"{option}: must be a finite number {'>= 0' if zero_ok else '> 0'}, got {v!r}")
    lo, hi = VALUE_RANGE
    if v != 0 and not lo <= v <= hi:
        raise ModelError(f"{option}: must lie in [{lo:g}, {hi:g}], got {v!r}")
    return float(v)


def _choice(option: str, v: str, allowed) -> str:
    from ..errors import ModelError

    if v not in allowed:
        raise ModelError(f"{option}: expected one of {', '.join(allowed)}, got {v!r}")
    return v


def policy_verdicts(stab: dict) -> dict:
    """Which policies are stable, from :func:`~hetsched.mdp.stability.coalloc_stability`'s verdict.

    ``local``: Local (never co-allocate), exact (its QBD capacity and ``rho2 < 1``).
    ``some``: whether at least one policy is stable (``True`` when Local is, ``False``
    beyond the fluid bound, ``None`` in between: not established).
    ``optimal``: the printed policy on the untruncated system (``False`` when no
    policy is stable, else ``None``: the solver does not establish it; simulate
    it with ``hetsched.sim.coalloc`` policy ``table``).
    """
    local = bool(stab["rho2"] < 1 and stab["rho1"] < stab["local_capacity_rho1"])
    some = True if local else (False if stab["stable"] is False else None)
    return {"local": local, "some": some, "optimal": False if some is False else None}


def policies_text(stab: dict) -> str:
    """One line for the text output: the verdict of each kind of policy."""
    pv = stab["policies"]
    word = {True: "stable", False: "unstable", None: "not established"}
    some = {True: "yes (Local)", False: "no (fluid bound)", None: "not established"}[pv["some"]]
    return (f"Local {word[pv['local']]} (rho1 = {stab['rho1']:.4g}, its capacity {stab['local_capacity_rho1']:.4g}, "
            f"rho2 = {stab['rho2']:.4g}); some policy stable: {some}; the optimal policy below: "
            f"{word[pv['optimal']]} on unbounded queues")


def overload_message(stab: dict, rho, rho1, rho2) -> str:
    """The refusal of a load no policy can carry: the option, its value and the bound."""
    r2, cap = stab["rho2"], stab["fluid_max_rho1"]
    if r2 >= 1:
        opt, val = ("--rho", rho) if rho is not None else ("--rho2", rho2)
        bound = "fluid bound: rho2 < 1, cluster 2 alone is overloaded under every policy"
    else:
        opt, val = ("--rho", rho) if rho is not None else ("--rho1", rho1)
        bound = (f"fluid bound: rho1 < {cap:.4g} at rho2 = {r2:.4g}, co-allocating as much as cluster 2 allows")
    return (f"{opt}: {val:g} is at or above the capacity of every policy ({bound}); "
            "pass --allow-overload to solve the truncated model anyway")


@mdp_app.command("coalloc")
@guard
def coalloc_cmd(
    rho: Optional[float] = typer.Option(None, "--rho", help="Load of both clusters (rho1 = rho2 = rho); default 0.8."),
    rho1: Optional[float] = typer.Option(None, "--rho1", help="Load of cluster 1, lambda1 m / (2 mu1)."),
    rho2: Optional[float] = typer.Option(None, "--rho2", help="Load of cluster 2, lambda2 / mu2."),
    mu1: float = typer.Option(1.0, "--mu1", help="Local service rate at cluster 1."),
    mu2: float = typer.Option(1.0, "--mu2", help="Service rate at cluster 2."),
    mu3: float = typer.Option(0.7, "--mu3", help="Service rate of a co-allocated job."),
    p: float = typer.Option(0.6, "--p", help="Probability that a cluster-1 job needs one node."),
    c1: float = typer.Option(2.0, "--c1", help="Cost rate of a cluster-1 job."),
    c2: float = typer.Option(1.0, "--c2", help="Cost rate of a cluster-2 job."),
    beta: float = typer.Option(0.05, "--beta", help="Discount rate."),
    delta: int = typer.Option(30, "--delta", help="Truncation level: q1, q2 <= Delta."),
    method: str = typer.Option("gauss-seidel", "--method",
                               help="gauss-seidel, jacobi, policy-iteration or modified-policy-iteration."),
    self_loop: str = typer.Option("pre", "--self-loop", help="pre (printed) or post: where the uniformization self-loop returns."),
    boundary: str = typer.Option("block", "--boundary", help="block (printed: arrivals to a full queue are lost) or absorb."),
    nu: Optional[float] = typer.Option(None, "--nu", help="Uniformization rate (default the printed lambda1+lambda2+2mu1+mu2+mu3)."),
    eps: Optional[float] = typer.Option(None, "--eps", help="Certified absolute tolerance on J (default 1e-8 max c / beta)."),
    export: Optional[Path] = typer.Option(None, "--export", help="Also write the MDP as pymdptoolbox arrays "
                                                                 "(.npz: P, R, discount; see docs/mdp.md)."),
    force: bool = typer.Option(False, "--force", help="Overwrite the --export file if it exists."),
    allow_overload: bool = typer.Option(False, "--allow-overload",
                                        help="Solve the truncated model even for loads no policy can carry "
                                             "(e.g. --rho >= 1; refused otherwise)."),
    json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Optimal co-allocation policy (seed 000, §5): tables for x1=0 and x1=1 with margins.

    Loads that no policy can carry (rho2 >= 1, or rho1 at or above the fluid
    bound; e.g. --rho >= 1) are refused with exit 2, naming the option, the value
    and the bound. With --allow-overload they are solved on the truncated model
    anyway, with a warning line on stderr and "stable": false in JSON. Loads
    between Local's exact capacity and the fluid bound are solved; the output
    says which policies are stable there (Local is not; whether the optimal one
    is, is not established).
    """
    from ..errors import ModelError
    from .coalloc import CoallocParams, solve_coalloc
    from .stability import coalloc_stability

    for name, v in (("--rho", rho), ("--rho1", rho1), ("--rho2", rho2), ("--c1", c1), ("--c2", c2)):
        _real(name, v, zero_ok=True)
    for name, v in (("--mu1", mu1), ("--mu2", mu2), ("--mu3", mu3), ("--beta", beta), ("--nu", nu)):
        _real(name, v)
    if eps is not None:
        import math

        floor = 1e-13 * max(c1, c2, 1e-300) / beta      # J is about max(c) / beta: below this is rounding
        top = max(c1, c2, 1e-300) / beta                # about J itself: a tolerance above it certifies nothing
        if not (math.isfinite(eps) and floor <= eps <= top):
            raise ModelError(f"--eps: must lie in [1e-13, 1] x max(c1, c2) / beta = [{floor:.3g}, {top:.3g}] "
                             f"(from the rounding level of J to J's own size), got {eps!r}")
    if not (0 <= p <= 1):
        raise ModelError(f"--p: the probability of a one-node job must lie in [0, 1], got {p!r}")
    _choice("--method", method, METHODS)
    _choice("--self-loop", self_loop, ("pre", "post"))
    _choice("--boundary", boundary, ("block", "absorb"))
    if delta < 1:
        raise ModelError(f"--delta: the truncation level must be an integer >= 1, got {delta!r}")
    n, need = memory_estimate(delta)
    have = available_memory()
    if need > 0.8 * have:
        raise ModelError(f"--delta {delta}: {n:,} states need about {need / 1e9:.1f} GB "
                         f"({BYTES_PER_STATE} bytes per state), more than 80 % of the {have / 1e9:.1f} GB "
                         f"available here; the paper uses Delta = 30")
    if method == "policy-iteration":  # its time grows faster than the states (a sparse solve per iteration)
        secs = PI_SECONDS_40 * (n / PI_STATES_40) ** 1.3
        if secs > 60:
            typer.echo(f"estimate: --method policy-iteration at --delta {delta} ({n:,} states) takes about "
                       f"{secs / 60:.0f} min and {need / 1e9:.1f} GB; Ctrl-C stops it",
                       err=True)
    if rho is not None and (rho1 is not None or rho2 is not None):
        raise ModelError("--rho: give either --rho or --rho1 and --rho2, not both")
    if rho is None and rho1 is None and rho2 is None:
        rho = 0.8
    if rho is None and (rho1 is None or rho2 is None):
        raise ModelError("--rho1/--rho2: give both (or --rho for both)")
    prm = CoallocParams.from_loads(rho, rho1, rho2, mu1=mu1, mu2=mu2, p=p, mu3=mu3, c1=c1, c2=c2, beta=beta,
                                   delta=delta, self_loop=self_loop, boundary=boundary, nu=nu)
    rates = {"lambda1": prm.lam1, "lambda2": prm.lam2, "mu1": prm.mu1, "mu2": prm.mu2, "mu3": prm.mu3}
    pos = {k: v for k, v in rates.items() if v > 0}
    hi, lo = max(pos, key=pos.get), min(pos, key=pos.get)
    if pos[hi] / pos[lo] > MAX_RATE_RATIO:
        raise ModelError(f"--rho/--mu: {hi} = {pos[hi]:.4g} and {lo} = {pos[lo]:.4g} differ by more than "
                         f"{MAX_RATE_RATIO:.0e}; value iteration would not converge in a run's time")
    stab = coalloc_stability(prm)
    stab["policies"] = policy_verdicts(stab)
    if stab["stable"] is False and not allow_overload:
        raise ModelError(overload_message(stab, rho, rho1, rho2))
    if export is not None:   # check the target before the solve
        from .export import check_export_path

        check_export_path(export, force)
    if stab["stable"] is not True:
        typer.echo(f"warning: {stab['message']}", err=True)
    sol = solve_coalloc(prm, method=method, eps=eps)
    if export is not None:
        from .export import save_mdptoolbox

        save_mdptoolbox(sol.model, export, force=force)
    if json_out:
        d = sol.as_dict()
        d.update(stable=stab["stable"], stability=stab)
        if export is not None:
            d["export"] = str(export)
        _emit_compact(d)
    else:
        typer.echo(f"stability: {stab['message']}")
        typer.echo(f"policies: {policies_text(stab)}")
        typer.echo(format_tables(sol))
        if export is not None:
            typer.echo(f"wrote {export} (pymdptoolbox arrays; hetsched.mdp.export.load_mdptoolbox)")
    if not sol.result.success:
        typer.echo(f"warning: {sol.result.message}", err=True)


@mdp_app.command("solve")
@guard
def solve_cmd(
    path: Path = typer.Argument(..., help="Model file: Storm DRN (.drn) or PRISM/Storm explicit (.tra, with .lab/.sta/"
                                          "reward files next to it)."),
    criterion: str = typer.Option("average", "--criterion", help="average (long-run, per step or per time unit) or "
                                                                  "discounted."),
    discount: Optional[float] = typer.Option(None, "--discount", help="Discounted criterion: the factor in (0, 1) "
                                             "of a DTMC/MDP, the rate > 0 of a CTMC/CTMDP/Markov automaton."),
    maximise: bool = typer.Option(False, "--maximise", "--maximize", help="Maximise the reward (default: minimise "
                                                                           "it, as a cost)."),
    reward: Optional[str] = typer.Option(None, "--reward", help="Reward structure to use (needed when the file has "
                                                                 "several)."),
    kind: Optional[str] = typer.Option(None, "--type", help="dtmc or ctmc: what a PRISM .tra of a chain is (it does "
                                                            "not say; default: dtmc when every row sums to 1)."),
    method: str = typer.Option("auto", "--method", help="auto, policy-iteration, value-iteration (discounted) or "
                                                        "relative-value-iteration (average, unichain only)."),
    json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Optimal discounted or long-run average reward of every state of a DTMC, CTMC, MDP, CTMDP or Markov automaton.

    Discrete-time models are mapped exactly to the continuous-time solver (docs/mdp.md);
    the long-run average handles multichain models (the optimal gain of every state).
    """
    from .filemodel import KINDS
    from .filesolve import CRITERIA, solve

    _choice("--criterion", criterion, CRITERIA)
    _choice("--method", method, ("auto", "policy-iteration", "value-iteration", "relative-value-iteration"))
    if kind is not None:
        _choice("--type", kind, KINDS)
    if discount is not None and criterion != "discounted":
        from ..errors import ModelError

        raise ModelError(f"--discount: {discount:g} is given but --criterion is {criterion}")
    try:
        res = solve(path, criterion, discount=discount, maximise=maximise, reward=reward, method=method, kind=kind)
    except Exception as exc:
        from ..errors import ModelError

        if isinstance(exc, ModelError) and str(exc).startswith(("discount:", "reward:", "method:", "kind:")):
            raise ModelError("--" + str(exc).replace("kind:", "type:", 1)) from None
        raise
    if json_out:
        _emit_compact(res.as_dict())
        return
    typer.echo(res._headline())
    typer.echo(f"status {res.status}: {res.message}")
    typer.echo(f"mapping: {res.mapping}")
    for note in res.notes:
        typer.echo(f"note: {note}")
    name = "value" if criterion == "discounted" else "long-run average"
    n = res.n_states
    shown = range(n) if n <= 40 else res.initial.tolist()
    typer.echo(f"{'state':>7s} {name:>18s}  choice")
    init = set(res.initial.tolist())
    for s in shown:
        act = res.actions[s] if res.actions and res.actions[s] not in ("", "__NOLABEL__") else str(int(res.policy[s]))
        desc = (res.valuations[s] if res.valuations else "") if n <= 40 else ""
        typer.echo(f"{s:>7d} {res.values[s]:>18.10g}  {act}{' (initial)' if s in init else ''}"
                   + (f"  {desc}" if desc else ""))
    if n > 40:
        typer.echo(f"({n} states; all values with --json)")
    typer.echo(f"{res.solver.method}: {res.solver.iterations} iterations, {res.seconds:.3f} s")
    if not res.success:
        typer.echo(f"warning: {res.message}", err=True)


def _emit_compact(d: dict) -> None:
    """Print ``d`` as one line of JSON (the tables hold 240,000 cells at Delta = 200).

    The tables are plain lists already, so the standard encoder writes them directly
    (indented output walked every cell in Python and took longer than the solve); a
    non-finite number or a numpy scalar falls back to the conversion of :func:`emit_json`
    (NaN and inf as null).
    """
    import json

    try:
        text = json.dumps(d, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):
        from ..results import jsonable

        text = json.dumps(jsonable(d), separators=(",", ":"))
    typer.echo(text)


def register(app: typer.Typer) -> None:
    app.add_typer(mdp_app, name="mdp")
