"""The outcome of a dispatch run (:class:`DispatchResult`), in the project's result protocol."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..results import OK, UNSTABLE, Result, fmt, jsonable

__all__ = ["DispatchResult", "TIMEOUT", "NO_WORKERS", "JOURNAL_FAILED"]

TIMEOUT, NO_WORKERS, JOURNAL_FAILED = 2, 3, 4


@dataclass(repr=False)
class DispatchResult(Result):
    """Outcome of :meth:`hetsched.dispatch.Dispatcher.run`.

    ``status`` (see ``STATUS``): 0 every accepted task finished (done, or failed
    by its own code: ``failed`` counts those); 1 every task finished, but the
    system was not stabilisable at the start (``lambda* <= 1``, run with
    ``allow_unstable``): the response times are those of growing queues, so
    ``mean_response`` and the per-class means are NaN and the numbers are in
    ``mean_response_untrusted`` / ``per_class[..]["mean_response_untrusted"]``;
    2-4 the run stopped with ``lost`` tasks unfinished (time-out, no worker
    left, journal not writable; with a journal they stay queued in it).
    Times are in seconds; ``per_class[k]["class"]`` is the class label.
    """

    STATUS: ClassVar = {OK: "all accepted tasks finished", UNSTABLE: "finished, but lambda* <= 1 at the start "
                        "(allow_unstable): response times are not steady-state estimates",
                        TIMEOUT: "stopped at the time-out with tasks unfinished",
                        NO_WORKERS: "stopped: no worker left, tasks unfinished",
                        JOURNAL_FAILED: "stopped: the journal could not be written, tasks unfinished"}

    status: int
    message: str
    policy: str
    submitted: int
    completed: int
    failed: int
    lost: int
    resubmitted: int
    duplicates_ignored: int
    timeouts: int
    mean_response: float
    per_class: list
    overhead: dict
    lp_solves: int
    lam: float
    seconds: float
    decision_seconds: float
    submit_seconds: float
    events: list = field(default_factory=list, repr=False)
    mean_response_untrusted: float = float("nan")
    extra: dict = field(default_factory=dict)

    @property
    def wall_seconds(self) -> float:
        """Alias of ``seconds`` (the name of earlier versions)."""
        return self.seconds

    @property
    def classes(self) -> list[str]:
        return [pc["class"] for pc in self.per_class]

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: every field except ``events`` (``event_counts`` instead), plus ``success`` and ``wall_seconds``."""
        d = {k: v for k, v in self.__dict__.items() if k != "events"}
        counts: dict[str, int] = {}
        for e in self.events:
            counts[e.get("event", "?")] = counts.get(e.get("event", "?"), 0) + 1
        d["event_counts"] = counts
        d["success"] = self.success
        d["wall_seconds"] = self.seconds
        return jsonable(d)

    def _frame_rows(self):
        untrusted = self.status == UNSTABLE
        for k, pc in enumerate(self.per_class, start=1):
            row = {"policy": self.policy, "class": k, "class_name": pc["class"], "measure": "mean_response",
                   "value": pc["mean_response"], "unit": "s"}
            if untrusted:
                row["value_untrusted"] = pc.get("mean_response_untrusted", float("nan"))
            yield row
            yield {"policy": self.policy, "class": k, "class_name": pc["class"], "measure": "completed",
                   "value": pc["completed"], "unit": "tasks"}
        row = {"policy": self.policy, "measure": "mean_response", "value": self.mean_response, "unit": "s"}
        if untrusted:
            row["value_untrusted"] = self.mean_response_untrusted
        yield row
        for m in ("submitted", "completed", "failed", "lost", "resubmitted", "duplicates_ignored", "timeouts",
                  "lp_solves"):
            yield {"policy": self.policy, "measure": m, "value": getattr(self, m), "unit": "tasks" if m not in (
                "timeouts", "lp_solves") else "count"}
        yield {"policy": self.policy, "measure": "lambda", "value": self.lam, "unit": ""}
        for k, v in self.overhead.items():
            yield {"policy": self.policy, "measure": f"overhead {k}", "value": v, "unit": "s"}
        yield {"policy": self.policy, "measure": "seconds", "value": self.seconds, "unit": "s"}

    def _headline(self) -> str:
        mr = self.mean_response if self.status != UNSTABLE else self.mean_response_untrusted
        tag = " (untrusted: lambda* <= 1)" if self.status == UNSTABLE else ""
        return (f"{self.policy}: {self.completed} done, {self.failed} failed, {self.lost} lost of "
                f"{self.submitted}; mean response {fmt(mr)} s{tag}")

    def __post_init__(self):
        if self.status == UNSTABLE and math.isnan(self.mean_response_untrusted):
            self.mean_response_untrusted, self.mean_response = self.mean_response, float("nan")
            for pc in self.per_class:
                pc["mean_response_untrusted"] = pc["mean_response"]
                pc["mean_response"] = float("nan")
