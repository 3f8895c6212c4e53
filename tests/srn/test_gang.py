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


@pytest.mark.parametrize("gang_size", [1, 3])
def test_one_site_reduces_to_mg1_pollaczek_khinchine(gang_size):
    """An independent truth for SRT, ST and UoS (issue 14: the Storm test forms SRT with gang.py's own formula).

    No local jobs, no migration, LC-1 with site 2 practically never dispatched to (mu2 = 1e-10, so
    P(site 2 used) ~ 1e-10), site 1 with exactly np servers, one PCONT step (S_1 = s_1 = 0: PCONT is 2
    whenever a gang waits, so dispatch takes Exp(2 mu1)). A gang then needs the whole site: GQ is the
    queue of an M/G/1 whose service is dispatch + the slowest of np Exp(mu_task) tasks, i.e. the sum of
    independent Exp(2 mu1), Exp(np mu_t), ..., Exp(mu_t). Pollaczek-Khinchine gives the wait Wq; the
    paper's SRT (eq. 2) = E[#GQ + #LQ] / rate(T) is then Wq + 1/(2 mu1) + np / mu_t (a gang is in GQ
    until dispatched; Little's law for the np tasks). C = 64 blocks negligibly (order rho^64 ~ 1e-14).
    """
    mu1, mu_t, rho = 1.5, 2.0, 0.6
    means = [1 / (2 * mu1)] + [1 / (k * mu_t) for k in range(gang_size, 0, -1)]
    ES = sum(means)
    ES2 = sum(m * m for m in means) + ES**2  # independent exponential phases: Var = sum of squared means
    lam = rho / ES
    p = GangParams(policy="LC1", arrival_rate=lam, capacity=64, forward=(0,), reverse=(0,),
                   servers=(gang_size, gang_size), gang_size=gang_size, local_capacity=(0, 0),
                   local_rate=(0.0, 0.0), task_rate=mu_t, mu=(mu1, 1e-10), migration=False)
    m = gang_measures(solve(gang_net(p), method="direct"), p)
    Wq = lam * ES2 / (2 * (1 - rho))
    assert m["SRT"] == pytest.approx(Wq + 1 / (2 * mu1) + gang_size / mu_t, rel=1e-8)
    assert m["ST"] == pytest.approx(gang_size * lam, rel=1e-8)  # every admitted task completes
    assert m["UoS"] == pytest.approx(gang_size * lam / mu_t / (2 * gang_size), rel=1e-8)  # busy fraction


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


# ------------------------------------------------------------------ seed 003 readings (issue 26.3)
def test_ls_race_changes_ls_only():
    """ls_rule="race" drops the round-robin places of LS (GS1 and GS2 race); LC-1 and LC-2 do not use them,
    so their answers are bit-identical."""
    rr, race = small("LS", arrival_rate=2.0), small("LS", arrival_rate=2.0, ls_rule="race")
    assert {"RR1", "RR2"} <= set(gang_net(rr).place_names) and "RR1" not in gang_net(race).place_names
    a, b = (gang_measures(solve(gang_net(p)), p) for p in (rr, race))
    assert a["SRT"] != pytest.approx(b["SRT"], rel=1e-6)
    for pol in ("LC1", "LC2"):
        p, q = small(pol, arrival_rate=2.0), small(pol, arrival_rate=2.0, ls_rule="race")
        assert gang_measures(solve(gang_net(p)), p)["SRT"] == gang_measures(solve(gang_net(q)), q)["SRT"]


def test_arrival_as_table4_writes_it():
    """arrival="mu*pcont": T fires at arrival_mu * #PCONT whatever lambda is (same numbers at two lambdas),
    which is the lambda*pcont reading with lambda = arrival_mu."""
    p1 = small("LC1", arrival_rate=1.0, arrival="mu*pcont", arrival_mu=0.8)
    p2 = small("LC1", arrival_rate=3.0, arrival="mu*pcont", arrival_mu=0.8)
    q = small("LC1", arrival_rate=0.8, arrival="lambda*pcont")
    a, b, c = (gang_measures(solve(gang_net(p), method="direct"), p) for p in (p1, p2, q))
    for k in ("ST", "SRT", "UoS"):
        assert a[k] == b[k] == pytest.approx(c[k], rel=1e-12)
    assert small("LC1", arrival_scales_with_pcont=True).arrival == "lambda*pcont"
    with pytest.raises(ModelError, match="arrival must be one of"):
        small("LC1", arrival="mu")
    with pytest.raises(ModelError, match="contradicts"):
        small("LC1", arrival="mu*pcont", arrival_scales_with_pcont=True)


def test_rates_scaled_on_one_graph_equal_a_fresh_build():
    """The search reuses one reachability graph per policy and rescales mu, the task rate, the local rate
    and lambda: the same numbers as building the net at those rates."""
    from hetsched.srn.readings import sweep

    base = small("LC2", arrival_rate=1.0)
    r = dict(mu=2.0, task_rate=0.5, local_rate=1.5)
    row = sweep(base, [2.5], [r], policies=("LC2",))[0]
    p = base.with_(arrival_rate=2.5, mu=(2.0, 2.0), task_rate=0.5, local_rate=(1.5, 1.5))
    m = gang_measures(solve(gang_net(p)), p)
    for k in ("ST", "SRT", "UoS", "GoS"):
        assert row[k] == pytest.approx(m[k], rel=1e-9)


def test_claims_search_on_a_small_model():
    """C1-C3 from a search row equal the claims recomputed from a plain sweep; C1 is evaluated only where
    C2 and C3 hold."""
    from hetsched.srn.readings import claims, search, sweep

    base = small("LS")
    grid = {"mu": (1.0,), "task_rate": (1.0, 2.0), "local_rate": (1.0,)}
    out = search([dict(ls_rule="race")], grid, low=(1.0, 2.0), high=3.0, base=base)
    assert len(out) == 2
    for row in out:
        r = {k: row[k] for k in grid}
        c = claims(sweep(base.with_(ls_rule="race"), (1.0, 2.0, 3.0), [r]), (1.0, 2.0), 3.0)
        assert (row["C2"], row["C3"]) == (c["C2"], c["C3"])
        assert row["C1"] == (c["C1"] if c["C2"] and c["C3"] else None)


def test_solve_gang_is_a_result_with_dict_access():
    res = hs_solve_gang(policy="LC1", arrival_rate=1.2, capacity=12, forward=(0, 3, 6), reverse=(0, 2, 4),
                        servers=(6, 6), gang_size=3, local_capacity=(1, 1))
    assert res.success and res["states"] == res.states and res["ST"] == res.measures["ST"]
    d = res.as_dict()
    assert {"states", "ST", "SRT", "UoS", "GoS", "status", "message", "seconds"} <= set(d)
    assert set(res.to_frame()["measure"]) >= {"ST", "SRT", "UoS", "GoS"}


def hs_solve_gang(**kw):
    import hetsched as hs

    return hs.solve_gang(**kw)
