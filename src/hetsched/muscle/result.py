"""The result of one multicluster run (:class:`MuscleResult`), in the project's result protocol."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterable, Mapping

import numpy as np

from ..results import Result, fmt, jsonable
from .workload import Workload

__all__ = ["MuscleResult", "RECORD_COLUMNS", "FEASIBLE", "OVERLOADED", "INFEASIBLE"]

#: Per-job records of a MUSCLE run (:meth:`MuscleResult.records`): column -> dtype.
RECORD_COLUMNS = {"job": "int64", "swf_job": "int64", "cluster": "int64", "processors": "int64",
                  "arrival": "float64", "start": "float64", "end": "float64", "deadline": "float64",
                  "deadline_met": "bool", "wait": "float64", "response": "float64",
                  "bounded_slowdown": "float64"}

FEASIBLE, OVERLOADED, INFEASIBLE = 0, 1, 2


@dataclass(repr=False)
class MuscleResult(Result):
    """A complete multicluster schedule and its metrics (per cluster and overall).

    ``status`` (see :attr:`STATUS`): 0 when the schedule passed its feasibility
    check (:func:`hetsched.muscle.schedule_violations`) and the workload's
    offered load is below 1; 1 when the offered load is at or above 1 (the
    queue grows through the run, so ``MCP``/``LBF`` depend on the number of
    jobs and estimate nothing: they are NaN and their numbers are in
    ``MCP_untrusted``/``LBF_untrusted``); 2 when the check failed
    (``violations`` says how; numbers untrusted likewise).
    """

    policy: str
    cluster: np.ndarray
    start: np.ndarray
    finish: np.ndarray
    size: np.ndarray
    metrics: dict
    MCP: float
    LBF: float
    rounds: int
    ga_runs: int = 0
    ga_not_converged: int = 0
    ga_improvement: float = 0.0  # total seed CP minus GA CP over all rounds
    seed_start: np.ndarray | None = None
    wall_seconds: float = 0.0
    ga_seconds: float = 0.0
    params: dict = field(default_factory=dict)
    offered_load: float = float("nan")
    violations: list[str] = field(default_factory=list)
    status: int = FEASIBLE
    message: str = "schedule checked: feasible"
    MCP_untrusted: float = float("nan")
    LBF_untrusted: float = float("nan")
    #: HPC workload metrics (:func:`hetsched.muscle.metrics.workload_metrics`), set by the scheduler
    hpc: dict = field(default_factory=dict, repr=False)

    STATUS: ClassVar[Mapping[int, str]] = {
        FEASIBLE: "feasible schedule (checked); offered load below 1",
        OVERLOADED: "overloaded: offered load >= 1, the queue grows through the run (MCP/LBF untrusted)",
        INFEASIBLE: "schedule check FAILED (MCP/LBF untrusted; see violations)",
    }

    def checked(self, violations: list[str]) -> "MuscleResult":
        """Set the status from the feasibility check's ``violations`` and the offered load; move
        the numbers of an overloaded or infeasible run to ``*_untrusted``. Returns ``self``."""
        self.violations = list(violations)
        if self.violations:
            self.status = INFEASIBLE
            self.message = f"schedule check FAILED: {self.violations[0]}"
        elif not self.offered_load < 1.0:
            self.status = OVERLOADED
            self.message = (f"overloaded: offered load {self.offered_load:.3g} >= 1, the queue grows through the run; "
                            "MCP and LBF depend on the number of jobs (numbers in MCP_untrusted, LBF_untrusted)")
        else:
            self.status = FEASIBLE
            self.message = "schedule checked: feasible"
        if self.status != FEASIBLE and math.isnan(self.MCP_untrusted):
            self.MCP_untrusted, self.LBF_untrusted = self.MCP, self.LBF
            self.MCP = self.LBF = float("nan")
        return self

    @property
    def seconds(self) -> float:
        """Wall time of the scheduling (also ``wall_seconds``)."""
        return float(self.wall_seconds)

    def late(self, workload: Workload) -> np.ndarray:
        """Jobs finishing after their deadline (relative tolerance ``1e-12 * max(1, |d|)``,
        so rounding at times of 1e8 s does not count as lateness)."""
        d = np.asarray(workload.deadline, dtype=np.float64)
        return self.finish > d + 1e-12 * np.maximum(1.0, np.abs(d))

    def records(self, workload: Workload):
        """One row per job (:data:`RECORD_COLUMNS`): ``job`` (index in arrival order),
        ``swf_job`` (the log's job number, ``-1`` for generated workloads),
        ``cluster``, ``processors`` used, ``arrival``, ``start``, ``end``, ``deadline``,
        ``deadline_met`` (not :meth:`late`), and the HPC metrics ``wait``, ``response`` and
        ``bounded_slowdown`` (tau = 10 time units; :func:`hetsched.muscle.metrics.workload_metrics`)."""
        from .metrics import BSLD_TAU
        from ..traces.replay import hpc_metrics

        import pandas as pd

        n = len(workload)
        hm = self.hpc if "wait" in self.hpc else hpc_metrics(workload.arrival, self.start, self.finish,
                                                              tau=BSLD_TAU)
        swf = workload.meta.get("job_id")
        swf = np.asarray(swf, dtype=np.int64) if swf is not None and len(swf) == n else np.full(n, -1, np.int64)
        return pd.DataFrame({
            "job": np.arange(n, dtype=np.int64), "swf_job": swf, "cluster": self.cluster.astype(np.int64),
            "processors": self.size.astype(np.int64), "arrival": np.asarray(workload.arrival, dtype=np.float64),
            "start": self.start.astype(np.float64), "end": self.finish.astype(np.float64),
            "deadline": np.asarray(workload.deadline, dtype=np.float64),
            "deadline_met": ~self.late(workload),
            **{k: hm[k] for k in ("wait", "response", "bounded_slowdown")},
        })

    def summary(self) -> dict:
        m = self.metrics
        return {
            "policy": self.policy, "MCP": self.MCP, "LBF": self.LBF,
            "MCP_untrusted": None if math.isnan(self.MCP_untrusted) else self.MCP_untrusted,
            "LBF_untrusted": None if math.isnan(self.LBF_untrusted) else self.LBF_untrusted,
            "CP": m["CP"].tolist(), "makespan": m["makespan"].tolist(), "idle": m["idle"].tolist(),
            "over_deadline": m["over_deadline"].tolist(), "jobs": m["jobs"].tolist(),
            "rounds": self.rounds, "ga_runs": self.ga_runs, "ga_not_converged": self.ga_not_converged,
            "ga_improvement": self.ga_improvement, "wall_seconds": self.wall_seconds,
            "ga_seconds": self.ga_seconds, "mean_queue": self.params.get("mean_queue"),
            "mean_batch": self.params.get("mean_batch"), "offered_load": self.offered_load,
            **self._hpc_summary(),
        }

    def _hpc_summary(self) -> dict:
        """Mean wait, response and bounded slowdown, per-cluster utilisation (untrusted when not feasible)."""
        h = self.hpc
        if not h:
            return {}
        out = {"wait": h["mean_wait"], "response": h["mean_response"], "bsld": h["mean_bsld"],
               "bsld_tau": h["tau"], "utilisation": [float(u) for u in h["utilisation"]]}
        if self.status != FEASIBLE:
            return {"bsld_tau": h["tau"], **{f"{k}_untrusted": v for k, v in out.items() if k != "bsld_tau"},
                    "wait": None, "response": None, "bsld": None, "utilisation": None}
        return out

    # ------------------------------------------------------------------ protocol
    def as_dict(self) -> dict[str, Any]:
        d = self.summary()
        d.update(status=int(self.status), success=self.success, message=self.message, seconds=self.seconds,
                 violations=list(self.violations))
        return jsonable(d)

    def _frame_rows(self) -> Iterable[dict[str, Any]]:
        untrusted = self.status != FEASIBLE
        for name, v, u in (("MCP", self.MCP, self.MCP_untrusted), ("LBF", self.LBF, self.LBF_untrusted)):
            yield {"policy": self.policy, "measure": name, "value": v, "value_untrusted": u if untrusted else None}
        h = self.hpc
        for name, key in (("wait", "mean_wait"), ("response", "mean_response"), ("bsld", "mean_bsld")):
            if key in h:
                v = float(h[key])
                yield {"policy": self.policy, "measure": name, "value": float("nan") if untrusted else v,
                       "value_untrusted": v if untrusted else None}
        m = self.metrics
        for j in range(len(m["CP"])):
            for name in ("CP", "makespan", "idle", "over_deadline", "jobs", "utilisation"):
                if name == "utilisation":
                    if "utilisation" not in h:
                        continue
                    v = float(h["utilisation"][j])
                else:
                    v = float(m[name][j])
                yield {"policy": self.policy, "machine": j + 1, "measure": name,
                       "value": float("nan") if untrusted else v, "value_untrusted": v if untrusted else None}

    def _headline(self) -> str:
        n = int(np.sum(self.metrics["jobs"])) if "jobs" in self.metrics else len(self.cluster)
        if self.status == FEASIBLE:
            return f"{self.policy}: MCP {fmt(self.MCP)}, LBF {fmt(self.LBF)} ({n} jobs, {self.rounds} rounds)"
        return (f"{self.policy}: MCP untrusted ({fmt(self.MCP_untrusted)}?), offered load {fmt(self.offered_load, 3)} "
                f"({n} jobs, {self.rounds} rounds)")
