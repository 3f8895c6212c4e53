"""Standard Workload Format logs as MUSCLE workloads (seed 002 model).

The log is read by :func:`hetsched.traces.read_swf` (all 18 fields, gzip,
malformed lines named or skipped); this module maps it onto the moldable-job
model of seed 002 (§2):

* arrival ``a_i``   = field 2 (submit time), shifted so the first kept job arrives at 0;
* preferable size ``s_i`` = field 5 (allocated processors), or field 8 (requested
  processors) when field 5 is unknown; clipped to the largest cluster (such jobs
  are run at that size, which Eq. 3 would otherwise make slower -- counted in
  ``meta["clipped"]`` and reported by ``hetsched muscle run``);
* ``x_i`` (time at the preferable size on an average-rate computer) = field 4 (run time);
* deadline: SWF has no deadlines, so Eq. 5 is applied to the logged run time,
  ``d_i = a_i + max_j{e_ij} (1 + dr_i)`` with ``dr_i ~ U[MIN_DR, MAX_DR]`` drawn from
  ``seed`` (rule ``"eq5"``); rule ``"requested"`` uses field 9 (requested time)
  instead, ``d_i = a_i + max(field 9, max_j e_ij)``, falling back to Eq. 5 when it is -1.

Every job read is either scheduled or counted in ``meta["dropped"]`` by reason
(those of :data:`hetsched.traces.workload.DROP_REASONS`, then ``size_unknown``:
neither field 5 nor field 8 is positive); ``meta["skipped"]`` is their total.
With ``max_jobs`` the log is streamed in chunks (:func:`hetsched.traces.read_swf`
with ``chunksize``) and reading stops once enough usable jobs are read, so the
first thousand jobs of a ten-million-job log cost what a small log costs.
:func:`offered_load` gives the utilisation the log offers to a multicluster
(work at preferable sizes over capacity times span).
"""

from __future__ import annotations

import os

import numpy as np

from ..errors import ModelError
from .workload import MultiCluster, Workload

__all__ = ["workload_from_swf", "offered_load"]


def offered_load(workload: Workload, system: MultiCluster) -> float:
    """Offered utilisation ``sum_i s_i x_i / (C T)``: the work at preferable sizes
    (in average-rate computer-seconds) over the capacity ``C = sum_j m_j u_j / u_bar``
    (average-rate computers) times the arrival span ``T``. Above 1, no policy can
    keep up: the queue grows through the run."""
    n = len(workload)
    if n < 2:
        return 0.0
    span = float(workload.arrival[-1] - workload.arrival[0])
    work = float(np.dot(workload.size.astype(np.float64), workload.x))
    return work / (system.capacity * span) if span > 0 else float("inf")


def _usable(df) -> np.ndarray:
    """Jobs a MUSCLE workload can use: known submit time, positive run time and size."""
    alloc = df["allocated_procs"].to_numpy()
    p = np.where(alloc > 0, alloc, df["requested_procs"].to_numpy())
    return (df["run_time"].to_numpy() > 0) & (p > 0) & (df["submit_time"].to_numpy() >= 0)


def _dropped(df) -> dict:
    """Unusable jobs of ``df`` by reason: the replay's reasons, then ``size_unknown``."""
    from ..traces.workload import drop_reasons

    keep, counts, _ids = drop_reasons(df)
    counts.pop("malformed_line", None)  # counted by the reader (meta["malformed"])
    alloc = df["allocated_procs"].to_numpy()
    p = np.where(alloc > 0, alloc, df["requested_procs"].to_numpy())
    no_size = int(np.sum(keep & ~(p > 0)))
    if no_size:
        counts["size_unknown"] = no_size
    return counts


