"""Checks and limits of user input, shared by the library and the command line.

One validation layer: :mod:`hetsched.system`, :mod:`hetsched.scenarios`,
:mod:`hetsched.traces`, :mod:`hetsched.experiments`, the runner and the CLI
all check input with the functions below, which raise the project's errors
(:class:`~hetsched.errors.HetschedError`, or the subclass a caller passes as
``error``) with one line naming the field or option and the bad value. Nothing
here imports typer: the command line turns these errors into usage errors in
:mod:`hetsched._cliutil` (its callbacks call these checks).

* Values: :func:`check_int`, :func:`check_float` (NaN and inf refused, open or
  closed ranges), :func:`check_choice` (case-insensitive, lists the valid
  names), :func:`show` (a short ``repr`` of a bad value for a message).
* Files: :func:`check_file` -- the one regular-file check (no directory, FIFO
  or device; readable; a size cap), so that no reader can block on a pipe or
  read ``/dev/zero`` until memory runs out (:mod:`hetsched.safeio` reads and
  writes files safely on top of it).
* Limits of a run: :data:`MAX_REPS`, :data:`MAX_HORIZON`, :data:`MAX_WORKERS`,
  :data:`MAX_EVENTS`, :data:`SEED_MAX`; :func:`check_event_budget`
  (replications x horizon x event rate) and :func:`check_budget` (states,
  bytes, jobs) refuse a run up front with the estimate. Limits that belong to
  one model stay beside it (e.g. ``hetsched.system.MAX_MACHINES``); the
  reasons for each are in ``docs/input-validation.md``.
"""

from __future__ import annotations

import io
import math
import os
import re
import stat
from typing import Any, Sequence

from .errors import HetschedError

__all__ = [
    "MAX_REPS", "MAX_HORIZON", "MAX_WORKERS", "MAX_EVENTS", "SEED_MAX", "MAX_PATH_CHARS",
    "show", "range_text", "check_int", "check_float", "check_choice", "check_file",
    "check_budget", "check_event_budget", "estimated_events", "inert", "InertStream", "raw_stream",
]

# Resource limits of a run (docs/input-validation.md)
MAX_REPS = 10_000
MAX_HORIZON = 1e12
MAX_WORKERS = 1_024
MAX_EVENTS = 2e10  # estimated events of one command (about an hour at ~5e6 events/s)
SEED_MAX = 2**63 - 1  # numpy.random.SeedSequence takes any int >= 0; 64-bit keeps it one machine word
MAX_PATH_CHARS = 4096


def show(x: Any) -> str:
    """Short ``repr`` for messages (long values cut, huge integers by digit count)."""
    if hasattr(x, "item") and callable(x.item) and getattr(x, "shape", None) == ():  # numpy scalar
        x = x.item()
    if isinstance(x, int) and not isinstance(x, bool) and abs(x) > 10**30:
        return f"an integer of {len(str(abs(x)))} digits"
    import reprlib

    r = reprlib.Repr()
    r.maxstring, r.maxother, r.maxlist, r.maxlevel = 60, 60, 8, 3
    return r.repr(x)


