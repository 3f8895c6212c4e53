"""Mapping model (thesis §2.2.2): closed forms, an independent reference, invariants.

Every check compares with a truth (M/M/1, M/D/1 and M/G/1 via
Pollaczek-Khinchine, independent M/M/1 queues, Little's law, formula (2.5),
a pure-Python reference simulator) — never with pinned outputs of this engine.
A simulated value agrees with a closed form when it lies within 2 % of it AND
within 3 half-widths (95 % CI) of it, on runs long enough (10 x 10^5-10^6
time units, ~10^7 events: about a second each) that the half-width is at most
1.25 % of the truth -- so the 2 % bound is at least 3.6 standard errors wide
(t with 9 d.f.) and means something (issue 14: "3 half-widths" alone allowed +-13-18 %). Seeds are
fixed, so the tests are deterministic.
"""

import math
import sys

import numpy as np
import pytest
from scipy import stats as sps

from hetsched.errors import ModelError
from hetsched.scenarios import load
from hetsched.sim.mapping import ect_weights, instability_rule, prepare, replication, simulate
from hetsched.stats import t_interval
from hetsched.system import MachineGroup, System

from closed_forms import mm1_L, mmc_L, pk_L
from reference_sim import reference_qbar  # tests/sim/mapping/reference_sim.py (pytest puts the folder on sys.path)

POLICIES = ["met", "mct", "kpb", "lpas", "lpas-2k", "lp-static", "guided-lpas", "guided-lpas-2k"]


def one_queue(lam=0.8, mu=1.0, dist="exp"):
    return System(id="mm1", alpha=(lam,), groups=(MachineGroup("m", 1, (mu,)),), exec_dist=dist)


def assert_within_2pct(res, truth, what=""):
    """|mean - truth| <= 2 % of truth and <= 3 half-widths; the run is long enough (half-width <= 1.25 %)."""
    hw = (res.ci[1] - res.ci[0]) / 2
    msg = f"{what} mean {res.mean:.4f} CI {res.ci} truth {truth:.4f} ({100 * (res.mean / truth - 1):+.2f} %)"
    assert not res.unstable, msg
    assert abs(res.mean - truth) <= 0.02 * truth, msg
    assert abs(res.mean - truth) <= 3 * hw, msg
    assert hw <= 0.0125 * truth, f"run too short for a 2 % check: half-width {hw / truth:.2%} of the truth; {msg}"


def run(system, policy="mct", reps=8, horizon=20_000.0, **kw):
    return simulate(system, policy, reps=reps, horizon=horizon, seed=7, workers=1, progress=False, **kw)


# ---------------------------------------------------------------- closed forms
@pytest.mark.parametrize("policy", ["mct", "lpas", "lp-static", "guided-lpas", "lpas-2k", "met"])
def test_mm1_every_policy(policy):
    """One machine: every policy is the same rule (see test_identical_machines_policies_between_bounds for a
    system where they differ); each must give M/M/1's L = rho / (1 - rho) within 2 %."""
    rho = 0.8
    res = run(one_queue(rho), policy, reps=10, horizon=500_000.0, warmup=1_000.0)
    assert_within_2pct(res, mm1_L(rho), policy)


@pytest.mark.parametrize(
    "dist, scv",
    [("det", 0.0), ("hyperexp", 2.0)],
)
def test_pollaczek_khinchine(dist, scv):
    rho = 0.7
    res = run(one_queue(rho, dist=dist), reps=10, horizon=400_000.0, warmup=1_000.0)
    assert_within_2pct(res, pk_L(rho, scv), dist)


def test_general_distribution_gamma():
    rho = 0.7
    g = sps.gamma(a=0.5, scale=3.0)  # scv = 1/a = 2; only the shape matters (mean is rescaled)
    res = run(one_queue(rho), dist=g, reps=10, horizon=400_000.0, warmup=1_000.0)
    assert_within_2pct(res, pk_L(rho, 2.0), "gamma(0.5)")


