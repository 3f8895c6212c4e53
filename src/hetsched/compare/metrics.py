"""What a comparison measures: the metrics, and one value per replication (or trace window).

A metric is a number each replication of a model reports (``Q``, ``W``,
``cost``, ``messages``); every metric here is "lower is better". The paired
statistics of :mod:`.stats` need one value per replication and policy:
:func:`replication_values` gives them. For a trace replay the "replications"
are the windows of one replay of the log, and :func:`window_values` is the one
place that turns a replay into per-window values (batch means today), so that
a sounder window estimate changes this function only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ModelError

__all__ = ["Metric", "METRICS", "available_metrics", "replication_values", "window_values", "is_trace"]


@dataclass(frozen=True)
class Metric:
    name: str
    description: str
    unit: str


#: every metric a comparison may rank by (all "lower is better"); a model offers a subset
METRICS: dict[str, Metric] = {m.name: m for m in (
    Metric("Q", "time-average number in system", "tasks"),
    Metric("W", "mean response time", "time units"),
    Metric("cost", "long-run average cost", "cost per time unit"),
    Metric("messages", "messages per replication", "messages"),
)}

#: metrics each model's replications report (the first is the model's own metric)
MODEL_METRICS: dict[str, tuple[str, ...]] = {
    "mapping": ("Q", "W"),
    "mapping-trace": ("W",),
    "desktop-grid": ("W",),
    "decentral": ("W", "Q", "messages"),
    "coalloc": ("cost",),
}


def is_trace(res) -> bool:
    """True for a trace replay (its "replications" are windows of one log)."""
    return res.extra.get("trace") is not None or "W_windows" in res.extra


def available_metrics(model: str, trace: bool = False) -> tuple[str, ...]:
    """Metrics a model reports per replication (``mapping`` on a trace: ``W`` only)."""
    key = "mapping-trace" if (model == "mapping" and trace) else model
    return MODEL_METRICS.get(key, ())


def window_values(res, metric: str) -> np.ndarray:
    """Per-window values of a trace replay: batch means of the response times over the same
    consecutive windows (equal job counts, in arrival order) for every policy."""
    if metric != "W":
        raise ModelError(f"metrics: a trace replay measures W per window, not {metric!r}")
    vals = res.extra.get("W_windows")
    if vals is None:  # windows replayed independently: one replication per window
        return np.asarray([r.get("W", np.nan) for r in res.replications], float)
    return np.asarray(vals, float)


def replication_values(res, metric: str) -> np.ndarray:
    """One value of ``metric`` per replication of the :class:`~hetsched.sim.core.result.SimResult` ``res``
    (per window for a trace replay, :func:`window_values`); NaN where a replication has none."""
    if is_trace(res):
        return window_values(res, metric)
    out = []
    for r in res.replications:
        v = r.get(metric)
        out.append(np.nan if v is None else float(v))
    return np.asarray(out, float)