def workload_from_swf(
    path: str | os.PathLike,
    system: MultiCluster,
    *,
    max_jobs: int | None = None,
    skip: int = 0,
    min_dr: float = 1.0,
    max_dr: float = 5.0,
    deadline_rule: str = "eq5",
    seed: int = 0,
    on_error: str = "raise",
) -> Workload:
    """Read jobs ``skip .. skip+max_jobs`` of an SWF log as a :class:`Workload` (see module doc).

    ``meta`` holds ``dropped`` (unusable jobs by reason, among those read),
    ``skipped`` (their total), ``jobs_read`` (job lines read: all of them, or up
    to the last job used when ``max_jobs`` stopped the reading), ``malformed``
    (lines dropped with ``on_error="skip"``), ``clipped`` (sizes cut to the largest
    cluster), ``job_id`` (SWF job numbers of the kept jobs, in arrival order),
    ``header`` (the log's header metadata) and ``offered_load``.
    """
    import pandas as pd

    from ..traces import read_swf

    if deadline_rule not in ("eq5", "requested"):
        raise ModelError(f"deadline_rule: expected 'eq5' or 'requested', got {deadline_rule!r}")
    if max_jobs is not None and (isinstance(max_jobs, bool) or not isinstance(max_jobs, (int, np.integer))
                                 or max_jobs < 1):
        raise ModelError(f"max_jobs: must be an integer >= 1, got {max_jobs!r}")
    if isinstance(skip, bool) or not isinstance(skip, (int, np.integer)) or skip < 0:
        raise ModelError(f"skip: must be an integer >= 0, got {skip!r}")
    chunk = 100_000 if max_jobs is None else int(min(100_000, max(1_000, 2 * (skip + max_jobs))))
    parts, usable_parts, n_usable = [], [], 0
    for part in read_swf(path, on_error=on_error, chunksize=chunk):  # streamed: stop once enough are read
        ok = _usable(part)
        parts.append(part)
        usable_parts.append(ok)
        n_usable += int(ok.sum())
        if max_jobs is not None and n_usable >= skip + max_jobs:
            break
    df = pd.concat(parts, ignore_index=True) if parts else read_swf(path, on_error=on_error)
    if parts:
        df.attrs = dict(parts[-1].attrs)
    usable = np.concatenate(usable_parts) if usable_parts else np.zeros(0, bool)
    alloc = df["allocated_procs"].to_numpy()
    p_all = np.where(alloc > 0, alloc, df["requested_procs"].to_numpy())
    run_all = df["run_time"].to_numpy()
    sub_all = df["submit_time"].to_numpy()
    idx = np.flatnonzero(usable)
    # jobs are counted in file order, as the log lists them
    sel = idx[skip:]
    if max_jobs is not None:
        sel = sel[:max_jobs]
    # unusable jobs met while reading (all of them unless reading stopped at max_jobs)
    stop = sel[-1] + 1 if (max_jobs is not None and sel.size == max_jobs) else len(df)
    dropped = _dropped(df.iloc[:stop])
    skipped = int(sum(v for k, v in dropped.items() if k != "malformed_line"))
    if sel.size == 0:
        raise ModelError(f"swf: no usable job in {path} (positive run time and processors, known submit time)")
    a = sub_all[sel].astype(np.float64)
    order = np.argsort(a, kind="stable")  # logs are nearly sorted; make it exact
    a = a[order] - a[order][0]
    s = p_all[sel][order].astype(np.int64)
    clipped = int(np.sum(s > system.m_max))
    s = np.minimum(s, system.m_max)
    xv = run_all[sel][order].astype(np.float64)
    rq = df["requested_time"].to_numpy()[sel][order].astype(np.float64)
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    dr = rng.uniform(min_dr, max_dr, a.shape[0])
    slowest = xv * system.mean_rate / min(system.rates)
    rel = slowest * (1.0 + dr)
    if deadline_rule == "requested":
        rel = np.where(rq > 0, np.maximum(rq, slowest), rel)
    wl = Workload(a, s, xv, a + rel, source=str(path),
                  meta={"skipped": skipped, "dropped": dropped, "jobs_read": int(stop), "clipped": clipped,
                        "deadline_rule": deadline_rule, "malformed": int(df.attrs.get("skipped", 0)),
                        "job_id": df["job_id"].to_numpy()[sel][order], "header": df.attrs.get("header", {})})
    wl.meta["offered_load"] = offered_load(wl, system)
    return wl
