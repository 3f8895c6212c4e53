"""Gang-scheduling SRN (seed 003): invariants, flow balance / Little's law, solver agreement, and the
measures of eqs (1)-(4) against Storm solving the same net from our GSPN export (an independent
state-space generator and solver)."""

import numpy as np
import pytest

from hetsched.errors import ModelError
from hetsched.srn import explore, rate, solve
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
    assert 0 <= m["UoS"] <= 1


@pytest.mark.parametrize("policy", POLICIES)
def test_measures_match_storm(tmp_path, policy):
    """ST, SRT, UoS, GoS (eqs 1-4) from Storm's steady state of the same net: Storm builds the chain from
    the PNML of the unfolded GSPN, eliminates the vanishing states itself and solves it (exactly, on
    its generator). The measures are formed from Storm's distribution: ST = mu_task E[#LQ1 + #LQ2],
    rate(T) = lambda P(#GQ < C), UoS = 1 - E[#N1 + #N2] / (n1 + n2)."""
    pytest.importorskip("stormpy")
    from hetsched.srn.export import gspn_form, to_gspn_pnml
    from hetsched.srn.storm import storm_gspn_steady_state

    p = small(policy, arrival_rate=2.0)
    net = gang_net(p)
    form = gspn_form(net)
    to_gspn_pnml(form, tmp_path / "g.pnml")
    st = storm_gspn_steady_state(tmp_path / "g.pnml", form.bounds, ["GQ", "LQ1", "LQ2", "N1", "N2"], solver="dense")
    E = st["mark"]
    X_T = p.arrival_rate * (1.0 - st["dist"]["GQ"][p.capacity])
    truth = {"ST": p.task_rate * (E["LQ1"] + E["LQ2"]), "SRT": (E["LQ1"] + E["LQ2"] + E["GQ"]) / X_T,
             "UoS": 1.0 - (E["N1"] + E["N2"]) / sum(p.servers)}
    truth["GoS"] = truth["ST"] + p.W / truth["SRT"]
    m = gang_measures(solve(gang_net(p), method="direct"), p)
    assert st["states"] == explore(net).n_tangible
    for k, v in truth.items():
        assert m[k] == pytest.approx(v, rel=1e-9), k


def test_light_load_limit_closed_form():
    """No local jobs, migration off, one site's worth of gangs at a time: with lambda -> 0 almost every
    gang finds free servers, so ST -> np * lambda, UoS -> np * lambda / (mu_task (n1 + n2)) and
    SRT -> np / mu_task (np tasks in service for 1/mu_task each, per gang, by Little's law) plus the
    dispatch delay 1 / (2 mu) (PCONT rises to 2 at the first waiting gang, S_1 = 0)."""
    lam = 1e-4
    p = small("LC1", arrival_rate=lam, local_rate=(0.0, 0.0), migration=False)
    m = gang_measures(solve(gang_net(p), method="direct"), p)
    assert m["ST"] == pytest.approx(p.gang_size * lam, rel=1e-3)
    assert m["UoS"] == pytest.approx(p.gang_size * lam / (p.task_rate * sum(p.servers)), rel=1e-3)
    assert m["SRT"] == pytest.approx(p.gang_size / p.task_rate + 1.0 / (2 * p.mu[0]), rel=1e-3)


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
