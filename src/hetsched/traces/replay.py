"""Statistics of a trace replay: the sound window estimate, every job accounted for, HPC workload metrics.

:func:`hetsched.sim.mapping.replay.summarize_replay` turns the raw :class:`~hetsched.sim.core.result.SimResult`
of a trace replay (its per-task records) into the reported result, in place:

* **estimates** of the mean response time ``W`` (the ranking metric), the mean
  waiting time and the mean bounded slowdown, each with a batch-means interval
  where the data support one (:mod:`.estimate`); when ``W``'s cannot, the
  status is :data:`STATUS_NO_CI` (3) and the message says why; per class the
  same (``ci`` None where not supported);
* **instability**: a replay is unstable when the allocation LP says so for the
  log's class mix (set by the model), or when the policy overloads a machine
  and the backlog grows through the log: the work it sends its busiest machine
  over the log's arrival span exceeds that span (``policy_load > 1``) *and* the
  number in system satisfies the project's one trend rule
  (:func:`hetsched.sim.core.instability.trend_unstable`) on its time averages
  over ``NSEG = 10`` equal segments of the arrival span. Either alone is not
  enough: heavy tails push ``policy_load`` of good policies slightly above 1
  (MCT on NASA at load 0.9: 1.10), and a log whose arrivals grow denser towards
  its end shows a growing backlog under any policy. MET, which ignores the
  queues, meets both on every shipped log (``policy_load`` about 2);
* **every job accounted for**: ``jobs`` replayed, ``jobs_in_log``, ``dropped``
  ({reason: count}, :data:`hetsched.traces.workload.DROP_REASONS`) and the first
  100 dropped job numbers per reason;
* **HPC workload metrics** (Feitelson, Rudolph & Schwiegelshohn 2005): waiting
  time ``start - arrival``; response time ``end - arrival``; bounded slowdown
  ``max(1, (wait + run) / max(run, tau))`` with ``run = end - start`` (the time
  the job ran on the machine the policy chose) and the usual threshold ``tau``
  = 10 seconds of the log (:data:`BSLD_TAU_SECONDS`), converted to model units
  with the replay's time scale; per-machine utilisation, busy time over the
  replay's span ``[first arrival, last completion]``.

The records, when kept, gain the columns ``job_id`` (the SWF job number),
``wait``, ``response`` and ``bounded_slowdown``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .estimate import NO_CI, WindowEstimate, estimate_from_windows, window_estimate

__all__ = ["replay_estimates", "ci_pair", "hpc_metrics", "bounded_slowdown", "BSLD_TAU_SECONDS", "STATUS_NO_CI",
           "REPLAY_METRICS", "replay_lines", "segment_averages"]

#: threshold of the bounded slowdown, in seconds of the log (the usual 10 s; Feitelson et al. 2005)
BSLD_TAU_SECONDS = 10.0
#: status of a trace replay whose data cannot support a confidence interval of W (SimResult.STATUS)
STATUS_NO_CI = NO_CI
#: per-job metrics of a replay: name -> (record column, description)
REPLAY_METRICS = {"W": ("response", "mean response time (end - arrival)"),
                  "wait": ("wait", "mean waiting time (start - arrival)"),
                  "bsld": ("bounded_slowdown", "mean bounded slowdown max(1, (wait + run) / max(run, tau))")}


def bounded_slowdown(wait, run, tau: float) -> np.ndarray:
    """``max(1, (wait + run) / max(run, tau))`` per job (``tau`` in the same unit as ``wait`` and ``run``)."""
    wait = np.asarray(wait, np.float64)
    run = np.asarray(run, np.float64)
    return np.maximum(1.0, (wait + run) / np.maximum(run, tau))


def hpc_metrics(arrival, start, end, *, tau: float) -> dict[str, np.ndarray]:
    """Per-job ``wait``, ``response``, ``run`` and ``bounded_slowdown`` from arrival, start and end times."""
    a, s, e = (np.asarray(x, np.float64) for x in (arrival, start, end))
    wait, run = s - a, e - s
    return {"wait": wait, "response": e - a, "run": run, "bounded_slowdown": bounded_slowdown(wait, run, tau)}


def segment_averages(arrival, end, t0: float, t1: float, nseg: int = 10) -> np.ndarray:
    """Time averages of the number in system (tasks with ``arrival <= t < end``) on ``nseg`` equal
    segments of ``[t0, t1]`` (exact integrals of the step function)."""
    from .records import number_in_system

    t, n = number_in_system(np.asarray(arrival, np.float64), np.asarray(end, np.float64))
    edges = np.linspace(t0, t1, nseg + 1)
    if t.size == 0 or not t1 > t0:
        return np.zeros(nseg)
    cum = np.concatenate([[0.0], np.cumsum(n[:-1] * np.diff(t))])  # area from t[0] up to t[k]
    k = np.searchsorted(t, edges, side="right") - 1
    area = np.where(k >= 0, cum[np.clip(k, 0, None)] + n[np.clip(k, 0, None)] * (edges - t[np.clip(k, 0, None)]),
                    0.0)
    return np.diff(area) / np.diff(edges)


def ci_pair(est: WindowEstimate) -> list[float] | None:
    """``[low, high]`` of an estimate that supports an interval, else None."""
    return [est.low, est.high] if est.status == 0 else None


def replay_estimates(series: dict[str, np.ndarray], rep: np.ndarray | None, windows: int, rule: str, keep: bool
               ) -> dict[str, WindowEstimate]:
    """The window estimates of every metric of :data:`REPLAY_METRICS` (``rule``: ``"batch"`` or ``"independent"``)."""
    out = {}
    for name, (col, _desc) in REPLAY_METRICS.items():
        y = series[col]
        if rule == "batch":
            out[name] = window_estimate(y, windows, metric=name, keep_values=keep)
        else:  # independent windows: one value per replayed window
            reps = np.unique(rep)
            vals = [float(y[rep == r].mean()) for r in reps if (rep == r).any()]
            out[name] = estimate_from_windows(vals, metric=name, jobs=y.size)
    return out


def replay_lines(out: dict[str, Any]) -> list[str]:
    """Text lines of a trace replay's JSON (``SimResult.as_dict()``): jobs, drops, HPC metrics, the CI's basis."""
    from .workload import drop_text

    def f(x) -> str:
        return "-" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{x:.4g}"

    def ci(c) -> str:
        return f" [{f(c[0])}, {f(c[1])}]" if c else " (no CI)"

    lines = []
    n, log = out.get("jobs"), out.get("jobs_in_log")
    if n is not None and log is not None:
        lines.append(f"jobs: {n:,} replayed of {log:,} in the log; {drop_text(out.get('dropped') or {})}")
    if out.get("wait") is not None:
        lines.append(f"wait {f(out['wait'])}{ci(out.get('wait_ci'))}   bounded slowdown (tau = "
                     f"{f(out.get('bsld_tau_seconds'))} s) {f(out.get('bsld'))}{ci(out.get('bsld_ci'))}")
    elif out.get("wait_untrusted") is not None:
        lines.append(f"(untrusted: wait {f(out['wait_untrusted'])}?   bounded slowdown (tau = "
                     f"{f(out.get('bsld_tau_seconds'))} s) {f(out.get('bsld_untrusted'))}?)")
    u = [v for v in (out.get("utilisation") or []) if v is not None]
    if u and len(u) == len(out["utilisation"]):
        names = out.get("machine_names") or [f"machine {j + 1}" for j in range(len(u))]
        lo, hi = int(np.argmin(u)), int(np.argmax(u))
        lines.append(f"utilisation per machine: mean {np.mean(u):.3f}, lowest {u[lo]:.3f} ({names[lo]}), "
                     f"highest {u[hi]:.3f} ({names[hi]})")
    if out.get("status") == STATUS_NO_CI:
        lines.append(f"NO CI: {str(out.get('message', '')).removeprefix('no CI: ')}")
    elif (out.get("windows_requested") not in (None, out.get("windows")) and out.get("windows_rule") == "batch"
          and out.get("status") == 0):
        lines.append(f"windows: {out.get('windows')} of the {out['windows_requested']} requested "
                     f"(the tests rejected more, smaller windows)")
    return lines
