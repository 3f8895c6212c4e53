"""The Dask layer of the dispatcher: membership events, submissions, settled attempts.

Everything here uses Dask's public API only (``tests/dispatch/test_dispatch_state.py``
checks that no private Dask attribute is used anywhere in the package):

* **Membership** comes from a scheduler plugin (``Client.register_plugin``)
  that logs the full set of workers ``{address: [name, nthreads]}`` to a topic
  of its own whenever a worker is added or removed, and once when it starts;
  the dispatcher receives it through ``Client.subscribe_topic``. Before the
  plugin is registered, a hand-shake (``Client.log_event`` on the topic until
  the dispatcher's own handler receives it) makes sure the subscription is
  active, so no change can fall between the first snapshot and the events.
  Each event carries the whole membership, so a late or repeated event never
  leaves a stale view. The plugin and the membership query are built by
  factories so that they travel to the scheduler by value (no hetsched needed
  there). :func:`cluster_workers` reads the membership on the scheduler
  directly (``Client.run_on_scheduler``); unlike ``Client.scheduler_info()``,
  whose cached answer a periodic background refresh may replace with one
  without workers, it never comes back empty on a cluster that has workers.
* **Attempts** are ``Client.submit`` calls of
  :func:`~hetsched.dispatch.worker.execute_batch` pinned to one worker; a
  coroutine on the client's event loop awaits each future
  (``Future.exception()``, which settles for finished, erred and cancelled
  futures alike), tells the dispatcher's thread at once that a finished batch
  ran (its machine is free: the next decision need not wait for the value),
  then fetches the value with ``Client.gather`` under ``fetch_timeout`` and
  hands ``(key, status, t6, value, t7)`` to the dispatcher's thread through a
  queue. A value that cannot be fetched in time
  (its worker died after finishing) counts as lost, as does a batch whose
  workers kept dying (``KilledWorker``); any other error is the batch's own.
* **Cancellations** are sent from the event loop, never blocking the dispatcher.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
import uuid
from typing import Any

from ..errors import ModelError
from .options import DispatchOptions
from .records import Batch
from .worker import Chunk, execute_batch

__all__ = ["DaskLayer", "cluster_workers", "MEMBERSHIP"]

#: the ``key`` of a membership notice in the dispatcher's inbox
MEMBERSHIP = None
_LOST = object()


def _membership_plugin(topic: str):
    """A scheduler plugin that logs the workers to ``topic`` (a local class: cloudpickled by value)."""
    from distributed.diagnostics.plugin import SchedulerPlugin

    class HetschedMembership(SchedulerPlugin):
        def __init__(self):
            self.topic = topic
            self.seq = 0

        def _log(self, scheduler):
            self.seq += 1
            ws = {str(a): [str(w.name), int(w.nthreads)] for a, w in scheduler.workers.items()}
            scheduler.log_event(self.topic, {"seq": self.seq, "workers": ws})

        async def start(self, scheduler):
            self._log(scheduler)

        def add_worker(self, scheduler=None, worker=None):
            self._log(scheduler)

        def remove_worker(self, scheduler=None, worker=None, **kwargs):
            self._log(scheduler)

    return HetschedMembership()


def _members_query():
    """A function run on the scheduler: ``{address: [name, nthreads]}`` (local: cloudpickled by value)."""

    def members(dask_scheduler):
        return {str(a): [str(w.name), int(w.nthreads)] for a, w in dask_scheduler.workers.items()}

    return members


def cluster_workers(client, wait: float = 0.0, n: int = 1) -> dict[str, tuple[str, int]]:
    """The cluster's workers ``{address: (name, nthreads)}``, read on the scheduler.

    With ``wait > 0``, waits up to that many seconds for at least ``n`` workers
    (then returns whatever is there).
    """
    deadline = time.time() + wait
    while True:
        got = {a: (v[0], int(v[1])) for a, v in client.run_on_scheduler(_members_query()).items()}
        if len(got) >= n or time.time() >= deadline:
            return got
        time.sleep(0.05)


class DaskLayer:
    """Membership, submissions and settled attempts of one dispatcher on one ``distributed.Client``.

    ``inbox`` receives ``(key, status, t6, value, t7)`` for every settled
    attempt and ``(MEMBERSHIP, "membership", t, None, None)`` when the
    membership changed (read it from :attr:`workers`).
    """

    def __init__(self, client, options: DispatchOptions, inbox: queue.SimpleQueue):
        self.client = client
        self.o = options
        self.inbox = inbox
        self.topic = f"hetsched-dispatch-{uuid.uuid4().hex}"
        self.futures: dict[str, Any] = {}
        self.workers: dict[str, tuple[str, int]] | None = None  # the latest membership
        self._seq = 0
        self._token = uuid.uuid4().hex
        self._hello = threading.Event()
        self._got = threading.Event()
        self._registered = False
        self._subscribed = False
        self._to_fetch: list = []  # finished futures whose values are to be fetched (event loop only)
        self._fetching = False

    # ------------------------------------------------------------------ membership
    def _on_event(self, event) -> None:
        """Topic handler (in the client's event loop)."""
        msg = event[1] if isinstance(event, (tuple, list)) and len(event) == 2 else event
        if not isinstance(msg, dict):
            return
        if msg.get("hello") == self._token:
            self._hello.set()
            return
        seq, ws = msg.get("seq"), msg.get("workers")
        if isinstance(seq, int) and isinstance(ws, dict) and seq > self._seq:
            self._seq = seq
            self.workers = {str(a): (str(v[0]), int(v[1])) for a, v in ws.items()}
            self._got.set()
            self.inbox.put((MEMBERSHIP, "membership", time.time(), None, None))

    def start(self, wait: float) -> dict[str, tuple[str, int]]:
        """Subscribe, register the membership plugin; the first membership with a worker (waits up to ``wait`` s)."""
        c = self.client
        try:
            c.subscribe_topic(self.topic, self._on_event)
            self._subscribed = True
            deadline = time.time() + max(wait, 5.0)
            while not self._hello.is_set():  # the subscription is active once our own event comes back
                c.log_event(self.topic, {"hello": self._token})
                if self._hello.wait(0.1) or time.time() > deadline:
                    break
            if not self._hello.is_set():
                raise ModelError(f"workers: the Dask scheduler sends no events to this client (waited "
                                 f"{max(wait, 5.0):g} s for its own test event); is it reachable?")
            c.register_plugin(_membership_plugin(self.topic), name=self.topic)
            self._registered = True
        except ModelError:
            raise
        except Exception as exc:  # noqa: BLE001 - e.g. a scheduler that refuses pickled code, or gone
            raise ModelError(f"workers: cannot follow the Dask cluster's membership ({type(exc).__name__}: "
                             f"{str(exc)[:200]}); the scheduler must accept plugins "
                             "(distributed.scheduler.pickle = true)") from None
        deadline = time.time() + wait
        while time.time() <= deadline:
            self._got.wait(0.05)
            if self.workers:
                break
        if not self.workers:
            raise ModelError(f"workers: the Dask cluster has no workers (waited {wait:g} s)")
        return dict(self.workers)

    # ------------------------------------------------------------------ attempts
    def submit(self, batch: Batch) -> None:
        fut = self.client.submit(execute_batch, Chunk(batch.items), key=batch.key, workers=[batch.address],
                                 allow_other_workers=False, pure=False, priority=batch.priority)
        self.futures[batch.key] = fut
        self.client.loop.add_callback(self._watch, fut)

    async def _watch(self, fut) -> None:
        """In the client's event loop: wait for ``fut``; post that it ran, then (fetched) its value."""
        try:
            exc = await fut.exception()
        except Exception:  # noqa: BLE001 - the client is closing: nobody waits for this attempt
            return
        t6 = time.time()
        status = fut.status
        if status == "finished":
            # the worker is free now: the dispatcher may decide its next batch while the value travels
            self.inbox.put((fut.key, "ran", t6, None, None))
            self._to_fetch.append((fut, t6))
            if not self._fetching:  # one gather for every value that is waiting at the next loop turn
                self._fetching = True
                asyncio.get_running_loop().call_soon(self._flush)
            return
        val = None
        if status == "error":
            from distributed import KilledWorker

            if isinstance(exc, KilledWorker):
                status = "lost"
            else:
                val = f"{type(exc).__name__}: {exc}"
        self.inbox.put((fut.key, status, t6, val, time.time()))

    def _flush(self) -> None:
        group, self._to_fetch, self._fetching = self._to_fetch, [], False
        if group:
            asyncio.ensure_future(self._fetch(group))

    async def _fetch(self, group: list) -> None:
        """Fetch the values of finished attempts in one ``Client.gather``; groups run concurrently, so a
        value that cannot come (its worker died after finishing) delays no other.

        If the gather fails, each value is fetched alone, so only those really gone count as lost.
        """
        ok = [(f, t6) for f, t6 in group if f.status == "finished"]
        for f, t6 in group:
            if f.status != "finished":  # lost or cancelled meanwhile
                self.inbox.put((f.key, "lost", t6, None, time.time()))
        if not ok:
            return
        futs = [f for f, _ in ok]
        try:
            vals = await asyncio.wait_for(self.client.gather(futs, direct=self.o.direct_fetch), self.o.fetch_timeout)
        except Exception:  # noqa: BLE001 - one of them is gone: fetch them one by one
            vals = await asyncio.gather(*(self._fetch_one(f) for f in futs))
        t7 = time.time()
        for (fut, t6), val in zip(ok, vals):
            self.inbox.put((fut.key, "lost" if val is _LOST else "finished", t6, None if val is _LOST else val, t7))

    async def _fetch_one(self, fut):
        try:
            return await asyncio.wait_for(self.client.gather(fut, direct=self.o.direct_fetch), self.o.fetch_timeout)
        except Exception:  # noqa: BLE001 - its worker is gone, or too slow to deliver: lost
            return _LOST

    def forget(self, key: str) -> None:
        """The attempt is settled: drop our reference (Dask may release its result)."""
        self.futures.pop(key, None)

    def cancel(self, keys: list[str]) -> None:
        """Cancel attempts from the event loop (never blocks the caller)."""
        futs = [f for f in (self.futures.pop(k, None) for k in keys) if f is not None]
        if futs:
            self.client.loop.add_callback(self._cancel, futs)

    async def _cancel(self, futs) -> None:
        try:
            await self.client.cancel(futs)
        except Exception:  # noqa: BLE001 - the client is closing, or the futures are gone already
            pass

    def close(self) -> None:
        """Cancel what is still running; remove the plugin and the subscription."""
        c = self.client
        futs = list(self.futures.values())
        self.futures.clear()
        for step in (lambda: futs and c.cancel(futs),
                     lambda: self._registered and c.unregister_scheduler_plugin(self.topic),
                     lambda: self._subscribed and c.unsubscribe_topic(self.topic)):
            try:
                step()
            except Exception:  # noqa: BLE001 - a client already closed or a scheduler gone
                pass
        self._registered = self._subscribed = False
