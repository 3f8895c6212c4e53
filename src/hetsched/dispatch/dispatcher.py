"""Pull-based dispatch of real tasks to Dask workers (thesis §3.5, MGST).

Model
-----
*Tasks* are Python callables, shell commands or emulated work, each with a class
label; the dispatcher keeps one FIFO queue per class and the task's original
arrival time for its whole life (a task given back after a failure re-enters its
queue in arrival order, "front").

*Machines.* Every thread of every Dask worker is one machine of the desktop-grid
model (one task at a time). Each has estimated nominal execution rates
``mu'_ij`` per class (given per worker name) and a CPU availability ``a_j``.

*Decisions.* When a machine is idle, the policy's selection rule — the same
plain-Python :func:`hetsched.policies.pull.select_class` the simulator
compiles — picks the class whose head-of-line task it receives; the task is
submitted to that worker only (``workers=[address]``,
``allow_other_workers=False``). Idle machines are served longest-idle first.
LPAS_DG uses the support of a vertex ``delta*`` of the allocation LP (3.1)-(3.3)
over the machines that are up (one column per machine up to 100 machines,
interchangeable machines aggregated beyond — the simulator's ``lp_grouping="auto"``);
LPAS_DG robust the central solution (aggregated).

*Dynamics* (§3.3, §3.5.2). The LP is re-solved when a worker joins or leaves,
when a machine is declared silent or comes back, and when the monitored rates
drift: every ``monitor_interval`` seconds the observed arrival rate of each class
is compared with its estimate (recommendation 1); at every completion the
observed execution rate of the pair ``(i, j)`` is compared with its estimate
(recommendation 2); with ``delay_correction`` the LP uses ``p_ij mu_ij`` with
``p_ij = (t5-t4)/(t7-t1)`` (recommendation 3). An estimate is replaced by the
observation when they differ by more than ``drift_threshold`` (relative) after at
least ``min_samples`` observations.

*Faults* (§3.5.2 point 4). Workers that leave the Dask cluster give their
running tasks back at once. A task still running ``timeout_factor`` times its
expected time (plus ``timeout_min`` seconds) after it was sent is given back and
its machine is treated as down until it answers (a worker that hangs rather
than dies). Whichever attempt of a task finishes first is its result; later
ones are ignored (never reported twice). When the cluster has fewer workers than
at the start for ``replenish_after`` seconds, ``replenish()`` is called (the
embedded ``LocalCluster`` starts new workers under the lost names); when no
worker at all is left for ``worker_wait`` seconds, :meth:`Dispatcher.run` stops
with ``success=False`` and the number of unfinished tasks (they stay queued in
the journal). A journal write that fails (disk full, I/O error) is retried
``journal_retries`` times, one second apart, without dispatching anything new;
then the run stops the same way — nothing accepted is lost, tasks whose results
were not committed run again after a restart.

*Prefetch and batches* (throughput; off by default). With ``prefetch = s > 0``
every machine keeps up to ``depth_j = clamp(round(s / e_j), 1, max_prefetch)``
decided tasks outstanding, where ``e_j`` is its expected task time
``time_unit / (a_j mean_i mu'_ij)`` (so fast machines hold more); when its
outstanding count falls to ``depth_j // 2`` it pulls ``depth_j - outstanding``
tasks at once — the selection rule applied repeatedly to the queues as they are
at that moment (each pick removes the head it took) — and they travel as one
Dask task (:func:`~hetsched.dispatch.worker.execute_batch`) run in order on the
worker. What changes for the policies: (1) a machine commits to up to
``depth_j`` tasks before it is idle, decided with the queue state of that
moment, so a task arriving later cannot overtake the prefetched ones on that
machine; (2) those tasks are no longer available to another machine that
becomes idle sooner (up to ``depth_j - 1`` tasks of imbalance per machine);
(3) the results of a batch return together, at its end. With ``depth_j = 1``
(``prefetch = 0``, or tasks longer than ``s``) everything is exactly the pull
model above. Policies that favour fast machines for a class (LPAS_DG's
support restrictions are still respected — only eligible classes are picked)
can see somewhat longer response times at high load.
*Times* (§3.5.2 point 3): ``t1`` machine idle (end of its previous task, or the
task's arrival if later), ``t2`` dispatcher knows it is idle, ``t3`` decision
made and task submitted, ``t4``/``t5`` start/end on the worker, ``t6``
completion noticed, ``t7`` result obtained. Response time = ``t7 - arrival``.
"""

from __future__ import annotations

import heapq
import math
import queue
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from ..errors import ModelError, UnstableError
from ..policies.pull import LPAS_DG, LPAS_DG_ROBUST, policy_code, select_class
from .journal import JournalWriteError
from .worker import KIND_CALL, KIND_EMULATE, KIND_SHELL, execute_batch

__all__ = ["Dispatcher", "DispatchResult", "Emulation", "OVERHEAD_KEYS"]

OVERHEAD_KEYS = ("t2-t1", "t3-t2", "t4-t3", "t5-t4", "t6-t5", "t7-t6")
_QUEUED, _RUNNING, _DONE, _FAILED = 0, 1, 2, 3


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


@dataclass
class DispatchResult:
    """Outcome of :meth:`Dispatcher.run` (fields in the style of ``OptimizeResult``)."""

    success: bool
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
    wall_seconds: float
    decision_seconds: float
    submit_seconds: float
    events: list
    extra: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return dict(self.__dict__)


class _Task:
    __slots__ = ("id", "cls", "kind", "payload", "arrival", "state", "attempts", "live", "times", "worker")

    def __init__(self, tid, cls, kind, payload, arrival):
        self.id = tid
        self.cls = cls
        self.kind = kind
        self.payload = payload
        self.arrival = arrival
        self.state = _QUEUED
        self.attempts = 0
        self.live: set[str] = set()  # future keys of running attempts
        self.times: dict = {}
        self.worker = None


