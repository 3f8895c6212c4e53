"""The one row convention of every experiment.

A row keeps the paper's column names for the paper's layout (``Qbar``, ``W``,
``MCP``, ``cost``, ``SRT``, ...) and carries the same uniform columns for its
main metric, so the report and any other tool read every experiment alike:

``metric``
    the name of the row's main metric column (e.g. ``"Qbar"``);
``value``, ``ci_low``, ``ci_high``, ``rel_half_width``
    the metric's estimate, its 95 % confidence interval and the interval's
    half-width over the estimate (a fraction); ``None`` where there is none;
``stable``
    ``False`` for an unstable configuration (queues grew through the run, or
    the offered load is at or above capacity): then ``value``, the
    paper-named column, the CI and ``rel_half_width`` are ``None``, and the
    number the run produced is in
``value_untrusted``
    (``None`` for a stable row);
``printed``, ``rel_error``
    where the paper printed a value for the row: that value and
    ``(value - printed) / printed``.

:func:`metric` adds these columns from numbers, :func:`sim_metric` from a
simulation result (:class:`hetsched.sim.core.result.SimResult` or anything
with ``mean``, ``ci``, ``unstable``, ``mean_untrusted``, ``rel_half_width``).
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

__all__ = ["COLUMNS", "metric", "sim_metric", "is_stable"]

#: the uniform columns, in the order they are added
COLUMNS = ("metric", "value", "ci_low", "ci_high", "rel_half_width", "stable", "value_untrusted", "printed",
           "rel_error")


def _f(x: Any) -> float | None:
    """A finite float, or ``None``."""
    if x is None or isinstance(x, bool):
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def metric(row: dict[str, Any], name: str, value: Any, *, ci: Sequence[Any] | None = None,
           rel_half_width: Any = None, stable: bool = True, untrusted: Any = None,
           printed: Any = None) -> dict[str, Any]:
    """Set the main metric ``name`` of ``row`` and the uniform columns; return ``row`` (changed in place).

    ``value`` is the estimate (or, with ``stable=False``, the number the run
    produced, unless ``untrusted`` gives it); ``ci`` its ``(low, high)``;
    ``rel_half_width`` defaults to half the CI's width over ``|value|``;
    ``printed`` is the paper's value for this row, if it printed one.
    """
    stable = bool(stable)
    v = _f(value)
    lo, hi = (ci if ci is not None else (None, None))
    lo, hi = _f(lo), _f(hi)
    if rel_half_width is None and v not in (None, 0.0) and lo is not None and hi is not None:
        rel_half_width = (hi - lo) / 2.0 / abs(v)
    if stable:
        row[name] = v
        row.update(metric=name, value=v, ci_low=lo, ci_high=hi, rel_half_width=_f(rel_half_width), stable=True,
                   value_untrusted=None)
    else:
        row[name] = None
        row.update(metric=name, value=None, ci_low=None, ci_high=None, rel_half_width=None, stable=False,
                   value_untrusted=_f(untrusted) if untrusted is not None else v)
    p = _f(printed)
    if printed is not None:
        row["printed"] = p
        row["rel_error"] = (row["value"] - p) / p if row["value"] is not None and p else None
    return row


def sim_metric(row: dict[str, Any], name: str, res: Any, *, printed: Any = None) -> dict[str, Any]:
    """:func:`metric` from a simulation result: its ``mean``, ``ci``, ``rel_half_width``; an
    unstable result's number is its ``mean_untrusted``."""
    unstable = bool(getattr(res, "unstable", False))
    ci = getattr(res, "ci", None)
    return metric(row, name, getattr(res, "mean", None), ci=ci, rel_half_width=getattr(res, "rel_half_width", None),
                  stable=not unstable, untrusted=getattr(res, "mean_untrusted", None) if unstable else None,
                  printed=printed)


def is_stable(row: Mapping[str, Any]) -> bool:
    """Whether a row is stable (rows without the convention: stable unless marked ``unstable``)."""
    if "stable" in row:
        return row["stable"] is not False
    return row.get("unstable") is not True
