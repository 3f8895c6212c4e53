"""``hetsched plot gantt|utilisation RECORDS.parquet [-o FILE]``."""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Tuple

import typer

from .._cliutil import bounded_int, guard

plot_app = typer.Typer(help="Plots of per-task records (Parquet): Gantt chart, utilisation and queue length.",
                       no_args_is_help=True)


def _out(records: Path, output: Optional[Path], kind: str, force: bool = False) -> Path:
    from ..errors import ModelError
    from ..safeio import check_output

    out = output if output is not None else records.with_name(f"{records.stem}-{kind}.png")
    if out.exists() and out.is_dir():
        raise ModelError(f"-o: {out} is a directory, expected a file name (.png, .pdf or .svg)")
    if out.suffix.lower() not in (".png", ".pdf", ".svg"):
        raise ModelError(f"-o: expected a .png, .pdf or .svg file, got {out.name!r}")
    if not out.parent.exists():
        raise ModelError(f"-o: directory {out.parent} does not exist")
    check_output(out, force=force, what="-o image")  # before drawing: exists without --force, a link, a device
    return out


def _save(fig, out: Path, force: bool = False) -> None:
    """Through the safe writer: a temporary file in the folder renamed over ``out`` (never through a link)."""
    from ..errors import ModelError
    from ..safeio import atomic_output

    try:
        with atomic_output(out, force=force, what="-o image") as tmp:
            fig.savefig(tmp, dpi=120)
    except OSError as exc:
        raise ModelError(f"-o image {str(out)!r}: cannot write: {exc.strerror or exc}") from None


@plot_app.command("gantt")
@guard
def gantt_cmd(
    records: Path = typer.Argument(..., help="Records Parquet file (task, class, arrival, start, end, machine)."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", help="Image file (.png/.pdf/.svg; default "
                                          "RECORDS-gantt.png next to the records)."),
    window: Optional[Tuple[float, float]] = typer.Option(None, "--window", help="Time window T0 T1 to draw "
                                                         "(default: all, or a sample window for long runs)."),
    max_tasks: int = typer.Option(1500, "--max-tasks", help="Tasks in the default sample window of a long run."),
    sizes: Optional[str] = typer.Option(None, "--sizes", help="Cluster sizes of MUSCLE records (default: from "
                                        "the file's metadata), e.g. 20,16,12,10."),
    rep: Optional[int] = typer.Option(None, "--rep", help="Replication to draw when the records hold several "
                                      "(default: the first)."),
    force: bool = typer.Option(False, "--force", help="Replace the image file if it exists (refused otherwise)."),
) -> None:
    """Gantt chart: one lane per machine (per computer for MUSCLE records), one bar per task."""
    from ..errors import ModelError
    from . import _pyplot, gantt

    out = _out(records, output, "gantt", force)
    size_list = None
    if sizes is not None:
        try:
            size_list = [int(v) for v in sizes.split(",") if v.strip()]
        except ValueError:
            raise ModelError(f"--sizes: expected comma-separated integers, got {sizes!r}") from None
        if not size_list or min(size_list) < 1:
            raise ModelError(f"--sizes: expected positive cluster sizes, got {sizes!r}")
    fig = gantt(records, window=window, max_tasks=max_tasks, sizes=size_list, rep=rep)
    _save(fig, out, force)
    _pyplot().close(fig)
    typer.echo(f"gantt: {fig.hetsched_bars} task bars -> {out}")


@plot_app.command("utilisation")
@guard
def utilisation_cmd(
    records: Path = typer.Argument(..., help="Records Parquet file (task records or MUSCLE job records)."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", help="Image file (.png/.pdf/.svg; default "
                                          "RECORDS-utilisation.png next to the records)."),
    machines: Optional[int] = typer.Option(None, "--machines", help="Machines (default: max machine + 1) or, for "
                                           "MUSCLE records, computers (default: from the file's metadata)."),
    bins: int = typer.Option(400, "--bins", callback=bounded_int(1, 100_000),
                             help="Equal time intervals of the averages (at most 100,000)."),
    rep: Optional[int] = typer.Option(None, "--rep", help="Replication to draw when the records hold several "
                                      "(default: the first)."),
    force: bool = typer.Option(False, "--force", help="Replace the image file if it exists (refused otherwise)."),
) -> None:
    """Utilisation and queue length over time (exact time averages per interval)."""
    from . import _pyplot, utilisation

    out = _out(records, output, "utilisation", force)
    fig = utilisation(records, machines=machines, bins=bins, rep=rep)
    _save(fig, out, force)
    s = fig.hetsched_series
    _pyplot().close(fig)
    typer.echo(f"utilisation: mean busy {s['mean_busy']:.4g}, mean in system {s['mean_in_system']:.4g}, "
               f"mean waiting {s['mean_waiting']:.4g} -> {out}")


def register(app: typer.Typer) -> None:
    app.add_typer(plot_app, name="plot")
