"""Desktop-grid model (thesis ch. 3): closed forms, certificates, instability, ties, options."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from closed_forms import mmc_W
from helpers import assert_within

from hetsched.errors import ModelError
from hetsched.scenarios import load
from hetsched.sim.desktop import one_run, simulate
from hetsched.stats import t_interval
from hetsched.system import CpuChain, Failures, MachineGroup, System


def _mmc(c=3, mu=1.0, lam=2.4, **kw):
    return System(id="mmc", alpha=(lam,), groups=(MachineGroup("A", c, (mu,), **kw),))


@pytest.mark.parametrize("policy", ["fcfs", "gcmu", "lpas-dg", "lpas-dg-robust"])
def test_pull_without_failures_is_mmc(policy):
    """One class, c identical dedicated machines, no failures: M/M/c (Erlang C).

    W within 2 % of Erlang C and within 3 half-widths, on runs (8 x 100,000) long
    enough that the half-width is under 1.25 % (issue 14)."""
    res = simulate(_mmc(), policy, reps=8, horizon=100_000, seed=100, warmup=500, workers=1)
    truth = mmc_W(3, 2.4, 1.0)
    assert res.success, res
    assert_within(res.mean, res.ci, truth, rel=0.02, k=3)
    assert res.rel_half_width <= 0.0125, res


def test_mmc_within_two_percent():
    """Long runs (16 x 100,000): W within 2 % of Erlang C, and inside its 95 % CI (issue 14)."""
    res = simulate(_mmc(), "gcmu", reps=16, horizon=100_000, seed=7, warmup=500, workers=1)
    truth = mmc_W(3, 2.4, 1.0)
    assert abs(res.mean - truth) <= 0.02 * truth and res.ci[0] <= truth <= res.ci[1], (res, truth)
    assert res.rel_half_width < 0.02


def test_static_availability_scales_rate():
    """a_j = 0.5 on one machine: M/M/1 with rate a*mu' (effective rate, §1.4.1)."""
    s = System(id="mm1", alpha=(0.6,), groups=(MachineGroup("A", 1, (2.0,)),), availability=(0.5,))
    est = t_interval([one_run(s, "gcmu", seed=k, horizon=60_000, warmup=100)["W"] for k in range(8)])
    truth = 1 / (1.0 - 0.6)
    assert_within(est.mean, (est.mean - est.half_width, est.mean + est.half_width), truth, rel=0.02, k=3)
    assert est.rel_half_width <= 0.0125, est  # long enough for the 2 % check to mean something


def test_cpu_chain_stuck_in_half_state_is_mm1():
    """A CPU chain that always sits in the 50 % state behaves like a = 0.5."""
    chain = CpuChain(P=((0, 0, 0), (0, 1, 0), (0, 0, 0)))
    s = System(id="mm1c", alpha=(0.6,), groups=(MachineGroup("A", 1, (2.0,), cpu_chain=chain),))
    assert s.a[0] == pytest.approx(0.5)
    est = t_interval([one_run(s, "fcfs", seed=k, horizon=60_000, warmup=100)["W"] for k in range(8)])
    assert_within(est.mean, (est.mean - est.half_width, est.mean + est.half_width), 2.5, rel=0.02, k=3)
    assert est.rel_half_width <= 0.0125, est


def test_cpu_chain_progress_matches_mean_level():
    """A fast-mixing chain (steps << task length): W -> X / E[level] for a lone task stream."""
    P = ((0.5, 0.25, 0.25), (0.25, 0.5, 0.25), (0.25, 0.25, 0.5))
    chain = CpuChain(P=P, step=0.001)
    s = System(id="chain", alpha=(0.01,), groups=(MachineGroup("A", 1, (1.0,), cpu_chain=chain),))
    abar = chain.mean_availability()
    est = t_interval([one_run(s, "fcfs", seed=k, horizon=20000)["W"] for k in range(6)])
    rho = 0.01 / abar
    truth = (1 / abar) / (1 - rho)  # M/M/1 at the mean speed
    assert abs(est.mean - truth) <= max(3 * est.half_width, 0.05 * truth), (est, truth)


