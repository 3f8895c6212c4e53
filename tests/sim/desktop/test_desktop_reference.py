"""The compiled desktop-grid kernel against the independent pure-Python reference simulator.

Both read the same random streams in the model's natural order, so with
deterministic ties (``tie="lowest"``) every replication must agree exactly:
events, counts and W. Cases exercise failures and resubmissions (front and
back), every machine rule the reference knows, both execution-time families
with extra draws, and a general-rate system (3.B: classes with mu = 0).
"""

from __future__ import annotations

import numpy as np
import pytest
import reference_desktop as ref

from hetsched.scenarios import load
from hetsched.sim.desktop import prepare, replication

CASES = [
    ("3.A", dict(arrivals="alpha1", case=3), "gcmu", {}),
    ("3.A", dict(arrivals="alpha1", case=5), "fcfs", {"resubmit": "back"}),
    ("3.A", dict(arrivals="alpha2", case=2), "gcmu", {"machine_rule": "fastest"}),
    ("3.B", dict(arrivals="alpha1", case=2), "gcmu", {"machine_rule": "lowest-index"}),
    ("3.A-dist", dict(case=3), "fcfs", {"exec_dist": "hyperexp"}),
    ("3.A-dist", dict(case=2), "gcmu", {"exec_dist": "det"}),
]


@pytest.mark.parametrize("sid,load_kw,policy,kw", CASES)
def test_kernel_equals_reference(sid, load_kw, policy, kw):
    s = load(sid, **load_kw)
    ss = np.random.SeedSequence(11)
    k = replication(ss, prepare(s, policy, horizon=150.0, warmup=10.0, tie="lowest", **kw))
    r = ref.simulate(s, policy, ss, horizon=150.0, warmup=10.0, **kw)
    assert k["events"] > 5000
    for f in ("events", "arrivals", "resubmissions", "avail_events", "completed"):
        assert k[f] == r[f], f
    assert k["W"] == pytest.approx(r["W"], rel=1e-12, abs=0)
    assert np.allclose(k["W_class"], r["W_class"], rtol=1e-12, equal_nan=True)
    assert np.allclose(k["up_fraction"], r["up_fraction"], rtol=1e-12)


def test_xoshiro_reimplementation_matches_the_core():
    """The reference's pure-Python generator reproduces the compiled streams bit for bit."""
    from hetsched.sim.core.rng import make_streams, uniform

    st = make_streams(np.random.SeedSequence(3), 2)
    x = ref.Xoshiro(st[1].copy())
    assert [x.uniform() for _ in range(50)] == [uniform(st, 1) for _ in range(50)]
