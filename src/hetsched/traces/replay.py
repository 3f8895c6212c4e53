"""Statistics of a trace replay: the sound window estimate, every job accounted for, HPC workload metrics.

:func:`summarize_replay` turns the raw :class:`~hetsched.sim.core.result.SimResult`
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

__all__ = ["summarize_replay", "hpc_metrics", "bounded_slowdown", "BSLD_TAU_SECONDS", "STATUS_NO_CI",
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


def _trend(rec, rep: np.ndarray) -> tuple[bool, list[float]]:
    """The trend rule on the number in system of each replayed window (one for a whole-log replay):
    unstable when more than half show it (:func:`hetsched.sim.core.instability.verdict`)."""
    from ..sim.core.instability import NSEG, trend_unstable, verdict

    a, e = rec["arrival"].to_numpy(), rec["end"].to_numpy()
    flags, first = [], []
    for r in np.unique(rep):
        sel = rep == r
        seg = segment_averages(a[sel], e[sel], float(a[sel].min()), float(a[sel].max()), NSEG)
        flags.append(trend_unstable(seg))
        if not first:
            first = seg.tolist()
    unstable, _, _ = verdict([False] * len(flags), flags)
    return unstable, first


def _ci(est: WindowEstimate) -> list[float] | None:
    return [est.low, est.high] if est.status == 0 else None


def _estimates(series: dict[str, np.ndarray], rep: np.ndarray | None, windows: int, rule: str, keep: bool
               ) -> dict[str, WindowEstimate]:
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


def summarize_replay(res, tw, windows: int, *, machines: int, rule: str = "batch", keep_records: bool = False,
                     tau_seconds: float = BSLD_TAU_SECONDS) -> None:
    """Fill ``res`` (a trace replay's SimResult with its records) with the statistics of the module docstring.

    ``windows`` is the requested number of windows (``--reps``); ``rule`` is
    ``"batch"`` (one whole-log replay; the window count chosen by the tests) or
    ``"independent"`` (one replication per window, each from an empty system).
    """
    rec = res.records.sort_values(["task"], kind="stable")
    task = rec["task"].to_numpy()
    cls = rec["class"].to_numpy()
    mach = rec["machine"].to_numpy()
    rep = rec["rep"].to_numpy() if "rep" in rec else np.zeros(task.size, np.int64)
    tau = float(tau_seconds) * float(tw.time_scale)
    m = hpc_metrics(rec["arrival"].to_numpy(), rec["start"].to_numpy(), rec["end"].to_numpy(), tau=tau)
    ests = _estimates(m, rep, windows, rule, keep=True)
    main = ests["W"]
    nan = float("nan")
    # per class: the same estimates on the class's jobs (in arrival order)
    for i, pc in enumerate(res.per_class):
        sel = cls == i
        pc.pop("Q_ci", None)
        if not sel.any():
            pc.update(mean=None, ci=None, W=None, W_ci=None)
            continue
        sub = {col: v[sel] for col, v in m.items()}
        e = _estimates(sub, rep[sel], windows, rule, keep=False)
        pc["mean"] = pc["W"] = e["W"].mean
        pc["ci"] = pc["W_ci"] = _ci(e["W"])
        for name in ("wait", "bsld"):
            pc[name], pc[f"{name}_ci"] = e[name].mean, _ci(e[name])
    # utilisation of each machine over the replay's span
    t0 = float(rec["arrival"].min()) if task.size else 0.0
    t1 = float(rec["end"].max()) if task.size else 0.0
    span = t1 - t0
    busy = np.bincount(mach, weights=m["run"], minlength=machines)[:machines]
    util = (busy / span).tolist() if span > 0 else [nan] * machines
    # every job of the log accounted for
    ids = {k: np.asarray(v)[:100].tolist() for k, v in tw.dropped_ids.items()}
    res.extra.update({
        "windows": int(main.windows), "windows_requested": int(windows), "W_windows": list(main.window_means),
        "W_log": float(m["response"].mean()), "ci_method": main.method, "ci_tests": main.tried,
        "estimates": ests,
        "wait": ests["wait"].mean, "wait_ci": _ci(ests["wait"]), "response": main.mean,
        "bsld": ests["bsld"].mean, "bsld_ci": _ci(ests["bsld"]), "bsld_tau_seconds": float(tau_seconds),
        "bsld_tau": tau, "utilisation": util, "utilisation_span": span,
        "jobs_in_log": int(tw.jobs_in_log), "dropped": dict(tw.dropped), "dropped_total": int(tw.dropped_total),
        "dropped_job_ids": ids,
    })
    res.reps = int(main.windows) if rule == "batch" else int(np.unique(rep).size)
    grows, seg = _trend(rec, rep)
    res.extra["segments"] = seg
    pl = res.extra.get("policy_load")
    if grows and pl is not None and pl > 1.0 and not res.unstable:
        from ..sim.core.result import STATUS_UNSTABLE

        res.status = STATUS_UNSTABLE
        res.message = (f"unstable: the policy sends its busiest machine {pl:.3g} x the work it can do over the "
                       f"log's arrival span, and the number in system grows through the log (time averages on 10 "
                       f"segments: {seg[0]:.4g} ... {seg[-1]:.4g}; the trend rule)")
    if not res.unstable:
        res.status = STATUS_NO_CI if main.status == NO_CI else 0
        res.message = main.message
        res.set_estimate(main.mean, main.ci if main.status == 0 else (nan, nan),
                         main.rel_half_width if main.status == 0 else nan)
    else:
        res.set_estimate(main.mean, (nan, nan), nan)  # an unstable replay: the number goes to mean_untrusted
        for k in ("wait", "response", "bsld"):  # nor are its other means estimates of anything
            res.extra[f"{k}_untrusted"] = res.extra[k]
            res.extra[k] = res.extra[f"{k}_ci"] = None
    if keep_records:
        out = rec.reset_index(drop=True)
        out["job_id"] = np.asarray(tw.job_id)[task]
        for col in ("wait", "response", "bounded_slowdown"):
            out[col] = m[col]
        res.records = out
    else:
        res.records = None


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
