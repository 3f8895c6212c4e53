"""The one instability rule of every simulator.

A replication is **unstable** when either

1. **bound** — the number in system exceeded a bound (default
   :func:`default_bound`, ``max(10000, 1000 M)``): the kernel stops there, so
   an unstable run never hangs or exhausts memory; or
2. **trend** — the time-average number in system on ``NSEG = 10`` equal
   segments of ``[warmup, horizon]`` both *keeps growing* (at least 7 of the 9
   successive segment averages increase) and *has grown* (the last fifth of
   the run averages more than twice the second and third tenths, plus 5
   tasks; the first tenth is the transient from an empty system).

A stable system, even a heavily loaded one whose number in system wanders
slowly (System 2.A, lambda* = 1.02), rarely satisfies both parts of 2; an
unstable one grows roughly linearly and satisfies both.

A configuration (all replications) is unstable when **any** replication hit
the bound or **more than half** show the trend (:func:`verdict`).

Kernels keep the segment averages with :func:`seg_new`, :func:`seg_observe`
(call it at every event, *before* the number in system changes) and
:func:`seg_close` (compiled, no checks; the state is one float array).
"""

from __future__ import annotations

import numpy as np
from numba import njit

# the rule's plain-Python half lives in hetsched.stats (trace replays use it without the simulator)
from ...stats import NSEG, trend_unstable, verdict

__all__ = ["NSEG", "default_bound", "MAX_IN_SYSTEM", "check_bound", "trend_unstable", "verdict", "seg_new", "seg_observe",
           "seg_close"]

# state layout of the segment accumulator: averages in [0, NSEG), then
_SEG, _END, _AREA, _LAST, _LEN, _WARM = NSEG, NSEG + 1, NSEG + 2, NSEG + 3, NSEG + 4, NSEG + 5
_SIZE = NSEG + 6


#: largest instability bound a user may set: the task pool is ~40 bytes per slot (10**7: ~400 MB)
MAX_IN_SYSTEM = 10**7


def check_bound(bound: int, M: int) -> None:
    """Refuse (``ModelError`` with the memory estimate) a ``max_in_system`` whose task pool would not fit."""
    from ...errors import ModelError

    if bound > MAX_IN_SYSTEM:
        raise ModelError(f"max_in_system: {bound:,} tasks need about {40 * bound / 1e9:.1f} GB of memory for the task pool; "
                         f"at most {MAX_IN_SYSTEM:,} (a system this far from its bound is unstable anyway)")


def default_bound(M: int) -> int:
    """Bound on the number in system: ``max(10000, 1000 M)`` for ``M`` machines, at most
    :data:`MAX_IN_SYSTEM` (from 10,000 machines on: ten tasks a machine; a system of 1,000,000
    machines would otherwise allocate a task pool of 40 GB per replication)."""
    return int(min(MAX_IN_SYSTEM, max(10_000, 1_000 * int(M))))


@njit(cache=True)
def seg_new(warmup, horizon):
    """Segment accumulator for ``[warmup, horizon]``."""
    sg = np.zeros(_SIZE)
    ln = (horizon - warmup) / NSEG
    sg[_SEG] = 0.0
    sg[_END] = warmup + ln
    sg[_LAST] = warmup
    sg[_LEN] = ln
    sg[_WARM] = warmup
    return sg


@njit(cache=True, inline="always")
def seg_observe(sg, t, n):
    """Time ``t`` reached with ``n`` in system since the previous call."""
    if t > sg[_WARM]:
        while t > sg[_END] and sg[_SEG] < NSEG - 1:
            _seg_flush(sg, n)
        sg[_AREA] += n * (t - sg[_LAST])
        sg[_LAST] = t


@njit(cache=True)
def _seg_flush(sg, n):
    s = int(sg[_SEG])
    sg[_AREA] += n * (sg[_END] - sg[_LAST])
    sg[s] = sg[_AREA] / sg[_LEN]
    sg[_AREA] = 0.0
    sg[_LAST] = sg[_END]
    sg[_SEG] = s + 1
    sg[_END] = sg[_WARM] + (s + 2) * sg[_LEN]


@njit(cache=True)
def seg_close(sg, horizon, n, out):
    """Close the run at ``horizon`` with ``n`` in system; write the ``NSEG`` averages to ``out``."""
    while sg[_SEG] < NSEG - 1:
        _seg_flush(sg, n)
    s = int(sg[_SEG])
    sg[_AREA] += n * (horizon - sg[_LAST])
    sg[s] = sg[_AREA] / sg[_LEN]
    for k in range(NSEG):
        out[k] = sg[k]