def test_identical_machines_random_assignment_is_independent_mm1():
    # MET with random ties on identical machines = uniform random routing;
    # so is LP-Static (delta* is uniform).  M independent M/M/1 queues.
    M, lam_each = 4, 0.8
    sysm = System(id="iid", alpha=(M * lam_each,), groups=(MachineGroup("g", M, (1.0,)),))
    truth = M * mm1_L(lam_each)
    for policy, tie in (("met", "random"), ("lp-static", "lowest")):
        res = run(sysm, policy, tie=tie, reps=10, horizon=200_000.0, warmup=1_000.0)
        assert_within_2pct(res, truth, policy)


def test_identical_machines_policies_between_bounds():
    """M = 4 identical machines at rho = 0.8, where the policies differ (issue 14).

    Truths (tests/closed_forms.py): random routing -- MET with random ties, and
    LP-Static (delta* uniform) -- splits the Poisson stream into M independent
    M/M/1 queues, L = M rho / (1 - rho) = 16 (checked within 2 % on this very
    system, seed and run length by the test above); no policy that dispatches on
    arrival beats the M/M/c queue with one shared FCFS queue, L = 5.59. So
    MCT (here join-the-shortest-queue), LPAS, Guided-LPAS (LP support = every
    machine) and LPAS-2/k (two random candidates) must lie strictly between
    the two, with their CIs clear of both, and JSQ must beat the power of two
    choices (MCT < LPAS-2/k, CIs disjoint).
    """
    M, rho = 4, 0.8
    sysm = System(id="iid4", alpha=(M * rho,), groups=(MachineGroup("g", M, (1.0,)),))
    lower, upper = mmc_L(M, M * rho, 1.0), M * mm1_L(rho)
    mean = {}
    for policy in ("mct", "lpas", "guided-lpas", "lpas-2k"):
        res = run(sysm, policy, tie="random", reps=10, horizon=40_000.0, warmup=1_000.0)
        assert not res.unstable
        assert lower < res.ci[0] and res.ci[1] < upper, (policy, res.mean, res.ci, lower, upper)
        mean[policy] = res
    assert mean["mct"].ci[1] < mean["lpas-2k"].ci[0], (mean["mct"].ci, mean["lpas-2k"].ci)


def test_littles_law_on_every_policy():
    sysm = load("2.D")
    for policy in POLICIES:
        res = run(sysm, policy, reps=2, horizon=5_000.0, k=3 if policy == "kpb" else None)
        if res.unstable:  # MET: tasks pile up, Little's law has no steady state to hold in
            assert policy == "met"
            continue
        assert res.little_rel_error < 0.01, (policy, res.little_rel_error)
        # per class too: Qbar_i = alpha_i W_i up to edge effects
        for pc, a in zip(res.per_class, sysm.alpha):
            assert abs(pc["Q"] - a * pc["W"]) <= 0.03 * pc["Q"] + 0.02


# ---------------------------------------------------------------- independent reference
@pytest.mark.parametrize("policy", ["lpas", "mct"])
def test_agrees_with_reference_on_2B(policy):
    sysm = load("2.B")
    params = prepare(sysm, policy)
    cands = [list(params.params.cand[i, : params.params.ncand[i]]) for i in range(sysm.N)]
    H, R = 2_000.0, 6
    ref = [reference_qbar(sysm.alpha, sysm.mu.tolist(), cands, H, 100 + r)[0] for r in range(R)]
    ours = run(sysm, policy, reps=R, horizon=H, tie="lowest")  # the reference breaks ties by lowest index
    e = t_interval(ref)
    se = math.hypot(e.half_width, (ours.ci[1] - ours.ci[0]) / 2) / 2.0
    assert abs(e.mean - ours.mean) < 3 * se, (e, ours.mean, ours.ci)


