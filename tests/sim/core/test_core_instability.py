"""The instability rule and the compiled segment averages."""

import numpy as np

from hetsched.sim.core.instability import NSEG, default_bound, seg_close, seg_new, seg_observe, trend_unstable, verdict


def test_trend_rule_cases():
    assert trend_unstable(np.linspace(10, 1000, NSEG))  # linear growth
    assert not trend_unstable(np.full(NSEG, 50.0))  # flat
    # a heavily loaded stable system wandering (System 2.A): not flagged
    assert not trend_unstable(np.array([37, 57, 30, 77, 248, 98, 99, 57, 47, 34.0]))
    # growing but small in absolute terms (+5 tasks margin): not flagged
    assert not trend_unstable(np.linspace(0.1, 1.0, NSEG))


def test_verdict_any_bound_or_majority_trend():
    assert verdict([False, True, False], [False] * 3)[0]
    assert verdict([False] * 4, [True, True, True, False])[0]
    assert not verdict([False] * 4, [True, True, False, False])[0]
    assert default_bound(3) == 10_000 and default_bound(30) == 30_000


def test_segment_averages_equal_piecewise_integral():
    rng = np.random.default_rng(4)
    warmup, horizon = 30.0, 500.0
    times = np.sort(rng.uniform(0, horizon, 400))
    values = rng.integers(0, 30, 400).astype(float)
    sg = seg_new(warmup, horizon)
    prev = 0.0
    for t, v in zip(times, values):
        seg_observe(sg, t, prev)  # the value held on (last event, t]
        prev = v
    out = np.zeros(NSEG)
    seg_close(sg, horizon, prev, out)
    edges = np.linspace(warmup, horizon, NSEG + 1)
    path_t = np.concatenate(([0.0], times))
    path_v = np.concatenate(([0.0], values))
    for s in range(NSEG):
        a, b = edges[s], edges[s + 1]
        # time average on [a, b] of the piecewise-constant path, integrated directly
        inside = (path_t < b)
        tt = np.clip(np.append(path_t[inside], b), a, b)
        vv = path_v[inside]
        ref = float(np.sum(vv * np.diff(tt)) / (b - a))
        assert abs(out[s] - ref) < 1e-9 * max(1.0, ref)
