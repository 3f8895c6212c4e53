"""``hetsched trace info FILE.swf[.gz] [--system ID --classes RULE --load RHO] [--json]``."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .._cliutil import emit_json, guard

trace_app = typer.Typer(help="Real workload traces (Standard Workload Format).", no_args_is_help=True)


@trace_app.command("info")
@guard
def info_cmd(
    path: Path = typer.Argument(..., help="SWF log (.swf or .swf.gz)."),
    system: Optional[str] = typer.Option(None, "--system", help="Scenario id or .toml file: also prepare the trace "
                                         "for replay on it (classes, LP load)."),
    classes: str = typer.Option("runtime", "--classes", help="runtime, procs, user, queue or partition."),
    load: Optional[float] = typer.Option(None, "--load", help="Target load 1/lambda* (rescales the time axis)."),
    skip_malformed: bool = typer.Option(False, "--skip-malformed", help="Skip (and count) malformed lines."),
    max_bytes: Optional[int] = typer.Option(None, "--max-bytes", help="Most bytes of log text to read after "
                                            "decompression (default 1 GiB or HETSCHED_SWF_MAX_BYTES; 0: no "
                                            "limit)."),
    json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Summary of a log (jobs, header, fields present) and, with --system, its replay preparation and LP verdict."""
    import numpy as np

    from . import SWF_COLUMNS, read_swf, workload

    from .swf import max_swf_bytes

    if max_bytes is not None and max_bytes < 0:
        from ..errors import ModelError

        raise ModelError(f"--max-bytes: expected a number of bytes >= 0 (0: no limit), got {max_bytes}")
    limit = max_swf_bytes() if max_bytes is None else (None if max_bytes == 0 else max_swf_bytes(max_bytes))
    df = read_swf(path, on_error="skip" if skip_malformed else "raise", max_bytes=limit)
    h = df.attrs["header"]
    n = len(df)
    known = {c: int((df[c] != -1).sum()) for c in SWF_COLUMNS}
    run = df["run_time"].to_numpy()
    sub = df["submit_time"].to_numpy()
    ok = run > 0
    out = {"file": str(path), "jobs": n, "skipped_lines": df.attrs["skipped"],
           "header": {k: h[k] for k in ("Version", "Computer", "Installation", "MaxJobs", "MaxProcs", "StartTime",
                                        "EndTime") if k in h},
           "span_seconds": float(sub.max() - sub.min()) if n else 0.0,
           "mean_run_time": float(run[ok].mean()) if ok.any() else None,
           "run_time_cv": float(run[ok].std() / run[ok].mean()) if ok.sum() > 1 else None,
           "max_bytes": limit,
           "known_values": known}
    wl = None
    if system is not None:
        wl = workload(df, system, classes=classes, load=load)
        out["replay"] = wl.as_dict()
        out["replay"]["verdict"] = wl.verdict
    if json_out:
        emit_json(out)
        return
    typer.echo(f"{path}: {n} jobs" + (f" ({df.attrs['skipped']} malformed lines skipped)" if df.attrs["skipped"] else ""))
    for k, v in out["header"].items():
        typer.echo(f"  {k}: {v}")
    if n:
        mrt, cv = out["mean_run_time"], out["run_time_cv"]
        typer.echo(f"  span {out['span_seconds']:.6g} s, mean run time "
                   f"{'-' if mrt is None else format(mrt, '.6g')} s (CV {'-' if cv is None else format(cv, '.3g')}), "
                   f"mean interarrival {out['span_seconds'] / max(n - 1, 1):.4g} s")
    absent = [c for c, k in known.items() if k == 0]
    if absent and n:
        typer.echo(f"  fields unknown (-1) in every job: {', '.join(absent)}")
    if wl is not None:
        # the reasons of the dropped jobs are in --json ("replay": "dropped", "dropped_job_ids")
        typer.echo(f"replay on {system} ({wl.N} classes by '{wl.rule}'): {len(wl)} jobs, {wl.dropped_total} dropped; "
                   f"class counts {wl.counts.tolist()}")
        typer.echo(f"  {wl.rule_detail}")
        typer.echo(f"  time scale {wl.time_scale:.6g} model units per second; arrival vector alpha = "
                   f"{np.array2string(wl.alpha, precision=4)}")
        typer.echo(f"  {wl.verdict}")


def register(app: typer.Typer) -> None:
    app.add_typer(trace_app, name="trace")
