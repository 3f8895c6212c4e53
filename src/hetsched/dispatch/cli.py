"""``hetsched dispatch``: run real tasks on Dask workers with the desktop-grid policies.

* ``hetsched dispatch demo [--policy P] [--workers W] [--tasks T] [--kill K] [--json]``
* ``hetsched dispatch run TASKFILE.toml [--policy P] [--scheduler ADDRESS] [--journal DB] [--json]``
* ``hetsched dispatch bench --workers W --tasks T [--json]``

Exit status: 0 when every task finished (done or failed by its own code); 2 for
bad input (one line naming the option or field and value); 1 when the run ended
with tasks unfinished (time-out, no worker left, journal not writable) — the
message gives their number, and with ``--journal`` they stay queued in it; 130
when interrupted (Ctrl-C: one line, the journal keeps what was accepted).
The task-file format is described in :mod:`hetsched.dispatch.taskfile`.
"""

from __future__ import annotations

import contextlib
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


@contextlib.contextmanager
def _interruptible():
    """Ctrl-C: one line ``interrupted`` (exit 130), nothing of Dask's shutdown on the terminal.

    While the cluster and the client close after an interrupt, distributed's own
    loggers and the event loop may report the cancelled work; they are silenced
    here and stderr is held until the process exits.
    """
    try:
        yield
    except KeyboardInterrupt:
        import logging
        import os
        import sys

        for name in ("distributed", "tornado", "asyncio"):
            logging.getLogger(name).setLevel(logging.CRITICAL + 1)
        typer.echo("interrupted", err=True)
        try:
            sys.stderr.flush()
            if sys.stderr.fileno() == 2:  # the process's own stderr (not a test runner's buffer)
                os.dup2(os.open(os.devnull, os.O_WRONLY), 2)  # late messages of threads while the process exits
        except (OSError, ValueError, AttributeError):  # no real stderr (a test runner's buffer)
            pass
        raise typer.Exit(130) from None


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


def _float_opt(name: str, text: str | None, lo: float | None = None, lo_open: bool = True) -> float | None:
    from ..errors import ModelError

    if text is None:
        return None
    try:
        x = float(str(text).strip())
    except ValueError:
        raise ModelError(f"{name}: expected a number, got {text!r}") from None
    if x != x or x in (float("inf"), float("-inf")):
        raise ModelError(f"{name}: expected a finite number, got {text!r}")
    if lo is not None and (x <= lo if lo_open else x < lo):
        raise ModelError(f"{name}: expected seconds {'>' if lo_open else '>='} {lo:g}, got {text!r}")
    return x


def _finish(out: dict) -> None:
    """Exit 1 with one line when the run left tasks unfinished; warn about an unstable one."""
    if out.get("lost", 0) or out.get("status", 0) >= 2:
        typer.echo(f"error: dispatch incomplete: {out['lost']} task(s) unfinished — {out.get('message', '')}",
                   err=True)
        raise typer.Exit(EXIT_UNFINISHED)
    if out.get("status") == 1:
        typer.echo(f"warning: {out.get('message', '')}", err=True)


