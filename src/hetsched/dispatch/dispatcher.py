"""Pull-based dispatch of real tasks to Dask workers (thesis §3.5, MGST).

:class:`Dispatcher` ties four parts together, one idea each:

* :class:`~hetsched.dispatch.options.DispatchOptions` — every option, frozen
  and validated;
* :class:`~hetsched.dispatch.state.DispatchState` — tasks, machines, queues,
  prefetch, time-outs and statistics, driven by events (no cluster, no clock);
* :class:`~hetsched.dispatch.monitor.Monitor` — the allocation LP and its
  re-solves (at every availability event, or every ``resolve_every`` seconds),
  arrival- and execution-rate drift;
* :class:`~hetsched.dispatch.dasklayer.DaskLayer` — membership from a scheduler
  plugin's events, submissions and settled attempts, Dask's public API only;

plus the SQLite :class:`~hetsched.dispatch.journal.Journal` (accepted tasks and
results survive a dispatcher crash). The model (classes, machines, the
selection rule, prefetch, faults, the times ``t1..t7``) is described in
:mod:`hetsched.dispatch.state`.

*The main loop* (:meth:`Dispatcher.run`) releases arrivals and hooks when due,
applies membership changes and settled attempts, checks time-outs, the monitor
and a due LP re-solve, commits the journal (an accepted task is durable
before it runs), then decides and submits. When the cluster has fewer workers
than at the start for ``replenish_after`` seconds, ``replenish()`` is called;
with no worker at all for ``worker_wait`` seconds the run stops with
``status`` 3. A journal write that fails is retried ``journal_retries``
times, one second apart, without dispatching anything new; then the run stops
(``status`` 4). Nothing accepted is lost: unfinished tasks stay queued in the
journal, and tasks whose results were not committed run again on resume.
"""

from __future__ import annotations

import math
import queue
import time
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..errors import ModelError
from .dasklayer import MEMBERSHIP, DaskLayer
from .journal import JournalWriteError
from .options import DispatchOptions
from .records import OVERHEAD_KEYS, Emulation
from .result import JOURNAL_FAILED, NO_WORKERS, TIMEOUT, DispatchResult
from .state import DispatchState
from .worker import KIND_EMULATE

__all__ = ["Dispatcher", "DispatchResult", "DispatchOptions", "Emulation", "OVERHEAD_KEYS"]


