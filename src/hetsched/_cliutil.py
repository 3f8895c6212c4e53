"""Shared helpers for command-line modules: error handling and output.

Every command body runs inside :func:`guard`, which turns a
:class:`~hetsched.errors.HetschedError` into one line on stderr and exit code 2
(never a traceback). Heavy imports (numba kernels, solvers) belong inside the
command functions so that ``hetsched --help`` stays fast.
"""

from __future__ import annotations

import functools
import json
import sys
from typing import Any, Callable, TypeVar

import typer

from .errors import HetschedError

F = TypeVar("F", bound=Callable[..., Any])

EXIT_USAGE = 2


def fail(message: str) -> None:
    """Print one clear error line and exit with code 2."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(EXIT_USAGE)


def guard(fn: F) -> F:
    """Decorator: user errors become one line and exit code 2."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except HetschedError as exc:
            fail(str(exc))
        except KeyboardInterrupt:
            typer.echo("interrupted", err=True)
            raise typer.Exit(130)

    return wrapper  # type: ignore[return-value]


def emit_json(obj: Any) -> None:
    """Print ``obj`` as JSON (numpy values converted, NaN/inf as null)."""
    from .experiments import _jsonable

    typer.echo(json.dumps(_jsonable(obj), indent=2))


def stdout_is_tty() -> bool:
    return sys.stdout.isatty()