@pytest.mark.parametrize("up,down", [("exp", "exp"), ("hyperexp", "hyperexp"), ("exp", "const")])
def test_available_fraction(up, down):
    """Long-run available fraction of a machine = up / (up + down)."""
    f = Failures(rate=0.05, mean_down=4.0, up_dist=up, down_dist=down, scv=5.0)
    r = one_run(_mmc(c=20, lam=2.0).with_(failures=f), "gcmu", seed=3, horizon=40_000)
    assert abs(np.mean(r["up_fraction"]) - 20.0 / 24.0) < 0.01


def test_weibull_available_fraction():
    shape, scale = 0.7, 50.0
    f = Failures(rate=1.0, mean_down=10.0, up_dist="weibull", down_dist="const")
    s = System(id="w", alpha=(0.5,), groups=(MachineGroup("A", 30, (1.0,), weibull_shape=shape, weibull_scale=scale),),
               failures=f)
    r = one_run(s, "fcfs", seed=4, horizon=100_000)
    mup = scale * math.gamma(1 + 1 / shape)
    assert abs(np.mean(r["up_fraction"]) - mup / (mup + 10.0)) < 0.01


def test_littles_law_per_replication():
    """Little's law: time-average number in system = throughput x W (edge effects only)."""
    s = load("3.A", arrivals="alpha1", case=3)
    r = one_run(s, "lpas-dg", seed=2, horizon=3000.0)
    L_avg = float(np.mean(r["segments"]))
    lam = sum(r["completed"]) / 3000.0
    assert L_avg == pytest.approx(lam * r["W"], rel=0.03)


def test_lp_solves_equal_availability_events():
    s = load("3.A", arrivals="alpha1", case=3)
    r = one_run(s, "lpas-dg", seed=1, horizon=300)
    assert r["avail_events"] > 100
    assert r["lp_solves"] == r["avail_events"] + 1  # + the initial solve
    rr = one_run(s, "lpas-dg-robust", seed=1, horizon=300)
    assert 1 <= rr["lp_solves"] <= rr["avail_events"] + 1  # cached by capacity key
    assert rr["lookups"] == rr["avail_events"]


def test_resubmissions_counted_and_tasks_conserved():
    s = load("3.A", arrivals="alpha1", case=3)
    r = one_run(s, "gcmu", seed=2, horizon=300)
    assert r["resubmissions"] > 0
    assert r["arrivals"] - sum(r["completed"]) == r["in_system_end"]  # warmup 0: every arrival accounted for


def test_same_seed_same_result_and_crn():
    """Same seed: the same run; and under every policy the same arrivals, task sizes (drawn at arrival)
    and availability periods (common random numbers), while the decisions differ."""
    s = load("3.B", arrivals="alpha1", case=2)
    a = one_run(s, "lpas-dg", seed=7, horizon=200)
    b = one_run(s, "lpas-dg", seed=7, horizon=200)
    assert a["W"] == b["W"] and a["events"] == b["events"]
    runs = {pol: one_run(s, pol, seed=7, horizon=200) for pol in ("fcfs", "gcmu", "lpas-dg-robust")}
    runs["lpas-dg"] = a
    common = {pol: (r["arrivals"], r["size_sum"], r["avail_events"], tuple(r["up_fraction"]))
              for pol, r in runs.items()}
    assert len(set(common.values())) == 1 and a["arrivals"] > 1000
    assert len({r["W"] for r in runs.values()}) == 4 and a["resubmissions"] > 0
    assert a["size_sum"] == pytest.approx(a["arrivals"], rel=0.1)  # unit-mean sizes
    other = one_run(s, "lpas-dg", seed=8, horizon=200)
    assert other["size_sum"] != a["size_sum"]


def test_validation_errors():
    s = _mmc()
    for kw, match in (({"machine_rule": "best"}, "machine_rule"), ({"resubmit": "middle"}, "resubmit"),
                      ({"horizon": -1}, "horizon"), ({"horizon": float("nan")}, "horizon"),
                      ({"inaccuracy": 2.0}, "inaccuracy"), ({"lp_grouping": "x"}, "lp_grouping"),
                      ({"tie": "middle"}, "tie"), ({"lp_order": "sideways"}, "lp_order"),
                      ({"warmup": 5e4}, "warmup"), ({"max_in_system": 0}, "max_in_system")):
        with pytest.raises(ModelError, match=match):
            one_run(s, "fcfs", **kw)
    with pytest.raises(ModelError, match="policy"):
        one_run(s, "nope")
    with pytest.raises(ModelError, match="does not apply"):
        simulate(s, "fcfs", reps=1, horizon=10, k=3)
    with pytest.raises(ModelError, match="seed"):
        simulate(s, "fcfs", reps=1, horizon=10, seed=-1)
    with pytest.raises(ModelError, match="memory"):
        one_run(s, "fcfs", max_in_system=10**15)
    dead = System(id="dead", alpha=(1.0,), groups=(MachineGroup("A", 2, (2.0,)),), availability=(1.0, 0.0))
    with pytest.raises(ModelError, match=r"availability\[1\] \(machine 2\): a = 0"):
        one_run(dead, "gcmu")


