"""Simulation of the two-cluster system against the exact CTMC of the MDP model."""

from __future__ import annotations

import numpy as np
import pytest

from hetsched.errors import ModelError
from hetsched.mdp.coalloc import (
    CoallocParams,
    average_cost,
    decision_table,
    heuristic_policy,
    local_policy,
    solve_coalloc,
)
from hetsched.sim.coalloc import SimParams, simulate_coalloc, simulate_one

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
    prm, table, exact = setup
    r = simulate_coalloc(SimParams.of(prm), policy, reps=10, completions=60_000, seed=11,
                         table=table if policy == "table" else None, limit=DELTA)
    assert not r.unstable
    assert r.ci[0] <= exact[policy] <= r.ci[1], (policy, r.mean, r.ci, exact[policy])


def test_optimal_le_heuristic_le_local_in_simulation(setup) -> None:
    prm, table, exact = setup
    res = {p: simulate_coalloc(SimParams.of(prm), p, reps=10, completions=60_000, seed=5,
                               table=table if p == "table" else None, limit=DELTA) for p in ("local", "heuristic", "table")}
    assert res["table"].ci[0] <= res["heuristic"].ci[1]
    assert res["heuristic"].ci[0] <= res["local"].ci[1]
    assert exact["table"] <= exact["heuristic"] <= exact["local"]
    # Local never co-allocates; the others do
    assert res["local"].coallocations_per_rep == 0 and res["table"].coallocations_per_rep > 0


def test_cluster2_is_mm1_under_local_untruncated() -> None:
    prm = SimParams(lam1=0.5, lam2=0.6, c1=0.0, c2=1.0)
    r = simulate_coalloc(prm, "local", reps=8, completions=80_000, seed=3)
    assert r.ci[0] <= 0.6 / 0.4 <= r.ci[1]


def test_results_do_not_depend_on_workers() -> None:
    prm = SimParams(lam1=0.9, lam2=0.7)
    a = simulate_coalloc(prm, "heuristic", reps=4, completions=5_000, seed=9, workers=1)
    b = simulate_coalloc(prm, "heuristic", reps=4, completions=5_000, seed=9, workers=2)
    assert np.array_equal(a.per_rep, b.per_rep)
    c = simulate_coalloc(prm, "heuristic", reps=4, completions=5_000, seed=10, workers=1)
    assert not np.array_equal(a.per_rep, c.per_rep)


def test_unstable_run_is_flagged() -> None:
    # Local at rho = 0.9 (p = 0.6) is beyond cluster 1's capacity: queues grow
    prm = SimParams.of(CoallocParams.from_loads(rho=0.9, mu3=0.7, p=0.6))
    r = simulate_coalloc(prm, "local", reps=3, completions=200_000, seed=1)
    assert r.unstable


def test_preemption_resumes_cluster2_work() -> None:
    # with 'always' co-allocation every 2-node job preempts cluster 2; work is conserved:
    # cluster-2 throughput equals its arrival rate in a stable run
    prm = SimParams(lam1=0.3, lam2=0.3, p=0.0, mu3=1.0)
    one = simulate_one(prm, "always", completions=50_000, seed=2)
    assert one["coallocations"] > 0 and not one["overflow"]
    assert one["L2"] > 0


def test_validation() -> None:
    prm = SimParams(lam1=1, lam2=1)
    with pytest.raises(ModelError, match="policy"):
        simulate_one(prm, "random")
    with pytest.raises(ModelError, match="table"):
        simulate_one(prm, "table")
    with pytest.raises(ModelError, match="table: expected shape"):
        simulate_one(prm, "table", table=np.zeros((3, 4, 4)))
    with pytest.raises(ModelError, match="limit"):
        simulate_one(prm, "local", limit=0)
    with pytest.raises(ModelError, match="mu3"):
        SimParams(lam1=1, lam2=1, mu3=-1)


def test_reproduce_registry_and_quick_run(tmp_path) -> None:
    from hetsched import experiments

    reg = experiments.registry()
    for i in (5, 6, 7, 8, 9):
        assert f"coalloc-fig{i}" in reg
    opts = experiments.RunOptions(quick=True, seed=1, workers=1, outdir=tmp_path, progress=False,
                                  extra={"reps": 3, "completions": 3_000, "delta": 8})
    res = reg["coalloc-fig9"].run(opts)
    assert {r["policy"] for r in res.rows} == {"Local", "Heuristic", "Optimal"}
    assert {r["p"] for r in res.rows} == {0.2, 0.4, 0.6, 0.8}
    assert all(np.isfinite(r["cost"]) for r in res.rows)
    assert res.figures and res.figures[0].exists()
    res6 = reg["coalloc-fig6"].run(opts)
    assert all({"rho", "reduction"} <= set(r) for r in res6.rows)