class _Machine:
    __slots__ = ("key", "worker", "address", "rate", "a", "eligible", "up", "out", "n_out", "depth", "low",
                 "idle_since", "last_end", "last_notice", "silent", "gone", "expect")

    def __init__(self, key, worker, address, rate, a, now):
        self.key = key
        self.worker = worker
        self.address = address
        self.rate = rate            # estimated nominal rates mu'_ij (N,)
        self.a = a                  # CPU availability estimate
        self.eligible = rate > 0    # LP support (LPAS_DG) or rate > 0
        self.up = True
        self.out: dict[str, tuple[int, float]] = {}  # outstanding batches: key -> (tasks, expected s)
        self.n_out = 0                 # outstanding tasks (all batches)
        self.depth = 1                 # prefetch depth (1 = pure pull)
        self.low = 0                   # pull again when n_out <= low
        self.expect = 0.0              # expected seconds of the outstanding tasks (time-outs)
        self.idle_since = now
        self.last_end = now
        self.last_notice = now
        self.silent = False
        self.gone = False

    @property
    def wants(self) -> bool:
        return self.up and not self.silent and self.n_out <= self.low


def _as_rates(where: str, r: Any, N: int) -> np.ndarray:
    try:
        arr = np.asarray(r, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise ModelError(f"{where}: expected {N} execution rates, got {r!r}") from None
    if arr.shape != (N,) or not np.isfinite(arr).all() or (arr < 0).any():
        raise ModelError(f"{where}: expected {N} finite rates >= 0 (one per class), got {list(np.atleast_1d(arr))}")
    if not (arr > 0).any():
        raise ModelError(f"{where}: the worker can run no class (all rates are 0)")
    return arr


class Dispatcher:
    """Pull-based dispatcher over a ``distributed.Client`` (module docstring).

    Parameters
    ----------
    client : distributed.Client
    classes : sequence of str
        Class labels (queue ``i`` holds class ``classes[i]``).
    rates : mapping worker name (or address) -> N rates
        Estimated nominal execution rates ``mu'_ij`` per time unit.
    policy : {"fcfs", "gcmu", "lpas-dg", "lpas-dg-robust"}
    alpha : N arrival rates per time unit (required by the LPAS_DG policies;
        checked for stability whenever given).
    availability : mapping worker name or machine key (``"name#s"``) -> ``a_j`` (default 1).
    lp_grouping : ``"auto"`` (the simulator's rule: one LP column per machine for
        LPAS_DG with at most 100 machines, else interchangeable machines
        aggregated), ``"groups"`` or ``"machines"``.
    slots : machines per worker (int or mapping name -> int); default: the worker's threads.
        A worker with ``k > 1`` slots is ``k`` machines ``"name#0" .. "name#k-1"``.
    time_unit : seconds per time unit of ``rates``/``alpha``.
    journal : path of an SQLite journal, or None.
    emulation : :class:`Emulation` for emulated tasks.
    monitor_interval, drift_threshold, min_samples, delay_correction,
    adapt_arrivals, adapt_rates : rate monitoring (recommendations 1-3).
    timeout_factor, timeout_min : silent-machine time-out (point 4); None = off.
    poll_interval : seconds between membership checks.
    ignore_unknown_workers : workers without rates are ignored instead of an error.
    fetch_timeout : seconds to fetch a finished attempt's value before it counts as lost.
    allow_unstable : run even if ``lambda* <= 1``.
    prefetch : seconds of expected work each machine keeps decided ahead
        (0 = pure pull; module docstring, "Prefetch and batches").
    max_prefetch : upper bound of the per-machine prefetch depth.
    journal_spec : hash of the task specification the journal belongs to.
    worker_wait : seconds without any worker before :meth:`run` gives up.
    replenish : called (no arguments) when workers have been missing for
        ``replenish_after`` seconds, e.g. to restart a ``LocalCluster``'s workers.
    journal_retries : failed journal writes retried this many times (1 s apart).
    """

    def __init__(self, client, classes: Sequence[str], rates: Mapping[str, Sequence[float]], *,
                 policy: str = "lpas-dg", alpha: Sequence[float] | None = None,
                 availability: Mapping[str, float] | None = None, time_unit: float = 1.0,
                 journal: str | None = None, emulation: Emulation | None = None,
                 monitor_interval: float = 2.0, drift_threshold: float = 0.3, min_samples: int = 50,
                 delay_correction: bool = False, adapt_arrivals: bool = True, adapt_rates: bool = True,
                 timeout_factor: float | None = 10.0, timeout_min: float = 5.0, poll_interval: float = 0.2,
                 ignore_unknown_workers: bool = False, allow_unstable: bool = False, fetch_timeout: float = 5.0,
                 direct_fetch: bool | None = None, slots: int | Mapping[str, int] | None = None,
                 lp_grouping: str = "auto", prefetch: float = 0.0, max_prefetch: int = 64,
                 journal_spec: str | None = None, worker_wait: float = 60.0,
                 replenish: Callable[[], Any] | None = None, replenish_after: float = 5.0,
                 journal_retries: int = 5):
        self.client = client
        self.code = policy_code(policy)
        self.policy = str(policy).lower()
        self.classes = [str(c) for c in classes]
        if not self.classes:
            raise ModelError("classes: at least one task class is needed, got []")
        if len(set(self.classes)) != len(self.classes):
            raise ModelError(f"classes: labels must be unique, got {self.classes}")
        self.N = N = len(self.classes)
        self._cidx = {c: i for i, c in enumerate(self.classes)}
        self.rates_given = {str(k): _as_rates(f"rates[{k!r}]", v, N) for k, v in dict(rates).items()}
        self.avail = {str(k): float(v) for k, v in dict(availability or {}).items()}
        for k, v in self.avail.items():
            if not 0 < v <= 1:
                raise ModelError(f"availability[{k!r}]: must lie in (0, 1], got {v!r}")
        if alpha is None:
            if self.code in (LPAS_DG, LPAS_DG_ROBUST):
                raise ModelError(f"alpha: policy {self.policy!r} needs the classes' arrival rates")
            self.alpha = None
        else:
            al = np.asarray(alpha, dtype=float).reshape(-1)
            if al.shape != (N,) or not np.isfinite(al).all() or (al <= 0).any():
                raise ModelError(f"alpha: expected {N} arrival rates > 0, got {list(np.atleast_1d(al))}")
            self.alpha = al.copy()
        if not time_unit > 0:
            raise ModelError(f"time_unit: must be > 0 seconds, got {time_unit!r}")
        self.time_unit = float(time_unit)
        self.emulation = emulation
        self.monitor_interval = float(monitor_interval)
        self.drift_threshold = float(drift_threshold)
        self.min_samples = int(min_samples)
        self.delay_correction = bool(delay_correction)
        self.adapt_arrivals = bool(adapt_arrivals)
        self.adapt_rates = bool(adapt_rates)
        self.timeout_factor = timeout_factor
        self.timeout_min = float(timeout_min)
        self.poll_interval = float(poll_interval)
        self.ignore_unknown_workers = bool(ignore_unknown_workers)
        self.allow_unstable = bool(allow_unstable)
        self.fetch_timeout = float(fetch_timeout)
        self.direct_fetch = direct_fetch
        if slots is not None:
            for k, v in (slots.items() if isinstance(slots, Mapping) else [("slots", slots)]):
                if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                    raise ModelError(f"slots[{k!r}]: expected a positive integer, got {v!r}")
        self.slots = slots
        if lp_grouping not in ("auto", "groups", "machines"):
            raise ModelError(f"lp_grouping: expected 'auto', 'groups' or 'machines', got {lp_grouping!r}")
        self.lp_grouping = lp_grouping
        if not (isinstance(prefetch, (int, float)) and math.isfinite(prefetch) and prefetch >= 0):
            raise ModelError(f"prefetch: expected seconds >= 0, got {prefetch!r}")
        if isinstance(max_prefetch, bool) or not isinstance(max_prefetch, (int, np.integer)) or max_prefetch < 1:
            raise ModelError(f"max_prefetch: expected a positive integer, got {max_prefetch!r}")
        self.prefetch = float(prefetch)
        self.max_prefetch = int(max_prefetch)
        if not (worker_wait > 0 and math.isfinite(worker_wait)):
            raise ModelError(f"worker_wait: expected seconds > 0, got {worker_wait!r}")
        self.worker_wait = float(worker_wait)
        self.replenish = replenish
        self.replenish_after = float(replenish_after)
        self.journal_retries = int(journal_retries)

        # queues
        self.queues = [deque() for _ in range(N)]
        self.qlen = np.zeros(N, dtype=np.int64)
        self.head = np.zeros(N)
        self.tasks: dict[int, _Task] = {}
        self.next_id = 0
        self.open = 0  # accepted, not finished
        # machines
        self.machines: dict[str, _Machine] = {}
        self.idle: dict[str, None] = {}  # insertion order = longest idle first
        self.by_addr: dict[str, list[str]] = {}
        self.inflight: dict[str, tuple[int, str, float]] = {}
        self.futures: dict[str, Any] = {}
        self.doneq: queue.SimpleQueue = queue.SimpleQueue()
        self.deadlines: list[tuple[float, str]] = []
        # statistics
        self.stats = dict(submitted=0, completed=0, failed=0, resubmitted=0, duplicates_ignored=0, timeouts=0,
                          lp_solves=0, attempts=0, batches=0, replenish_calls=0, journal_errors=0)
        self.resp_sum = np.zeros(N)
        self.resp_n = np.zeros(N, dtype=np.int64)
        self.resp_t0 = 0.0  # count responses of tasks arriving after this wall time
        self.ovh = {k: 0.0 for k in OVERHEAD_KEYS}
        self.ovh_n = 0
        self.decision_seconds = 0.0
        self.submit_seconds = 0.0
        self.events: list[dict] = []
        self.lam = float("nan")
        # monitoring
        self.arr_count = np.zeros(N, dtype=np.int64)
        self.arr_since = time.time()
        self.obs: dict[tuple[int, str], list[float]] = {}  # (i, worker) -> [n, sum exec, sum t7-t1]
        self._need_lp = True
        self._polling = False
        self._on_result: Callable | None = None
        self.results: dict[int, Any] = {}
        self.journal = None
        if journal is not None:
            from .journal import Journal

            self.journal = Journal(journal, self.classes, spec=journal_spec)
            self._restore()
        self._pending_finish: list = []
        self._pending_add: list = []
        self._sync_workers(initial=True)
        self._n_initial = len(self._known)
        self._solve_lp(initial=True)

    # ------------------------------------------------------------------ tasks
    def class_index(self, cls: Any) -> int:
        """Queue index of a class: an ``int`` is an index, anything else a label."""
        if isinstance(cls, (int, np.integer)) and not isinstance(cls, bool):
            if 0 <= cls < self.N:
                return int(cls)
            raise ModelError(f"class: index {cls!r} out of range 0..{self.N - 1} (classes {self.classes})")
        i = self._cidx.get(cls if isinstance(cls, str) else str(cls))
        if i is None:
            raise ModelError(f"class: unknown class {cls!r}; known classes are {self.classes}")
        return i

    def add(self, cls: Any, fn: Callable | None = None, *args, command: str | Sequence[str] | None = None,
            work: float | None = None, **kwargs) -> int:
        """Accept one task now; returns its id (committed to the journal if any)."""
        i = self.class_index(cls)
        kind, payload = self._payload(fn, args, kwargs, command, work)
        return self._accept_now([(i, kind, payload)])[0]

    def add_many(self, items: Iterable[tuple]) -> list[int]:
        """Accept ``(cls, kind, payload)`` tuples now, in one journal transaction."""
        return self._accept_now([(self.class_index(c), k, p) for c, k, p in items])

    def _accept_now(self, items) -> list[int]:
        """Accept now; if the journal cannot commit them, they are not accepted (error raised)."""
        now = time.time()
        ids = [self._accept(i, k, p, now) for i, k, p in items]
        try:
            self._flush_journal()
        except JournalWriteError:
            for tid in ids:  # roll back: nothing of this call was accepted
                t = self.tasks.pop(tid)
                self._unqueue(t)
                self.open -= 1
                self.stats["submitted"] -= 1
                self.arr_count[t.cls] -= 1
            self._pending_add = [r for r in self._pending_add if r[0] not in set(ids)]
            self.next_id = min(ids) if ids else self.next_id
            raise
        return ids

    @staticmethod
    def _payload(fn, args, kwargs, command, work):
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
        if not (work >= 0 and math.isfinite(work)):
            raise ModelError(f"task: work must be a finite number >= 0, got {work!r}")
        return KIND_EMULATE, float(work)

    def _accept(self, i, kind, payload, arrival, tid=None) -> int:
        if kind == KIND_EMULATE and self.emulation is None:
            raise ModelError("task: emulated work needs an Emulation (emulation=...)")
        if tid is None:
            tid = self.next_id
            self.next_id += 1
            if self.journal is not None:
                self._pending_add.append((tid, i, kind, payload, arrival))
        t = _Task(tid, i, kind, payload, arrival)
        self.tasks[tid] = t
        self.open += 1
        self.stats["submitted"] += 1
        self.arr_count[i] += 1
        self._enqueue(t)
        return tid

    def _flush_journal(self):
        """Commit accepted tasks and results in one transaction (raises :class:`JournalWriteError`)."""
        if self.journal is None or not (self._pending_add or self._pending_finish):
            return
        self.journal.commit(self._pending_add, self._pending_finish)
        self._pending_add = []
        self._pending_finish = []

    def _restore(self):
        self.next_id = self.journal.max_id() + 1
        pend = self.journal.pending()
        for tid, i, kind, payload, arrival in pend:
            self._accept(i, kind, payload, arrival, tid=tid)
        if pend:
            self.events.append({"t": time.time(), "event": "restored", "tasks": len(pend)})

    def _enqueue(self, t: _Task, front: bool = False):
        q = self.queues[t.cls]
        t.state = _QUEUED
        if front and q and self.tasks[q[-1]].arrival > t.arrival:
            # keep arrival order ("front" resubmission)
            k = 0
            for k, tid in enumerate(q):
                if self.tasks[tid].arrival > t.arrival:
                    break
            q.insert(k, t.id)
        else:
            q.append(t.id)
        self.qlen[t.cls] += 1
        self.head[t.cls] = self.tasks[q[0]].arrival

    def _dequeue(self, i) -> _Task:
        q = self.queues[i]
        t = self.tasks[q.popleft()]
        self.qlen[i] -= 1
        if q:
            self.head[i] = self.tasks[q[0]].arrival
        return t

    def _unqueue(self, t: _Task):
        q = self.queues[t.cls]
        q.remove(t.id)
        self.qlen[t.cls] -= 1
        if q:
            self.head[t.cls] = self.tasks[q[0]].arrival
        else:
            self.head[t.cls] = 0.0

    # ------------------------------------------------------------------ workers
    def _rates_for(self, name, addr):
        r = self.rates_given.get(name)
        if r is None:
            r = self.rates_given.get(addr)
        return r

    def _sync_workers(self, initial=False):
        info = self.client.scheduler_info(n_workers=-1)["workers"]
        if initial and not info:  # a cluster still starting (or a stale view): wait a little, then refuse
            wait = min(self.worker_wait, 10.0)
            try:
                self.client.wait_for_workers(1, timeout=wait)
            except Exception:  # noqa: BLE001 - timeout: reported below
                pass
            info = self.client.scheduler_info(n_workers=-1)["workers"]
            if not info:
                raise ModelError(f"workers: the Dask cluster has no workers (waited {wait:g} s)")
        current = {addr: (str(w.get("name", addr)), int(w.get("nthreads", 1) or 1)) for addr, w in info.items()}
        for addr in [a for a in self.by_addr if a not in current]:
            self._worker_left(addr, "left the cluster")
        missing = []
        for addr, (name, nthreads) in current.items():
            if addr in self.by_addr:
                continue
            rate = self._rates_for(name, addr)
            if rate is None:
                if initial and not self.ignore_unknown_workers:
                    missing.append(name)
                else:
                    self.events.append({"t": time.time(), "event": "ignored", "worker": name,
                                        "reason": "no rates"})
                    self.by_addr[addr] = []
                continue
            n_slots = self._slots_for(name, nthreads)
            keys = []
            now = time.time()
            for s in range(n_slots):
                key = name if n_slots == 1 else f"{name}#{s}"
                a = self.avail.get(key, self.avail.get(name, self.avail.get(addr, 1.0)))
                m = _Machine(key, name, addr, rate.copy(), a, now)
                self._set_depth(m)
                self.machines[key] = m
                self.idle[key] = None
                keys.append(key)
            self.by_addr[addr] = keys
            self._need_lp = True
            if not initial:
                self.events.append({"t": now, "event": "joined", "worker": name, "address": addr})
        if missing:
            raise ModelError(f"rates: no execution rates for worker(s) {sorted(missing)}; "
                             f"rates are given for {sorted(self.rates_given)}")
        self._known = set(current)

    def _set_depth(self, m: _Machine):
        """Prefetch depth from the machine's expected task time (module docstring)."""
        if self.prefetch <= 0:
            m.depth, m.low = 1, 0
            return
        r = m.rate[m.rate > 0] * m.a
        e = self.time_unit * float(np.mean(1.0 / r)) if r.size else math.inf
        d = int(round(self.prefetch / e)) if e > 0 else self.max_prefetch
        m.depth = max(1, min(self.max_prefetch, d))
        m.low = 0 if m.depth == 1 else m.depth // 2

    def _slots_for(self, name, nthreads):
        s = self.slots
        if s is None:
            return nthreads
        if isinstance(s, Mapping):
            return int(s.get(name, nthreads))
        return int(s)

    def _worker_left(self, addr, reason):
        keys = self.by_addr.pop(addr, [])
        for key in keys:
            m = self.machines.pop(key)
            m.gone = True
            self.idle.pop(key, None)
            for fkey in list(m.out):
                self._attempt_lost(fkey, cancel=True)
        if keys:
            self.events.append({"t": time.time(), "event": "left", "worker": self._name_of(keys), "address": addr,
                                "reason": reason})
            self._need_lp = True

    @staticmethod
    def _name_of(keys):
        return keys[0].split("#")[0]

    def _release(self, m: _Machine, fkey: str):
        """The batch ``fkey`` no longer occupies machine ``m``."""
        b = m.out.pop(fkey, None)
        if b is None:
            return
        m.n_out -= b[0]
        m.expect = m.expect - b[1] if m.out else 0.0

    def _attempt_lost(self, fkey, cancel):
        info = self.inflight.pop(fkey, None)
        fut = self.futures.pop(fkey, None)
        if cancel and fut is not None:
            try:
                fut.cancel()
            except Exception:  # pragma: no cover - client closing
                pass
        if info is None:
            return
        tids, mkey, _ = info
        m = self.machines.get(mkey)
        if m is not None and fkey in m.out:
            self._release(m, fkey)
            if m.silent and not m.out:  # its attempts are settled: the machine may pull again
                m.silent = False
                self._need_lp = True
            if m.up and m.wants:
                now = time.time()
                self._make_idle(m, now, now)
        for tid in tids:
            t = self.tasks[tid]
            t.live.discard(fkey)
            if t.state == _RUNNING and not t.live:
                self.stats["resubmitted"] += 1
                self._enqueue(t, front=True)

    def set_machine_up(self, worker: str, up: bool, reason: str = "emulated failure"):
        """Take a machine (key ``"name#s"``) or all machines of a worker down (running tasks given back) or up."""
        now = time.time()
        for m in [m for m in self.machines.values() if m.key == worker or m.worker == worker]:
            if up and not m.up:
                m.up = True
                if m.wants:
                    self.idle[m.key] = None
                    m.idle_since = m.last_end = m.last_notice = now
            elif not up and m.up:
                m.up = False
                self.idle.pop(m.key, None)
                for fkey in list(m.out):
                    self._attempt_lost(fkey, cancel=True)
        self.events.append({"t": now, "event": "up" if up else "down", "worker": worker, "reason": reason})
        self._need_lp = True

    # ------------------------------------------------------------------ LP
    def _solve_lp(self, initial=False):
        self._need_lp = False
        live = [m for m in self.machines.values() if m.up and not m.silent]
        uses_lp = self.code in (LPAS_DG, LPAS_DG_ROBUST)
        for m in self.machines.values():
            m.eligible = m.rate > 0
        if self.alpha is None or not live:
            return
        from ..errors import SolverError
        from ..lp import solve_allocation

        mu = np.array([m.rate * self._p(m) for m in live]).T  # N x M'
        a = np.array([m.a for m in live])
        grouping = self.lp_grouping
        if grouping == "auto":  # the simulator's rule (hetsched.sim.desktop)
            grouping = "machines" if self.code == LPAS_DG and len(live) <= 100 else "groups"
        index: dict = {}
        col = []
        for j in range(mu.shape[1]):
            key = j if grouping == "machines" else (tuple(np.round(mu[:, j], 12)), round(a[j], 12))
            col.append(index.setdefault(key, len(index)))
        col = np.asarray(col)
        first = [col.tolist().index(c) for c in range(len(index))]
        counts = np.bincount(col)
        solution = "central" if self.code == LPAS_DG_ROBUST else "vertex"
        try:
            res = solve_allocation(mu[:, first], self.alpha, a=a[first], counts=counts,
                                   solution=solution).raise_for_status()
        except (ModelError, SolverError) as exc:
            self.lam = 0.0
            self.events.append({"t": time.time(), "event": "lp", "lambda": 0.0, "note": str(exc)})
            if initial and not self.allow_unstable:
                raise UnstableError(f"the system cannot be stabilised ({exc})") from exc
            return
        self.stats["lp_solves"] += 1
        self.lam = float(res.lam)
        self.events.append({"t": time.time(), "event": "lp", "lambda": self.lam, "machines": len(live)})
        if initial and not res.stabilizable and not self.allow_unstable:
            raise UnstableError(
                f"the system cannot be stabilised: lambda* = {self.lam:.4f} <= 1 for alpha = "
                f"{self.alpha.tolist()} on {len(live)} machine(s) (no policy, {self.policy!r} included, "
                f"keeps the queues bounded; reduce alpha or add workers, or pass allow_unstable)")
        if uses_lp:
            sup = res.delta > res.zero_tol
            for m, c in zip(live, col):
                m.eligible = sup[:, c] & (m.rate > 0)

    def _p(self, m: _Machine) -> np.ndarray:
        """Delay correction ``p_ij`` (recommendation 3) for the LP, 1 where unknown."""
        p = np.ones(self.N)
        if not self.delay_correction:
            return p
        for i in range(self.N):
            o = self.obs.get((i, m.worker))
            if o is not None and o[0] >= self.min_samples and o[2] > 0:
                p[i] = min(1.0, o[1] / o[2])
        return p

    def _check_arrivals(self, now):
        elapsed = (now - self.arr_since) / self.time_unit
        if self.alpha is None or not self.adapt_arrivals or elapsed <= 0:
            return
        changed = False
        for i in range(self.N):
            n = self.arr_count[i]
            if n >= self.min_samples:
                obs = n / elapsed
                if abs(obs - self.alpha[i]) > self.drift_threshold * self.alpha[i]:
                    self.events.append({"t": now, "event": "drift", "what": "alpha", "class": self.classes[i],
                                        "estimate": float(self.alpha[i]), "observed": float(obs)})
                    self.alpha[i] = obs
                    changed = True
        self.arr_count[:] = 0
        self.arr_since = now
        if changed:
            self._need_lp = True

    def _observe_exec(self, m: _Machine, i: int, exec_s: float, total_s: float):
        o = self.obs.setdefault((i, m.worker), [0, 0.0, 0.0])
        o[0] += 1
        o[1] += exec_s
        o[2] += total_s
        if not self.adapt_rates or o[0] < self.min_samples or o[1] <= 0:
            return
        est_eff = m.rate[i] * m.a
        obs_eff = o[0] * self.time_unit / o[1]
        if est_eff > 0 and abs(obs_eff - est_eff) > self.drift_threshold * est_eff:
            new = obs_eff / m.a
            for mm in self.machines.values():
                if mm.worker == m.worker:
                    mm.rate[i] = new
            self.events.append({"t": time.time(), "event": "drift", "what": "mu", "class": self.classes[i],
                                "worker": m.worker, "estimate": float(est_eff / m.a), "observed": float(new)})
            o[:] = [0, 0.0, 0.0]
            self._need_lp = True
        elif self.delay_correction and o[0] % self.min_samples == 0:
            self._need_lp = True

    # ------------------------------------------------------------------ dispatching
    def _dispatch(self):
        """Serve machines that want work, longest-waiting first; one batch per machine."""
        if not self.idle or not self.qlen.any():
            return
        now = time.time()
        code = self.code
        qlen, head = self.qlen, self.head
        for key in list(self.idle):
            if not qlen.any():
                break
            m = self.machines[key]
            room = m.depth - m.n_out
            picks = []
            td = time.perf_counter()
            while room > 0:
                i = select_class(code, now, qlen, head, m.rate, m.eligible)
                if i < 0:
                    break
                picks.append(self._dequeue(i))
                room -= 1
            self.decision_seconds += time.perf_counter() - td
            if not picks:
                continue
            del self.idle[key]
            self._submit(picks, m, now)
            if m.wants:  # a partly filled prefetch queue stays open for new arrivals
                self.idle[key] = None

    def _submit(self, tasks: list, m: _Machine, now: float):
        ts = time.perf_counter()
        self.stats["batches"] += 1
        t0 = tasks[0]
        t0.attempts += 1
        fkey = f"hs-{t0.id}-{t0.attempts}-{m.key}" if len(tasks) == 1 else f"hs-{t0.id}-{t0.attempts}+{len(tasks)}-{m.key}"
        items = []
        expect = 0.0
        t3 = time.time()
        for k, t in enumerate(tasks):
            if k:
                t.attempts += 1
            seconds = 0.0
            if t.kind == KIND_EMULATE:
                seconds = self.emulation.seconds(m.key, m.worker, t.cls, t.payload)
            items.append((t.kind, t.payload, seconds))
            r = m.rate[t.cls] * m.a
            expect += self.time_unit / r if r > 0 else 0.0
            t.state = _RUNNING
            t.live.add(fkey)
            # t1/t2: for the first task of an idle machine its idle time; for prefetched ones t3
            t.times = ({"t1": max(m.last_end, t.arrival), "t2": max(m.last_notice, t.arrival), "t3": t3}
                       if k == 0 and m.n_out == 0 else {"t1": t3, "t2": t3, "t3": t3})
        self.stats["attempts"] += len(tasks)
        # priority: a worker holding several batches (prefetch) runs them in submission order (Dask's own
        # order is FIFO only across its 'fifo-timeout' of 60 ms)
        fut = self.client.submit(execute_batch, items, key=fkey, workers=[m.address], allow_other_workers=False,
                                 pure=False, priority=-self.stats["batches"])
        self.client.loop.add_callback(self._watch, fut)
        self.submit_seconds += time.perf_counter() - ts
        self.futures[fkey] = fut
        self.inflight[fkey] = (tuple(t.id for t in tasks), m.key, t3)
        m.out[fkey] = (len(tasks), expect)
        m.n_out += len(tasks)
        m.expect += expect
        if self.timeout_factor is not None:
            # the batch runs after everything already outstanding on the machine
            heapq.heappush(self.deadlines, (t3 + self.timeout_factor * m.expect + self.timeout_min, fkey))

    async def _poll(self):
        """In the client's event loop: has the set of workers changed? Tell the main loop."""
        try:
            ncores = await self.client.scheduler.ncores()
        except Exception:  # pragma: no cover - scheduler unreachable for a moment
            ncores = None
        self._polling = False
        if ncores is not None and set(ncores) != self._known:
            self.doneq.put((None, "membership", time.time(), None, None))

    async def _watch(self, fut):
        """In the client's event loop: wait for ``fut``, fetch its value, hand both to the main loop.

        The value is fetched here (asynchronously, at most ``fetch_timeout``
        seconds) so that a worker that dies between finishing and delivering
        never blocks the dispatcher: the attempt is then reported lost.
        """
        import asyncio

        try:
            await fut._state.wait()
        except Exception:  # pragma: no cover - client closing
            return
        t6 = time.time()
        status = fut.status
        val = None
        if status == "finished":
            try:
                val = (await asyncio.wait_for(self.client._gather([fut], direct=self.direct_fetch),
                                              self.fetch_timeout))[0]
            except Exception:
                status = "lost"
        self.doneq.put((fut.key, status, t6, val, time.time()))

    def _check_timeouts(self, now):
        dl = self.deadlines
        while dl and dl[0][0] <= now:
            _, fkey = heapq.heappop(dl)
            info = self.inflight.get(fkey)
            if info is None:
                continue
            tids, mkey, _ = info
            m = self.machines.get(mkey)
            self.stats["timeouts"] += 1
            if m is not None and not m.silent:
                m.silent = True
                self.idle.pop(m.key, None)
                self._need_lp = True
            self.events.append({"t": now, "event": "timeout", "tasks": list(tids), "machine": mkey})
            # the attempt stays alive (its result is still accepted); its tasks go back
            for tid in tids:
                t = self.tasks[tid]
                if t.state == _RUNNING:
                    self.stats["resubmitted"] += 1
                    self._enqueue(t, front=True)

    def _complete(self, batch):
        """Handle settled attempts ``[(key, status, t6, value, t7), ...]``."""
        for fkey, status, t6, val, t7 in batch:
            if fkey not in self.inflight:  # cancelled or given up earlier
                self.futures.pop(fkey, None)
                continue
            if status != "finished":  # error / cancelled / lost: the tasks go back
                self.events.append({"t": t6, "event": "attempt-lost", "key": fkey, "status": status})
                self._attempt_lost(fkey, cancel=False)
                self.futures.pop(fkey, None)
                continue
            tids, mkey, t3 = self.inflight.pop(fkey)
            self.futures.pop(fkey, None)
            m = self.machines.get(mkey)
            if m is not None and fkey in m.out:
                self._release(m, fkey)
                if m.silent and not m.out:
                    m.silent = False
                    self._need_lp = True
                if m.wants:
                    self._make_idle(m, val[-1][1], t6)
            for tid, (t4, t5, success, value) in zip(tids, val):
                self._finish_task(self.tasks[tid], fkey, m, t4, t5, success, value, t6, t7)

    def _finish_task(self, t: _Task, fkey, m, t4, t5, success, value, t6, t7):
        t.live.discard(fkey)
        if t.state in (_DONE, _FAILED):
            self.stats["duplicates_ignored"] += 1
            return
        if t.state == _QUEUED:  # given back after a time-out; this attempt won
            self._unqueue(t)
        t.state = _DONE if success else _FAILED
        for other in list(t.live):  # cancel the other attempts (their machines become idle)
            self._attempt_lost(other, cancel=True)
        times = dict(t.times)
        times.update(t4=t4, t5=t5, t6=t6, t7=t7)
        t.times = times
        t.worker = m.worker if m is not None else None
        self.open -= 1
        self.stats["completed" if success else "failed"] += 1
        self.results[t.id] = value
        if success and t.arrival >= self.resp_t0:
            self.resp_sum[t.cls] += t7 - t.arrival
            self.resp_n[t.cls] += 1
            self.ovh_n += 1
            o = self.ovh
            o["t2-t1"] += times["t2"] - times["t1"]
            o["t3-t2"] += times["t3"] - times["t2"]
            o["t4-t3"] += t4 - times["t3"]
            o["t5-t4"] += t5 - t4
            o["t6-t5"] += t6 - t5
            o["t7-t6"] += t7 - t6
        if success and m is not None:
            self._observe_exec(m, t.cls, t5 - t4, t7 - times["t1"])
        if self.journal is not None:
            self._pending_finish.append((t.id, "done" if success else "failed", t.attempts, t.worker, t7,
                                         value, times))
        if self._on_result is not None:
            self._on_result(t.id, self.classes[t.cls], success, value)
        t.payload = None

    def _make_idle(self, m: _Machine, t5, t6):
        if m.n_out == 0:
            m.last_end = t5
            m.last_notice = t6
        m.idle_since = t6
        self.idle.pop(m.key, None)
        if m.wants:
            self.idle[m.key] = None

    # ------------------------------------------------------------------ main loop
    def snapshot(self) -> dict:
        """Live state for a progress view."""
        return {"queued": {c: int(n) for c, n in zip(self.classes, self.qlen)},
                "running": sum(m.n_out for m in self.machines.values()), "idle": len(self.idle),
                "machines": len(self.machines), "up": sum(m.up and not m.silent for m in self.machines.values()),
                "completed": self.stats["completed"], "failed": self.stats["failed"],
                "resubmitted": self.stats["resubmitted"], "open": self.open, "lambda": self.lam}

    def _try_flush(self, now) -> str | None:
        """Commit the journal; on failure retry later. Returns a message when retries are exhausted."""
        if self._journal_retry_at is not None and now < self._journal_retry_at:
            return None
        try:
            self._flush_journal()
        except JournalWriteError as exc:
            self.stats["journal_errors"] += 1
            self._journal_fail += 1
            self.events.append({"t": now, "event": "journal-error", "error": str(exc)})
            if self._journal_fail > self.journal_retries:
                return str(exc)
            self._journal_retry_at = now + 1.0
            return None
        self._journal_fail = 0
        self._journal_retry_at = None
        return None

    def run(self, arrivals: Sequence[tuple[float, Any, int, Any]] | None = None, *,
            hooks: Sequence[tuple[float, Callable[["Dispatcher"], Any]]] = (), timeout: float | None = None,
            progress: Callable[[dict], Any] | None = None, progress_interval: float = 0.5,
            warmup: float = 0.0, on_result: Callable | None = None) -> DispatchResult:
        """Run until every accepted task (and every task of ``arrivals``) is finished.

        ``arrivals``: ``(offset_seconds, cls, kind, payload)`` released at
        ``start + offset`` (e.g. a Poisson stream); ``hooks``: ``(offset, fn)``
        called once at ``start + offset`` with the dispatcher (kills, failures).
        ``warmup``: responses of tasks arriving in the first ``warmup`` seconds
        are not averaged. ``timeout``: stop after that many seconds.

        The run ends with ``success=False`` and a message giving the number of
        unfinished tasks (``lost``; with a journal they stay queued in it) when
        ``timeout`` passes, when no worker is left for ``worker_wait`` seconds,
        or when the journal cannot be written.
        """
        self._on_result = on_result
        start = time.time()
        self.resp_t0 = start + warmup if warmup > 0 else -math.inf  # tasks accepted before run() count
        arr = sorted(arrivals or [], key=lambda x: x[0])
        for _, _c, k, _p in arr:
            if k == KIND_EMULATE and self.emulation is None:
                raise ModelError("task: emulated work needs an Emulation (emulation=...)")
        arr_cls = [self.class_index(c) for _, c, _, _ in arr]
        ai = 0
        hk = sorted(hooks, key=lambda x: x[0])
        hi = 0
        next_poll = start + self.poll_interval
        next_mon = start + self.monitor_interval
        next_prog = start
        self.arr_since = start
        self.arr_count[:] = 0
        self._journal_fail = 0
        self._journal_retry_at = None
        short_since = None   # fewer workers than at the start since
        none_since = None    # no worker at all since
        next_replenish = 0.0
        message = "all tasks finished"
        success = True
        while True:
            now = time.time()
            while ai < len(arr) and start + arr[ai][0] <= now:
                _, _c, k, p = arr[ai]
                self._accept(arr_cls[ai], k, p, start + arr[ai][0])
                ai += 1
            while hi < len(hk) and start + hk[hi][0] <= now:
                hk[hi][1](self)
                hi += 1
            if now >= next_poll and not self._polling:  # asynchronous: never blocks this loop
                self._polling = True
                self.client.loop.add_callback(self._poll)
                next_poll = now + self.poll_interval
            if self.deadlines and self.deadlines[0][0] <= now:
                self._check_timeouts(now)
            if now >= next_mon:
                self._check_arrivals(now)
                next_mon = now + self.monitor_interval
            if self._need_lp:
                self._solve_lp()
            # accepted = durable: commit before dispatching anything (one transaction per pass)
            jerr = self._try_flush(now)
            if jerr is not None:
                success = False
                message = (f"{jerr}; stopped after {self.journal_retries} retries with {self.open} task(s) "
                           f"unfinished (rerun with the same journal to resume)")
                break
            if self._journal_retry_at is None:
                self._dispatch()
            if progress is not None and now >= next_prog:
                progress(self.snapshot())
                next_prog = now + progress_interval
            if self.open == 0 and ai >= len(arr) and hi >= len(hk):
                break
            # missing workers: replenish, then give up after worker_wait seconds with none at all
            n_up = len(self.machines)
            short = len(self._known) < self._n_initial or n_up == 0
            short_since = (short_since or now) if short else None
            none_since = (none_since or now) if n_up == 0 else None
            if (short_since is not None and self.replenish is not None and now - short_since >= self.replenish_after
                    and now >= next_replenish):
                self.stats["replenish_calls"] += 1
                self.events.append({"t": now, "event": "replenish", "workers": len(self._known)})
                try:
                    self.replenish()
                except Exception as exc:  # noqa: BLE001 - report, keep waiting until worker_wait
                    self.events.append({"t": now, "event": "replenish-failed", "error": repr(exc)})
                next_replenish = now + self.replenish_after
            if none_since is not None and self.open > 0 and now - none_since >= self.worker_wait:
                success = False
                message = (f"no worker for {self.worker_wait:g} s: stopped with {self.open} task(s) unfinished"
                           + (" (kept in the journal: rerun with it to resume)" if self.journal is not None else ""))
                break
            if timeout is not None and now - start > timeout:
                success = False
                message = (f"timeout after {timeout:g} s with {self.open} task(s) unfinished"
                           + (" (kept in the journal: rerun with it to resume)" if self.journal is not None else ""))
                break
            wake = next_poll
            if ai < len(arr):
                wake = min(wake, start + arr[ai][0])
            if hi < len(hk):
                wake = min(wake, start + hk[hi][0])
            if self.deadlines:
                wake = min(wake, self.deadlines[0][0])
            try:
                first = self.doneq.get(timeout=max(0.0, min(wake - time.time(), 0.5)))
            except queue.Empty:
                continue
            batch = [first]
            while True:
                try:
                    batch.append(self.doneq.get_nowait())
                except queue.Empty:
                    break
            if any(b[0] is None for b in batch):
                self._sync_workers()
                batch = [b for b in batch if b[0] is not None]
            self._complete(batch)
        unfinished_arrivals = len(arr) - ai
        if unfinished_arrivals:
            message += f"; {unfinished_arrivals} arrival(s) not yet released"
        jerr = self._try_flush(time.time()) if self._journal_retry_at is None else None
        if jerr is not None and success:
            success, message = False, jerr
        if progress is not None:
            progress(self.snapshot())
        res = self._result(success, message, time.time() - start)
        res.extra["unreleased"] = unfinished_arrivals
        res.lost += unfinished_arrivals  # unfinished = accepted and open, or never released
        return res

    def _result(self, success, message, wall) -> DispatchResult:
        per_class = []
        for i, c in enumerate(self.classes):
            n = int(self.resp_n[i])
            per_class.append({"class": c, "completed": n,
                              "mean_response": float(self.resp_sum[i] / n) if n else float("nan")})
        n_all = int(self.resp_n.sum())
        ovh = {k: (v / self.ovh_n if self.ovh_n else float("nan")) for k, v in self.ovh.items()}
        st = self.stats
        return DispatchResult(
            success=success, message=message, policy=self.policy, submitted=st["submitted"],
            completed=st["completed"], failed=st["failed"], lost=self.open, resubmitted=st["resubmitted"],
            duplicates_ignored=st["duplicates_ignored"], timeouts=st["timeouts"],
            mean_response=float(self.resp_sum.sum() / n_all) if n_all else float("nan"), per_class=per_class,
            overhead=ovh, lp_solves=st["lp_solves"], lam=self.lam, wall_seconds=wall,
            decision_seconds=self.decision_seconds, submit_seconds=self.submit_seconds, events=list(self.events),
            extra={"attempts": st["attempts"], "batches": st["batches"], "replenish_calls": st["replenish_calls"],
                   "journal_errors": st["journal_errors"], "estimated_alpha": None if self.alpha is None else self.alpha.tolist()},
        )

    def close(self):
        for f in list(self.futures.values()):
            try:
                f.cancel()
            except Exception:  # pragma: no cover
                pass
        self.futures.clear()
        if self.journal is not None:
            try:
                self._flush_journal()
            except JournalWriteError as exc:  # uncommitted results: those tasks run again on resume
                self.events.append({"t": time.time(), "event": "journal-error", "error": str(exc)})
            self.journal.close()
            self.journal = None
