"""Gang-scheduling SRN (seed 003): invariants, flow balance / Little's law, solver agreement."""

import numpy as np
import pytest

from hetsched.errors import ModelError
from hetsched.srn import explore, mark, rate, solve
from hetsched.srn.gang import POLICIES, GangParams, gang_measures, gang_net


def small(policy, **kw):
    base = dict(policy=policy, arrival_rate=1.2, capacity=12, forward=(0, 3, 6), reverse=(0, 2, 4),
                servers=(6, 6), gang_size=3, local_capacity=(1, 1))
    base.update(kw)
    return GangParams(**base)


@pytest.mark.parametrize("policy", POLICIES)
def test_conservation_on_full_model(policy):
    """Free + busy servers = 16 per site in every reachable marking; PCONT within 1..K."""
    p = GangParams(policy=policy, arrival_rate=3.0)
    sp = explore(gang_net(p))
    M = sp.markings
    ix = {q: j for j, q in enumerate(sp.net.place_names)}
    for i in (1, 2):
        assert np.all(M[:, ix[f"N{i}"]] + M[:, ix[f"LQ{i}"]] == 16)
    T = M[~sp.vanishing]
    assert T[:, ix["PCONT"]].min() >= 1 and T[:, ix["PCONT"]].max() <= 7
    assert T[:, ix["GQ"]].max() == 64
    # tangible markings have no waiting local job while a server is free
    for i in (1, 2):
        assert not np.any((T[:, ix[f"pl{i}"]] > 0) & (T[:, ix[f"N{i}"]] > 0))


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("lam", [0.8, 2.5])
def test_flow_balance_and_little(policy, lam):
    p = small(policy, arrival_rate=lam)
    r = solve(gang_net(p))
    assert r.success
    m = gang_measures(r, p)
    # every admitted gang is dispatched exactly once
    X_T = r.expect(rate("T"))
    names = r.space.net.transition_names
    X_GS = sum(r.expect(rate(t)) for t in ("GS1", "GS2", "GS11", "GS21") if t in names)
    assert X_GS == pytest.approx(X_T, rel=1e-9)
    # tasks: completions = np * gangs + local jobs
    assert m["ST"] == pytest.approx(p.gang_size * X_T + m["local_throughput"], rel=1e-9)
    # Little's law for the servers: mean busy = arrival-side task throughput x mean service time
    assert m["mean_busy"] == pytest.approx((p.gang_size * X_T + m["local_throughput"]) / p.task_rate, rel=1e-9)
    # Little's law on GQ via rate("T") as used by SRT
    assert m["SRT"] == pytest.approx(r.expect(mark("LQ1") + mark("LQ2") + mark("GQ")) / X_T, rel=1e-12)
    assert 0 <= m["UoS"] <= 1
    assert m["UoS"] == pytest.approx(m["mean_busy"] / sum(p.servers), rel=1e-9)


@pytest.mark.parametrize("policy", POLICIES)
def test_iterative_matches_direct(policy):
    p = small(policy, arrival_rate=2.0)
    a = gang_measures(solve(gang_net(p), method="direct"), p)
    b = gang_measures(solve(gang_net(p), method="iad", tol=1e-14), p)
    for k in ("ST", "SRT", "UoS", "GoS"):
        assert b[k] == pytest.approx(a[k], rel=1e-9)


def test_policies_differ_and_migration_matters():
    lam = 2.0
    res = {pol: gang_measures(solve(gang_net(small(pol, arrival_rate=lam))), small(pol)) for pol in POLICIES}
    assert len({round(v["SRT"], 8) for v in res.values()}) == 3
    p = small("LC1", arrival_rate=lam, migration=False)
    q = small("LC1", arrival_rate=lam)
    assert gang_measures(solve(gang_net(p)), p)["SRT"] != pytest.approx(gang_measures(solve(gang_net(q)), q)["SRT"])


def test_param_validation():
    with pytest.raises(ModelError, match="policy"):
        GangParams(policy="XX")
    with pytest.raises(ModelError, match="arrival_rate"):
        GangParams(arrival_rate=-1.0)
    with pytest.raises(ModelError, match="reverse threshold"):
        GangParams(forward=(0, 8), reverse=(0, 9))
    with pytest.raises(ModelError, match="gang_size"):
        GangParams(gang_size=40)
