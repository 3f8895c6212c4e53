"""Random streams: the published xoshiro256+ algorithm, the seed normaliser, distribution checks."""

import numpy as np
import pytest
from scipy import stats as sps

from hetsched.errors import ModelError
from hetsched.sim.core.rng import DEFAULT_SEED, below, expo, make_streams, next_u64, seed_sequence, uniform

MASK = (1 << 64) - 1


def xoshiro256plus_reference(s):
    """Blackman & Vigna's xoshiro256+ (prng.di.unimi.it/xoshiro256plus.c), in plain Python ints."""
    s = list(s)
    while True:
        result = (s[0] + s[3]) & MASK
        t = (s[1] << 17) & MASK
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = ((s[3] << 45) | (s[3] >> 19)) & MASK
        yield result


def test_next_u64_is_xoshiro256plus():
    st = make_streams(np.random.SeedSequence(42), 3)
    ref = xoshiro256plus_reference([int(x) for x in st[1]])
    ours = [int(next_u64(st, 1)) for _ in range(50)]
    assert ours == [next(ref) for _ in range(50)]


def test_seed_normaliser():
    assert seed_sequence(None).entropy == DEFAULT_SEED == 2009
    assert seed_sequence(7).entropy == 7
    ss = np.random.SeedSequence(3)
    assert seed_sequence(ss) is ss
    for bad in (-1, 1.5, "7", True):
        with pytest.raises(ModelError, match="seed"):
            seed_sequence(bad)


def test_streams_reproducible_and_distinct():
    a = make_streams(np.random.SeedSequence(5), 4)
    b = make_streams(np.random.SeedSequence(5), 4)
    assert np.array_equal(a, b)
    assert len({tuple(r) for r in a}) == 4


def test_uniform_and_exponential_distributions():
    st = make_streams(np.random.SeedSequence(1), 2)
    u = np.array([uniform(st, 0) for _ in range(20_000)])
    assert u.min() > 0 and u.max() <= 1
    assert sps.kstest(u, "uniform").pvalue > 1e-3
    e = np.array([expo(st, 1) for _ in range(20_000)])
    assert sps.kstest(e, "expon").pvalue > 1e-3


def test_below_uniform_integers():
    st = make_streams(np.random.SeedSequence(2), 1)
    k = np.array([below(st, 0, 7) for _ in range(21_000)])
    assert k.min() == 0 and k.max() == 6
    counts = np.bincount(k, minlength=7)
    assert sps.chisquare(counts).pvalue > 1e-3
