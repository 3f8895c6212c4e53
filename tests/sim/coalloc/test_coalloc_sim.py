"""Simulation of the two-cluster co-allocation system (seed 000) against independent truths:
the exact CTMC of the truncated MDP model, M/M/1 for cluster 2, Local's exact capacity
(a quasi-birth-death drift) and work conservation."""

from __future__ import annotations

import numpy as np
import pytest
from closed_forms import mm1_L

from hetsched.errors import ModelError
from hetsched.mdp.coalloc import (
    CoallocParams,
    average_cost,
    decision_table,
    heuristic_policy,
    local_policy,
    solve_coalloc,
)
from hetsched.sim.coalloc import SimParams, local_capacity, local_drift, simulate_coalloc, simulate_one

DELTA = 12


@pytest.fixture(scope="module")
def setup():
    prm = CoallocParams.from_loads(rho=0.8, mu3=0.8, p=0.6, delta=DELTA)
    sol = solve_coalloc(prm)
    m = sol.model
    exact = {
        "local": average_cost(m, local_policy(m))["gain"],
        "heuristic": average_cost(m, heuristic_policy(m))["gain"],
        "table": average_cost(m, sol.policy)["gain"],
    }
    return prm, decision_table(m, sol.policy), exact


@pytest.mark.parametrize("policy", ["local", "heuristic", "table"])
def test_truncated_simulation_matches_exact_chain(setup, policy: str) -> None:
    """With ``limit = Delta`` the simulator is the MDP's truncated system: its cost is the chain's gain."""
    prm, table, exact = setup
    r = simulate_coalloc(SimParams.of(prm), policy, reps=10, completions=60_000, seed=11,
                         table=table if policy == "table" else None, clamp=DELTA, limit=DELTA)
    assert r.success
    assert r.ci[0] <= exact[policy] <= r.ci[1], (policy, r.mean, r.ci, exact[policy])


def test_optimal_le_heuristic_le_local_on_the_truncated_system(setup) -> None:
    prm, table, exact = setup
    res = {p: simulate_coalloc(SimParams.of(prm), p, reps=10, completions=60_000, seed=5, clamp=DELTA,
                               table=table if p == "table" else None, limit=DELTA)
           for p in ("local", "heuristic", "table")}
    assert exact["table"] <= exact["heuristic"] <= exact["local"]
    assert res["table"].ci[0] <= res["heuristic"].ci[1]
    assert res["heuristic"].ci[0] <= res["local"].ci[1]
    assert res["local"].coallocations_per_rep == 0 and res["table"].coallocations_per_rep > 0


def test_cluster2_is_mm1_under_local_within_2_percent() -> None:
    """c1 = 0: the cost is cluster 2's mean number in system, M/M/1 at rho2 = 0.6 (unbounded queues)."""
    prm = SimParams(lam1=0.5, lam2=0.6, c1=0.0, c2=1.0)
    r = simulate_coalloc(prm, "local", reps=10, completions=1_000_000, seed=3, workers=2)
    assert r.success
    assert abs(r.mean - mm1_L(0.6)) / mm1_L(0.6) < 0.02, r.mean
    assert r.rel_half_width < 0.01  # the run is long enough for a 2 % check to mean something


def test_local_capacity_closed_forms() -> None:
    """p = 0: every job takes both nodes (M/M/1 at mu1); p = 1 without the one-start rule: M/M/2."""
    assert local_capacity(0.0) == pytest.approx(1.0, abs=1e-9)
    assert local_capacity(0.0, max_starts=0) == pytest.approx(1.0, abs=1e-9)
    assert local_capacity(1.0, max_starts=0) == pytest.approx(1.0, abs=1e-9)
    # mixing sizes wastes nodes (a two-node head job blocks a free node), and one start per
    # decision epoch wastes more
    assert local_capacity(0.6) < local_capacity(0.6, max_starts=0) < 1.0


@pytest.mark.parametrize("max_starts", [1, 0])
def test_queue_grows_at_the_qbd_drift_beyond_capacity(max_starts: int) -> None:
    """Beyond capacity q1 grows linearly at the drift the QBD predicts (an independent truth for both)."""
    p, rho1 = 0.6, 0.95
    m = p + 2 * (1 - p)
    lam1 = rho1 * 2 / m
    drift = local_drift(lam1, p, 1.0, max_starts)
    assert drift > 0
    prm = SimParams(lam1=lam1, lam2=0.0, c1=1.0, c2=0.0, p=p)
    T = 60_000.0
    ends = [simulate_one(prm, "local", completions=int(lam1 * T), seed=s, max_starts=max_starts,
                         bound=10**7)["in_system_end"] for s in range(4)]
    rate = np.mean(ends) / T
    assert abs(rate - drift) / drift < 0.05, (rate, drift)


