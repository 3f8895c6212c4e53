"""Records of the dispatcher's state: tasks, machines, batches; input checks for tasks and rates.

Plain data with ``__slots__`` (one object per task: the per-task cost matters
at thousands of tasks per second). :class:`Machine` keeps its rates and its LP
support also as ``(1, N)`` rows, the layout the selection rule
:func:`hetsched.policies.pull.choose` reads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, NamedTuple, Sequence

import numpy as np

from ..errors import ModelError
from .worker import KIND_CALL, KIND_EMULATE, KIND_SHELL

__all__ = ["Emulation", "Task", "Machine", "Batch", "as_rates", "make_payload", "OVERHEAD_KEYS", "QUEUED", "RUNNING", "DONE",
           "FAILED"]

OVERHEAD_KEYS = ("t2-t1", "t3-t2", "t4-t3", "t5-t4", "t6-t5", "t7-t6")
QUEUED, RUNNING, DONE, FAILED = 0, 1, 2, 3


class Task:
    """One accepted task (``state``: QUEUED, RUNNING, DONE or FAILED)."""

    __slots__ = ("id", "cls", "kind", "payload", "arrival", "state", "attempts", "live", "times", "worker")

    def __init__(self, tid: int, cls: int, kind: int, payload: Any, arrival: float):
        self.id = tid
        self.cls = cls
        self.kind = kind
        self.payload = payload
        self.arrival = arrival
        self.state = QUEUED
        self.attempts = 0
        self.live: set[str] = set()  # keys of the running attempts
        self.times: dict = {}
        self.worker: str | None = None


class Machine:
    """One slot of a worker: the desktop-grid model's machine."""

    __slots__ = ("key", "worker", "address", "rate", "rate2", "a", "elig2", "up", "out", "n_out",
                 "depth", "chunk", "low", "idle_since", "last_end", "last_notice", "silent", "gone", "expect", "provisional",
                 "t1_fix")

    def __init__(self, key: str, worker: str, address: str, rate: np.ndarray, a: float, now: float):
        self.key = key
        self.worker = worker
        self.address = address
        self.rate = rate                # estimated nominal rates mu'_ij (N,)
        self.rate2 = rate.reshape(1, -1)  # the same memory as a row, for the selection rule
        self.a = a                      # CPU availability estimate
        self.eligible = rate > 0        # LP support (LPAS_DG) or rate > 0
        self.up = True
        self.out: dict[str, tuple[int, float]] = {}  # outstanding batches: key -> (tasks, expected s)
        self.n_out = 0                  # outstanding tasks (all batches)
        self.depth = 1                  # prefetch depth (1 = pure pull)
        self.chunk = 1                  # tasks per batch at most
        self.low = 0                    # pull again when n_out <= low
        self.expect = 0.0               # expected seconds of the outstanding tasks (time-outs)
        self.idle_since = now
        self.last_end = now
        self.last_notice = now
        self.silent = False
        self.gone = False
        self.provisional: str | None = None  # the batch that freed this machine, its value (t5) still on the way
        self.t1_fix: tuple | None = None      # (that batch, the task whose t1 waits for its t5)

    @property
    def eligible(self) -> np.ndarray:
        return self.elig2[0]

    @eligible.setter
    def eligible(self, v) -> None:
        self.elig2 = np.asarray(v, dtype=bool).reshape(1, -1)

    @property
    def wants(self) -> bool:
        return self.up and not self.silent and self.n_out <= self.low


class Batch(NamedTuple):
    """Tasks decided for one machine, to be sent as one Dask task."""

    key: str
    address: str
    items: list            # [(kind, payload, emulated seconds), ...] for hetsched.dispatch.worker.execute_batch
    priority: int          # earlier batches first on a worker holding several


def as_rates(where: str, r: Any, N: int) -> np.ndarray:
    """``N`` finite rates >= 0, at least one > 0 (else :class:`ModelError` naming ``where``)."""
    try:
        arr = np.asarray(r, dtype=float).reshape(-1)
    except (TypeError, ValueError, OverflowError):
        raise ModelError(f"{where}: expected {N} execution rates, got {r!r}") from None
    if arr.shape != (N,) or not np.isfinite(arr).all() or (arr < 0).any():
        raise ModelError(f"{where}: expected {N} finite rates >= 0 (one per class), got {list(np.atleast_1d(arr))}")
    if not (arr > 0).any():
        raise ModelError(f"{where}: the worker can run no class (all rates are 0)")
    return arr


def make_payload(fn, args, kwargs, command, work) -> tuple[int, Any]:
    """``(kind, payload)`` of a task given as a callable, ``command=`` or ``work=`` (exactly one)."""
    given = sum(x is not None for x in (fn, command, work))
    if given != 1:
        raise ModelError("task: give exactly one of a callable, command= or work=")
    if fn is not None:
        if not callable(fn):
            raise ModelError(f"task: {fn!r} is not callable")
        return KIND_CALL, (fn, tuple(args), dict(kwargs))
    if command is not None:
        if not command:
            raise ModelError("task: empty command")
        return KIND_SHELL, command
    if isinstance(work, bool) or not isinstance(work, (int, float)) or not (work >= 0 and math.isfinite(work)):
        raise ModelError(f"task: work must be a finite number >= 0, got {work!r}")
    return KIND_EMULATE, float(work)


@dataclass(frozen=True)
class Emulation:
    """Heterogeneity emulated on identical hardware.

    An emulated task carries a nominal amount of work ``w`` (in time units); on
    worker ``k`` it sleeps ``w / (true_rates[k][i] * true_a[k]) * time_unit``
    seconds. ``true_rates`` may differ from the dispatcher's estimates (to
    emulate the estimation errors of §3.5.2).
    """

    true_rates: Mapping[str, Sequence[float]]
    true_a: Mapping[str, float] = field(default_factory=dict)
    time_unit: float = 1.0

    def seconds(self, machine: str, worker: str, cls: int, work: float) -> float:
        """Emulated duration; rates and ``a`` are looked up by machine key, then worker name."""
        r = self.true_rates.get(machine, self.true_rates.get(worker))
        if r is None:
            raise ModelError(f"emulation: worker {worker!r} has no true rates")
        rate = float(r[cls]) * float(self.true_a.get(machine, self.true_a.get(worker, 1.0)))
        if rate <= 0:
            return math.inf
        return float(work) / rate * self.time_unit