@pytest.mark.slow
@pytest.mark.parametrize("scenario, policy, lo, hi", [
    ("2.B", "lpas", 5.17, 5.18), ("2.B", "mct", 20.5, 20.8),
    ("2.C1", "lpas", 47.4, 47.5), ("2.C1", "mct", 54.5, 54.6),
])
def test_published_reference_numbers(scenario, policy, lo, hi):
    """../shared/reference/README.md: independent implementations, 30 x 20,000, lowest-index ties."""
    res = simulate(load(scenario), policy, reps=30, horizon=20_000.0, seed=2009, workers=2, progress=False,
                   tie="lowest")
    assert res.ci[0] <= hi and res.ci[1] >= lo, (res.mean, res.ci)


# replications needed for a 95 % half-width under 2 % of Qbar at the published run length (20,000)
_FAST_REPS = {("2.B", "lpas"): 10, ("2.B", "mct"): 80, ("2.C1", "lpas"): 6, ("2.C1", "mct"): 10}


@pytest.mark.parametrize("scenario, policy, lo, hi", [
    ("2.B", "lpas", 5.17, 5.18), ("2.B", "mct", 20.5, 20.8),
    ("2.C1", "lpas", 47.4, 47.5), ("2.C1", "mct", 54.5, 54.6),
])
def test_published_reference_numbers_fast(scenario, policy, lo, hi):
    """The published numbers in ``make test`` (issue 14): same run length (20,000, from empty, lowest-index
    ties) as ../shared/reference/README.md, fewer replications for 2.B LPAS and 2.C1 (6-10; the slow test
    runs 30) and more for 2.B MCT (80, its variance is ~25x LPAS's). The CI must overlap the published range
    AND be tight enough to mean something: half-width <= 2 % of the value (measured 0.6-1.7 %), i.e. a
    number off by more than ~4 % could not pass."""
    res = simulate(load(scenario), policy, reps=_FAST_REPS[scenario, policy], horizon=20_000.0, seed=2009,
                   workers=2, progress=False, tie="lowest")
    hw = (res.ci[1] - res.ci[0]) / 2
    assert hw <= 0.02 * res.mean, (res.mean, res.ci)
    assert res.ci[0] <= hi and res.ci[1] >= lo, (res.mean, res.ci)


def test_agrees_with_reference_on_2C1_short():
    sysm = load("2.C1")
    params = prepare(sysm, "lpas")
    cands = [list(params.params.cand[i, : params.params.ncand[i]]) for i in range(sysm.N)]
    H, R = 120.0, 4
    ref = [reference_qbar(sysm.alpha, sysm.mu.tolist(), cands, H, 200 + r)[0] for r in range(R)]
    ours = run(sysm, "lpas", reps=10, horizon=H, tie="lowest")
    e = t_interval(ref)
    se = math.hypot(e.half_width, (ours.ci[1] - ours.ci[0]) / 2) / 2.0
    assert abs(e.mean - ours.mean) < 3.5 * se, (e, ours.mean, ours.ci)


# ---------------------------------------------------------------- invariants and contracts
def test_reproducible_and_common_random_numbers():
    sysm = load("2.B")
    a = replication(np.random.SeedSequence(5), prepare(sysm, "mct", horizon=500.0))
    b = replication(np.random.SeedSequence(5), prepare(sysm, "mct", horizon=500.0))
    c = replication(np.random.SeedSequence(5), prepare(sysm, "lpas", horizon=500.0))
    assert a["Q"] == b["Q"] and a["events"] == b["events"]
    # same arrival streams under two policies
    assert a["arrivals"] == c["arrivals"]


def test_workers_do_not_change_numbers():
    sysm = load("2.B")
    r1 = simulate(sysm, "lpas", reps=4, horizon=500.0, seed=3, workers=1, progress=False)
    r2 = simulate(sysm, "lpas", reps=4, horizon=500.0, seed=3, workers=2, progress=False)
    assert [r["Q"] for r in r1.replications] == [r["Q"] for r in r2.replications]


