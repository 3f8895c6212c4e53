"""A real trace prepared for replay through a system of ``N`` task classes.

Model (issue 13; choices in ``docs/_parts/assumptions-traces.md``)
-------------------------------------------------------------------
A trace gives, per job ``k``, a submit time ``s_k`` (seconds) and a run time
``r_k > 0`` (seconds). For a system with ``N`` classes and execution rates
``mu[i, j]`` (tasks per time unit):

* **size** ``X_k = r_k / rbar`` with ``rbar`` the mean run time of the kept
  jobs (so ``mean(X) = 1``); on machine ``j`` the job needs ``X_k / mu[i, j]``
  time units;
* **class** ``i_k`` in ``0..N-1`` by a folding rule (:data:`CLASS_RULES`):

  - ``runtime`` (default): run-time quantiles with equal counts -- jobs ranked
    by run time (ties by log order), ``i = floor(rank * N / n)``; class 0 holds
    the shortest jobs, and class sizes differ by at most one;
  - ``procs``: requested processors (field 8; allocated, field 5, where 8 is
    unknown), an ordinal value: its distinct values in increasing order are cut
    into ``N`` contiguous runs, each value whole, the ``k``-th cut at the value
    boundary nearest to ``k n / N`` jobs (cuts kept strictly increasing; jobs
    with neither field known, ``-1``, sort first);
  - ``user``, ``queue``, ``partition`` (fields 12, 15, 16; ``-1`` is a category
    of its own), categorical values: categories in decreasing order of job count
    (ties by value) go one by one to the class holding the fewest jobs so far
    (ties: lowest class) -- the greedy balanced ("LPT") folding, which keeps
    every category in one class and leaves no class empty;

  a rule needs at least ``N`` distinct values in the trace;
* **time axis**: model time ``t_k = c (s_k - s_1)`` with the jobs sorted by
  submit time. Without a target load, ``c = 1 / rbar``: the trace's own time axis
  in units of its mean run time, so that a job on a machine of rate 1 runs for
  its logged run time. With ``load=RHO``, ``c`` is scaled so that the LP below
  gives ``1/lambda* = RHO`` exactly;
* **arrival vector of the LP**: the work arrival rate of each class,
  ``alpha_i = sum_{k in i} X_k / T`` with ``T = t_n - t_1`` (jobs of class
  ``i`` per time unit times their mean size). The allocation LP
  (:func:`hetsched.lp.allocation_lp`) then gives ``lambda*``; ``1/lambda*`` is
  the long-run utilisation of the busiest machine under the best allocation, the
  load "reached". Since ``alpha`` scales as ``1/c`` and ``lambda*`` is
  homogeneous of degree -1 in ``alpha``, ``lambda*(c) = lambda*(c0) c / c0``.

Every job of the log is either replayed or counted in ``dropped`` under one
reason (:data:`DROP_REASONS`, checked in this order): ``malformed_line`` (a line
skipped by ``read_swf(on_error="skip")``), ``submit_time_unknown`` (field 2 is
``-1`` or negative), ``run_time_unknown`` (field 4 is ``-1``), ``run_time_zero``,
``run_time_negative`` (below 0 but not the ``-1`` marker). ``dropped_ids`` gives
their SWF job numbers (line numbers for malformed lines). Failed and cancelled
jobs with a positive run time are kept (they used the machine for their run
time); processor counts play no part (the thesis models run a job on one
machine), so no job is dropped for them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ModelError

__all__ = ["CLASS_RULES", "DROP_REASONS", "TraceWorkload", "workload", "fold_classes", "drop_reasons"]

CLASS_RULES = ("runtime", "procs", "user", "queue", "partition")
#: why a job of the log is not replayed: reason -> meaning (checked in this order; each job gets the first)
DROP_REASONS: dict[str, str] = {
    "malformed_line": "a malformed line skipped by --skip-malformed (ids: line numbers)",
    "submit_time_unknown": "submit time unknown (-1) or negative",
    "run_time_unknown": "run time unknown (-1)",
    "run_time_zero": "run time 0",
    "run_time_negative": "run time negative (not the -1 marker)",
}
_RULE_FIELD = {"procs": "requested_procs", "user": "user_id", "queue": "queue_id", "partition": "partition_id"}


def _ro(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


@dataclass(frozen=True)
class TraceWorkload:
    """A trace ready for replay (read-only arrays, one entry per kept job, in arrival order).

    Attributes
    ----------
    arrival : float64 (n,)
        Arrival times in model time units, sorted, ``arrival[0] == 0``.
    size : float64 (n,)
        ``X = run_time / mean run_time``; execution time on machine ``j`` is ``X / mu[klass, j]``.
    klass : int64 (n,)
        Class of each job, ``0..N-1``.
    job_id : int64 (n,)
        SWF job number (field 1), to join records back to the log.
    rule : str
        The class rule used (one of :data:`CLASS_RULES`); ``rule_detail`` says how values map.
    alpha : float64 (N,)
        LP arrival vector: work arrival rate per class (see module docstring).
    lp_lambda, load : float
        ``lambda*`` of the allocation LP for ``alpha``, and ``1/lambda*``.
    time_scale : float
        Model time units per second of the trace.
    target_load : float or None
        The requested ``load`` (``None``: the trace's own time axis).
    dropped : dict
        Jobs of the log not replayed, by reason (:data:`DROP_REASONS`; only
        reasons that occur): ``len(self) + sum(dropped.values()) == jobs_in_log``.
    dropped_ids : dict
        The SWF job numbers of the dropped jobs by reason (line numbers for
        ``malformed_line``).
    jobs_in_log : int
        Jobs (job lines) in the log, replayed or dropped.
    """

    arrival: np.ndarray
    size: np.ndarray
    klass: np.ndarray
    job_id: np.ndarray
    rule: str
    rule_detail: str
    alpha: np.ndarray
    lp_lambda: float
    load: float
    time_scale: float
    target_load: float | None
    dropped: dict = field(default_factory=dict)
    source: str = ""
    lp: Any = field(default=None, repr=False, compare=False)
    dropped_ids: dict = field(default_factory=dict, repr=False, compare=False)
    jobs_in_log: int = -1

    def __post_init__(self) -> None:
        for name in ("arrival", "size", "klass", "job_id", "alpha"):
            object.__setattr__(self, name, _ro(getattr(self, name)))
        d = self.dropped
        if isinstance(d, (int, np.integer)) and not isinstance(d, bool):  # a count without reasons
            d = {"unspecified": int(d)} if d else {}
        if not isinstance(d, dict) or any(not isinstance(v, (int, np.integer)) or v < 0 for v in d.values()):
            raise ModelError(f"dropped: expected {{reason: count}}, got {self.dropped!r}")
        object.__setattr__(self, "dropped", {str(k): int(v) for k, v in d.items() if v})
        if self.jobs_in_log < 0:
            object.__setattr__(self, "jobs_in_log", len(self) + self.dropped_total)

    @property
    def dropped_total(self) -> int:
        """Jobs of the log not replayed (all reasons)."""
        return int(sum(self.dropped.values()))

    def dropped_text(self) -> str:
        """One line: ``"173 dropped: run time 0 (170), submit time unknown (3)"`` (or ``"none dropped"``)."""
        return drop_text(self.dropped)

    def __len__(self) -> int:
        return int(self.arrival.shape[0])

    @property
    def N(self) -> int:
        return int(self.alpha.shape[0])

    @property
    def stable(self) -> bool:
        """The LP verdict: a policy can keep the system stable iff ``lambda* > 1``."""
        return bool(self.lp_lambda > 1.0 + 1e-12)

    @property
    def counts(self) -> np.ndarray:
        return np.bincount(self.klass, minlength=self.N)

    @property
    def verdict(self) -> str:
        """One line: the load reached and whether the system can be stable."""
        head = f"allocation LP for the trace's class mix: lambda* = {self.lp_lambda:.4g}, load 1/lambda* = {self.load:.4g}"
        if self.stable:
            return head + " (stable under the best allocation)"
        return head + " -- UNSTABLE: the offered work exceeds the capacity under every allocation"

    def as_dict(self) -> dict:
        return {"jobs": len(self), "rule": self.rule, "rule_detail": self.rule_detail,
                "alpha": self.alpha.tolist(), "counts": self.counts.tolist(), "lp_lambda": self.lp_lambda,
                "load": self.load, "target_load": self.target_load, "time_scale": self.time_scale,
                "jobs_in_log": self.jobs_in_log, "dropped": dict(self.dropped),
                "dropped_job_ids": {k: v[:100].tolist() for k, v in self.dropped_ids.items()},
                "stable": self.stable, "source": self.source}

    def windows(self, k: int) -> list["TraceWorkload"]:
        """Split into ``k`` consecutive windows of nearly equal job counts, each
        re-based to start at 0 with the same time scale, sizes and classes -- the
        independent replications "by splitting the trace into windows". The LP
        fields (``alpha``, ``lp_lambda``, ``load``) stay the whole trace's: the
        windows' own loads vary, which is the burstiness the replications sample."""
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= len(self):
            raise ModelError(f"windows: expected an integer from 1 to the number of jobs ({len(self)}), got {k!r}")
        out = []
        for part in np.array_split(np.arange(len(self)), int(k)):
            a = self.arrival[part]
            out.append(TraceWorkload(
                arrival=a - a[0], size=self.size[part], klass=self.klass[part], job_id=self.job_id[part],
                rule=self.rule, rule_detail=self.rule_detail, alpha=self.alpha, lp_lambda=self.lp_lambda,
                load=self.load, time_scale=self.time_scale, target_load=self.target_load, dropped={},
                source=self.source, lp=self.lp))
        return out

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame({"job_id": self.job_id, "arrival": self.arrival, "size": self.size,
                             "class": self.klass})


# ----------------------------------------------------------------------------- class folding
def _rank_quantiles(values: np.ndarray, N: int) -> np.ndarray:
    n = values.shape[0]
    order = np.argsort(values, kind="stable")
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    return (rank * N) // n


def _ordinal(values: np.ndarray, N: int, name: str) -> tuple[np.ndarray, str]:
    uniq, inv, cnt = np.unique(values, return_inverse=True, return_counts=True)
    K = uniq.shape[0]
    if K < N:
        raise ModelError(f"classes: rule '{name}' needs at least {N} distinct values for {N} classes, "
                         f"the trace has {K}: {uniq[:10].tolist()}")
    n = values.shape[0]
    cum = np.concatenate([[0], np.cumsum(cnt)])  # cum[b] = jobs with value index < b
    cuts = []
    prev = 0
    for k in range(1, N):
        b = int(np.argmin(np.abs(cum - k * n / N)))
        b = min(max(b, prev + 1), K - (N - k))  # strictly increasing, room for the rest
        cuts.append(b)
        prev = b
    cls_of_value = np.searchsorted(np.asarray(cuts), np.arange(K), side="right")
    bounds = [0] + cuts + [K]
    detail = "; ".join(f"class {i}: {name} in [{uniq[bounds[i]]}, {uniq[bounds[i + 1] - 1]}]" for i in range(N))
    return cls_of_value[inv].astype(np.int64), detail


def _categorical(values: np.ndarray, N: int, name: str) -> tuple[np.ndarray, str]:
    uniq, inv, cnt = np.unique(values, return_inverse=True, return_counts=True)
    K = uniq.shape[0]
    if K < N:
        raise ModelError(f"classes: rule '{name}' needs at least {N} distinct values for {N} classes, "
                         f"the trace has {K}: {uniq[:10].tolist()}")
    order = np.lexsort((uniq, -cnt))  # most jobs first, ties by value
    load = np.zeros(N, dtype=np.int64)
    cls_of_value = np.empty(K, dtype=np.int64)
    for v in order:
        c = int(np.argmin(load))
        cls_of_value[v] = c
        load[c] += cnt[v]
    per = [uniq[cls_of_value == i] for i in range(N)]
    detail = "; ".join(f"class {i}: {len(p)} {name} value(s), {int(load[i])} jobs" for i, p in enumerate(per))
    return cls_of_value[inv].astype(np.int64), detail


def fold_classes(df: pd.DataFrame, N: int, rule: str = "runtime") -> tuple[np.ndarray, str]:
    """Class ``0..N-1`` of every row of an SWF frame by ``rule`` (see module docstring).

    Returns ``(klass, detail)``; ``detail`` says which values went to which class.
    """
    if rule not in CLASS_RULES:
        raise ModelError(f"classes: expected one of {', '.join(CLASS_RULES)}, got {rule!r}")
    if isinstance(N, bool) or not isinstance(N, (int, np.integer)) or N < 1:
        raise ModelError(f"classes: the number of classes must be a positive integer, got {N!r}")
    n = len(df)
    if n < N:
        raise ModelError(f"classes: {n} jobs cannot fill {N} classes")
    if rule == "runtime":
        rt = df["run_time"].to_numpy(dtype=np.float64)
        k = _rank_quantiles(rt, N)
        edges = [float(rt[k == i].max()) for i in range(N)]
        return k, "run-time quantiles, equal counts; class upper run times (s): " + ", ".join(f"{e:g}" for e in edges)
    if rule == "procs":
        v = df["requested_procs"].to_numpy()
        v = np.where(v > 0, v, df["allocated_procs"].to_numpy())
        return _ordinal(v, N, "procs")
    col = _RULE_FIELD[rule]
    return _categorical(df[col].to_numpy(), N, rule)


# ----------------------------------------------------------------------------- dropped jobs
def drop_reasons(df: pd.DataFrame) -> tuple[np.ndarray, dict, dict]:
    """Which jobs of an SWF frame are replayed: ``(keep, counts, ids)``.

    ``keep`` is a boolean mask; ``counts``/``ids`` give, for every reason of
    :data:`DROP_REASONS` that occurs, the number of jobs and their SWF job numbers
    (malformed lines skipped by the reader: their line numbers, from ``df.attrs``).
    """
    submit = df["submit_time"].to_numpy(dtype=np.float64)
    run = df["run_time"].to_numpy(dtype=np.float64)
    jid = df["job_id"].to_numpy(dtype=np.int64)
    left = np.ones(len(df), dtype=bool)
    counts: dict[str, int] = {}
    ids: dict[str, np.ndarray] = {}
    bad_lines = np.asarray(df.attrs.get("skipped_lines", []), dtype=np.int64)
    if bad_lines.size:
        counts["malformed_line"] = int(bad_lines.size)
        ids["malformed_line"] = bad_lines
    for reason, test in (("submit_time_unknown", ~(submit >= 0) | ~np.isfinite(submit)),
                         ("run_time_unknown", run == -1),
                         ("run_time_zero", run == 0),
                         ("run_time_negative", (run < 0) | ~np.isfinite(run))):
        hit = left & test
        if hit.any():
            counts[reason] = int(hit.sum())
            ids[reason] = jid[hit]
            left &= ~hit
    return left, counts, ids


def drop_text(dropped: dict) -> str:
    """``dropped`` ({reason: count}) as one line for people."""
    total = int(sum(dropped.values()))
    if not total:
        return "none dropped"
    label = {k: v.split(" (")[0] if k != "malformed_line" else "malformed line" for k, v in DROP_REASONS.items()}
    return f"{total:,} dropped: " + ", ".join(f"{label.get(k, k)} ({v:,})" for k, v in dropped.items())


# ----------------------------------------------------------------------------- public
def _as_frame(trace) -> pd.DataFrame:
    if isinstance(trace, pd.DataFrame):
        return trace
    if isinstance(trace, (str, os.PathLike)):
        from .swf import read_swf

        return read_swf(trace)
    raise ModelError(f"trace: expected an SWF DataFrame (read_swf) or a path, got {type(trace).__name__}")


def _as_system(system):
    if isinstance(system, str):
        from ..scenarios import load as load_scenario

        return load_scenario(system)
    from ..system import System

    if not isinstance(system, System):
        raise ModelError(f"system: expected a System or a scenario id, got {type(system).__name__}")
    return system


def _lp(system, alpha: np.ndarray):
    from ..lp import allocation_lp

    sys2 = system.with_(alpha=tuple(float(a) for a in alpha), alpha_matrix=None)
    res = allocation_lp(sys2)
    if not np.isfinite(res.lam) or res.lam <= 0:
        raise ModelError(f"allocation LP for the trace's class mix failed: {res.message}")
    return res


def workload(trace, system, *, classes: str = "runtime", load: float | None = None) -> TraceWorkload:
    """Prepare an SWF trace for replay through ``system`` (see module docstring).

    Parameters
    ----------
    trace : DataFrame or path
        A frame from :func:`~hetsched.traces.read_swf`, or a path to read.
    system : System or str
        The system (or a scenario id); its number of classes ``N`` and rates
        ``mu`` define the classes and the LP.
    classes : {"runtime", "procs", "user", "queue", "partition"}
        How a job gets one of the ``N`` classes.
    load : float, optional
        Target ``RHO = 1/lambda*``: rescale the time axis so that the LP with
        the trace's class mix is at this load (``RHO < 1``: stable). Default: the
        trace's own time axis (in units of its mean run time) and the LP's verdict.

    Returns
    -------
    TraceWorkload
    """
    df = _as_frame(trace)
    system = _as_system(system)
    if load is not None:
        if isinstance(load, bool) or not isinstance(load, (int, float, np.integer, np.floating)) \
                or not (np.isfinite(load) and load > 0):
            raise ModelError(f"load: expected a positive finite number (1/lambda*), got {load!r}")
        load = float(load)
    for col in ("submit_time", "run_time", "job_id"):
        if col not in df:
            raise ModelError(f"trace: column {col!r} is missing (expected the columns of read_swf)")
    keep, dropped, dropped_ids = drop_reasons(df)
    kept = df.loc[keep]
    if len(kept) < 2:
        raise ModelError(f"trace: {len(kept)} usable job(s) (positive run time, known submit time); need at least 2")
    order = np.argsort(kept["submit_time"].to_numpy(dtype=np.float64), kind="stable")
    kept = kept.iloc[order]
    N = system.N
    klass, detail = fold_classes(kept, N, classes)
    s = kept["submit_time"].to_numpy(dtype=np.float64)
    r = kept["run_time"].to_numpy(dtype=np.float64)
    rbar = float(r.mean())
    X = r / rbar
    span_s = float(s[-1] - s[0])
    if not span_s > 0:
        raise ModelError("trace: every usable job has the same submit time; the trace spans no time")
    c = 1.0 / rbar
    work = np.bincount(klass, weights=X, minlength=N)  # sum of X per class
    alpha = work / (c * span_s)
    res = _lp(system, alpha)
    lam = float(res.lam)
    if load is not None:
        # lambda* is homogeneous of degree -1 in alpha, alpha ~ 1/c: scale c by f -> lambda* by f.
        f = 1.0 / (load * lam)
        c *= f
        alpha = work / (c * span_s)
        res = _lp(system, alpha)
        lam = float(res.lam)
    arrival = c * (s - s[0])
    return TraceWorkload(
        arrival=arrival, size=X, klass=klass, job_id=kept["job_id"].to_numpy(dtype=np.int64), rule=classes,
        rule_detail=detail, alpha=alpha, lp_lambda=lam, load=1.0 / lam, time_scale=c, target_load=load,
        dropped=dropped, source=str(df.attrs.get("source", "")), lp=res, dropped_ids=dropped_ids,
        jobs_in_log=len(df) + int(dropped.get("malformed_line", 0)),
    )
