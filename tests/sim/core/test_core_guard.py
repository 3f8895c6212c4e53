"""The guard around code the project did not write: results through shared memory, errors, crashes,
a loop that makes no progress, and Ctrl-C -- the parent process survives each."""

import os
import signal
import threading
import time

import numpy as np
import pytest
from numba import njit

from hetsched.sim.core.guard import (PolicyFailed, PolicyStalled, can_guard, publish, run_guarded, shared_copy,
                                     shared_zeros)

pytestmark = pytest.mark.skipif(not can_guard(), reason="needs os.fork")


@njit
def count(c, out, n, stop):
    """Counts to n publishing progress; from ``stop`` on it spins without progress (a stuck policy)."""
    k = 0
    while k < n:
        if k >= stop:
            continue
        k += 1
        publish(c, 0, k)
        out[k % out.shape[0]] += 1.0
    return k


@njit
def divide(x):
    return int(1.0 / x)


def _children() -> set[int]:
    me = str(os.getpid())
    out = set()
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open(f"/proc/{p}/stat") as f:
                    if f.read().rsplit(")", 1)[1].split()[1] == me:
                        out.add(int(p))
            except OSError:
                pass
    return out


@pytest.fixture(scope="module")
def compiled():
    c = shared_zeros(1, np.int64)
    count(c, np.zeros(2), 1, 5)
    divide(1.0)
    return c


def test_results_come_back_through_shared_memory(compiled):
    c = compiled
    out = shared_copy(np.array([1.0, 2.0, 3.0]))
    run_guarded(lambda: count(c, out, 9, 99), c)
    assert c[0] == 9 and out.tolist() == [1.0 + 3, 2.0 + 3, 3.0 + 3]  # k = 1..9: three each (k % 3)


def test_an_exception_comes_back_by_name(compiled):
    with pytest.raises(PolicyFailed, match="ZeroDivisionError: division by zero") as e:
        run_guarded(lambda: divide(0.0), compiled)
    assert e.value.kind == "ZeroDivisionError"


def test_a_crash_kills_only_the_child(compiled):
    import ctypes

    with pytest.raises(PolicyFailed, match="SIGSEGV"):
        run_guarded(lambda: ctypes.string_at(0), compiled)


def test_no_progress_is_stopped(compiled):
    c = compiled
    before = _children()
    t0 = time.monotonic()
    with pytest.raises(PolicyStalled, match="no progress for 0.5 s"):
        run_guarded(lambda: count(c, np.zeros(2), 10**12, 1000), c, stall=0.5, poll=0.05)
    assert time.monotonic() - t0 < 10
    assert _children() == before  # killed and reaped


def test_ctrl_c_stops_the_child(compiled):
    c = compiled
    before = _children()
    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            run_guarded(lambda: count(c, np.zeros(2), 10**12, 10**12), c, stall=60.0, poll=0.05)
    finally:
        timer.cancel()
    assert _children() == before
