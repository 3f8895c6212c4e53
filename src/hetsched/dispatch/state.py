"""The dispatcher's state machine: tasks, machines, queues, prefetch — no cluster, no clock.

:class:`DispatchState` is driven by events and never talks to Dask or reads
the time: every method takes ``now`` (seconds) from its caller. The Dask layer
(:mod:`hetsched.dispatch.dasklayer`) feeds it membership snapshots and settled
attempts and submits the batches it decides; unit tests drive it with fake
events (``tests/dispatch/test_dispatch_state.py``).

Model
-----
*Tasks* are Python callables, shell commands or emulated work, each with a class;
one FIFO queue per class. A task keeps its original arrival time for its whole
life: a task given back after a failure re-enters its queue in arrival order
(the simulator's ``resubmit="front"``).

*Machines.* Every slot of a worker (by default every thread) is one machine of
the desktop-grid model, keyed ``"name"`` (one slot) or ``"name#s"``, with
estimated nominal rates ``mu'_ij`` per class and a CPU availability ``a_j``.

*Decisions* (:meth:`DispatchState.decide`). Machines that want work are served
longest-idle first; for each, the policy's selection rule — the simulator's own
:func:`hetsched.policies.pull.choose` — picks the class whose head-of-line task
it receives; the batch goes to that worker only.

*Prefetch* (off by default). With ``prefetch = s > 0`` a machine keeps up to
``depth_j = clamp(round(s / e_j), 1, max_prefetch)`` decided tasks outstanding,
``e_j = time_unit / (a_j mean_i mu'_ij)`` its expected task time, in batches of
up to ``chunk_j = ceil(depth_j / 2)`` tasks: whenever ``chunk_j`` more fit, it
pulls them at once (the selection rule applied repeatedly to the queues of
that moment) and they travel as one Dask task. So two batches are in flight:
the worker runs one while the other's result travels back and the next is
decided (a batch's results return together at its end). With ``depth_j = 1``
this is the pull model.

*Faults.* A worker that leaves gives its running tasks back at once. A batch
still running ``timeout_factor`` times its expected time (plus ``timeout_min``)
after it was sent gives its tasks back and its machine counts as silent (down)
until it answers. Whichever attempt of a task finishes first is its result;
later ones are ignored (never reported twice). An attempt that Dask reports as
*erred* (the batch could not run on the worker at all, e.g. its callable cannot
be imported there) fails its tasks with that message; a lost one (worker died,
result not fetchable) gives them back.

*Times* (§3.5.2 point 3): ``t1`` machine idle, ``t2`` dispatcher knows it,
``t3`` decision and submission, ``t4``/``t5`` start/end on the worker, ``t6``
completion noticed, ``t7`` result obtained. Response time = ``t7 - arrival``.
"""

from __future__ import annotations

import heapq
import math
import time
from collections import deque
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from ..errors import ModelError
from ..policies.pull import choose
from .monitor import Monitor
from .options import DispatchOptions
from .records import DONE, FAILED, OVERHEAD_KEYS, QUEUED, RUNNING, Batch, Machine, Task, as_rates
from .worker import KIND_EMULATE

__all__ = ["DispatchState"]

