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

Jobs with unknown or non-positive run time or size are skipped (counted in
``meta["skipped"]``). :func:`offered_load` gives the utilisation the log offers
to a multicluster (work at preferable sizes over capacity times span).
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

    ``meta`` holds ``skipped`` (unusable jobs), ``malformed`` (lines dropped with
    ``on_error="skip"``), ``clipped`` (sizes cut to the largest cluster), ``job_id``
    (SWF job numbers of the kept jobs, in arrival order), ``header`` (the log's
    header metadata) and ``offered_load``.
    """
    from ..traces import read_swf

    if deadline_rule not in ("eq5", "requested"):
        raise ModelError(f"deadline_rule: expected 'eq5' or 'requested', got {deadline_rule!r}")
    if max_jobs is not None and max_jobs < 1:
        raise ModelError(f"max_jobs: must be >= 1, got {max_jobs}")
    if skip < 0:
        raise ModelError(f"skip: must be >= 0, got {skip}")
    df = read_swf(path, on_error=on_error)
    alloc = df["allocated_procs"].to_numpy()
    p_all = np.where(alloc > 0, alloc, df["requested_procs"].to_numpy())
    run_all = df["run_time"].to_numpy()
    sub_all = df["submit_time"].to_numpy()
    usable = (run_all > 0) & (p_all > 0) & (sub_all >= 0)
    idx = np.flatnonzero(usable)
    # jobs are counted in file order, as the log lists them
    sel = idx[skip:]
    if max_jobs is not None:
        sel = sel[:max_jobs]
    # unusable jobs met while reading (all of them unless reading stopped at max_jobs)
    stop = sel[-1] + 1 if (max_jobs is not None and sel.size == max_jobs) else len(df)
    skipped = int(np.sum(~usable[:stop]))
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
                  meta={"skipped": skipped, "clipped": clipped, "deadline_rule": deadline_rule,
                        "malformed": int(df.attrs.get("skipped", 0)),
                        "job_id": df["job_id"].to_numpy()[sel][order], "header": df.attrs.get("header", {})})
    wl.meta["offered_load"] = offered_load(wl, system)
    return wl
