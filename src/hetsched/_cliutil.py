"""Typer glue for command-line modules: argument callbacks, error handling, output.

What a user gets for bad input (docs/input-validation.md): one line on stderr,
``error: ...`` naming the option or the file and field with the bad value, and
exit code 2 -- never a traceback, a hang or a silent wrong answer.

* **Arguments** are checked by the callbacks below before a command runs; each
  calls a check of :mod:`hetsched.validation` (where the library's checks and
  the limits live) and turns its error into click's ``BadParameter``:
  :func:`finite_float` / :func:`positive_float` (NaN and inf refused, ranges),
  :func:`bounded_int` / :func:`nonneg_int` (a stated cap), :func:`seed_int`
  (``[0, 2**63)``), :func:`choice` (case-insensitive, lists the valid names) and
  :func:`regular_file` (no directory, FIFO or device; size cap).
  Use them as ``typer.Option(..., callback=positive_float(max=1e12))``.
* **Resource limits** (:data:`~hetsched.validation.MAX_REPS`, ...,
  :func:`~hetsched.validation.check_event_budget`) are defined in
  :mod:`hetsched.validation` and re-exported here for the CLI modules.
* **Errors**: every command body runs inside :func:`guard`, which turns a
  :class:`~hetsched.errors.HetschedError` into one line and exit 2, and also the
  known resource categories (``MemoryError`` -> "out of memory: ...",
  ``RecursionError``, ``OSError`` with its path). Any other exception is a bug:
  one line ``internal error: ...`` with exit code 70 (and the real traceback
  with ``HETSCHED_DEBUG=1``). numpy ``RuntimeWarning`` s are not printed.
* :func:`run` runs the typer app so that usage errors (unknown option, a value
  click cannot parse) are one line and exit 2 as well.
* **Terminal output is inert**: :func:`inert` (from :mod:`hetsched.validation`)
  escapes control characters (and, for rich, markup) of user-supplied text;
  :func:`run` routes stdout/stderr through it, so no command can print a raw
  ``ESC``; rich tables and bars draw on the raw stream with escaped text.

Heavy imports (numba kernels, solvers) belong inside the command functions so
that ``hetsched --help`` stays fast.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import warnings
from typing import Any, Callable, Iterable, Sequence, TypeVar

import typer

from .errors import HetschedError
# The checks and limits live in the validation layer (no typer there); CLI modules keep importing
# them from here as before, so they are re-exported.
from .validation import (MAX_EVENTS, MAX_HORIZON, MAX_REPS, MAX_WORKERS, SEED_MAX, InertStream,  # noqa: F401
                         check_budget, check_choice, check_event_budget, check_file, check_float, check_int,
                         estimated_events, inert, raw_stream)

F = TypeVar("F", bound=Callable[..., Any])

EXIT_USAGE = 2
EXIT_BUG = 70  # EX_SOFTWARE: an exception hetsched does not expect (a bug)


def debug() -> bool:
    return os.environ.get("HETSCHED_DEBUG", "") not in ("", "0")


def fail(message: str) -> None:
    """Print one clear error line and exit with code 2."""
    typer.echo(f"error: {_one_line(message)}", err=True)
    raise typer.Exit(EXIT_USAGE)


def _one_line(message: str, limit: int = 2000) -> str:
    s = " ".join(str(message).split())
    return s if len(s) <= limit else s[: limit - 3] + "..."


def _describe_oserror(exc: OSError) -> str:
    where = exc.filename if exc.filename is not None else ""
    what = exc.strerror or str(exc) or type(exc).__name__
    if where != "":
        return f"{where}: {what}"
    return f"{what} ({type(exc).__name__})"


def guard(fn: F) -> F:
    """Decorator: user errors and resource failures become one line and exit code 2."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with warnings.catch_warnings():
            if not debug():
                # numpy's divide/overflow/invalid warnings say nothing a user can act on,
                # nor does Dask's "Port 8787 is already in use" of a local cluster
                warnings.simplefilter("ignore", RuntimeWarning)
                warnings.filterwarnings("ignore", message=r"(?s).*Port \d+ is already in use")
            try:
                return fn(*args, **kwargs)
            except HetschedError as exc:
                fail(str(exc))
            except (typer.Exit, typer.Abort):
                raise
            except KeyboardInterrupt:
                typer.echo("interrupted", err=True)
                raise typer.Exit(130)
            except MemoryError:
                if debug():
                    raise
                fail("out of memory: the input needs more memory than this machine has; reduce its size "
                     "(limits: docs/input-validation.md)")
            except RecursionError:
                if debug():
                    raise
                fail("input nested too deeply (Python's recursion limit)")
            except OSError as exc:
                if debug():
                    raise
                fail(_describe_oserror(exc))
            except Exception as exc:  # noqa: BLE001 - a bug: say so, in one line
                if debug():
                    raise
                _bug(exc)

    return wrapper  # type: ignore[return-value]


