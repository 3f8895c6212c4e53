"""Statistics: Student-t interval against its definition and its coverage."""

import math

import numpy as np
import pytest
from scipy import stats as sps

from hetsched.errors import ModelError
from hetsched.stats import Estimate, t_interval, warmup_mean


def test_t_interval_matches_scipy():
    x = np.array([1.0, 2.0, 4.0, 3.5, 2.5])
    est = t_interval(x)
    lo, hi = sps.t.interval(0.95, len(x) - 1, loc=x.mean(), scale=sps.sem(x))
    assert isinstance(est, Estimate)
    assert est.n == 5
    assert est.mean == pytest.approx(x.mean())
    assert est.low == pytest.approx(lo) and est.high == pytest.approx(hi)
    assert est.half_width == pytest.approx((hi - lo) / 2)
    assert est.rel_half_width == pytest.approx(est.half_width / x.mean())


def test_coverage_is_about_nominal():
    rng = np.random.default_rng(1)
    hits = 0
    trials = 2000
    for _ in range(trials):
        e = t_interval(rng.exponential(2.0, size=30))
        hits += e.low <= 2.0 <= e.high
    # exponential data: t-interval coverage a little under 95 %
    assert 0.91 < hits / trials < 0.97


def test_degenerate_and_errors():
    e = t_interval([3.0])
    assert e.mean == 3.0 and math.isinf(e.half_width)
    assert t_interval([]).n == 0
    e = t_interval([2.0, 2.0, 2.0])
    assert e.half_width == 0.0 and e.rel_half_width == 0.0
    with pytest.raises(ModelError, match="confidence"):
        t_interval([1.0, 2.0], confidence=1.5)
    with pytest.raises(ModelError, match="finite"):
        t_interval([1.0, float("nan")])


def test_warmup_mean_piecewise():
    # value 0 on [0,1), 2 on [1,3), 1 on [3,4]
    t = np.array([0.0, 1.0, 3.0])
    v = np.array([0.0, 2.0, 1.0])
    assert warmup_mean(t, v, 0.0, 4.0) == pytest.approx(5.0 / 4.0)
    assert warmup_mean(t, v, 2.0, 4.0) == pytest.approx(3.0 / 2.0)


def test_t_quantile_against_scipy_over_every_df_scale():
    """The plain-Python quantile (no scipy.stats import on the simulate path) against scipy.stats.t.ppf,
    df = 1 .. 10^6, at the usual levels."""
    from hetsched.stats import t_quantile

    dfs = np.unique(np.r_[np.arange(1, 41), np.logspace(0, 6, 120).astype(int), 999, 1000, 1001])
    worst = 0.0
    for p in (0.6, 0.9, 0.95, 0.975, 0.995, 0.9995):
        for df in dfs:
            a, b = t_quantile(p, int(df)), sps.t.ppf(p, int(df))
            worst = max(worst, abs(a - b) / b)
            assert t_quantile(1 - p, int(df)) == -a
    assert worst < 1e-10
    assert t_quantile(0.5, 7) == 0.0
    with pytest.raises(ModelError, match="0 < p < 1"):
        t_quantile(1.0, 3)


def test_simulate_path_does_not_import_scipy_stats():
    import subprocess
    import sys

    code = ("import sys; import hetsched as hs; from hetsched.stats import t_interval; t_interval([1.0, 2.0, 4.0]);"
            "from hetsched.sim.mapping import run; run.summarize; print('scipy.stats' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "False", out.stderr[-2000:]