def test_contacted_matches_formula_2_5():
    sysm = load("2.C1")
    for policy, k in (("lpas", None), ("mct", None), ("kpb", 15), ("lpas-2k", None), ("met", None)):
        res = run(sysm, policy, reps=1, horizon=200.0, k=k)
        assert res.contacted == pytest.approx(res.contacted_formula, rel=0.02), policy


def test_kpb_candidates_are_the_k_fastest():
    sysm = load("2.D")
    p = prepare(sysm, "kpb", k=3)
    mu = sysm.mu
    for i in range(sysm.N):
        chosen = set(p.params.cand[i, :3])
        assert p.params.ncand[i] == 3
        assert min(mu[i, list(chosen)]) >= sorted(mu[i])[-3]


def test_exact_weights_and_time_scale():
    """Small-decimal rates (2.C1: 1, 2, 4, 8; 2.B: 3, 4, 8, 10): integer weights L/mu, exact sums and ties."""
    for sid in ("2.C1", "2.B"):
        mu = load(sid).mu
        w, inc, L = ect_weights(mu, 30_000)
        assert inc and np.all(w == np.round(w)) and np.allclose(w * mu, L)
        # a user policy sees mu / L: its 1/mu is exactly the integer weight
        assert np.all(1.0 / (mu / L) == w)
    w, inc, L = ect_weights(load("2.D").mu, 30_000)  # rates like 1.75, 3.95: floating point, unit scale
    assert L == 1.0 and np.allclose(w * load("2.D").mu, 1.0)
    # in-place running sums give bit-for-bit the run that recomputes them from the counts
    p = prepare(load("2.C1"), "mct", horizon=300.0, tie="random")
    a = replication(np.random.SeedSequence(4), p)
    b = replication(np.random.SeedSequence(4), p.with_params(incremental=False))
    assert a["Q"] == b["Q"] and a["events"] == b["events"]


def test_tie_rules_differ_and_random_is_seeded():
    sysm = load("2.C1")
    lo = run(sysm, "mct", reps=2, horizon=300.0, tie="lowest")
    hi = run(sysm, "mct", reps=2, horizon=300.0, tie="highest")
    r1 = run(sysm, "mct", reps=2, horizon=300.0, tie="random")
    r2 = run(sysm, "mct", reps=2, horizon=300.0, tie="random")
    assert lo.mean != hi.mean
    assert r1.mean == r2.mean


# ---------------------------------------------------------------- instability
def test_met_example_of_section_2_1_is_unstable():
    sysm = System(id="met-ex", alpha=(6.0,), groups=(MachineGroup("a", 1, (5.0,)), MachineGroup("b", 1, (3.0,))))
    res = run(sysm, "met", reps=4, horizon=2_000.0)
    assert res.unstable and res.to_json()["mean"] is None
    assert not run(sysm, "mct", reps=4, horizon=2_000.0).unstable


def test_kpb_1_on_2A_unstable_lpas_stable():
    sysm = load("2.A")
    assert run(sysm, "kpb", k=1, reps=4, horizon=2_000.0).unstable
    assert not run(sysm, "lpas", reps=4, horizon=20_000.0).unstable


def test_mct_unstable_on_section_2_1_system_guided_stable():
    sysm = load("2.1-mct")
    mct = run(sysm, "mct", reps=2, horizon=20_000.0)
    assert mct.unstable and mct.hit_bound_reps >= 1
    g = run(sysm, "guided-lpas", reps=2, horizon=5_000.0)
    assert not g.unstable


def test_bound_stops_early_and_bounds_memory():
    sysm = load("2.A")
    res = run(sysm, "kpb", k=1, reps=1, horizon=1e7, max_in_system=500)
    r = res.replications[0]
    assert r["hit_bound"] and r["peak"] <= 501
    assert r["events"] < 10_000  # stopped long before the horizon


def test_trend_rule():
    assert instability_rule(np.linspace(10, 1000, 10))
    assert not instability_rule(np.full(10, 50.0))
    assert not instability_rule(np.array([37, 57, 30, 77, 248, 98, 99, 57, 47, 34.0]))


