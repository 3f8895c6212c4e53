"""xoshiro256+ streams for compiled kernels (compiled, no checks).

A kernel receives ``state``, a ``(S, 4)`` uint64 array: row ``s`` is one
independent stream, seeded from a :class:`numpy.random.SeedSequence` by
:func:`make_streams`. numba's own ``np.random`` is one global stream per
thread, which cannot give separate, seed-spawned streams per purpose; hence
this tiny generator (Blackman & Vigna, 2018).
"""

from __future__ import annotations

import numpy as np
from numba import njit

_U1 = np.uint64(1)
_U11 = np.uint64(11)
_U17 = np.uint64(17)
_U45 = np.uint64(45)
_U19 = np.uint64(19)
_TWO_M53 = 1.0 / 9007199254740992.0


def make_streams(seed_seq: np.random.SeedSequence, n: int) -> np.ndarray:
    """``(n, 4)`` uint64 states, one independent stream per row (never all-zero)."""
    st = seed_seq.generate_state(4 * n, np.uint64).reshape(n, 4)
    st[(st == 0).all(axis=1), 0] = np.uint64(0x9E3779B97F4A7C15)
    return st


@njit(cache=True)
def next_u64(st, s):
    """Advance stream ``s`` of ``st``; return 64 random bits."""
    s0 = st[s, 0]
    s1 = st[s, 1]
    s2 = st[s, 2]
    s3 = st[s, 3]
    result = s0 + s3
    t = s1 << _U17
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = (s3 << _U45) | (s3 >> _U19)
    st[s, 0] = s0
    st[s, 1] = s1
    st[s, 2] = s2
    st[s, 3] = s3
    return result


@njit(cache=True)
def uniform(st, s):
    """Uniform on (0, 1] (never 0, so ``-log(u)`` is finite)."""
    # int64 -> double converts in one instruction; uint64 -> double does not
    return float(np.int64((next_u64(st, s) >> _U11) + _U1)) * _TWO_M53


@njit(cache=True)
def expo(st, s):
    """Exponential with mean 1."""
    return -np.log(uniform(st, s))