class DispatchState:
    """Queues, machines, attempts and statistics of one dispatcher (module docstring).

    Parameters
    ----------
    classes : class labels (queue ``i`` holds ``classes[i]``).
    rates : worker name (or address) -> ``N`` estimated nominal rates.
    options : :class:`~hetsched.dispatch.options.DispatchOptions`.
    emulation : :class:`~hetsched.dispatch.Emulation` for emulated tasks, or None.
    now : the time of creation (seconds).
    """

    def __init__(self, classes: Sequence[str], rates: Mapping[str, Sequence[float]], options: DispatchOptions,
                 emulation=None, now: float = 0.0):
        self.classes = [str(c) for c in classes]
        if not self.classes:
            raise ModelError("classes: at least one task class is needed, got []")
        if len(set(self.classes)) != len(self.classes):
            raise ModelError(f"classes: labels must be unique, got {self.classes}")
        self.N = N = len(self.classes)
        self._cidx = {c: i for i, c in enumerate(self.classes)}
        if not isinstance(rates, Mapping):
            raise ModelError(f"rates: expected a mapping worker name -> {N} rates, got {rates!r}")
        self.rates_given = {str(k): as_rates(f"rates[{str(k)!r}]", v, N) for k, v in rates.items()}
        self.o = options
        self.code = options.code
        self.emulation = emulation
        self.events: list[dict] = []
        self.monitor = Monitor(options, self.classes, self.events.append, now)
        # queues
        self.queues: list[deque] = [deque() for _ in range(N)]
        self.qlen = np.zeros(N, dtype=np.int64)
        self.head = np.zeros(N)
        self.tasks: dict[int, Task] = {}
        self.next_id = 0
        self.open = 0  # accepted, not finished
        # machines and attempts
        self.machines: dict[str, Machine] = {}
        self.idle: dict[str, None] = {}  # insertion order = longest idle first
        self.by_addr: dict[str, list[str]] = {}
        self.known: set[str] = set()
        self.n_initial = 0
        self.inflight: dict[str, tuple[tuple[int, ...], str, float]] = {}
        self.ran: set[str] = set()  # attempts done on their worker, value on the way (their machine is free)
        self.deadlines: list[tuple[float, str]] = []
        self.cancels: list[str] = []  # attempts the Dask layer should cancel
        # statistics
        self.stats = dict(submitted=0, completed=0, failed=0, resubmitted=0, duplicates_ignored=0, timeouts=0,
                          attempts=0, batches=0, replenish_calls=0, journal_errors=0, errored=0)
        self.resp_sum = np.zeros(N)
        self.resp_n = np.zeros(N, dtype=np.int64)
        self.resp_t0 = -math.inf  # responses of tasks arriving after this time are averaged
        self.ovh = {k: 0.0 for k in OVERHEAD_KEYS}
        self.ovh_n = 0
        self.decision_seconds = 0.0
        self.batch_sizes: list[int] = []  # tasks per batch, in submission order
        self.results: dict[int, Any] = {}
        self.on_result: Callable | None = None
        # journal rows not yet committed (the dispatcher commits them)
        self.journaling = False
        self.pending_add: list = []
        self.pending_finish: list = []

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

    def accept(self, i: int, kind: int, payload: Any, arrival: float, tid: int | None = None) -> int:
        """A task of class index ``i`` enters its queue; returns its id (journal row pending if journaling)."""
        if kind == KIND_EMULATE and self.emulation is None:
            raise ModelError("task: emulated work needs an Emulation (emulation=...)")
        if tid is None:
            tid = self.next_id
            self.next_id += 1
            if self.journaling:
                self.pending_add.append((tid, i, kind, payload, arrival))
        t = Task(tid, i, kind, payload, arrival)
        self.tasks[tid] = t
        self.open += 1
        self.stats["submitted"] += 1
        self.monitor.arr_count[i] += 1
        self._enqueue(t)
        return tid

    def withdraw(self, ids: Sequence[int]) -> None:
        """Undo :meth:`accept` of ``ids`` (their journal rows could not be committed)."""
        gone = set(ids)
        for tid in ids:
            t = self.tasks.pop(tid)
            self._unqueue(t)
            self.open -= 1
            self.stats["submitted"] -= 1
            self.monitor.arr_count[t.cls] -= 1
        self.pending_add = [r for r in self.pending_add if r[0] not in gone]
        if ids:
            self.next_id = min(ids)

    def restore(self, pending: Iterable[tuple], max_id: int, now: float) -> int:
        """Re-queue a journal's unfinished tasks ``(id, cls, kind, payload, arrival)``; returns their number."""
        self.next_id = max_id + 1
        n = 0
        for tid, i, kind, payload, arrival in pending:
            self.accept(i, kind, payload, arrival, tid=tid)
            n += 1
        if n:
            self.events.append({"t": now, "event": "restored", "tasks": n})
        return n

    def _enqueue(self, t: Task, front: bool = False) -> None:
        q = self.queues[t.cls]
        t.state = QUEUED
        if front and q and q[-1].arrival > t.arrival:  # keep arrival order ("front" resubmission)
            k = 0
            for k, other in enumerate(q):
                if other.arrival > t.arrival:
                    break
            q.insert(k, t)
        else:
            q.append(t)
        self.qlen[t.cls] += 1
        self.head[t.cls] = q[0].arrival

    def _unqueue(self, t: Task) -> None:
        q = self.queues[t.cls]
        q.remove(t)
        self.qlen[t.cls] -= 1
        self.head[t.cls] = q[0].arrival if q else 0.0

    # ------------------------------------------------------------------ workers
    def membership(self, workers: Mapping[str, tuple[str, int]], now: float, initial: bool = False) -> None:
        """The cluster's workers are now ``{address: (name, nthreads)}``: apply joins and leaves."""
        current = {str(a): (str(v[0]), int(v[1] or 1)) for a, v in workers.items()}
        for addr in [a for a in self.by_addr if a not in current]:
            self.worker_left(addr, "left the cluster", now)
        missing = []
        for addr, (name, nthreads) in current.items():
            if addr in self.by_addr:
                continue
            rate = self.rates_given.get(name)
            if rate is None:
                rate = self.rates_given.get(addr)
            if rate is None:
                if initial and not self.o.ignore_unknown_workers:
                    missing.append(name)
                else:
                    self.events.append({"t": now, "event": "ignored", "worker": name, "reason": "no rates"})
                    self.by_addr[addr] = []
                continue
            n_slots = self.o.slots_of(name, nthreads)
            keys = []
            for s in range(n_slots):
                key = name if n_slots == 1 else f"{name}#{s}"
                m = Machine(key, name, addr, rate.copy(), self.o.availability_of(key, name, addr), now)
                self._set_depth(m)
                self.machines[key] = m
                self.idle[key] = None
                keys.append(key)
            self.by_addr[addr] = keys
            self.monitor.mark(now)
            if not initial:
                self.events.append({"t": now, "event": "joined", "worker": name, "address": addr})
        if missing:
            raise ModelError(f"rates: no execution rates for worker(s) {sorted(missing)}; "
                             f"rates are given for {sorted(self.rates_given)}")
        self.known = set(current)
        if initial:
            self.n_initial = len(self.known)

    def _set_depth(self, m: Machine) -> None:
        """Prefetch depth from the machine's expected task time (module docstring)."""
        if self.o.prefetch <= 0:
            m.depth, m.chunk, m.low = 1, 1, 0
            return
        r = m.rate[m.rate > 0] * m.a
        e = self.o.time_unit * float(np.mean(1.0 / r)) if r.size else math.inf
        d = int(round(self.o.prefetch / e)) if e > 0 else self.o.max_prefetch
        m.depth = max(1, min(self.o.max_prefetch, d))
        m.chunk = (m.depth + 1) // 2  # two batches in flight: the worker never waits for a round trip
        m.low = m.depth - m.chunk

    def worker_left(self, addr: str, reason: str, now: float) -> None:
        keys = self.by_addr.pop(addr, [])
        for key in keys:
            m = self.machines.pop(key)
            m.gone = True
            self.idle.pop(key, None)
            for fkey in list(m.out):
                self._attempt_lost(fkey, True, now)
        if keys:
            self.events.append({"t": now, "event": "left", "worker": keys[0].split("#")[0], "address": addr,
                                "reason": reason})
            self.monitor.mark(now)

    def set_machine_up(self, worker: str, up: bool, now: float, reason: str = "emulated failure") -> None:
        """Take a machine (key ``"name#s"``) or all machines of a worker down (running tasks given back) or up."""
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
                    self._attempt_lost(fkey, True, now)
        self.events.append({"t": now, "event": "up" if up else "down", "worker": worker, "reason": reason})
        self.monitor.mark(now)

    def _release(self, m: Machine, fkey: str) -> None:
        """The batch ``fkey`` no longer occupies machine ``m``."""
        b = m.out.pop(fkey, None)
        if b is None:
            return
        m.n_out -= b[0]
        m.expect = m.expect - b[1] if m.out else 0.0

    def _attempt_lost(self, fkey: str, cancel: bool, now: float) -> None:
        """An attempt will not deliver: its tasks go back to their queues (unless another attempt runs)."""
        info = self.inflight.pop(fkey, None)
        if cancel:
            self.cancels.append(fkey)
        if info is None:
            return
        tids, mkey, _ = info
        m = self.machines.get(mkey)
        if m is not None and fkey in m.out:
            self._release(m, fkey)
            if m.silent and not m.out:  # its attempts are settled: the machine may pull again
                m.silent = False
                self.monitor.mark(now)
            if m.up and m.wants:
                self._make_idle(m, now, now)
        for tid in tids:
            t = self.tasks[tid]
            t.live.discard(fkey)
            if t.state == RUNNING and not t.live:
                self.stats["resubmitted"] += 1
                self._enqueue(t, front=True)

    def _make_idle(self, m: Machine, t5: float, t6: float) -> None:
        if m.n_out == 0:
            m.last_end = t5
            m.last_notice = t6
        m.idle_since = t6
        self.idle.pop(m.key, None)
        if m.wants:
            self.idle[m.key] = None

    # ------------------------------------------------------------------ decisions
    def decide(self, now: float) -> list[Batch]:
        """Serve machines that want work, longest-waiting first: each gets batches of up to ``chunk`` tasks
        until ``depth`` are outstanding (pure pull: one task)."""
        if not self.idle or not self.qlen.any():
            return []
        td = time.perf_counter()
        code = self.code
        qlen, head, queues = self.qlen, self.head, self.queues
        out = []
        for key in list(self.idle):
            if not qlen.any():
                break
            m = self.machines[key]
            rate2, elig2 = m.rate2, m.elig2
            del self.idle[key]
            while True:
                room = min(m.chunk, m.depth - m.n_out)
                picks = []
                while room > 0:
                    i = choose(code, 0, now, qlen, head, rate2, 0, elig2, 0, 0.0)
                    if i < 0:
                        break
                    q = queues[i]
                    picks.append(q.popleft())
                    qlen[i] -= 1
                    if q:
                        head[i] = q[0].arrival
                    room -= 1
                if not picks:
                    break
                out.append(self._batch(picks, m, now))
                if not m.wants:
                    break
            if m.wants:  # a partly filled prefetch window stays open for new arrivals
                self.idle[key] = None
        self.decision_seconds += time.perf_counter() - td
        return out

    def _batch(self, tasks: list[Task], m: Machine, t3: float) -> Batch:
        st = self.stats
        st["batches"] += 1
        self.batch_sizes.append(len(tasks))
        t0 = tasks[0]
        fkey = (f"hs-{t0.id}-{t0.attempts + 1}-{m.key}" if len(tasks) == 1
                else f"hs-{t0.id}-{t0.attempts + 1}+{len(tasks)}-{m.key}")
        items = []
        expect = 0.0
        rate, a, tu, em = m.rate, m.a, self.o.time_unit, self.emulation
        first_idle = m.n_out == 0
        for k, t in enumerate(tasks):
            t.attempts += 1
            seconds = em.seconds(m.key, m.worker, t.cls, t.payload) if t.kind == KIND_EMULATE else 0.0
            items.append((t.kind, t.payload, seconds))
            r = rate[t.cls] * a
            expect += tu / r if r > 0 else 0.0
            t.state = RUNNING
            t.live.add(fkey)
            # t1/t2: for the first task of an idle machine its idle time; for prefetched ones t3
            if k == 0 and first_idle:
                t.times = {"t1": max(m.last_end, t.arrival), "t2": max(m.last_notice, t.arrival), "t3": t3}
                if m.provisional is not None:  # t1 = the previous batch's t5, known when its value arrives
                    m.t1_fix, m.provisional = (m.provisional, t), None
            else:
                t.times = {"t1": t3, "t2": t3, "t3": t3}
        st["attempts"] += len(tasks)
        self.inflight[fkey] = (tuple(t.id for t in tasks), m.key, t3)
        m.out[fkey] = (len(tasks), expect)
        m.n_out += len(tasks)
        m.expect += expect
        if self.o.timeout_factor is not None:
            # the batch runs after everything already outstanding on the machine
            heapq.heappush(self.deadlines, (t3 + self.o.timeout_factor * m.expect + self.o.timeout_min, fkey))
        return Batch(fkey, m.address, items, -st["batches"])

    # ------------------------------------------------------------------ settled attempts
    def check_timeouts(self, now: float) -> None:
        dl = self.deadlines
        while dl and dl[0][0] <= now:
            _, fkey = heapq.heappop(dl)
            info = self.inflight.get(fkey)
            if info is None or fkey in self.ran:  # settled, or ran and its value is on the way
                continue
            tids, mkey, _ = info
            m = self.machines.get(mkey)
            self.stats["timeouts"] += 1
            if m is not None and not m.silent:
                m.silent = True
                self.idle.pop(m.key, None)
                self.monitor.mark(now)
            self.events.append({"t": now, "event": "timeout", "tasks": list(tids), "machine": mkey})
            # the attempt stays alive (its result is still accepted); its tasks go back
            for tid in tids:
                t = self.tasks[tid]
                if t.state == RUNNING:
                    self.stats["resubmitted"] += 1
                    self._enqueue(t, front=True)

    def settled(self, batch: Iterable[tuple]) -> None:
        """Attempts that ran or settled, ``(key, status, t6, value, t7)``.

        ``status``: ``ran`` (done on its worker, value on the way: the machine
        is free from ``t6``), ``finished`` (value = the list of ``(t4, t5, ok,
        value)`` of :func:`~hetsched.dispatch.worker.execute_batch`), ``error``
        (value = the error's text: the batch could not run) or anything else
        (lost: the tasks go back).
        """
        for fkey, status, t6, val, t7 in batch:
            if fkey not in self.inflight:  # cancelled or given up earlier
                continue
            if status == "ran":
                if fkey not in self.ran:
                    self.ran.add(fkey)
                    m = self.machines.get(self.inflight[fkey][1])
                    if m is not None and fkey in m.out:
                        self._free(m, fkey, None, t6)
                continue
            self.ran.discard(fkey)
            if status == "error":
                self._attempt_erred(fkey, str(val), t6, t7)
                continue
            if status != "finished":
                self.events.append({"t": t6, "event": "attempt-lost", "key": fkey, "status": status})
                self._attempt_lost(fkey, False, t6)
                continue
            tids, mkey, _ = self.inflight.pop(fkey)
            m = self.machines.get(mkey)
            if m is not None:
                t5 = val[-1][1]
                if fkey in m.out:
                    self._free(m, fkey, t5, t6)
                elif m.t1_fix is not None and m.t1_fix[0] == fkey:  # the next batch went out before this t5
                    t = m.t1_fix[1]
                    t.times["t1"] = max(t5, t.arrival)
                    m.t1_fix = None
                elif m.provisional == fkey:  # still idle: its idle time starts at t5
                    m.last_end = t5
                    m.provisional = None
            tasks = self.tasks
            for tid, (t4, t5, success, value) in zip(tids, val):
                self._finish(tasks[tid], fkey, m, t4, t5, success, value, t6, t7)

    def _free(self, m: Machine, fkey: str, t5: float | None, t6: float) -> None:
        """Batch ``fkey`` no longer occupies ``m`` (it ended at ``t5``; None: not yet known, noticed at ``t6``)."""
        self._release(m, fkey)
        if m.silent and not m.out:
            m.silent = False
            self.monitor.mark(t6)
        if m.wants:
            self._make_idle(m, t6 if t5 is None else t5, t6)
            if t5 is None and m.n_out == 0:
                m.provisional = fkey

    def _attempt_erred(self, fkey: str, error: str, t6: float, t7: float) -> None:
        """The batch could not run on the worker (Dask says it erred): its tasks fail with that message."""
        tids, mkey, t3 = self.inflight.pop(fkey)
        self.stats["errored"] += 1
        self.events.append({"t": t6, "event": "attempt-error", "key": fkey, "error": error[:500]})
        m = self.machines.get(mkey)
        if m is not None and fkey in m.out:
            self._release(m, fkey)
            if m.silent and not m.out:
                m.silent = False
                self.monitor.mark(t6)
            if m.up and m.wants:
                self._make_idle(m, t6, t6)
        for tid in tids:
            self._finish(self.tasks[tid], fkey, m, t3, t3, False, f"could not run on the worker: {error}", t6, t7)

    def _finish(self, t: Task, fkey: str, m: Machine | None, t4, t5, success, value, t6, t7) -> None:
        t.live.discard(fkey)
        if t.state >= DONE:
            self.stats["duplicates_ignored"] += 1
            return
        if t.state == QUEUED:  # given back after a time-out; this attempt won
            self._unqueue(t)
        t.state = DONE if success else FAILED
        if t.live:  # cancel the other attempts (their machines become idle)
            for other in list(t.live):
                self._attempt_lost(other, True, t6)
        times = t.times
        times["t4"] = t4
        times["t5"] = t5
        times["t6"] = t6
        times["t7"] = t7
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
            self.monitor.observe_exec(m, self.machines.values(), t.cls, t5 - t4, t7 - times["t1"], t7)
        if self.journaling:
            self.pending_finish.append((t.id, "done" if success else "failed", t.attempts, t.worker, t7, value,
                                        times))
        if self.on_result is not None:
            self.on_result(t.id, self.classes[t.cls], success, value)
        t.payload = None

    # ------------------------------------------------------------------ LP and monitoring
    def tick(self, now: float, monitor_due: bool = False) -> None:
        """Time-outs, the arrival monitor (when ``monitor_due``) and a due LP re-solve."""
        if self.deadlines and self.deadlines[0][0] <= now:
            self.check_timeouts(now)
        if monitor_due:
            self.monitor.check_arrivals(now)
        if self.monitor.due(now):
            self.solve(now)

    def solve(self, now: float, initial: bool = False) -> None:
        self.monitor.solve(self.machines.values(), now, initial=initial)

    def wake(self) -> float:
        """The earliest time something is due here (a time-out or a periodic re-solve), or ``inf``."""
        w = self.deadlines[0][0] if self.deadlines else math.inf
        lp = self.monitor.wake()
        return w if lp is None else min(w, lp)

    def take_cancels(self) -> list[str]:
        c, self.cancels = self.cancels, []
        return c

    # ------------------------------------------------------------------ views
    @property
    def lam(self) -> float:
        return self.monitor.lam

    def snapshot(self) -> dict:
        """Live state for a progress view."""
        ms = self.machines.values()
        return {"queued": {c: int(n) for c, n in zip(self.classes, self.qlen)},
                "running": sum(m.n_out for m in ms), "idle": len(self.idle), "machines": len(self.machines),
                "up": sum(m.up and not m.silent for m in ms), "completed": self.stats["completed"],
                "failed": self.stats["failed"], "resubmitted": self.stats["resubmitted"], "open": self.open,
                "lambda": self.lam}

    def per_class(self) -> list[dict]:
        out = []
        for i, c in enumerate(self.classes):
            n = int(self.resp_n[i])
            out.append({"class": c, "completed": n,
                        "mean_response": float(self.resp_sum[i] / n) if n else float("nan")})
        return out

    def mean_response(self) -> float:
        n = int(self.resp_n.sum())
        return float(self.resp_sum.sum() / n) if n else float("nan")

    def overhead(self) -> dict:
        return {k: (v / self.ovh_n if self.ovh_n else float("nan")) for k, v in self.ovh.items()}
