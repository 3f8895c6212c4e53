"""What a comparison measures: the metrics, and one value per replication (or trace window).

A metric is a number each replication of a model reports (``Q``, ``W``,
``cost``, ``messages``); every metric here is "lower is better". The paired
statistics of :mod:`.stats` need one value per replication and policy:
:func:`replication_values` gives them. For a trace replay the "replications"
are the windows of one replay of the log: :func:`trace_estimate` gives a
policy's estimate of a metric (:mod:`hetsched.traces.estimate`: batch means with
the window count chosen by tests of independence and normality, or no interval
where the log cannot support one) and :func:`trace_difference` the paired
difference of two policies, estimated on the per-job differences so that both
are cut at the same windows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ModelError

__all__ = ["Metric", "METRICS", "available_metrics", "replication_values", "window_values", "is_trace",
           "trace_estimate", "trace_difference"]


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
    Metric("wait", "mean waiting time (start - arrival)", "time units"),
    Metric("bsld", "mean bounded slowdown max(1, (wait + run) / max(run, 10 s))", "ratio"),
)}

#: metrics each model's replications report (the first is the model's own metric)
MODEL_METRICS: dict[str, tuple[str, ...]] = {
    "mapping": ("Q", "W"),
    "mapping-trace": ("W", "wait", "bsld"),
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


def trace_estimate(res, metric: str, confidence: float = 0.95):
    """The :class:`~hetsched.traces.estimate.WindowEstimate` of ``metric`` of a trace replay ``res``
    (recomputed at ``confidence`` when it differs from the replay's 0.95)."""
    ests = res.extra.get("estimates") or {}
    if metric not in ests:
        raise ModelError(f"metrics: a trace replay measures {', '.join(ests) or 'W'} per window, not {metric!r}")
    est = ests[metric]
    if confidence != est.confidence and est.values is not None:
        from ..traces.estimate import estimate_from_windows, window_estimate

        if res.extra.get("windows_rule") == "independent":
            return estimate_from_windows(est.values, metric=metric, confidence=confidence, jobs=est.jobs)
        return window_estimate(est.values, est.requested, metric=metric, confidence=confidence)
    return est


def trace_difference(a, b, metric: str, confidence: float = 0.95):
    """``(Difference, note)`` of ``mean(a) - mean(b)`` for two replays of one trace: the estimate of the per-job
    differences (:func:`hetsched.traces.estimate.paired_estimate`), so both policies are cut at the same
    windows; an interval the windows cannot support is NaN, with the reason in ``note``."""
    from ..traces.estimate import OK as EST_OK, paired_estimate, window_means
    from .stats import Difference, welch_interval

    from ..traces.estimate import estimate_from_windows

    ea, eb = trace_estimate(a, metric, confidence), trace_estimate(b, metric, confidence)
    if a.extra.get("windows_rule") == "independent":  # one value per replayed window: pairs of windows
        d = estimate_from_windows(ea.values - eb.values, metric=f"{metric} difference", nonnegative=False,
                                  confidence=confidence)
        ulo, uhi = welch_interval(ea.values, eb.values, confidence)
    else:
        d = paired_estimate(ea, eb, confidence=confidence)
        ulo, uhi = welch_interval(window_means(ea.values, d.windows), window_means(eb.values, d.windows),
                                  confidence)
    k = d.windows
    if d.status != EST_OK:
        nan = float("nan")
        return Difference(d.mean, nan, nan, k, ulo, uhi), d.message
    return Difference(d.mean, d.low, d.high, k, ulo, uhi), ""


def window_values(res, metric: str) -> np.ndarray:
    """Per-window values of a trace replay: the window means of its estimate of ``metric``
    (:func:`trace_estimate`; one value per replayed window with ``windows="independent"``)."""
    return np.asarray(trace_estimate(res, metric).window_means, float)


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