# ---------------------------------------------------------------- validation
@pytest.mark.parametrize("kw, match", [
    (dict(policy="nope"), "policy"),
    (dict(policy="kpb"), "needs --k"),
    (dict(policy="kpb", k=99), "k must be"),
    (dict(policy="mct", dist="weibull"), "dist"),
    (dict(policy="mct", tie="middle"), "tie rule"),
    (dict(policy="mct", horizon=-1.0), "horizon"),
    (dict(policy="mct", warmup=50.0, horizon=10.0), "warmup"),
    (dict(policy="guided-lpas", C=-1.0), "C "),
    (dict(policy="mct", max_in_system=0), "max_in_system"),
])
def test_validation_errors(kw, match):
    sysm = load("2.B")
    policy = kw.pop("policy")
    with pytest.raises(ModelError, match=match):
        prepare(sysm, policy, **kw)


def test_dask_backend_same_numbers():
    distributed = pytest.importorskip("distributed")
    sysm = load("2.B")
    local = simulate(sysm, "lpas", reps=4, horizon=300.0, seed=11, workers=1, progress=False)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, protocol="tcp",
                                  host="127.0.0.1", dashboard_address=None) as cluster:
        remote = simulate(sysm, "lpas", reps=4, horizon=300.0, seed=11, backend="dask",
                          scheduler=cluster.scheduler_address, progress=False)
    assert [r["Q"] for r in local.replications] == [r["Q"] for r in remote.replications]


def test_hyperexp_parametrisation_mean_1_variance_2():
    from hetsched.sim.core.variates import hyperexp_params

    p1, r1, r2 = hyperexp_params(2.0)
    mean = p1 / r1 + (1 - p1) / r2
    second = 2 * p1 / r1**2 + 2 * (1 - p1) / r2**2
    assert mean == pytest.approx(1.0) and second - mean**2 == pytest.approx(2.0)
    assert p1 / r1 == pytest.approx((1 - p1) / r2)  # balanced means
    with pytest.raises(ModelError, match="scv"):
        hyperexp_params(0.5)


def test_interpreted_kernel_matches_compiled():
    """NUMBA_DISABLE_JIT=1 runs the same kernel as plain Python: bit-identical results."""
    import json
    import os
    import subprocess

    code = (
        "import json, numpy as np\n"
        "from hetsched.scenarios import load\n"
        "from hetsched.sim.mapping import prepare, replication\n"
        "print(json.dumps([replication(np.random.SeedSequence(1), prepare(load('2.D'), p, horizon=20.0, k=3))['Q']"
        " for p in ('mct', 'kpb', 'lpas-2k', 'guided-lpas-2k', 'lp-static')]))\n"
    )
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", code], env=env, capture_output=True, text=True,
                         timeout=120, check=True).stdout
    interpreted = json.loads(out)
    compiled = [replication(np.random.SeedSequence(1), prepare(load("2.D"), p, horizon=20.0, k=3))["Q"]
                for p in ("mct", "kpb", "lpas-2k", "guided-lpas-2k", "lp-static")]
    assert interpreted == compiled


@pytest.mark.parametrize("policy", ["mct", "lpas", "met"])
def test_random_ties_are_uniform(policy):
    """Light load on 3 identical machines: nearly every arrival finds all idle (a 3-way tie).

    Under ``random`` each machine gets a third of the tasks (binomial bounds);
    under ``lowest`` machine 1 gets the ties.
    """
    sysm = System(id="iid3", alpha=(0.01,), groups=(MachineGroup("g", 3, (10.0,)),))
    p = prepare(sysm, policy, horizon=300_000.0, tie="random")
    r = replication(np.random.SeedSequence(8), p)
    n = r["arrivals"]
    share = np.array(r["share"][0])
    assert n > 2500
    assert np.all(np.abs(share - 1 / 3) < 4 * np.sqrt((1 / 3) * (2 / 3) / n)), share
    low = replication(np.random.SeedSequence(8), prepare(sysm, policy, horizon=300_000.0, tie="lowest"))
    assert low["share"][0][0] > 0.99