class Dispatcher:
    """Pull-based dispatcher over a ``distributed.Client`` (module docstring).

    Parameters
    ----------
    client : distributed.Client
    classes : sequence of str
        Class labels (queue ``i`` holds class ``classes[i]``).
    rates : mapping worker name (or address) -> N rates
        Estimated nominal execution rates ``mu'_ij`` per time unit.
    options : :class:`~hetsched.dispatch.options.DispatchOptions`, optional
        Policy, arrival rates, availability, time unit, monitoring, faults,
        prefetch (see its docstring). Keyword arguments with option names
        (``policy="gcmu"``, ``alpha=[...]``, ...) build or modify it.
    journal : path of an SQLite journal, or None.
    journal_spec : hash of the task specification the journal belongs to.
    emulation : :class:`Emulation` for emulated tasks.
    replenish : called (no arguments) when workers have been missing for
        ``replenish_after`` seconds, e.g. to restart a ``LocalCluster``'s workers.
    """

    def __init__(self, client, classes: Sequence[str], rates: Mapping[str, Sequence[float]],
                 options: DispatchOptions | None = None, *, journal: str | None = None,
                 journal_spec: str | None = None, emulation: Emulation | None = None,
                 replenish: Callable[[], Any] | None = None, **option_kw: Any):
        self.options = o = DispatchOptions.build(options, **option_kw)
        self.client = client
        self.replenish = replenish
        self.state = st = DispatchState(classes, rates, o, emulation, time.time())
        self.inbox: queue.SimpleQueue = queue.SimpleQueue()
        self.layer = DaskLayer(client, o, self.inbox)
        self.journal = None
        self.submit_seconds = 0.0
        try:
            if journal is not None:
                from .journal import Journal

                self.journal = Journal(journal, st.classes, spec=journal_spec)
                st.journaling = True
                st.restore(self.journal.pending(), self.journal.max_id(), time.time())
            workers = self.layer.start(wait=min(o.worker_wait, 10.0))
            st.membership(workers, time.time(), initial=True)
            st.solve(time.time(), initial=True)
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ views of the state
    classes = property(lambda self: self.state.classes)
    N = property(lambda self: self.state.N)
    tasks = property(lambda self: self.state.tasks)
    machines = property(lambda self: self.state.machines)
    results = property(lambda self: self.state.results)
    stats = property(lambda self: self.state.stats)
    events = property(lambda self: self.state.events)
    next_id = property(lambda self: self.state.next_id)
    lam = property(lambda self: self.state.lam)
    alpha = property(lambda self: self.state.monitor.alpha)
    policy = property(lambda self: self.options.policy)

    def snapshot(self) -> dict:
        """Live state for a progress view."""
        return self.state.snapshot()

    def class_index(self, cls: Any) -> int:
        return self.state.class_index(cls)

    def set_machine_up(self, worker: str, up: bool, reason: str = "emulated failure") -> None:
        """Take a machine (key ``"name#s"``) or all machines of a worker down (running tasks given back) or up."""
        self.state.set_machine_up(worker, up, time.time(), reason)
        self._cancel()

    # ------------------------------------------------------------------ tasks
    def add(self, cls: Any, fn: Callable | None = None, *args, command: str | Sequence[str] | None = None,
            work: float | None = None, **kwargs) -> int:
        """Accept one task now; returns its id (committed to the journal if any)."""
        from .records import make_payload

        i = self.state.class_index(cls)
        kind, payload = make_payload(fn, args, kwargs, command, work)
        return self._accept_now([(i, kind, payload)])[0]

    def add_many(self, items: Iterable[tuple]) -> list[int]:
        """Accept ``(cls, kind, payload)`` tuples now, in one journal transaction."""
        st = self.state
        return self._accept_now([(st.class_index(c), k, p) for c, k, p in items])

    def _accept_now(self, items) -> list[int]:
        """Accept now; if the journal cannot commit them, they are not accepted (error raised)."""
        now = time.time()
        ids = [self.state.accept(i, k, p, now) for i, k, p in items]
        try:
            self._flush_journal()
        except JournalWriteError:
            self.state.withdraw(ids)  # roll back: nothing of this call was accepted
            raise
        return ids

    def _flush_journal(self) -> None:
        """Commit accepted tasks and results in one transaction (raises :class:`JournalWriteError`)."""
        st = self.state
        if self.journal is None or not (st.pending_add or st.pending_finish):
            return
        self.journal.commit(st.pending_add, st.pending_finish)
        st.pending_add = []
        st.pending_finish = []

    def _try_flush(self, now) -> str | None:
        """Commit the journal; on failure retry later. Returns a message when retries are exhausted."""
        if self._journal_retry_at is not None and now < self._journal_retry_at:
            return None
        try:
            self._flush_journal()
        except JournalWriteError as exc:
            self.state.stats["journal_errors"] += 1
            self._journal_fail += 1
            self.state.events.append({"t": now, "event": "journal-error", "error": str(exc)})
            if self._journal_fail > self.options.journal_retries:
                return str(exc)
            self._journal_retry_at = now + 1.0
            return None
        self._journal_fail = 0
        self._journal_retry_at = None
        return None

    # ------------------------------------------------------------------ Dask side
    def _submit(self, now: float) -> None:
        batches = self.state.decide(now)
        if batches:
            ts = time.perf_counter()
            submit = self.layer.submit
            for b in batches:
                submit(b)
            self.submit_seconds += time.perf_counter() - ts

    def _cancel(self) -> None:
        if self.state.cancels:
            self.layer.cancel(self.state.take_cancels())

    def _settle(self, batch: list) -> None:
        st = self.state
        if any(b[0] is MEMBERSHIP for b in batch):
            if self.layer.workers is not None:
                st.membership(self.layer.workers, time.time())
            batch = [b for b in batch if b[0] is not MEMBERSHIP]
        forget = self.layer.forget
        for b in batch:
            if b[1] != "ran":
                forget(b[0])
        st.settled(batch)
        self._cancel()

    # ------------------------------------------------------------------ main loop
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
        ``on_result(id, class, ok, value)`` is called once per finished task.

        The run ends with ``status`` 2, 3 or 4 and a message giving the number
        of unfinished tasks (``lost``; with a journal they stay queued in it)
        when ``timeout`` passes, when no worker is left for ``worker_wait``
        seconds, or when the journal cannot be written.
        """
        st, o = self.state, self.options
        st.on_result = on_result
        start = time.time()
        st.resp_t0 = start + warmup if warmup > 0 else -math.inf  # tasks accepted before run() count
        arr = sorted(arrivals or [], key=lambda x: x[0])
        for _, _c, k, _p in arr:
            if k == KIND_EMULATE and st.emulation is None:
                raise ModelError("task: emulated work needs an Emulation (emulation=...)")
        arr_cls = [st.class_index(c) for _, c, _, _ in arr]
        ai, hi = 0, 0
        hk = sorted(hooks, key=lambda x: x[0])
        next_mon = start + o.monitor_interval
        next_prog = start
        st.monitor.arr_since = start
        st.monitor.arr_count[:] = 0
        self._journal_fail = 0
        self._journal_retry_at = None
        short_since = none_since = None  # fewer workers than at the start / no worker at all, since
        next_replenish = 0.0
        status, message = 0, "all tasks finished"
        inbox = self.inbox
        while True:
            now = time.time()
            while ai < len(arr) and start + arr[ai][0] <= now:
                _, _c, k, p = arr[ai]
                st.accept(arr_cls[ai], k, p, start + arr[ai][0])
                ai += 1
            while hi < len(hk) and start + hk[hi][0] <= now:
                hk[hi][1](self)
                hi += 1
            st.tick(now, monitor_due=now >= next_mon)
            if now >= next_mon:
                next_mon = now + o.monitor_interval
            # accepted = durable: commit before dispatching anything (one transaction per pass)
            jerr = self._try_flush(now)
            if jerr is not None:
                status = JOURNAL_FAILED
                message = (f"{jerr}; stopped after {o.journal_retries} retries with {st.open} task(s) "
                           f"unfinished (rerun with the same journal to resume)")
                break
            if self._journal_retry_at is None:
                self._submit(now)
            self._cancel()
            if progress is not None and now >= next_prog:
                progress(st.snapshot())
                next_prog = now + progress_interval
            if st.open == 0 and ai >= len(arr) and hi >= len(hk):
                break
            # missing workers: replenish, then give up after worker_wait seconds with none at all
            n_up = len(st.machines)
            short = len(st.known) < st.n_initial or n_up == 0
            short_since = (short_since or now) if short else None
            none_since = (none_since or now) if n_up == 0 else None
            if (short_since is not None and self.replenish is not None and now - short_since >= o.replenish_after
                    and now >= next_replenish):
                st.stats["replenish_calls"] += 1
                st.events.append({"t": now, "event": "replenish", "workers": len(st.known)})
                try:
                    self.replenish()
                except Exception as exc:  # noqa: BLE001 - report, keep waiting until worker_wait
                    st.events.append({"t": now, "event": "replenish-failed", "error": repr(exc)})
                next_replenish = now + o.replenish_after
            kept = " (kept in the journal: rerun with it to resume)" if self.journal is not None else ""
            if none_since is not None and st.open > 0 and now - none_since >= o.worker_wait:
                status = NO_WORKERS
                message = f"no worker for {o.worker_wait:g} s: stopped with {st.open} task(s) unfinished{kept}"
                break
            if timeout is not None and now - start > timeout:
                status = TIMEOUT
                message = f"timeout after {timeout:g} s with {st.open} task(s) unfinished{kept}"
                break
            wake = min(next_mon, st.wake(), now + 0.5)
            if ai < len(arr):
                wake = min(wake, start + arr[ai][0])
            if hi < len(hk):
                wake = min(wake, start + hk[hi][0])
            if self._journal_retry_at is not None:
                wake = min(wake, self._journal_retry_at)
            try:
                first = inbox.get(timeout=max(0.0, wake - time.time()))
            except queue.Empty:
                continue
            batch = [first]
            while True:
                try:
                    batch.append(inbox.get_nowait())
                except queue.Empty:
                    break
            self._settle(batch)
        unreleased = len(arr) - ai
        if unreleased:
            message += f"; {unreleased} arrival(s) not yet released"
        jerr = self._try_flush(time.time()) if self._journal_retry_at is None else None
        if jerr is not None and status == 0:
            status, message = JOURNAL_FAILED, jerr
        if progress is not None:
            progress(st.snapshot())
        res = self._result(status, message, time.time() - start)
        res.extra["unreleased"] = unreleased
        res.lost += unreleased  # unfinished = accepted and open, or never released
        return res

    def _result(self, status: int, message: str, wall: float) -> DispatchResult:
        st = self.state
        if status == 0 and st.monitor.initial_unstable:
            status = 1
            message = (f"{message}; but lambda* <= 1 at the start (allow_unstable): response times are not "
                       "steady-state estimates")
        s = st.stats
        return DispatchResult(
            status=status, message=message, policy=self.options.policy, submitted=s["submitted"],
            completed=s["completed"], failed=s["failed"], lost=st.open, resubmitted=s["resubmitted"],
            duplicates_ignored=s["duplicates_ignored"], timeouts=s["timeouts"], mean_response=st.mean_response(),
            per_class=st.per_class(), overhead=st.overhead(), lp_solves=st.monitor.solves, lam=st.lam,
            seconds=wall, decision_seconds=st.decision_seconds, submit_seconds=self.submit_seconds,
            events=list(st.events),
            extra={"attempts": s["attempts"], "batches": s["batches"], "replenish_calls": s["replenish_calls"],
                   "journal_errors": s["journal_errors"], "errored": s["errored"],
                   "estimated_alpha": None if st.monitor.alpha is None else st.monitor.alpha.tolist()},
        )

    def close(self) -> None:
        """Cancel running attempts, remove the membership plugin, commit and close the journal."""
        layer = getattr(self, "layer", None)
        if layer is not None:
            layer.close()
        if self.journal is not None:
            try:
                self._flush_journal()
            except JournalWriteError as exc:  # uncommitted results: those tasks run again on resume
                self.state.events.append({"t": time.time(), "event": "journal-error", "error": str(exc)})
            self.journal.close()
            self.journal = None

    def __enter__(self) -> "Dispatcher":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
