"""What runs on a Dask worker: one task attempt, timed on the worker's clock.

Kept tiny and importable by worker processes (``hetsched.dispatch.worker``).
:func:`execute` returns ``(t4, t5, ok, value)``: the start and end of the
execution on the worker (thesis §3.5.2, ``t4``/``t5``), whether the user's code
succeeded, and its value (or the error text). A user exception is *data* (the
task is reported as failed, not lost); only an exception escaping
:func:`execute` (worker death, cancellation) means the attempt was lost.
"""

from __future__ import annotations

import subprocess
import time

__all__ = ["execute", "execute_batch", "Chunk", "KIND_CALL", "KIND_SHELL", "KIND_EMULATE"]

KIND_CALL = 0      # payload = (fn, args, kwargs)
KIND_SHELL = 1     # payload = command string (run by /bin/sh) or argv list
KIND_EMULATE = 2   # payload = nominal work; ``seconds`` = emulated duration


def execute(kind: int, payload, seconds: float = 0.0):
    t4 = time.time()
    try:
        if kind == KIND_EMULATE:
            if seconds > 0:
                time.sleep(seconds)
            value = None
        elif kind == KIND_CALL:
            fn, args, kwargs = payload
            value = fn(*args, **kwargs)
        elif kind == KIND_SHELL:
            cp = subprocess.run(payload, shell=isinstance(payload, str), capture_output=True, text=True)
            value = {"returncode": cp.returncode, "stdout": cp.stdout[-4000:], "stderr": cp.stderr[-4000:]}
            if cp.returncode != 0:
                return t4, time.time(), False, value
        else:  # pragma: no cover - guarded by the dispatcher
            raise ValueError(f"unknown task kind {kind!r}")
    except Exception as exc:  # user error: reported, not retried
        return t4, time.time(), False, f"{type(exc).__name__}: {exc}"
    return t4, time.time(), True, value


class Chunk:
    """The tasks of one batch, as one opaque argument of :func:`execute_batch`.

    Dask walks list and tuple arguments of a submitted task looking for futures
    (about 1 ms for a batch of 32 tasks on a loaded host); an object of this class
    it passes through untouched. Pickles as its list.
    """

    __slots__ = ("items",)

    def __init__(self, items: list):
        self.items = items

    def __reduce__(self):
        return Chunk, (self.items,)

    def __len__(self) -> int:
        return len(self.items)


def execute_batch(items):
    """Run ``[(kind, payload, seconds), ...]`` (a list or a :class:`Chunk`) one after the other; a list of
    :func:`execute` results.

    One Dask task carries a batch of tasks decided for this worker (prefetch):
    Dask's per-task cost (scheduling, messages) is paid once per batch.
    """
    if isinstance(items, Chunk):
        items = items.items
    return [execute(kind, payload, seconds) for kind, payload, seconds in items]
