"""Running code the project did not write: a user policy's kernel in a watched child process.

A user-written policy is compiled into the simulation kernel (no Python per
event), so inside the kernel nothing can stop it: an infinite loop ignores
Ctrl-C, and a crash would take the interpreter with it. :func:`run_guarded`
therefore runs such a kernel in a forked child process (it inherits the
compiled kernel; nothing is compiled or pickled again) while the parent
watches:

* **progress** -- the kernel writes its event count into ``counter[0]`` as it
  goes; when the count has not moved for ``stall`` seconds the child is
  killed and :class:`PolicyStalled` raised (a policy looping on some input);
* **Ctrl-C** -- the parent waits in Python, so KeyboardInterrupt arrives; the
  child is killed and the interrupt re-raised;
* **errors** -- an exception in the child (IndexError from bounds checking,
  ZeroDivisionError, ...) comes back as :class:`PolicyFailed` with its type
  and message; a child killed by a signal (a crash) as :class:`PolicyFailed`
  naming the signal. The parent process never crashes.

The child writes its results into arrays in shared memory (:func:`shared_zeros`,
:func:`shared_copy`), so nothing is pickled back. Where ``os.fork`` does not
exist the call runs in-process (no guard). The model turns these exceptions
into a :class:`~hetsched.errors.ModelError` naming the policy.
"""

from __future__ import annotations

import mmap
import os
import pickle
import select
import signal
import time
import warnings

import numpy as np
from numba import config, types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["PolicyFailed", "PolicyStalled", "shared_zeros", "shared_copy", "run_guarded", "can_guard",
           "publish", "readonly", "DEFAULT_STALL"]

#: seconds without progress after which a user policy is stopped
DEFAULT_STALL = 10.0


class PolicyFailed(Exception):
    """The guarded call raised (``kind`` = exception type name) or its process died (``kind`` = signal name)."""

    def __init__(self, kind: str, message: str):
        super().__init__(f"{kind}: {message}" if message else kind)
        self.kind, self.message = kind, message


class PolicyStalled(Exception):
    """The guarded call made no progress for ``seconds``."""

    def __init__(self, seconds: float):
        super().__init__(f"no progress for {seconds:g} s")
        self.seconds = seconds


@intrinsic
def publish(typingctx, arr, idx, val):
    """Compiled ``arr[idx] = val`` that is really written to memory at once (an atomic, relaxed store).

    A plain store of a counter in a loop may stay in a register until the
    loop ends (the compiler may keep it there); the watching parent must see
    it move. Costs what a plain store costs on x86-64. No bounds check.
    """
    if not (isinstance(arr, types.Array) and arr.dtype == types.int64 and isinstance(idx, types.Integer)
            and isinstance(val, types.Integer)):
        return None
    sig = types.void(arr, idx, val)

    def codegen(context, builder, signature, args):
        a, i, v = args
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, a)
        i = context.cast(builder, i, signature.args[1], types.intp)
        v = context.cast(builder, v, signature.args[2], types.int64)
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [i])
        builder.store_atomic(v, ptr, "monotonic", 8)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def readonly(typingctx, arr):
    """Compiled: the same array, typed read-only (a write to it does not compile). For the state a kernel
    hands to a user policy: the policy cannot write to it, and the kernel keeps its own writable arrays."""
    if not isinstance(arr, types.Array):
        return None
    sig = arr.copy(readonly=True)(arr)

    def codegen(context, builder, signature, args):
        from numba.core.imputils import impl_ret_borrowed

        return impl_ret_borrowed(context, builder, signature.return_type, args[0])

    return sig, codegen


if config.DISABLE_JIT:  # NUMBA_DISABLE_JIT=1: the kernels run as Python, so do these
    def publish(arr, idx, val):  # noqa: F811
        arr[idx] = val

    def readonly(arr):  # noqa: F811
        v = arr.view()
        v.flags.writeable = False
        return v


def can_guard() -> bool:
    return hasattr(os, "fork")


def shared_zeros(shape, dtype=np.float64) -> np.ndarray:
    """A zeroed array in anonymous shared memory (written by a forked child, read by the parent)."""
    dt = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    buf = mmap.mmap(-1, max(n, 1))  # anonymous, MAP_SHARED: zero-filled
    return np.frombuffer(buf, dtype=dt, count=int(np.prod(shape, dtype=np.int64))).reshape(shape)


def shared_copy(a: np.ndarray) -> np.ndarray:
    out = shared_zeros(a.shape, a.dtype)
    out[...] = a
    return out


def _child(call, w: int) -> None:
    import faulthandler

    faulthandler.disable()  # a crash is reported by the parent, in one line, not as a stack dump
    code = 0
    try:
        call()
        msg = b""
    except BaseException as exc:  # everything goes back to the parent
        code = 1
        text = str(exc).strip().splitlines()
        msg = pickle.dumps((type(exc).__name__, (text[0] if text else "")[:2000]))
    try:
        os.write(w, msg)
    finally:
        os._exit(code)


def run_guarded(call, counter: np.ndarray, *, stall: float = DEFAULT_STALL, poll: float = 0.25) -> None:
    """Run ``call()`` in a forked child; return when it finished, or raise (see the module docstring).

    ``counter`` is a shared int64 array (:func:`shared_zeros`) whose element 0
    the call increases as it progresses.
    """
    if not can_guard():  # pragma: no cover - no fork on this platform
        call()
        return
    r, w = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with other threads alive (we only exec numba code)
        pid = os.fork()
    if pid == 0:  # pragma: no cover - the child (coverage cannot see it)
        os.close(r)
        _child(call, w)
    os.close(w)
    status = None
    msg = b""
    try:
        last, t_last = int(counter[0]), time.monotonic()
        while True:  # the child closes its end of the pipe when it exits: EOF wakes us at once
            ready, _, _ = select.select([r], [], [], poll)
            if ready:
                chunk = os.read(r, 65536)
                if not chunk:
                    break
                msg += chunk
                continue
            c = int(counter[0])
            now = time.monotonic()
            if c != last:
                last, t_last = c, now
            elif now - t_last > stall:
                _kill(pid)
                status = 0
                raise PolicyStalled(stall)
        _, status = os.waitpid(pid, 0)
    except BaseException:
        if status is None:
            _kill(pid)
        raise
    finally:
        os.close(r)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        raise PolicyFailed(signal.Signals(sig).name, "the simulation process was killed by this signal")
    if msg:
        kind, text = pickle.loads(msg)
        raise PolicyFailed(kind, text)
    if os.WEXITSTATUS(status) != 0:
        raise PolicyFailed("exit", f"the simulation process exited with status {os.WEXITSTATUS(status)}")


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