def _bug(exc: BaseException) -> None:
    typer.echo(
        f"internal error: {type(exc).__name__}: {_one_line(str(exc), 300)} -- a bug in hetsched; "
        "run again with HETSCHED_DEBUG=1 for the traceback and report it",
        err=True,
    )
    raise typer.Exit(EXIT_BUG)


# ---------------------------------------------------------------------------
# argument checks (typer/click callbacks)


def _bad(msg: str) -> typer.BadParameter:
    return typer.BadParameter(msg)


def _option_name(param: Any) -> str:
    opts = getattr(param, "opts", None) or []
    longest = max(opts, key=len) if opts else getattr(param, "name", "value")
    return longest


def _callback(check: Callable[[Any, str], Any]) -> Callable:
    def cb(ctx: Any, param: Any, value: Any) -> Any:
        if value is None or getattr(ctx, "resilient_parsing", False):
            return value
        name = _option_name(param)
        try:
            if isinstance(value, (list, tuple)):
                return type(value)(check(v, name) for v in value)
            return check(value, name)
        except HetschedError as exc:
            raise _bad(str(exc).removeprefix(f"{name}: ")) from None

    return cb


def finite_float(lo: float | None = None, hi: float | None = None, *, lo_open: bool = False,
                 hi_open: bool = False) -> Callable:
    """Callback: a finite float in the range (NaN, inf refused)."""
    return _callback(lambda v, n: check_float(v, n, lo, hi, lo_open=lo_open, hi_open=hi_open))


def positive_float(max: float = MAX_HORIZON) -> Callable:  # noqa: A002 - reads like the math
    """Callback: a finite float ``0 < v <= max``."""
    return finite_float(0.0, max, lo_open=True)


def bounded_int(lo: int, hi: int) -> Callable:
    """Callback: an integer in ``[lo, hi]`` (the cap is part of the message)."""
    return _callback(lambda v, n: check_int(v, n, lo, hi))


def nonneg_int(max: int) -> Callable:  # noqa: A002
    """Callback: an integer in ``[0, max]``."""
    return bounded_int(0, max)


def seed_int() -> Callable:
    """Callback: a seed of ``numpy.random.SeedSequence`` in ``[0, 2**63)``."""
    return bounded_int(0, SEED_MAX)


def choice(names: Iterable[str]) -> Callable:
    """Callback: one of ``names`` (case-insensitive), returned in its canonical spelling."""
    names = tuple(names)
    return _callback(lambda v, n: check_choice(v, n, names))


def regular_file(*, must_exist: bool = True, max_bytes: int | None = None) -> Callable:
    """Callback: :func:`check_file` (e.g. ``--swf``, ``--journal``)."""
    return _callback(lambda v, n: check_file(v, n, must_exist=must_exist, max_bytes=max_bytes))


# ---------------------------------------------------------------------------
# running the app and printing


def _click_classes(name: str) -> tuple[type, ...]:
    """``name`` from click and from the copy of click that newer typer versions vendor."""
    import importlib

    out = []
    for modname in ("click.exceptions", "typer._click.exceptions", "typer.exceptions"):
        try:
            cls = getattr(importlib.import_module(modname), name, None)
        except ImportError:
            continue
        if isinstance(cls, type) and cls not in out:
            out.append(cls)
    return tuple(out)


def _where(command: Any, args: Sequence[str], ctx: Any) -> str:
    """`` mdp coalloc``: the command a usage error is about, for "see hetsched ... --help".

    click attaches parser errors (an option missing its value, a flag given a value)
    to the group's context; the command named on the line is then the deeper one."""
    path = ctx.command_path.removeprefix("hetsched").strip().split() if ctx is not None else []
    walked, cmd = [], command
    for a in args:
        if a.startswith("-"):
            continue
        sub = getattr(cmd, "commands", {}).get(a) if hasattr(cmd, "commands") else None
        if sub is None:
            break
        walked.append(a)
        cmd = sub
    best = walked if len(walked) > len(path) else path
    return (" " + " ".join(best)) if best else ""


def _no_help_on_empty(command: Any) -> None:
    """A group called without its command fails with click's "Missing command." (one line, below)
    instead of printing its help page: typer's ``no_args_is_help`` prints it while building the error."""
    if hasattr(command, "commands"):
        command.no_args_is_help = False
        for sub in command.commands.values():
            _no_help_on_empty(sub)


