"""``hetsched dispatch``: run real tasks on Dask workers with the desktop-grid policies.

* ``hetsched dispatch demo [--policy P] [--workers W] [--tasks T] [--kill K] [--json]``
* ``hetsched dispatch run TASKFILE.toml [--policy P] [--scheduler ADDRESS] [--journal DB] [--json]``

Task file (TOML)::

    policy = "lpas-dg"            # optional; --policy overrides
    time_unit = 1.0               # seconds per time unit of the rates below
    [classes]
    names = ["small", "big"]
    alpha = [2.0, 0.5]            # estimated arrivals per time unit (LPAS_DG)
    [workers]                     # estimated execution rates, one per class
    "0" = [4.0, 1.0]              # keys: Dask worker names (embedded: "0".."W-1")
    "1" = [2.0, 2.0]
    [availability]                # optional CPU availability a_j per worker
    "1" = 0.5
    [[tasks]]
    class = "small"
    command = "echo hello"        # a shell command, or:
    [[tasks]]
    class = "big"
    call = "math:factorial"       # module:function, with args = [...]
    args = [2000]
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Optional

import typer

from .._cliutil import emit_json, guard, stdout_is_tty

sub = typer.Typer(help="Real dispatch of tasks to Dask workers (thesis §3.5, MGST).", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(sub, name="dispatch")


def _progress_view(enabled: bool):
    """A rich live view; returns ``(callback, stop)``."""
    if not enabled:
        return None, lambda: None
    from rich.live import Live
    from rich.table import Table

    live = Live(refresh_per_second=4, transient=True)
    live.start()

    def render(s: dict) -> None:
        t = Table(title=f"dispatch: {s['completed']} done, {s['running']} running, {s['open']} open, "
                        f"resubmitted {s['resubmitted']}, lambda* {s['lambda']:.3f}")
        t.add_column("class")
        t.add_column("queued", justify="right")
        for c, n in s["queued"].items():
            t.add_row(c, str(n))
        t.caption = f"machines {s['up']}/{s['machines']} up, {s['idle']} idle"
        live.update(t)

    return render, live.stop


@sub.command("demo")
@guard
def demo_cmd(
    policy: str = typer.Option("lpas-dg", "--policy", help="fcfs, gcmu, lpas-dg or lpas-dg-robust."),
    workers: int = typer.Option(4, "--workers", help="Emulated heterogeneous workers (rates of System 3.A groups)."),
    tasks: int = typer.Option(200, "--tasks", help="Tasks to run (Poisson arrivals)."),
    kill: int = typer.Option(0, "--kill", help="Worker processes to SIGKILL during the run."),
    seed: int = typer.Option(2009, "--seed", help="Seed of arrivals, work and kill choices."),
    load: float = typer.Option(0.7, "--load", help="Offered load 1/lambda*."),
    rate: float = typer.Option(100.0, "--rate", help="Mean task arrivals per second (sets the time unit)."),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", help="Dask scheduler address instead of a LocalCluster."),
    journal: Optional[Path] = typer.Option(None, "--journal", help="SQLite journal file."),
    json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Run TASKS short emulated tasks on WORKERS heterogeneous Dask workers, killing KILL of them."""
    from .emulate import run_demo

    cb, stop = _progress_view(not json_out and stdout_is_tty())
    try:
        out = run_demo(policy, workers, tasks, kill, seed=seed, load=load, rate=rate, scheduler=scheduler,
                       journal=None if journal is None else str(journal), progress=cb)
    finally:
        stop()
    if json_out:
        emit_json(out)
        return
    typer.echo(f"policy {out['policy']}: {out['workers']} workers, {out['tasks']} tasks, killed {out['killed']}")
    typer.echo(f"submitted {out['submitted']}  completed {out['completed']}  failed {out['failed']}  "
               f"lost {out['lost']}  resubmitted {out['resubmitted']}  duplicates ignored {out['duplicates_ignored']}")
    typer.echo(f"mean response {out['mean_response']:.4f} s = {out['mean_response_units']:.3f} time units "
               f"(1 unit = {out['time_unit']:.4f} s); lambda* {out['lambda']:.3f}; LP solves {out['lp_solves']}")
    for pc in out["per_class"]:
        typer.echo(f"  class {pc['class']}: {pc['completed']:5d} tasks, mean response {pc['mean_response']:.4f} s")
    typer.echo("overhead per task (s): " + "  ".join(f"{k} {v:.4f}" for k, v in out["overhead"].items()))
    typer.echo(f"dispatcher decision + submission: {out['dispatch_ms_per_task']:.3f} ms per task; "
               f"wall {out['wall_seconds']:.2f} s")


