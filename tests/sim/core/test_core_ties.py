"""The one tie chooser: first/last/uniform, and streaming (reservoir) choice with weights."""

import numpy as np
import pytest
from numba import njit

from hetsched.sim.core.rng import make_streams
from hetsched.sim.core.ties import TIE_HIGHEST, TIE_LOWEST, TIE_RANDOM, TIE_RULES, tie_code, tie_keep, tie_pick
from hetsched.errors import ModelError


@njit
def _pick_counts(tie, buf, nt, st, n):
    out = np.zeros(buf.max() + 1, np.int64)
    for _ in range(n):
        out[tie_pick(tie, buf, nt, st, 0)] += 1
    return out


@njit
def _stream_counts(tie, weights, st, n):
    """Scan candidates 0..K-1 in a fixed (non-index) order; all tied; candidate k stands for weights[k] ones."""
    K = weights.shape[0]
    out = np.zeros(K, np.int64)
    order = np.arange(K)[::-1]
    for _ in range(n):
        best = order[0]
        wtot = float(weights[best])
        for q in range(1, K):
            j = order[q]
            wtot += weights[j]
            if tie_keep(tie, j, best, float(weights[j]), wtot, st, 0):
                best = j
        out[best] += 1
    return out


def test_codes_are_the_policies_names():
    assert (TIE_LOWEST, TIE_HIGHEST, TIE_RANDOM) == (TIE_RULES["lowest"], TIE_RULES["highest"], TIE_RULES["random"])
    assert tie_code(" Random ") == TIE_RANDOM
    with pytest.raises(ModelError, match="tie rule 'middle' unknown"):
        tie_code("middle")


def test_pick_first_last_and_uniform():
    st = make_streams(np.random.SeedSequence(3), 1)
    buf = np.array([2, 5, 7, 9, 0, 0], np.int64)
    assert _pick_counts(TIE_LOWEST, buf, 4, st, 10)[2] == 10
    assert _pick_counts(TIE_HIGHEST, buf, 4, st, 10)[9] == 10
    n = 40_000
    c = _pick_counts(TIE_RANDOM, buf, 4, st, n)
    assert set(np.flatnonzero(c)) == {2, 5, 7, 9}
    # each of the 4 with probability 1/4: within 5 standard deviations
    sd = np.sqrt(n * 0.25 * 0.75)
    assert np.all(np.abs(c[[2, 5, 7, 9]] - n / 4) < 5 * sd)
    one = _pick_counts(TIE_RANDOM, buf, 1, st, 5)
    assert one[2] == 5  # a single candidate: no draw needed, always it


def test_streaming_lowest_highest_and_weighted_uniform():
    st = make_streams(np.random.SeedSequence(4), 1)
    w = np.array([1.0, 1.0, 1.0, 1.0, 1.0])
    assert _stream_counts(TIE_LOWEST, w, st, 7)[0] == 7
    assert _stream_counts(TIE_HIGHEST, w, st, 7)[4] == 7
    n = 50_000
    wt = np.array([1.0, 3.0, 2.0, 4.0])  # candidate k wins with probability w_k / sum(w)
    c = _stream_counts(TIE_RANDOM, wt, st, n)
    p = wt / wt.sum()
    sd = np.sqrt(n * p * (1 - p))
    assert np.all(np.abs(c - n * p) < 5 * sd)
