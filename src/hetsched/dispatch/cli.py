"""``hetsched dispatch``: run real tasks on Dask workers with the desktop-grid policies.

* ``hetsched dispatch demo [--policy P] [--workers W] [--tasks T] [--kill K] [--json]``
* ``hetsched dispatch run TASKFILE.toml [--policy P] [--scheduler ADDRESS] [--journal DB] [--json]``
* ``hetsched dispatch bench --workers W --tasks T [--json]``

Exit status: 0 when every task finished (done or failed by its own code); 2 for
bad input (one line naming the option or field and value); 1 when the run ended
with tasks unfinished (time-out, no worker left, journal not writable) — the
message gives their number, and with ``--journal`` they stay queued in it.

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

from .._cliutil import emit_json, guard, inert, raw_stream, stdout_is_tty

sub = typer.Typer(help="Real dispatch of tasks to Dask workers (thesis §3.5, MGST).", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(sub, name="dispatch")


def _progress_view(enabled: bool):
    """A rich live view; returns ``(callback, stop)``."""
    if not enabled:
        return None, lambda: None
    import sys

    from rich.console import Console
    from rich.live import Live
    from rich.table import Table

    live = Live(refresh_per_second=4, transient=True, console=Console(file=raw_stream(sys.stdout)))
    live.start()

    def render(s: dict) -> None:
        t = Table(title=f"dispatch: {s['completed']} done, {s['running']} running, {s['open']} open, "
                        f"resubmitted {s['resubmitted']}, lambda* {s['lambda']:.3f}")
        t.add_column("class")
        t.add_column("queued", justify="right")
        for c, n in s["queued"].items():
            t.add_row(inert(c, markup=True, newlines=False), str(n))
        t.caption = f"machines {s['up']}/{s['machines']} up, {s['idle']} idle"
        live.update(t)

    return render, live.stop


EXIT_UNFINISHED = 1  # the run ended with tasks unfinished (they stay in the journal)


def _int_opt(name: str, text: str) -> int:
    """An integer option from its text; integral numbers in e-notation (``5e7``) are accepted, then range-checked."""
    from ..errors import ModelError

    t = str(text).strip()
    try:
        return int(t)
    except ValueError:
        pass
    try:
        x = float(t)
    except ValueError:
        raise ModelError(f"{name}: expected an integer, got {text!r}") from None
    if not (x == x and abs(x) != float("inf") and x == int(x)):
        raise ModelError(f"{name}: expected an integer, got {text!r}")
    return int(x)


def _float_opt(name: str, text: str) -> float:
    from ..errors import ModelError

    try:
        x = float(str(text).strip())
    except ValueError:
        raise ModelError(f"{name}: expected a number, got {text!r}") from None
    if x != x or x in (float("inf"), float("-inf")):
        raise ModelError(f"{name}: expected a finite number, got {text!r}")
    return x


def _finish(out: dict) -> None:
    """Exit non-zero with one line when the run left tasks unfinished."""
    if not out.get("success", True) or out.get("lost", 0):
        typer.echo(f"error: dispatch incomplete: {out['lost']} task(s) unfinished — {out.get('message', '')}",
                   err=True)
        raise typer.Exit(EXIT_UNFINISHED)


@sub.command("demo")
@guard
def demo_cmd(
    policy: str = typer.Option("lpas-dg", "--policy", help="fcfs, gcmu, lpas-dg or lpas-dg-robust."),
    workers: str = typer.Option("4", "--workers", help="Emulated heterogeneous workers, 1..256 (rates of System 3.A groups)."),
    tasks: str = typer.Option("200", "--tasks", help="Tasks to run (Poisson arrivals), 1..1,000,000, "
                                                  "within a run-time budget of 600 s (about 100 tasks/s)."),
    kill: str = typer.Option("0", "--kill", help="Worker processes to SIGKILL during the run."),
    seed: str = typer.Option("2009", "--seed", help="Seed of arrivals, work and kill choices (0..2^63-1)."),
    load: str = typer.Option("0.7", "--load", help="Offered load 1/lambda*, in (0, 1)."),
    rate: str = typer.Option("100", "--rate", help="Mean task arrivals per second (sets the time unit), <= 1e5."),
    prefetch: str = typer.Option("0", "--prefetch", help="Seconds of work each worker keeps decided ahead (0 = pure pull)."),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", help="Dask scheduler address instead of a LocalCluster."),
    journal: Optional[Path] = typer.Option(None, "--journal", help="SQLite journal file; rerun with it to resume."),
    worker_wait: str = typer.Option("60", "--worker-wait", help="Give up after this many seconds without any worker."),
    json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Run TASKS short emulated tasks on WORKERS heterogeneous Dask workers, killing KILL of them.

    Exit status 1 (with the count) if tasks are left unfinished — they stay in the journal.
    """
    from ..errors import ModelError
    from .emulate import check_demo_args, check_demo_budget, run_demo

    w, n, k, sd = (_int_opt("--workers", workers), _int_opt("--tasks", tasks), _int_opt("--kill", kill),
                   _int_opt("--seed", seed))
    ld, rt, pf, ww = (_float_opt("--load", load), _float_opt("--rate", rate), _float_opt("--prefetch", prefetch),
                      _float_opt("--worker-wait", worker_wait))
    check_demo_args(policy, w, n, k, sd, ld, rt, scheduler)
    if pf < 0:
        raise ModelError(f"--prefetch: expected seconds >= 0, got {prefetch!r}")
    if ww <= 0:
        raise ModelError(f"--worker-wait: expected seconds > 0, got {worker_wait!r}")
    check_demo_budget(n, rt, pf)
    cb, stop = _progress_view(not json_out and stdout_is_tty())
    try:
        out = run_demo(policy, w, n, k, seed=sd, load=ld, rate=rt, scheduler=scheduler,
                       journal=None if journal is None else str(journal), progress=cb, prefetch=pf, worker_wait=ww)
    finally:
        stop()
    if json_out:
        emit_json(out)
        _finish(out)
        return
    typer.echo(f"policy {out['policy']}: {out['workers']} workers, {out['tasks']} tasks, killed {out['killed']}"
               + (f"; resumed after {out['resumed']} accepted ({out['restored']} unfinished re-queued)"
                  if out["resumed"] else ""))
    typer.echo(f"submitted {out['submitted']}  completed {out['completed']}  failed {out['failed']}  "
               f"lost {out['lost']}  resubmitted {out['resubmitted']}  duplicates ignored {out['duplicates_ignored']}")
    typer.echo(f"mean response {out['mean_response']:.4f} s = {out['mean_response_units']:.3f} time units "
               f"(1 unit = {out['time_unit']:.4f} s); lambda* {out['lambda']:.3f}; LP solves {out['lp_solves']}")
    for pc in out["per_class"]:
        typer.echo(f"  class {pc['class']}: {pc['completed']:5d} tasks, mean response {pc['mean_response']:.4f} s")
    typer.echo("overhead per task (s): " + "  ".join(f"{k} {v:.4f}" for k, v in out["overhead"].items()))
    typer.echo(f"dispatcher decision + submission: {out['dispatch_ms_per_task']:.3f} ms per task; "
               f"wall {out['wall_seconds']:.2f} s")
    _finish(out)