def pydantic_path(loc: Sequence[Any], tags: Any = ()) -> str:
    """A pydantic error location as the field's path (``groups[2].rates``), without pydantic's union and
    validator tags (``tags``, ``function-…``, ``list[…]``); a path over 120 characters is shortened."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in tags or "[" in str(part) or str(part).startswith("function-"):
            continue
        else:
            out += ("." if out else "") + str(part)
    return f"{out[:60]}...{out[-40:]}" if len(out) > 120 else out


#: what a value of the wrong type was expected to be, by pydantic error type
_PYDANTIC_EXPECTED = {
    "finite_number": "a finite number", "float_type": "a number", "float_parsing": "a number",
    "int_type": "an integer", "int_parsing": "an integer", "int_from_float": "an integer",
    "string_type": "a string", "str_type": "a string", "list_type": "a list",
    "dict_type": "a table", "model_type": "a table", "model_attributes_type": "a table",
}


def pydantic_type_message(typ: str, field: str, got: str, ctx: dict) -> str | None:
    """The one-line message of a pydantic type or choice error (``field: expected …, got …``), or None
    when ``typ`` is another kind of error (the caller words those)."""
    if typ in _PYDANTIC_EXPECTED:
        return f"{field}: expected {_PYDANTIC_EXPECTED[typ]}, got {got}"
    if typ == "literal_error":
        return f"{field}: expected one of {ctx.get('expected', '?')}, got {got}"
    return None


def range_text(lo: Any, hi: Any, lo_open: bool = False, hi_open: bool = False) -> str:
    """``">= 1 and <= 10,000"``: the range a value must lie in, as messages print it."""
    def fmt(x: Any) -> str:
        return f"{x:,}" if isinstance(x, int) else f"{x:g}"

    parts = []
    if lo is not None:
        parts.append(f"{'>' if lo_open else '>='} {fmt(lo)}")
    if hi is not None:
        parts.append(f"{'<' if hi_open else '<='} {fmt(hi)}")
    return " and ".join(parts)


def check_float(value: Any, name: str, lo: float | None = None, hi: float | None = None, *,
                lo_open: bool = False, hi_open: bool = False, error: type[HetschedError] = HetschedError) -> float:
    """A finite float within ``[lo, hi]`` (open ends with ``lo_open``/``hi_open``); else ``error``."""
    try:
        v = float(value)
    except (TypeError, ValueError, OverflowError):
        raise error(f"{name}: expected a number, got {value!r}") from None
    if not math.isfinite(v):
        raise error(f"{name}: expected a finite number, got {value!r}")
    if lo is not None and (v <= lo if lo_open else v < lo) or hi is not None and (v >= hi if hi_open else v > hi):
        raise error(f"{name}: must be {range_text(lo, hi, lo_open, hi_open)}, got {value!r}")
    return v


def check_int(value: Any, name: str, lo: int | None = None, hi: int | None = None, *,
              error: type[HetschedError] = HetschedError) -> int:
    """An integer within ``[lo, hi]`` (``"1e3"`` and ``3.0`` are read as integers); else ``error``."""
    v: Any = value
    if isinstance(v, bool):
        raise error(f"{name}: expected an integer, got {value!r}")
    if isinstance(v, str):
        s = v.strip()
        try:
            v = int(s)
        except ValueError:
            try:
                f = float(s)
            except ValueError:
                raise error(f"{name}: expected an integer, got {value!r}") from None
            v = f
    if isinstance(v, float):
        if not math.isfinite(v) or v != int(v):
            raise error(f"{name}: expected an integer, got {value!r}")
        v = int(v)
    if not isinstance(v, int):
        raise error(f"{name}: expected an integer, got {value!r}")
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        shown = v if abs(v) < 10**30 else f"an integer of {len(str(abs(v)))} digits"
        raise error(f"{name}: must be {range_text(lo, hi)}, got {shown}")
    return v


def check_choice(value: Any, name: str, names: Sequence[str], *, error: type[HetschedError] = HetschedError) -> str:
    """``value`` matched case-insensitively against ``names``; the message lists them."""
    s = str(value).strip().lower()
    for n in names:
        if n.lower() == s:
            return n
    raise error(f"{name}: expected one of {', '.join(names)}, got {value!r}")


def check_file(value: Any, name: str, *, must_exist: bool = True, max_bytes: int | None = None,
               kind: str = "file", show_path: bool = True, error: type[HetschedError] = HetschedError) -> str:
    """A path to a regular file (not a directory, FIFO or device), readable, at most ``max_bytes``.

    The one regular-file check of the project (option values, scenario files,
    SWF logs, task files). Checks only: nothing is opened, so a FIFO cannot
    hang it and a device cannot be read. With ``must_exist=False`` a missing
    file is allowed (it will be created) but its folder must exist.

    Messages start with ``name`` (the option or file label) and, with
    ``show_path``, the path; ``kind`` names what was expected (``"scenario
    file"``): ``NAME: PATH: no such KIND``, ``NAME: PATH: is a folder, not a
    KIND``, ``NAME: PATH: not a regular file (a pipe or a device?), refused``,
    ``NAME: PATH: cannot read: Permission denied``, ``NAME: PATH: file too large
    (N bytes, over the limit of MAX)``. Returns the path as a string.
    :func:`hetsched.safeio.check_input` is this check with the file's label as ``NAME``.
    """
    s = os.fspath(value) if isinstance(value, (str, os.PathLike)) else None
    if isinstance(s, bytes) or not s or "\x00" in s or len(s) > MAX_PATH_CHARS:
        raise error(f"{name}: not a file path: {str(value)[:80]!r}")
    head = f"{name}: {s}" if show_path else name
    try:
        st = os.stat(s)
    except (FileNotFoundError, NotADirectoryError):
        if must_exist:
            raise error(f"{head}: no such {kind}") from None
        parent = os.path.dirname(os.path.abspath(s))
        if not os.path.isdir(parent):
            raise error(f"{name}: folder does not exist: {parent}") from None
        return s
    except (OSError, ValueError) as exc:
        raise error(f"{head}: cannot open: {getattr(exc, 'strerror', None) or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise error(f"{head}: is a folder, not a {kind}")
    if not stat.S_ISREG(st.st_mode):
        raise error(f"{head}: not a regular file (a pipe or a device?), refused")
    if not os.access(s, os.R_OK):
        raise error(f"{head}: cannot read: Permission denied")
    if max_bytes is not None and st.st_size > max_bytes:
        raise error(f"{head}: file too large ({st.st_size:,} bytes, over the limit of {max_bytes:,})")
    return s


def check_budget(amount: float, limit: float, what: str, unit: str) -> None:
    """Refuse up front when an estimated ``amount`` of ``unit`` (states, bytes, jobs) exceeds ``limit``."""
    if not math.isfinite(amount) or amount > limit:
        raise HetschedError(f"{what}: about {amount:.3g} {unit} estimated, over the limit of {limit:.3g} "
                            "(limits: docs/input-validation.md)")


def check_event_budget(events: float, what: str, limit: float = MAX_EVENTS) -> None:
    """Refuse a run whose estimated number of events exceeds ``limit`` (message gives the estimate)."""
    if not math.isfinite(events) or events > limit:
        raise HetschedError(
            f"{what}: about {events:.3g} events estimated, over the limit of {limit:.3g} "
            "(lower --reps or --horizon; limits: docs/input-validation.md)"
        )


def estimated_events(total_rate: float, horizon: float, reps: int) -> float:
    """Events of ``reps`` replications of ``horizon`` time units: 2 per task (arrival, completion)."""
    return 2.0 * float(total_rate) * float(horizon) * int(reps)


# --------------------------------------------------------------------------- terminal output
#: C0 controls (but newline and tab), DEL, C1 controls, and the Unicode line/paragraph separators and
#: bidirectional overrides that can disguise text on a terminal
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _escape_char(m: "re.Match[str]") -> str:
    c = ord(m.group(0))
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def inert(value: Any, *, markup: bool = False, newlines: bool = True) -> str:
    """``value`` as text that does nothing on a terminal: every control character (``ESC``, ``BEL``,
    ``CR``...) written as a visible escape (``\\x1b``); with ``markup``, rich markup escaped too
    (``[bold]`` printed as is, never interpreted); without ``newlines``, newlines and tabs escaped too.

    The one helper for printing user-supplied text (scenario titles and names, file contents, paths);
    the command line also runs its whole output through it (:class:`InertStream`).
    """
    s = _CONTROL.sub(_escape_char, str(value))
    if not newlines:
        s = s.replace("\n", "\\n").replace("\t", "\\t")
    if markup:
        from rich.markup import escape

        s = escape(s)
    return s


class InertStream(io.TextIOBase):
    """A text stream that writes through :func:`inert`: nothing printed can move the cursor, clear the
    screen, retitle the window or ring the bell. ``raw`` is the wrapped stream (for rich, which draws
    its own tables and bars and is given only escaped text)."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    def write(self, s: str) -> int:  # type: ignore[override]
        if not isinstance(s, str):  # a text stream (click probes with b"" to tell binary from text)
            raise TypeError(f"write() argument must be str, not {type(s).__name__}")
        self.raw.write(inert(s))
        return len(s)

    def flush(self) -> None:
        self.raw.flush()

    def isatty(self) -> bool:
        return self.raw.isatty()

    def fileno(self) -> int:
        return self.raw.fileno()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.raw, "encoding", "utf-8")

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return getattr(self.raw, "errors", None)


def raw_stream(stream: Any) -> Any:
    """The stream under an :class:`InertStream` (rich consoles write styled output there)."""
    return stream.raw if isinstance(stream, InertStream) else stream
