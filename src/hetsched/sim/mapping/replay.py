"""The statistics of a trace replay of the mapping model, filled into its :class:`SimResult`.

The estimators, the HPC workload metrics and the bookkeeping of dropped jobs
live in :mod:`hetsched.traces.replay` (they know nothing of the simulator);
this module applies them to a replay's records and decides its status with
the project's one instability rule (:mod:`hetsched.sim.core.instability`).
See :mod:`hetsched.traces.replay` for what is reported.
"""

from __future__ import annotations

import numpy as np

from ...traces.estimate import NO_CI
from ...traces.replay import (BSLD_TAU_SECONDS, STATUS_NO_CI, ci_pair, hpc_metrics, replay_estimates,
                              segment_averages)
from ..core.instability import NSEG, trend_unstable, verdict
from ..core.result import STATUS_UNSTABLE

__all__ = ["summarize_replay"]


def _trend(rec, rep: np.ndarray) -> tuple[bool, list[float]]:
    """The trend rule on the number in system of each replayed window (one for a whole-log replay):
    unstable when more than half show it (:func:`hetsched.sim.core.instability.verdict`)."""
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
    ests = replay_estimates(m, rep, windows, rule, keep=True)
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
        e = replay_estimates(sub, rep[sel], windows, rule, keep=False)
        pc["mean"] = pc["W"] = e["W"].mean
        pc["ci"] = pc["W_ci"] = ci_pair(e["W"])
        for name in ("wait", "bsld"):
            pc[name], pc[f"{name}_ci"] = e[name].mean, ci_pair(e[name])
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
        "wait": ests["wait"].mean, "wait_ci": ci_pair(ests["wait"]), "response": main.mean,
        "bsld": ests["bsld"].mean, "bsld_ci": ci_pair(ests["bsld"]), "bsld_tau_seconds": float(tau_seconds),
        "bsld_tau": tau, "utilisation": util, "utilisation_span": span,
        "jobs_in_log": int(tw.jobs_in_log), "dropped": dict(tw.dropped), "dropped_total": int(tw.dropped_total),
        "dropped_job_ids": ids,
    })
    res.reps = int(main.windows) if rule == "batch" else int(np.unique(rep).size)
    grows, seg = _trend(rec, rep)
    res.extra["segments"] = seg
    pl = res.extra.get("policy_load")
    if grows and pl is not None and pl > 1.0 and not res.unstable:
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
