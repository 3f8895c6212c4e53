"""One progress mechanism for the whole project: :class:`Progress`.

Every long computation that reports progress (the replications of a run in
:mod:`hetsched.runner`, the cells of an experiment in
:mod:`hetsched.experiments`, the jobs of a MUSCLE schedule) uses this class,
so progress looks and behaves the same everywhere:

* on a terminal (stderr is a TTY): one rich bar on stderr -- description, bar,
  ``done/total``, elapsed time and, when the total is known, the time left --
  that disappears when the work ends (``transient``); it appears only once the
  work has lasted ``delay`` seconds, so short calls print nothing;
* elsewhere (a log file, a pipe, CI): nothing, or with ``lines=True`` one plain
  line per step, ``LABEL: UNIT k/n done (NOTE) after S s, ETA E s``;
* ``enabled=False`` (``--json`` output, library calls with ``progress=False``)
  prints nothing at all, and the counts are still kept.

rich is imported only when a bar is drawn.
"""

from __future__ import annotations

import sys
import time
from typing import Any, Callable

__all__ = ["Progress"]


class Progress:
    """Progress of ``total`` steps (known now, later with :meth:`set_total`, or never).

    Parameters
    ----------
    label : str
        Text before the bar (or at the start of each plain line).
    total : int, optional
        Number of steps, if known.
    enabled : bool
        ``False``: print nothing.
    delay : float
        Seconds of work before a bar appears (0: at the first step).
    unit : str
        What a step is (``"cell"``, ``"jobs"``): the plain lines and the bar name it.
    lines : bool
        Off a terminal, print one line per step (else nothing).
    stream : file, optional
        Where to write (default ``sys.stderr``).
    """

    def __init__(self, label: str = "", total: int | None = None, *, enabled: bool = True, delay: float = 0.0,
                 unit: str = "", lines: bool = False, stream: Any = None) -> None:
        self.label, self.enabled, self.delay, self.unit, self.lines = label, enabled, delay, unit, lines
        self.stream = stream
        self.total: int | None = None if total is None else int(total)
        self.done = 0
        self.t0 = time.perf_counter()
        self._bar: Any = None
        self._task: Any = None

    # ------------------------------------------------------------------ counting
    def set_total(self, total: int) -> None:
        """Announce (or change) the number of steps."""
        self.total = int(total)
        if self._bar is not None:
            self._bar.update(self._task, total=self.total)
        self._show()

    def advance(self, n: int = 1, note: str = "") -> None:
        """``n`` more steps are done (``note``: what finished, for the plain lines)."""
        self.done += int(n)
        self._show(note, line=n > 0)

    def update(self, done: int, total: int | None = None) -> None:
        """Absolute form: ``done`` steps (of ``total``, if given) are done. Usable as a
        ``callback(done, total)`` of a long function."""
        if total is not None and total != self.total:
            self.total = int(total)
            if self._bar is not None:
                self._bar.update(self._task, total=self.total)
        self.done = int(done)
        self._show()

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    # ------------------------------------------------------------------ output
    def _out(self):
        return self.stream if self.stream is not None else sys.stderr

    def _terminal(self) -> bool:
        try:
            return bool(self._out().isatty())
        except (AttributeError, ValueError):  # a closed or odd stream
            return False

    def _show(self, note: str = "", line: bool = False) -> None:
        if not self.enabled:
            return
        if not self._terminal():
            if self.lines and line:
                self._line(note)
            return
        if self._bar is None:
            finished = self.total is not None and self.done >= self.total
            if self.elapsed() < self.delay or finished:
                return
            self._start()
        self._bar.update(self._task, completed=self.done)

    def _line(self, note: str) -> None:
        tot = f"/{self.total}" if self.total else ""
        el = self.elapsed()
        eta = ""
        if self.total and self.done:
            eta = f", ETA {el / self.done * (self.total - self.done):.0f} s"
        what = f"{self.unit} " if self.unit else ""
        print(f"{self.label}: {what}{self.done}{tot} done{(' (' + note + ')') if note else ''}"
              f" after {el:.1f} s{eta}", file=self._out(), flush=True)

    def _start(self) -> None:
        from rich.console import Console
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress as RichProgress, TextColumn,
                                   TimeElapsedColumn, TimeRemainingColumn)

        cols: list = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn()]
        if self.unit:
            cols.append(TextColumn(self.unit))
        cols += [TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn()]
        from .validation import inert, raw_stream

        # rich draws the bar on the raw stream; the label (user text: a scenario id...) is escaped
        self._bar = RichProgress(*cols, console=Console(file=raw_stream(self._out())), transient=True)
        self._bar.start()
        self._task = self._bar.add_task(inert(self.label or "progress", markup=True, newlines=False),
                                        total=self.total)

    def close(self) -> None:
        """Remove the bar (idempotent)."""
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def callback(self) -> Callable[[int, int], None]:
        """``f(done, total)`` feeding this progress (for functions that take a progress callback)."""
        return self.update

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