# ---------------------------------------------------------------- Guided-LPAS condition (iii), §2.4
def _lpas_drift(sysm, horizon, reps):
    """max over (i, j) of (a_ij(H) - pi_ij a_i(H)) / sqrt(H) per replication of plain LPAS, and the drift rate."""
    pi = prepare(sysm, "lpas").params.pi
    alpha = np.asarray(sysm.alpha, float)[:, None]
    res = simulate(sysm, "lpas", reps=reps, horizon=horizon, seed=2009, workers=1, progress=False)
    dev = np.array([((np.asarray(r["share"]) - pi) * alpha * horizon).max() for r in res.replications])
    return dev / math.sqrt(horizon), dev.mean() / horizon


def test_guided_lpas_condition_iii_binds_below_the_drift_prediction():
    """docs/simulation.md "Guided-LPAS condition (iii)": on the §2.1 system LPAS's split of class 2 drifts
    from the LP target linearly in t, so a_ij - pi_ij a_i outgrows C sqrt(t) and (iii) binds with C = 1.

    Independent prediction from plain LPAS runs (no Guided-LPAS involved): the deviation at the horizon,
    dev(H) / sqrt(H), is the C at which (iii) would first exclude the machine LPAS overloads. Checks:
    the drift is linear (dev(4H) ~ 4 dev(H), not the 2x of sqrt growth); Guided-LPAS (same seeds, so the
    same paths as LPAS until the first bind) binds at C = 1 and at half the predicted C*, and never at
    1.5 x the predicted C*.
    """
    sysm = load("2.1-mct")
    H, R = 2_000.0, 4
    c_h, rate_h = _lpas_drift(sysm, H, R)
    _, rate_4h = _lpas_drift(sysm, 4 * H, R)
    assert rate_h > 0.1 and rate_4h > 0.1  # tasks per time unit sent to the machine beyond its LP share
    assert 0.6 < rate_4h / rate_h < 1.6  # linear: the same rate at H and 4H (sqrt growth would halve it)
    c_star = c_h.max()

    def binds(C):
        return simulate(sysm, "guided-lpas", C=C, reps=R, horizon=H, seed=2009, workers=1, progress=False).binds

    assert binds(1.0) > 100
    assert binds(0.5 * c_star) > 0
    assert binds(1.5 * c_star) == 0


def test_common_random_numbers_across_policies():
    """Same seed: every mapping policy sees the same arrival times, classes and task sizes (issue 24,
    `hetsched compare`); the per-task records show it (size = execution time x rate)."""
    from dataclasses import replace

    sysm = load("2.D")
    mu = sysm.mu_effective
    seen = {}
    for pol in ("mct", "lpas", "lp-static", "guided-lpas-2k", "met"):
        p = replace(prepare(sysm, pol, horizon=400.0, tie="random"), records=True)
        r = replication(np.random.SeedSequence(11), p)
        order = np.argsort(r["rec_task"])
        a, c = r["rec_a"][order], r["rec_c"][order]
        size = ((r["rec_e"] - r["rec_s"]) * mu[r["rec_c"], r["rec_m"]])[order]
        seen[pol] = (r["rec_task"][order], a, c, size)
    base = seen["mct"]
    for pol, (task, a, c, size) in seen.items():
        common = np.intersect1d(task, base[0])  # tasks finished under both
        assert len(common) > 500
        ia, ib = np.searchsorted(task, common), np.searchsorted(base[0], common)
        assert np.array_equal(a[ia], base[1][ib]) and np.array_equal(c[ia], base[2][ib]), pol
        # (end - start) * mu: exact up to the rounding of the times (at most 400 here)
        assert np.allclose(size[ia], base[3][ib], rtol=1e-9, atol=1e-10), pol