def test_lpas_support_restricts_classes():
    """Thesis §3.3 example 1: machine 1 never receives class-1 tasks under LPAS_DG."""
    s = System(id="ex1", alpha=(1.0, 1.5), groups=(MachineGroup("m1", 1, (9.0, 2.0)), MachineGroup("m2", 1, (5.0, 1.0))))
    r = one_run(s, "lpas-dg", seed=1, horizon=2000)
    assert r["lambda"] == pytest.approx(1.7647, abs=1e-4)
    assert not r["unstable"]


@pytest.mark.parametrize("grouping,columns", [("auto", 28), ("machines", 28), ("groups", 7)])
def test_lpas_dg_lp_reading(grouping, columns):
    """Default LPAS_DG LP: one column per machine, a vertex with >= NM+1-N-M zeros (§3.3, end);
    lambda* equals HiGHS's either way."""
    from hetsched.lp import solve_allocation

    s = load("3.B", arrivals="alpha1", case=1)  # no failures
    r = one_run(s, "lpas-dg", seed=1, horizon=0.05, lp_grouping=grouping)
    assert r["columns"] == columns
    assert r["lambda"] == pytest.approx(solve_allocation(s.mu, s.alpha_array).lam, rel=1e-9)
    N, M = s.mu.shape
    if columns == M:
        assert r["support_nonzeros"] <= N + M - 1
    else:
        assert r["support_nonzeros"] > N + M - 1  # group-symmetric: every member of a column shares it


@pytest.mark.parametrize("order", ["reverse", 3])
def test_lp_order_gives_another_optimal_vertex(order):
    s = load("3.B", arrivals="alpha1", case=1)
    a = one_run(s, "lpas-dg", seed=1, horizon=0.05)
    b = one_run(s, "lpas-dg", seed=1, horizon=0.05, lp_order=order)
    assert b["lambda"] == pytest.approx(a["lambda"], rel=1e-9)
    assert b["support_nonzeros"] <= s.N + s.M - 1


@pytest.mark.parametrize("cpu_info", [True, False])
def test_cpu_info_changes_only_the_policy_lp(cpu_info):
    """§3.4.4: without information the LP assumes a_j = 1; the machines still run at the true a_j."""
    from hetsched.lp import solve_allocation

    s = load("3.A-cpuinfo")
    r = one_run(s, "lpas-dg", seed=1, horizon=1e-3, cpu_info=cpu_info)
    assert r["avail_events"] == 0
    a = s.a if cpu_info else np.ones(s.M)
    assert r["lambda"] == pytest.approx(solve_allocation(s.mu, s.alpha_array, a=a).lam, rel=1e-9)
    # gcmu never reads the LP: identical runs (with deterministic ties; random ties draw per LP column,
    # and the columns group machines by their estimated a)
    g1 = one_run(s, "gcmu", seed=2, horizon=50, cpu_info=True, tie="lowest")
    g2 = one_run(s, "gcmu", seed=2, horizon=50, cpu_info=False, tie="lowest")
    assert g1["W"] == g2["W"]


# ----------------------------------------------------------------------------- instability (issue 15)
def test_overloaded_grid_is_unstable_in_seconds_without_numbers():
    """Arrivals 1.02x what the machines can serve in the long run: unstable at once, reason given."""
    from hetsched.sim.desktop import capacity_lambda

    s = load("3.A", arrivals="alpha1", case=3)
    lam = capacity_lambda(s)
    over = s.with_(alpha=tuple(np.asarray(s.alpha_array) * lam * 1.02))
    t0 = time.perf_counter()
    res = simulate(over, "lpas-dg", reps=30, horizon=20_000, seed=1)
    assert time.perf_counter() - t0 < 10
    assert res.unstable and not res.success and res.status == 1
    assert "lambda* = 0.98" in res.message and "no policy" in res.message
    d = res.as_dict()
    assert d["mean"] is None and all(pc["mean"] is None for pc in d["per_class"])


