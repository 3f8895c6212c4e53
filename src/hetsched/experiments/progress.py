"""Progress over a whole experiment, and the rows finished so far (for an interrupted run)."""

from __future__ import annotations

from typing import Any

from ..progress import Progress

__all__ = ["Tracker"]


class Tracker:
    """Progress over the cells of one experiment (:class:`hetsched.progress.Progress`, in cells),
    and the rows finished so far.

    ``total(n)`` announces the number of cells; ``done(rows)`` records the rows
    of one finished cell. On a terminal one bar with an ETA runs over all
    cells; otherwise one plain log line per cell. ``rows`` keeps what finished,
    so an interrupted run can still write it.
    """

    def __init__(self, enabled: bool = True, label: str = "") -> None:
        self.enabled = enabled
        self.label = label
        self.rows: list[dict[str, Any]] = []
        self.progress = Progress(label or "cells", enabled=enabled, unit="cell", lines=True)

    @property
    def n_total(self) -> int | None:
        return self.progress.total

    @property
    def n_done(self) -> int:
        return self.progress.done

    def total(self, n: int) -> None:
        self.progress.set_total(n)

    def done(self, rows: dict[str, Any] | list[dict[str, Any]], label: str = "") -> None:
        rows = [rows] if isinstance(rows, dict) else list(rows)
        self.rows.extend(rows)
        self.progress.advance(1, label)

    def close(self) -> None:
        self.progress.close()
