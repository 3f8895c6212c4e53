"""Random streams of every simulator: one seed normaliser and xoshiro256+ streams.

Two layers of randomness, both derived from one root seed:

* **Replications** — :func:`seed_sequence` turns the user's ``seed`` into a
  :class:`numpy.random.SeedSequence`; replication ``r`` receives child ``r``
  of ``seed_sequence(seed).spawn(reps)`` (:func:`hetsched.runner.replicate`),
  so a result depends only on the seed, never on workers or backend.
* **Streams inside a kernel** — a kernel receives ``st``, a ``(S, 4)`` uint64
  array made by :func:`make_streams` from its replication's ``SeedSequence``:
  row ``s`` is one independent xoshiro256+ stream (Blackman & Vigna, 2018),
  one per purpose (arrivals of class ``i``, sizes of class ``i``, the policy's
  draws, tie-breaking, ...), so that two policies compared with the same seed
  see the same arrivals and task sizes (common random numbers). numba's own
  ``np.random`` is one global stream per thread and cannot be spawned per
  purpose; hence this small generator.

The project has one default seed, :data:`DEFAULT_SEED` = 2009 (the year of the
thesis), used by every command and function that takes a ``seed``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .seeds import DEFAULT_SEED, seed_sequence

__all__ = ["DEFAULT_SEED", "seed_sequence", "make_streams", "next_u64", "uniform", "expo", "below"]

_U1 = np.uint64(1)
_U11 = np.uint64(11)
_U17 = np.uint64(17)
_U45 = np.uint64(45)
_U19 = np.uint64(19)
_TWO_M53 = 1.0 / 9007199254740992.0


def make_streams(seed_seq: np.random.SeedSequence, n: int) -> np.ndarray:
    """``(n, 4)`` uint64 states, one independent xoshiro256+ stream per row (never all-zero)."""
    st = seed_sequence(seed_seq).generate_state(4 * n, np.uint64).reshape(n, 4)
    st[(st == 0).all(axis=1), 0] = np.uint64(0x9E3779B97F4A7C15)
    return st


@njit(cache=True)
def next_u64(st, s):
    """Advance stream ``s`` of ``st``; return 64 random bits (compiled, no checks)."""
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
    """Uniform on (0, 1] from stream ``s`` (never 0, so ``-log(u)`` is finite)."""
    # int64 -> double converts in one instruction; uint64 -> double does not
    return float(np.int64((next_u64(st, s) >> _U11) + _U1)) * _TWO_M53


@njit(cache=True)
def expo(st, s):
    """Exponential with mean 1 from stream ``s``."""
    return -np.log(uniform(st, s))


@njit(cache=True)
def below(st, s, n):
    """Uniform integer in ``0 .. n-1`` from stream ``s`` (``n >= 1``)."""
    k = np.int64(uniform(st, s) * n)  # u in (0, 1]: u * n in (0, n]
    return k if k < n else n - 1
