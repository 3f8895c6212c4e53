"""Readable terminal tables (rich) for LP results and scenario overviews."""

from __future__ import annotations

import numpy as np
from rich.console import Console
from rich.table import Table

__all__ = ["print_lp", "print_lp_overview", "lp_overview_rows"]

_MAX_COLS = 16


def make_console() -> Console:
    """A console that does not squeeze tables when output goes to a file or pipe.

    It draws on the raw stdout (:func:`hetsched.validation.raw_stream`); every user string given to it
    goes through :func:`hetsched.validation.inert` with ``markup=True`` (no control character, no markup)."""
    import sys

    from ..validation import raw_stream

    con = Console(file=raw_stream(sys.stdout))
    return con if con.is_terminal else Console(file=raw_stream(sys.stdout), width=160)


def _u(text) -> str:
    """User text for rich: control characters and markup escaped."""
    from ..validation import inert

    return inert(text, markup=True, newlines=False)


def _fmt(x: float) -> str:
    return "0" if x == 0 else f"{x:.4f}".rstrip("0").rstrip(".")


def print_lp(system, res, console: Console | None = None) -> None:
    """lambda*, delta* (per group where the system has groups) and derived quantities."""
    con = console or make_console()
    st = "[green]stabilizable[/]" if res.stabilizable else "[red]NOT stabilizable (lambda* <= 1)[/]"
    con.print(f"[bold]{_u(system.id)}[/] — {_u(system.title)}")
    con.print(f"source: {_u(system.source)}")
    con.print(
        f"N = {system.N} classes, M = {system.M} machines; solution: {res.solution}"
        f"{' (group-symmetric)' if res.grouped else ''}; solver: {res.solver}"
    )
    con.print(f"lambda* = [bold]{res.lam:.4f}[/]  ({st}); busiest machine utilisation 1/lambda* = {res.utilization:.4f}")
    if res.delta_groups is not None:
        labels, counts = system.lp_groups()
        names = []
        for g in range(len(counts)):
            j = int(np.flatnonzero(labels == g)[0])
            gname = system.groups[system.group_of[j]].name
            a = system.a[j]
            names.append(f"{_u(gname)} x{counts[g]}" + (f" a={a:g}" if a != 1 else ""))
        mat = res.delta_groups
        title = "delta* per group of interchangeable machines (every member gets the group's fraction)"
    else:
        names = [_u(n) for n in system.machine_names]
        mat = res.delta
        title = "delta* (rows: classes, columns: machines)"
    if mat.shape[1] <= _MAX_COLS:
        t = Table(title=title)
        t.add_column("class")
        named = system.class_names_given
        if named:
            t.add_column("name")
        for n in names:
            t.add_column(n, justify="right")
        for i in range(mat.shape[0]):
            t.add_row(str(i + 1), *([_u(system.class_names[i])] if named else []), *[_fmt(x) for x in mat[i]])
        con.print(t)
    else:
        con.print(f"({title}: {mat.shape[1]} columns, use --json to see them)")
        if system.class_names_given:
            con.print("classes: " + ", ".join(f"{i + 1} = {_u(n)}" for i, n in enumerate(system.class_names)))
    con.print(f"zeros in delta*: {res.zeros} (Proposition 2.2.1 target N*M+1-N-M = {res.target_zeros})")
    sizes = [len(s) for s in res.S]
    con.print(f"|S_i| (machines per class under LPAS): {sizes}")

    ns, ns2 = res.ns_lpas(), res.ns_lpas2k()
    con.print(
        f"state information per arrival: LPAS N_s = {ns:.3f} (discount {res.discount(ns):.1f}%), "
        f"LPAS-2/k N_s = {ns2:.3f} (discount {res.discount(ns2):.1f}%), MCT N_s = {system.M}"
    )
    if res.status != 0:
        con.print(f"[yellow]warning:[/] {_u(res.message)}")


def lp_overview_rows(ids=None) -> list[dict]:
    """One row per shipped scenario: capacity and allocation summary."""
    from ..lp import allocation_lp
    from ..scenarios import load, scenario_ids

    rows = []
    for sid in ids or scenario_ids():
        s = load(sid)
        r = allocation_lp(s)
        rows.append(
            {
                "id": sid, "N": s.N, "M": s.M, "lambda": r.lam, "utilization": r.utilization,
                "stabilizable": r.stabilizable, "zeros": r.zeros, "target_zeros": r.target_zeros,
                "Ns_lpas": r.ns_lpas(), "discount_lpas": r.discount(r.ns_lpas()),
                "discount_lpas2k": r.discount(r.ns_lpas2k()), "ms": r.seconds * 1e3,
            }
        )
    return rows


def print_lp_overview(rows: list[dict], console: Console | None = None) -> None:
    con = console or make_console()
    t = Table(title="Allocation LP of every shipped scenario (default arrival vector and case)")
    for c in ("id", "N", "M", "lambda*", "1/lambda*", "stabilizable", "zeros/target", "LPAS N_s", "discount LPAS", "discount LPAS-2/k", "solve ms"):
        t.add_column(c, justify="right" if c != "id" else "left")
    for r in rows:
        t.add_row(
            _u(r["id"]), str(r["N"]), str(r["M"]), f"{r['lambda']:.4f}", f"{r['utilization']:.3f}",
            "yes" if r["stabilizable"] else "[red]no[/]", f"{r['zeros']}/{r['target_zeros']}",
            f"{r['Ns_lpas']:.2f}", f"{r['discount_lpas']:.0f}%", f"{r['discount_lpas2k']:.0f}%", f"{r['ms']:.1f}",
        )
    con.print(t)