def _lossy(alpha):
    """One machine, unit deterministic tasks, failures every 20 time units on average, down 4: the LP
    capacity is 20/24 = 0.833, but a failure loses the work done, so a task occupies the machine
    (1/nu + D)(e^nu - 1) = 24 (e^0.05 - 1) = 1.2305 on average: the true capacity is 0.8127."""
    f = Failures(rate=0.05, mean_down=4.0)
    return System(id="lossy", alpha=(alpha,), groups=(MachineGroup("A", 1, (1.0,)),), failures=f, exec_dist="det")


def test_unstable_by_the_bound_stops_early():
    """LP capacity above the load (lambda* = 1.004) but lost work makes it overloaded: a replication
    stops at the bound, long before the horizon."""
    from hetsched.sim.desktop import capacity_lambda

    s = _lossy(0.83)
    assert capacity_lambda(s) > 1.0
    r = one_run(s, "fcfs", seed=1, horizon=1e9, max_in_system=100)
    assert r["hit_bound"] and r["unstable"] and r["t_end"] < 50_000
    res = simulate(s, "fcfs", reps=3, horizon=1e9, seed=1, workers=1, max_in_system=100)
    assert res.unstable and "3 of 3 replications exceeded 100 tasks" in res.message
    assert res.as_dict()["per_class"][0]["mean"] is None


def test_trend_rule_flags_slow_growth():
    """Load 1.0115x the true capacity: far below the bound in 20,000 time units, flagged by the trend."""
    res = simulate(_lossy(0.822), "gcmu", reps=3, horizon=20_000, seed=3, workers=1)
    assert res.unstable and "growing" in res.message
    stable = simulate(_lossy(0.70), "gcmu", reps=3, horizon=20_000, seed=3, workers=1)
    assert stable.success


# ----------------------------------------------------------------------------- ties
def test_random_ties_are_the_default_and_differ_from_lowest():
    s = load("3.A", arrivals="alpha1", case=1)
    d = one_run(s, "gcmu", seed=4, horizon=200)
    lo = one_run(s, "gcmu", seed=4, horizon=200, tie="lowest")
    rnd = one_run(s, "gcmu", seed=4, horizon=200, tie="random")
    assert d["W"] == rnd["W"] and d["W"] != lo["W"]
    assert simulate(_mmc(), "fcfs", reps=1, horizon=10, workers=1).options["tie"] == "random"


def test_random_tie_spreads_first_tasks_uniformly():
    """All machines idle since time 0 are tied for the first arrival: a uniform one (random), machine 0
    (lowest) or machine M-1 (highest). Machines differ in a_j, so they sit in different LP columns."""
    from hetsched.sim.desktop import kernel as K
    from hetsched.sim.desktop import layout as L
    from hetsched.sim.desktop import prepare
    from hetsched.sim.desktop.idle import find_machine, idle_view
    from hetsched.sim.desktop.run import fresh_state

    s = System(id="five", alpha=(0.01,), groups=(MachineGroup("A", 5, (1.0,)),),
               availability=(1.0, 0.9, 0.8, 0.7, 0.6))
    first = {}
    for tie in ("lowest", "highest", "random"):
        p = prepare(s, "fcfs", tie=tie)
        assert p.C == 5
        hits = np.zeros(5, int)
        init, _ = K.kernels(p.code)
        for k in range(500 if tie == "random" else 3):
            m, st_, lp, ev, rng, out = fresh_state(p, np.random.SeedSequence(k))
            init(m, st_, lp, ev, rng, out)
            hits[find_machine(0, L.TIE_RULES_CODE[tie], m.muT, st_.mi, st_.mf, idle_view(st_), 0, lp.elig_static,
                              rng)] += 1
        first[tie] = hits
    assert first["lowest"][0] == 3 and first["highest"][4] == 3
    # uniform over 5 machines: chi-square with 4 d.o.f. below its 0.999 quantile (18.47)
    e = 500 / 5
    assert ((first["random"] - e) ** 2 / e).sum() < 18.47
