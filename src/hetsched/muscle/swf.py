"""Standard Workload Format (SWF v2.2) input for the MUSCLE simulator.

The reader streams the file line by line (plain or gzip), so large logs are never
held in memory as text. Header lines start with ``;``; fields are whitespace
separated; ``-1`` means unknown and floats are accepted where integers are expected.

Mapping to the moldable-job model of seed 002 (§2):

* arrival ``a_i``   = field 2 (submit time), shifted so the first kept job arrives at 0;
* preferable size ``s_i`` = field 5 (allocated processors), or field 8 (requested
  processors) when field 5 is unknown; clipped to the largest cluster (such jobs
  are run at that size, which Eq. 3 would otherwise make slower — noted in
  ``meta["clipped"]``);
* ``x_i`` (time at the preferable size on an average-rate computer) = field 4 (run time);
* deadline: SWF has no deadlines, so Eq. 5 is applied to the logged run time,
  ``d_i = a_i + max_j{e_ij} (1 + dr_i)`` with ``dr_i ~ U[MIN_DR, MAX_DR]`` drawn from
  ``seed`` (rule ``"eq5"``); rule ``"requested"`` uses field 9 (requested time)
  instead, ``d_i = a_i + max(field 9, max_j e_ij)``, falling back to Eq. 5 when it is -1.

Jobs with unknown or non-positive run time or size are skipped (counted in
``meta["skipped"]``).
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Iterator

import numpy as np

from ..errors import ModelError
from .workload import MultiCluster, Workload

__all__ = ["iter_swf", "read_swf_header", "workload_from_swf"]


def _open(path: Path):
    if str(path).endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8", errors="replace")
    return open(path, "rt", encoding="utf-8", errors="replace")


def read_swf_header(path: str | Path) -> list[str]:
    """The header comment lines (without the leading ``;``)."""
    path = Path(path)
    out = []
    with _open(path) as f:
        for line in f:
            s = line.strip()
            if not s:
                continue
            if not s.startswith(";"):
                break
            out.append(s[1:].strip())
    return out


def iter_swf(path: str | Path) -> Iterator[tuple[int, float, float, int, int, float]]:
    """Yield ``(job, submit, run_time, alloc_procs, req_procs, req_time)`` per job line."""
    path = Path(path)
    if not path.exists():
        raise ModelError(f"swf: file not found: {path}")
    with _open(path) as f:
        for lineno, line in enumerate(f, 1):
            s = line.strip()
            if not s or s.startswith(";"):
                continue
            parts = s.split()
            if len(parts) < 9:
                raise ModelError(f"swf: {path}:{lineno}: expected 18 fields, got {len(parts)}")
            try:
                job = int(float(parts[0]))
                submit = float(parts[1])
                run = float(parts[3])
                alloc = int(float(parts[4]))
                req = int(float(parts[7]))
                req_time = float(parts[8])
            except ValueError:
                raise ModelError(f"swf: {path}:{lineno}: non-numeric field in {s[:60]!r}") from None
            yield job, submit, run, alloc, req, req_time


def workload_from_swf(
    path: str | Path,
    system: MultiCluster,
    *,
    max_jobs: int | None = None,
    skip: int = 0,
    min_dr: float = 1.0,
    max_dr: float = 5.0,
    deadline_rule: str = "eq5",
    seed: int = 0,
) -> Workload:
    """Read jobs ``skip .. skip+max_jobs`` of an SWF log as a :class:`Workload` (see module doc)."""
    if deadline_rule not in ("eq5", "requested"):
        raise ModelError(f"deadline_rule: expected 'eq5' or 'requested', got {deadline_rule!r}")
    if max_jobs is not None and max_jobs < 1:
        raise ModelError(f"max_jobs: must be >= 1, got {max_jobs}")
    arr, size, x, reqt = [], [], [], []
    skipped = 0
    kept_seen = 0
    for _job, submit, run, alloc, req, req_time in iter_swf(path):
        p = alloc if alloc > 0 else req
        if run <= 0 or p <= 0 or submit < 0:
            skipped += 1
            continue
        kept_seen += 1
        if kept_seen <= skip:
            continue
        arr.append(submit)
        size.append(p)
        x.append(run)
        reqt.append(req_time)
        if max_jobs is not None and len(arr) >= max_jobs:
            break
    if not arr:
        raise ModelError(f"swf: no usable job in {path}")
    a = np.asarray(arr, dtype=np.float64)
    order = np.argsort(a, kind="stable")  # logs are nearly sorted; make it exact
    a = a[order] - a[order][0]
    s = np.asarray(size, dtype=np.int64)[order]
    clipped = int(np.sum(s > system.m_max))
    s = np.minimum(s, system.m_max)
    xv = np.asarray(x, dtype=np.float64)[order]
    rq = np.asarray(reqt, dtype=np.float64)[order]
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    dr = rng.uniform(min_dr, max_dr, a.shape[0])
    slowest = xv * system.mean_rate / min(system.rates)
    rel = slowest * (1.0 + dr)
    if deadline_rule == "requested":
        rel = np.where(rq > 0, np.maximum(rq, slowest), rel)
    return Workload(a, s, xv, a + rel, source=str(path),
                    meta={"skipped": skipped, "clipped": clipped, "deadline_rule": deadline_rule})