def _usage_message(exc: BaseException) -> str:
    """click's message, with the refused value when typer's pydantic coercion left it out
    (``Invalid value for '--reps': Input should be a valid integer, ...`` gets ``, got 'abc'``),
    and a missing command with the names to choose from."""
    msg = exc.format_message()  # type: ignore[attr-defined]
    ctx = getattr(exc, "ctx", None)
    grp = getattr(ctx, "command", None)
    if msg.strip() == "Missing command." and hasattr(grp, "list_commands"):
        return f"missing command; expected one of {', '.join(grp.list_commands(ctx))}"
    cause = exc.__cause__
    errors = getattr(cause, "errors", None)
    if callable(errors):
        try:
            errs = errors()
        except Exception:  # noqa: BLE001 - only an embellishment
            errs = []
        if errs and "input" in errs[0]:
            value = errs[0]["input"]
            shown = repr(value) if len(repr(value)) <= 200 else repr(value)[:197] + "..."
            msg = f"{msg.rstrip('.')}, got {shown}"
    return msg


def inert_output() -> None:
    """Route ``sys.stdout``/``sys.stderr`` through :func:`inert` (the command line's terminal output is
    inert: control characters in any printed string are escaped); rich consoles draw on the raw stream
    (:func:`hetsched.validation.raw_stream`) and are given text escaped with ``inert(..., markup=True)``."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, InertStream):
            setattr(sys, name, InertStream(stream))


def _terminate_as_interrupt() -> None:
    """SIGTERM (``kill``, a batch system's time limit) stops a command as Ctrl-C does: what finished is
    written, marked interrupted, exit 130. Only in this process: a forked worker keeps the default."""
    import signal

    main_pid = os.getpid()

    def handler(signum: int, frame: Any) -> None:  # noqa: ARG001
        if os.getpid() != main_pid:  # a forked worker: die as before
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        raise KeyboardInterrupt

    try:
        if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
            signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread
        pass
    import threading
    from concurrent.futures import InvalidStateError
    from concurrent.futures.process import BrokenProcessPool

    def quiet(args: Any) -> None:
        # a worker pool torn down by the signal: its manager thread's error says nothing a user can act on
        if debug() or not isinstance(args.exc_value, (InvalidStateError, BrokenProcessPool, KeyboardInterrupt)):
            threading.__excepthook__(args)

    threading.excepthook = quiet


def run(app: Any, argv: Sequence[str] | None = None) -> int:
    """Run a typer app; usage errors are one line and exit 2. Returns the exit code.

    Everything printed goes through :func:`inert_output` (no control character reaches the terminal);
    SIGTERM is handled as Ctrl-C (:func:`_terminate_as_interrupt`)."""
    inert_output()
    _terminate_as_interrupt()
    command = typer.main.get_command(app)
    _no_help_on_empty(command)
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        rv = command.main(args=args, prog_name="hetsched", standalone_mode=False)
    except _click_classes("Exit") as exc:
        return int(getattr(exc, "exit_code", 0))
    except _click_classes("NoArgsIsHelpError") as exc:  # a group without its command: a missing argument
        ctx = getattr(exc, "ctx", None)
        where = _where(command, args, ctx)
        grp = ctx.command if ctx is not None else command
        names = grp.list_commands(ctx) if ctx is not None and hasattr(grp, "list_commands") else []
        typer.echo(f"error: missing command{'; expected one of ' + ', '.join(names) if names else ''} "
                   f"(see hetsched{where} --help)", err=True)
        return EXIT_USAGE
    except _click_classes("UsageError") as exc:
        ctx = getattr(exc, "ctx", None)
        where = _where(command, args, ctx)
        typer.echo(f"error: {_one_line(_usage_message(exc))} (see hetsched{where} --help)", err=True)
        return EXIT_USAGE
    except _click_classes("ClickException") as exc:
        typer.echo(f"error: {_one_line(exc.format_message())}", err=True)
        return int(getattr(exc, "exit_code", 1))
    except _click_classes("Abort") + (KeyboardInterrupt,):
        typer.echo("interrupted", err=True)
        return 130
    except Exception as exc:  # noqa: BLE001 - raised outside any guarded command
        if debug():
            raise
        try:
            _bug(exc)
        except typer.Exit as e:
            return e.exit_code
    return rv if isinstance(rv, int) and not isinstance(rv, bool) else 0


def emit_json(obj: Any) -> None:
    """Print ``obj`` as JSON (numpy values converted, NaN/inf as null)."""
    from .results import jsonable  # here, not at the top: it imports numpy, which `--help` does not need

    typer.echo(json.dumps(jsonable(obj), indent=2))


def stdout_is_tty() -> bool:
    return sys.stdout.isatty()
