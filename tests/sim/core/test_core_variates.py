"""Variates: each kind against its distribution (scipy) or its moments (closed forms)."""

import math

import numpy as np
import pytest
from scipy import stats as sps

from hetsched.errors import ModelError
from hetsched.sim.core.rng import make_streams
from hetsched.sim.core.variates import draw, draw_block, hyperexp_params, variate

N = 20_000


def sample(v, seed=3):
    st = make_streams(np.random.SeedSequence(seed), 1)
    par = v.par
    return np.array([draw(st, 0, v.code, par) for _ in range(N)])


def test_exponential_and_det():
    x = sample(variate("exp", 2.5))
    assert sps.kstest(x, sps.expon(scale=2.5).cdf).pvalue > 1e-3
    assert np.all(sample(variate("det", 1.7)) == 1.7)


def test_weibull_against_scipy():
    shape, mean = 0.7, 3.0
    x = sample(variate("weibull", mean, shape=shape))
    scale = mean / math.gamma(1 + 1 / shape)
    assert sps.kstest(x, sps.weibull_min(shape, scale=scale).cdf).pvalue > 1e-3


def test_hyperexp_moments_and_cdf():
    scv, mean = 4.0, 2.0
    p1, r1, r2 = hyperexp_params(scv)
    x = sample(variate("hyperexp", mean, scv=scv))

    def cdf(t):  # mixture of two exponentials with unit-mean rates r1, r2, scaled by the mean
        return p1 * (1 - np.exp(-r1 * t / mean)) + (1 - p1) * (1 - np.exp(-r2 * t / mean))

    assert sps.kstest(x, cdf).pvalue > 1e-3
    # balanced means, scv: E X = 1, Var X = scv for the unit-mean H2
    assert p1 / r1 == pytest.approx((1 - p1) / r2)
    m1 = p1 / r1 + (1 - p1) / r2
    m2 = 2 * p1 / r1**2 + 2 * (1 - p1) / r2**2
    assert m1 == pytest.approx(1.0) and m2 - m1**2 == pytest.approx(scv)


def test_general_block_has_requested_mean():
    g = sps.gamma(a=0.5, scale=3.0)
    v = variate(g, 2.0)
    x = draw_block(v, (N,), np.random.default_rng(0))
    assert abs(x.mean() - 2.0) < 4 * x.std() / math.sqrt(N)


@pytest.mark.parametrize("kw, match", [
    (dict(kind="gamma"), "unknown"),
    (dict(kind="exp", mean=-1.0), "mean"),
    (dict(kind="hyperexp", scv=0.5), "scv"),
    (dict(kind="weibull", shape=0.0), "shape"),
    (dict(kind=3), "must be a name"),
])
def test_validation(kw, match):
    with pytest.raises(ModelError, match=match):
        variate(**kw)