def load_taskfile(path: Path) -> dict:
    """Parse and validate a task file (see the module docstring)."""
    from importlib import import_module

    from ..errors import ModelError
    from .worker import KIND_CALL, KIND_SHELL

    try:
        doc = tomllib.loads(Path(path).read_text())
    except FileNotFoundError:
        raise ModelError(f"task file: {str(path)!r} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise ModelError(f"task file {str(path)!r}: {exc}") from None
    cls = doc.get("classes") or {}
    names = cls.get("names")
    if not names:
        raise ModelError(f"task file {str(path)!r} field 'classes.names': expected a list of class labels")
    workers = doc.get("workers") or {}
    if not workers:
        raise ModelError(f"task file {str(path)!r} field 'workers': expected rates for at least one worker")
    items = []
    for k, t in enumerate(doc.get("tasks") or []):
        if "class" not in t:
            raise ModelError(f"task file field 'tasks[{k}].class': missing")
        if str(t["class"]) not in map(str, names):
            raise ModelError(f"task file field 'tasks[{k}].class': unknown class {t['class']!r}; "
                             f"known classes are {list(map(str, names))}")
        t = dict(t, **{"class": str(t["class"])})
        if "command" in t:
            items.append((t["class"], KIND_SHELL, t["command"]))
        elif "call" in t:
            mod, _, fn = str(t["call"]).partition(":")
            try:
                f = getattr(import_module(mod), fn)
            except (ImportError, AttributeError):
                raise ModelError(f"task file field 'tasks[{k}].call': cannot import {t['call']!r}") from None
            items.append((t["class"], KIND_CALL, (f, tuple(t.get("args", [])), dict(t.get("kwargs", {})))))
        else:
            raise ModelError(f"task file field 'tasks[{k}]': give 'command' or 'call'")
    return {"classes": list(map(str, names)), "alpha": cls.get("alpha"), "rates": workers,
            "availability": doc.get("availability") or {}, "policy": doc.get("policy", "lpas-dg"),
            "time_unit": float(doc.get("time_unit", 1.0)), "items": items}


@sub.command("run")
@guard
def run_cmd(
    taskfile: Path = typer.Argument(..., help="Task file (TOML): classes, worker rates, tasks."),
    policy: Optional[str] = typer.Option(None, "--policy", help="Override the file's policy."),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", help="Dask scheduler address (default: a LocalCluster "
                                            "with one worker per [workers] entry)."),
    journal: Optional[Path] = typer.Option(None, "--journal", help="SQLite journal; rerun with it to resume."),
    processes: bool = typer.Option(False, "--processes", help="Embedded cluster: worker processes instead of threads."),
    json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Run the tasks of TASKFILE with a policy; print per-task results and the summary."""
    from distributed import Client

    from .dispatcher import Dispatcher
    from .emulate import local_cluster

    spec = load_taskfile(taskfile)
    cluster = None
    if scheduler is None:
        cluster, client = local_cluster(len(spec["rates"]), processes=processes)
    else:
        client = Client(scheduler, timeout=30)
    cb, stop = _progress_view(not json_out and stdout_is_tty())
    try:
        d = Dispatcher(client, spec["classes"], spec["rates"], policy=policy or spec["policy"], alpha=spec["alpha"],
                       availability=spec["availability"], time_unit=spec["time_unit"],
                       journal=None if journal is None else str(journal))
        if d.next_id == 0:  # a journal that already holds the file's tasks resumes them instead
            d.add_many(spec["items"])
        res = d.run(progress=cb)
        done = d.journal.finished() if d.journal is not None else None
        d.close()
    finally:
        stop()
        client.close()
        if cluster is not None:
            cluster.close()
    rows = ([{"id": r["id"], "class": spec["classes"][r["cls"]], "state": r["state"], "value": r["value"]}
             for r in done] if done is not None else
            [{"id": tid, "value": v} for tid, v in sorted(d.results.items())])
    out = {"policy": res.policy, "submitted": res.submitted, "completed": res.completed, "failed": res.failed,
           "lost": res.lost, "resubmitted": res.resubmitted, "mean_response": res.mean_response,
           "per_class": res.per_class, "overhead": res.overhead, "lambda": res.lam, "results": rows}
    if json_out:
        emit_json(out)
        return
    for r in rows:
        typer.echo(f"task {r['id']}: {r.get('state', '')} {r['value']!r:.200}")
    typer.echo(f"{res.policy}: submitted {res.submitted}, completed {res.completed}, failed {res.failed}, "
               f"lost {res.lost}, resubmitted {res.resubmitted}; mean response {res.mean_response:.4f} s")