@sub.command("bench")
@guard
def bench_cmd(
    workers: str = typer.Option("4", "--workers", help="Workers of the LocalCluster (1..256)."),
    tasks: str = typer.Option("5000", "--tasks", help="Empty tasks per run (1..1,000,000; the "
                                                   "whole bench within an estimated 1,800 s)."),
    processes: bool = typer.Option(False, "--processes", help="Worker processes instead of threads."),
    prefetch: str = typer.Option("0.05", "--prefetch", help="Seconds of work each worker keeps decided ahead."),
    policy: str = typer.Option("gcmu", "--policy", help="fcfs, gcmu, lpas-dg or lpas-dg-robust."),
    journal: bool = typer.Option(True, "--journal/--no-journal", help="Journal the run (temporary SQLite file)."),
    repeats: str = typer.Option("3", "--repeats", help="Runs of each side; medians are reported."),
    json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """TASKS empty tasks through the dispatcher vs a plain client.submit loop on the same LocalCluster."""
    from ..errors import ModelError
    from .bench import run_bench

    w, n, r = _int_opt("--workers", workers), _int_opt("--tasks", tasks), _int_opt("--repeats", repeats)
    pf = _float_opt("--prefetch", prefetch)
    if pf < 0:
        raise ModelError(f"--prefetch: expected seconds >= 0, got {prefetch!r}")
    if not 1 <= r <= 20:
        raise ModelError(f"--repeats: must lie in [1, 20], got {repeats!r}")
    from .emulate import MAX_TASKS, check_bench_budget

    if not 1 <= n <= MAX_TASKS:  # the cap first (its message), then the run-time budget
        raise ModelError(f"--tasks: must lie in [1, {MAX_TASKS:,}], got {tasks!r}")
    check_bench_budget(n, r, pf)
    out = run_bench(w, n, processes=processes, prefetch=pf, policy=policy, journal=journal, repeats=r)
    if json_out:
        emit_json(out)
    else:
        typer.echo(f"{out['tasks']} empty tasks, {out['workers']} workers ({out['cluster']}), policy {out['policy']}, "
                   f"prefetch {out['prefetch']:g} s, journal {'on' if out['journal'] else 'off'}; "
                   f"medians of {out['repeats']}")
        typer.echo(f"dispatcher      {out['tasks_per_second']:10.0f} tasks/s  lost {out['lost']}  "
                   f"duplicated {out['duplicated']}")
        typer.echo(f"client.submit   {out['reference_tasks_per_second']:10.0f} tasks/s  (plain loop, same cluster)")
        typer.echo(f"ratio           {out['ratio']:10.2f}")
    if out["lost"] or out["duplicated"]:
        typer.echo(f"error: {out['lost']} task(s) lost, {out['duplicated']} duplicated", err=True)
        raise typer.Exit(EXIT_UNFINISHED)


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
    try:
        time_unit = float(doc.get("time_unit", 1.0))
    except (TypeError, ValueError):
        raise ModelError(f"task file field 'time_unit': expected seconds > 0, got {doc.get('time_unit')!r}") from None
    if not (time_unit > 0 and time_unit != float("inf")):
        raise ModelError(f"task file field 'time_unit': expected seconds > 0, got {doc.get('time_unit')!r}")
    return {"classes": list(map(str, names)), "alpha": cls.get("alpha"), "rates": workers,
            "availability": doc.get("availability") or {}, "policy": doc.get("policy", "lpas-dg"),
            "time_unit": time_unit, "items": items, "spec": taskfile_spec(doc)}


def taskfile_spec(doc: dict) -> str:
    """SHA-256 of the task file's content (canonical JSON): a journal belongs to one task file."""
    import hashlib
    import json

    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()


@sub.command("run")
@guard
def run_cmd(
    taskfile: Path = typer.Argument(..., help="Task file (TOML): classes, worker rates, tasks."),
    policy: Optional[str] = typer.Option(None, "--policy", help="Override the file's policy."),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", help="Dask scheduler address (default: a LocalCluster "
                                            "with one worker per [workers] entry)."),
    journal: Optional[Path] = typer.Option(None, "--journal", help="SQLite journal; rerun with it to resume."),
    processes: bool = typer.Option(False, "--processes", help="Embedded cluster: worker processes instead of threads."),
    prefetch: str = typer.Option("0", "--prefetch", help="Seconds of work each worker keeps decided ahead (0 = pure pull)."),
    worker_wait: str = typer.Option("60", "--worker-wait", help="Give up after this many seconds without any worker."),
    json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Run the tasks of TASKFILE with a policy; print per-task results and the summary.

    Exit status 1 (with the count) if tasks are left unfinished — they stay in the journal.
    """
    from ..errors import ModelError
    from .dispatcher import Dispatcher
    from .emulate import _quiet, local_cluster, replenish
    from .journal import Journal

    pf, ww = _float_opt("--prefetch", prefetch), _float_opt("--worker-wait", worker_wait)
    if pf < 0:
        raise ModelError(f"--prefetch: expected seconds >= 0, got {prefetch!r}")
    if ww <= 0:
        raise ModelError(f"--worker-wait: expected seconds > 0, got {worker_wait!r}")
    spec = load_taskfile(taskfile)
    if journal is not None:  # refuse a foreign or corrupt journal before starting a cluster
        Journal(str(journal), spec["classes"], spec=spec["spec"]).close()
    _quiet()
    cluster = None
    if scheduler is None:
        cluster, client = local_cluster(len(spec["rates"]), processes=processes)
    else:
        from distributed import Client

        try:
            client = Client(scheduler, timeout=30)
        except Exception as exc:  # noqa: BLE001 - unreachable address: one line
            raise ModelError(f"--scheduler: cannot reach the Dask scheduler at {scheduler!r}: {exc}") from None
    cb, stop = _progress_view(not json_out and stdout_is_tty())
    try:
        d = Dispatcher(client, spec["classes"], spec["rates"], policy=policy or spec["policy"], alpha=spec["alpha"],
                       availability=spec["availability"], time_unit=spec["time_unit"],
                       journal=None if journal is None else str(journal), journal_spec=spec["spec"], prefetch=pf,
                       worker_wait=ww, replenish=None if cluster is None else (lambda: replenish(cluster)))
        try:
            if d.next_id == 0:  # a journal that already holds the file's tasks resumes them instead
                d.add_many(spec["items"])
            res = d.run(progress=cb)
            done = d.journal.finished() if d.journal is not None else None
        finally:
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
    out["success"], out["message"] = res.success, res.message
    if json_out:
        emit_json(out)
        _finish(out)
        return
    for r in rows:
        typer.echo(f"task {r['id']}: {r.get('state', '')} {r['value']!r:.200}")
    typer.echo(f"{res.policy}: submitted {res.submitted}, completed {res.completed}, failed {res.failed}, "
               f"lost {res.lost}, resubmitted {res.resubmitted}; mean response {res.mean_response:.4f} s")
    _finish(out)
