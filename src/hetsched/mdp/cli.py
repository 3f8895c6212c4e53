"""``hetsched mdp coalloc``: the optimal co-allocation policy of seed-000 (§5 tables)."""

from __future__ import annotations

from typing import Optional

import typer

from .._cliutil import emit_json, guard

mdp_app = typer.Typer(help="Continuous-time Markov decision processes (seed 000: co-allocation).",
                      no_args_is_help=True)


def format_tables(sol, near: float = 0.005) -> str:
    """The §5 figures as text: one action grid per ``x1`` (rows ``q1``, columns ``q2``), then margins.

    In the grid ``1`` = co-allocate, ``.`` = do not; a cell whose two actions cost
    within ``near`` (relative) of each other is shown as ``~`` after the digit.
    The margin grid gives ``100 (Q0 - Q1) / Q0`` (% of the cost of not co-allocating;
    positive: co-allocation is cheaper).
    """
    prm = sol.model.params
    D = prm.delta
    lines = []
    for key in ("x1=0", "x1=1"):
        tab, mar, cert = sol.tables[key], sol.margins[key], sol.certified[key]
        lines.append(f"Optimal action in states (q1, q2, g=2, {key.replace('=', '=')}, x2=0, x11=0)"
                     f"  [1 = co-allocate, . = not, ~ = margin < {100 * near:g} %, ? = not certified]")
        head = "q1\\q2 " + "".join(f"{q2:>3d}" for q2 in range(D + 1))
        lines.append(head)
        for i in range(D):
            cells = []
            for j in range(D + 1):
                c = "1" if tab[i, j] else "."
                flag = "?" if not cert[i, j] else ("~" if abs(mar[i, j]) < near else " ")
                cells.append(f" {c}{flag}")
            lines.append(f"{i + 1:>5d} " + "".join(cells))
        lines.append("")
        lines.append(f"Margin (Q0 - Q1) / Q0 in %, {key}  (rows q1 = 1..{D}, columns q2 = 0..{D})")
        lines.append("q1\\q2 " + "".join(f"{q2:>6d}" for q2 in range(D + 1)))
        for i in range(D):
            lines.append(f"{i + 1:>5d} " + "".join(f"{100 * mar[i, j]:6.2f}" for j in range(D + 1)))
        lines.append("")
    r = sol.result
    ties = sol.near_ties(near)
    n_ties = sum(len(v) for v in ties.values())
    lines.append(
        f"{sol.model.ctmdp.n_states} states, {r.method}: {r.iterations} iterations, {sol.seconds:.3f} s "
        f"(build {sol.model.build_seconds:.3f} s); {r.message}"
    )
    lines.append(
        f"rho1={prm.rho1:.4g} rho2={prm.rho2:.4g} lambda1={prm.lam1:.4g} lambda2={prm.lam2:.4g} mu1={prm.mu1:g} "
        f"mu2={prm.mu2:g} mu3={prm.mu3:g} p={prm.p:g} c1={prm.c1:g} c2={prm.c2:g} beta={prm.beta:g} Delta={D} "
        f"self_loop={prm.self_loop} boundary={prm.boundary} nu={prm.nu_used:.4g}; "
        f"{n_ties} near-tie cells (< {100 * near:g} %)"
    )
    return "\n".join(lines)


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
    json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Optimal co-allocation policy (seed 000, §5): tables for x1=0 and x1=1 with margins."""
    from ..errors import ModelError
    from .coalloc import CoallocParams, solve_coalloc

    if rho is not None and (rho1 is not None or rho2 is not None):
        raise ModelError("--rho: give either --rho or --rho1 and --rho2, not both")
    if rho is None and rho1 is None and rho2 is None:
        rho = 0.8
    if rho is None and (rho1 is None or rho2 is None):
        raise ModelError("--rho1/--rho2: give both (or --rho for both)")
    prm = CoallocParams.from_loads(rho, rho1, rho2, mu1=mu1, mu2=mu2, p=p, mu3=mu3, c1=c1, c2=c2, beta=beta,
                                   delta=delta, self_loop=self_loop, boundary=boundary, nu=nu)
    sol = solve_coalloc(prm, method=method, eps=eps)
    if json_out:
        emit_json(sol.as_dict())
    else:
        typer.echo(format_tables(sol))
    if not sol.result.success:
        typer.echo(f"warning: {sol.result.message}", err=True)


def register(app: typer.Typer) -> None:
    app.add_typer(mdp_app, name="mdp")