_RESOLVE_HELP = ("Re-solve the allocation LP every SECONDS (the periodic T_system of thesis §3.5.2) instead of at "
                 "every availability event (default).")


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
    resolve_every: Optional[str] = typer.Option(None, "--resolve-every", metavar="SECONDS", help=_RESOLVE_HELP),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", help="Dask scheduler address instead of a LocalCluster."),
    journal: Optional[Path] = typer.Option(None, "--journal", help="SQLite journal file; rerun with it to resume."),
    worker_wait: str = typer.Option("60", "--worker-wait", help="Give up after this many seconds without any worker."),
    json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Run TASKS short emulated tasks on WORKERS heterogeneous Dask workers, killing KILL of them.

    Exit status 1 (with the count) if tasks are left unfinished — they stay in the journal.
    """
    from .budget import WARN_SECONDS, check_demo_args, check_demo_budget
    from .emulate import run_demo

    w, n, k, sd = (_int_opt("--workers", workers), _int_opt("--tasks", tasks), _int_opt("--kill", kill),
                   _int_opt("--seed", seed))
    ld, rt = _float_opt("--load", load), _float_opt("--rate", rate)
    check_demo_args(policy, w, n, k, sd, ld, rt, scheduler)
    pf = _float_opt("--prefetch", prefetch, 0.0, lo_open=False)
    ww = _float_opt("--worker-wait", worker_wait, 0.0)
    re_ = _float_opt("--resolve-every", resolve_every, 0.0)
    est = check_demo_budget(n, rt, pf, workers=w if scheduler is None else 4, processes=k > 0)
    if est > WARN_SECONDS:
        typer.echo(f"warning: this demo is estimated to take about {est:,.0f} s", err=True)
    cb, stop = _progress_view(not json_out and stdout_is_tty())
    try:
        with _interruptible():
            out = run_demo(policy, w, n, k, seed=sd, load=ld, rate=rt, scheduler=scheduler,
                           journal=None if journal is None else str(journal), progress=cb, prefetch=pf,
                           worker_wait=ww, resolve_every=re_)
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
    mr, mru = out["mean_response"], out["mean_response_units"]
    typer.echo(f"mean response {_f(mr)} s = {_f(mru, 3)} time units (1 unit = {out['time_unit']:.4f} s); "
               f"lambda* {_f(out['lambda'], 3)}; LP solves {out['lp_solves']}")
    for pc in out["per_class"]:
        typer.echo(f"  class {pc['class']}: {pc['completed']:5d} tasks, mean response {_f(pc['mean_response'])} s")
    typer.echo("overhead per task (s): " + "  ".join(f"{k} {_f(v)}" for k, v in out["overhead"].items()))
    typer.echo(f"dispatcher decision + submission: {out['dispatch_ms_per_task']:.3f} ms per task; "
               f"wall {out['seconds']:.2f} s")
    _finish(out)


def _f(x, digits: int = 4) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


@sub.command("bench")
@guard
def bench_cmd(
    workers: str = typer.Option("4", "--workers", help="Workers of the LocalCluster (1..256)."),
    tasks: str = typer.Option("5000", "--tasks", help="Empty tasks per run (1..1,000,000; the "
                                                   "whole bench within an estimated 1,800 s)."),
    processes: bool = typer.Option(False, "--processes", help="Worker processes instead of threads."),
    prefetch: str = typer.Option("0.05", "--prefetch", help="Seconds of work each worker keeps decided ahead."),
    policy: str = typer.Option("lpas-dg", "--policy", help="fcfs, gcmu, lpas-dg or lpas-dg-robust."),
    journal: bool = typer.Option(False, "--journal/--no-journal", help="Journal the dispatcher's runs "
                                 "(temporary SQLite file; the client.map references keep none)."),
    repeats: str = typer.Option("3", "--repeats", help="Runs of each side; medians are reported."),
    json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """TASKS empty tasks through the dispatcher vs batched client.map (same chunks; one chunk per worker)."""
    from ..errors import ModelError
    from ..policies.pull import policy_code
    from .bench import run_bench
    from .budget import MAX_TASKS, MAX_WORKERS, WARN_SECONDS, check_bench_budget

    w, n, r = _int_opt("--workers", workers), _int_opt("--tasks", tasks), _int_opt("--repeats", repeats)
    pf = _float_opt("--prefetch", prefetch, 0.0, lo_open=False)
    policy_code(policy)
    if not 1 <= r <= 20:
        raise ModelError(f"--repeats: must lie in [1, 20], got {repeats!r}")
    if not 1 <= w <= MAX_WORKERS:
        raise ModelError(f"--workers: must lie in [1, {MAX_WORKERS}], got {workers!r}")
    if not 1 <= n <= MAX_TASKS:  # the cap first (its message), then the run-time budget
        raise ModelError(f"--tasks: must lie in [1, {MAX_TASKS:,}], got {tasks!r}")
    est = check_bench_budget(n, r, pf, workers=w, processes=processes)
    if est > WARN_SECONDS:
        typer.echo(f"warning: this bench is estimated to take about {est:,.0f} s", err=True)
    with _interruptible():
        out = run_bench(w, n, processes=processes, prefetch=pf, policy=policy, journal=journal, repeats=r)
    if json_out:
        emit_json(out)
    else:
        typer.echo(f"{out['tasks']} empty tasks, {out['workers']} workers ({out['cluster']}), policy {out['policy']}, "
                   f"prefetch {out['prefetch']:g} s, journal {'on' if out['journal'] else 'off'}; "
                   f"medians of {out['repeats']}")
        typer.echo(f"dispatcher                  {out['tasks_per_second']:10.0f} tasks/s  lost {out['lost']}  "
                   f"duplicated {out['duplicated']}  ({out['batches']:.0f} batches)")
        typer.echo(f"client.map, same chunks     {out['reference_tasks_per_second']:10.0f} tasks/s  "
                   f"ratio {out['ratio']:.2f}  overhead {1e6 * out['overhead_seconds_per_task']:.1f} us/task")
        typer.echo(f"client.map, chunk/worker    {out['per_worker_tasks_per_second']:10.0f} tasks/s  "
                   f"ratio {out['ratio_per_worker']:.2f}")
        tl = out["timeline_ms"]
        typer.echo("per batch (ms, medians): submit to start " + _f(tl["submit_to_start"], 1) + ", end to noticed "
                   + _f(tl["end_to_noticed"], 1) + ", noticed to next submit " + _f(tl["noticed_to_next_submit"], 1))
    if out["lost"] or out["duplicated"]:
        typer.echo(f"error: {out['lost']} task(s) lost, {out['duplicated']} duplicated", err=True)
        raise typer.Exit(EXIT_UNFINISHED)


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
    resolve_every: Optional[str] = typer.Option(None, "--resolve-every", metavar="SECONDS", help=_RESOLVE_HELP),
    worker_wait: str = typer.Option("60", "--worker-wait", help="Give up after this many seconds without any worker."),
    json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Run the tasks of TASKFILE with a policy; print per-task results and the summary.

    Exit status 1 (with the count) if tasks are left unfinished — they stay in the journal.
    """
    from ..policies.pull import policy_code
    from .taskfile import run_taskfile

    pf = _float_opt("--prefetch", prefetch, 0.0, lo_open=False)
    ww = _float_opt("--worker-wait", worker_wait, 0.0)
    re_ = _float_opt("--resolve-every", resolve_every, 0.0)
    if policy is not None:
        policy_code(policy)
    cb, stop = _progress_view(not json_out and stdout_is_tty())
    try:
        with _interruptible():
            res, rows = run_taskfile(taskfile, policy=policy, scheduler=scheduler,
                                     journal=None if journal is None else str(journal), processes=processes,
                                     prefetch=pf, worker_wait=ww, resolve_every=re_, progress=cb)
    finally:
        stop()
    out = res.as_dict()
    out["lambda"] = out["lam"]
    out["results"] = rows
    if json_out:
        emit_json(out)
        _finish(out)
        return
    for r in rows:
        typer.echo(f"task {r['id']}: {r.get('state', '')} {r['value']!r:.200}")
    typer.echo(f"{res.policy}: submitted {res.submitted}, completed {res.completed}, failed {res.failed}, "
               f"lost {res.lost}, resubmitted {res.resubmitted}; mean response {_f(out['mean_response'])} s")
    _finish(out)
