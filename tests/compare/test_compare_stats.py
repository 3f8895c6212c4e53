"""Paired statistics of ``hs.compare`` against independent computations (numpy by hand, scipy's t-tests)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as st

from hetsched.compare.stats import paired_difference, rank_with_ties, welch_interval
from hetsched.errors import ModelError


def _by_hand(a, b, conf=0.95):
    d = np.asarray(a, float) - np.asarray(b, float)
    n = d.size
    hw = st.t.ppf(0.5 + conf / 2, n - 1) * d.std(ddof=1) / math.sqrt(n)
    return d.mean(), d.mean() - hw, d.mean() + hw


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_paired_interval_equals_numpy_and_scipy(seed):
    rng = np.random.default_rng(seed)
    common = rng.normal(10, 3, 12)  # what both policies share (the common random numbers)
    a = common + rng.normal(0, 0.3, 12)
    b = common + 0.4 + rng.normal(0, 0.3, 12)
    d = paired_difference(a, b)
    m, lo, hi = _by_hand(a, b)
    assert (d.mean, d.low, d.high) == pytest.approx((m, lo, hi), rel=1e-12)
    ci = st.ttest_rel(a, b).confidence_interval(0.95)
    assert (d.low, d.high) == pytest.approx((ci.low, ci.high), rel=1e-10)
    w = st.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    assert (d.unpaired_low, d.unpaired_high) == pytest.approx((w.low, w.high), rel=1e-10)
    # the shared component cancels in the pairs: the paired interval is far narrower
    assert d.half_width < 0.5 * d.unpaired_half_width
    assert d.significant == (hi < 0 or lo > 0)


def test_other_confidence_levels_and_welch_alone():
    rng = np.random.default_rng(4)
    a, b = rng.normal(0, 1, 8), rng.normal(0.2, 2, 11)
    lo, hi = welch_interval(a, b, 0.9)
    ci = st.ttest_ind(a, b, equal_var=False).confidence_interval(0.9)
    assert (lo, hi) == pytest.approx((ci.low, ci.high), rel=1e-10)
    d = paired_difference(a[:8], b[:8], 0.99)
    assert (d.low, d.high) == pytest.approx(_by_hand(a[:8], b[:8], 0.99)[1:], rel=1e-12)


def test_identical_values_give_exactly_zero_and_no_significance():
    a = [3.2, 4.1, 5.0, 2.2]
    d = paired_difference(a, list(a))
    assert d.mean == 0.0 and d.low == 0.0 and d.high == 0.0 and d.n == 4
    assert not d.significant


def test_missing_values_drop_their_pair_and_small_samples():
    d = paired_difference([1.0, np.nan, 3.0, 4.0], [0.5, 2.0, np.inf, 3.0])
    assert d.n == 2 and d.mean == pytest.approx(0.75)
    one = paired_difference([1.0], [0.0])
    assert one.n == 1 and one.low == -math.inf and one.high == math.inf and not one.significant
    none = paired_difference([np.nan], [1.0])
    assert none.n == 0 and math.isnan(none.mean)
    with pytest.raises(ModelError, match="same length"):
        paired_difference([1.0, 2.0], [1.0])
    with pytest.raises(ModelError, match="confidence"):
        paired_difference([1.0, 2.0], [1.0, 2.0], confidence=1.5)


def test_ranking_with_ties_and_unstable_last():
    # 0 better than 2 and 3; 1 tied with 0 and 2; 3 unstable
    better = {(0, 2): True}
    assert rank_with_ties(4, better, [True, True, True, False]) == [1, 1, 2, 4]
    # a chain: 0 > 1 > 2 significantly, 0 > 2 too
    assert rank_with_ties(3, {(0, 1): True, (1, 2): True, (0, 2): True}, [True] * 3) == [1, 2, 3]
    # nobody separated: everyone first
    assert rank_with_ties(3, {}, [True] * 3) == [1, 1, 1]
    # all unstable: all share the one (last) rank
    assert rank_with_ties(2, {}, [False, False]) == [1, 1]