def test_stability_verdict_follows_the_exact_capacity() -> None:
    cap = local_capacity(0.6)
    m = 0.6 + 2 * 0.4
    below = simulate_coalloc(SimParams(lam1=0.93 * cap * 2 / m, lam2=0.5), "local", reps=4,
                             completions=300_000, seed=1, workers=2)
    above = simulate_coalloc(SimParams(lam1=1.07 * cap * 2 / m, lam2=0.5), "local", reps=4,
                             completions=300_000, seed=1, workers=2)
    assert below.success and below.local_stable_exact
    assert above.unstable and not above.local_stable_exact and "unstable" in above.message


def test_results_do_not_depend_on_workers() -> None:
    prm = SimParams(lam1=0.9, lam2=0.7)
    a = simulate_coalloc(prm, "heuristic", reps=4, completions=5_000, seed=9, workers=1)
    b = simulate_coalloc(prm, "heuristic", reps=4, completions=5_000, seed=9, workers=2)
    assert a.replications_frame()["cost"].tolist() == b.replications_frame()["cost"].tolist()
    c = simulate_coalloc(prm, "heuristic", reps=4, completions=5_000, seed=10, workers=1)
    assert a.replications_frame()["cost"].tolist() != c.replications_frame()["cost"].tolist()


def test_always_coallocating_conserves_work() -> None:
    """Every 2-node job preempts cluster 2 and the preempted job resumes: in a stable run every
    arrival completes, so completions match the arrivals of the horizon (Poisson counts)."""
    prm = SimParams(lam1=0.3, lam2=0.3, p=0.0, mu3=1.0)
    one = simulate_one(prm, "always", completions=200_000, seed=2)
    assert one["coallocations"] > 0 and not one["hit_bound"]
    expected = 0.6 * one["time"]
    assert abs(one["completions"] - expected) < 4 * np.sqrt(expected) + 10


def test_validation() -> None:
    prm = SimParams(lam1=1, lam2=1)
    with pytest.raises(ModelError, match="policy"):
        simulate_one(prm, "random")
    with pytest.raises(ModelError, match="table"):
        simulate_one(prm, "table")
    with pytest.raises(ModelError, match="table: expected shape"):
        simulate_one(prm, "table", table=np.zeros((3, 4, 4)))
    with pytest.raises(ModelError, match="clamp"):
        simulate_one(prm, "table", table=np.zeros((2, 5, 5)), clamp=9)
    with pytest.raises(ModelError, match="limit"):
        simulate_one(prm, "local", limit=0)
    with pytest.raises(ModelError, match="mu3"):
        SimParams(lam1=1, lam2=1, mu3=-1)
    with pytest.raises(ModelError, match="reps"):
        simulate_coalloc(prm, "local", reps=0)


def test_common_random_numbers_across_policies() -> None:
    """Same seed: every policy sees the same jobs (arrival counts and the sum of their works); the
    policies still differ in what they do with them."""
    prm = SimParams(lam1=0.5, lam2=0.4)
    runs = {p: simulate_one(prm, p, completions=20_000, seed=7) for p in ("local", "heuristic", "always")}
    jobs = {p: (r["arrivals1"], r["arrivals2"], r["work_sum"]) for p, r in runs.items()}
    assert len(set(jobs.values())) == 1 and jobs["local"][0] > 1000
    assert runs["local"]["cost"] != runs["always"]["cost"]
    other = simulate_one(prm, "local", completions=20_000, seed=8)
    assert (other["arrivals1"], other["arrivals2"], other["work_sum"]) != jobs["local"]


def test_edges_are_clear_errors() -> None:
    with pytest.raises(ModelError, match="lam1, lam2"):
        simulate_one(SimParams(lam1=1e-300, lam2=0.0), "local", completions=10**9)
    with pytest.raises(ModelError, match="bound"):
        simulate_one(SimParams(lam1=1, lam2=1), "local", bound=2.5)
    with pytest.raises(ModelError, match="memory"):
        simulate_one(SimParams(lam1=1, lam2=1), "local", bound=10**15)
