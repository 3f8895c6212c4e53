"""The seed-000 co-allocation model on the CTMDP solver: structure, solvers, closed forms, CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hetsched.errors import ModelError
from hetsched.mdp.coalloc import (
    CoallocParams,
    average_cost,
    build_coalloc,
    coalloc_event_model,
    coalloc_memory_bytes,
    decision_table,
    heuristic_policy,
    local_policy,
    n_pairs,
    n_states,
    policy_from_table,
    solve_coalloc,
)
from hetsched.mdp.ctmdp import to_mdptoolbox, value_iteration


def params(**kw) -> CoallocParams:
    base = dict(rho=0.8, mu3=0.7, p=0.6, delta=6)
    base.update(kw)
    return CoallocParams.from_loads(**base)


def _paper_state_set(delta: int) -> set[tuple[int, ...]]:
    """Lambda = Lambda_1 u Lambda_2 of §2, enumerated from the set definition, truncated at q1, q2 <= Delta."""
    out = set()
    for q1 in range(delta + 1):
        for q2 in range(delta + 1):
            for g in ((0,) if q1 == 0 else (1, 2)):
                for x1 in range(3):
                    for x2 in range(2):
                        for x11 in range(2):
                            if x1 + 2 * x2 + x11 <= 2:
                                out.add((q1, q2, g, x1, x2, x11))
    return out


@pytest.mark.parametrize("delta", [1, 2, 3, 5])
def test_state_count_by_breadth_first_search(delta: int) -> None:
    # independent truths: the states reachable from the empty system by a breadth-first search of the
    # transition rules written line by line from §2 (coalloc_event_model) are the paper's set Lambda,
    # enumerated from its definition and truncated at Delta; its size is the closed form of §4
    lam = _paper_state_set(delta)
    assert len(lam) == n_states(delta)
    post = coalloc_event_model(params(delta=delta, self_loop="post"))
    assert set(post.labels) == lam and post.n_pairs == n_pairs(delta)
    # with the printed uniformization (self-loop back to the pre-decision state) one state of Lambda is
    # only ever a post-decision state: co-allocating the last job of queue 1 next to a one-node job
    # while cluster 2 is empty; it stays in the state space (the paper counts it) but is not reached
    pre = coalloc_event_model(params(delta=delta))
    assert lam - set(pre.labels) == {(0, 0, 0, 1, 0, 1)} and pre.n_pairs == n_pairs(delta) - 1
    # the compiled builder enumerates exactly Lambda, with one pair per admissible action
    for sl in ("pre", "post"):
        m = build_coalloc(params(delta=delta, self_loop=sl))
        assert set(map(tuple, m.states.tolist())) == lam
        assert m.ctmdp.n_states == len(lam) and m.ctmdp.n_pairs == post.n_pairs


def test_state_count_published() -> None:
    # §4: "We choose Delta = 30 which yields 11346 states"
    m = build_coalloc(params(delta=30))
    assert m.ctmdp.n_states == 11346 == n_states(30)


def test_compiled_builder_equals_its_python_execution() -> None:
    # the numba kernel run as plain Python (its py_func) writes the same arrays
    from hetsched.mdp.coalloc.builder import _CFG_LUT, _ROW_MAX, CONFIGS, _coalloc_kernel

    for prm in (params(delta=3), params(delta=3, self_loop="post", boundary="absorb", p=1.0)):
        D = prm.delta
        S, K = n_states(D), n_pairs(D)
        outs = []
        for fn in (_coalloc_kernel, _coalloc_kernel.py_func):
            arrs = (np.empty((S, 6), np.int64), np.empty(S + 1, np.int64), np.empty(K, np.int64), np.empty(K),
                    np.empty(K), np.empty(K + 1, np.int32), np.empty(_ROW_MAX * K, np.int32), np.empty(_ROW_MAX * K))
            nnz = fn(D, prm.lam1, prm.lam2, prm.mu1, prm.mu2, prm.mu3, prm.p, prm.c1, prm.c2, prm.nu_used,
                     prm.self_loop == "post", prm.boundary == "absorb", CONFIGS, _CFG_LUT, *arrs)
            outs.append((nnz, [a[: nnz] if i >= 6 else a for i, a in enumerate(arrs)]))
        assert outs[0][0] == outs[1][0]
        for a, b in zip(outs[0][1], outs[1][1]):
            assert np.array_equal(a, b)


def test_memory_estimate_bounds_the_model_and_refuses_huge_delta() -> None:
    from hetsched._memory import ensure_fits

    m = build_coalloc(params(delta=30))
    c = m.ctmdp
    used = (m.states.nbytes + c.state_ptr.nbytes + c.sa_action.nbytes + c.cost.nbytes + c.kill.nbytes
            + c.R.data.nbytes + c.R.indices.nbytes + c.R.indptr.nbytes + c.out.nbytes + c.sa_state.nbytes)
    est = coalloc_memory_bytes(30)
    assert used <= est <= 10 * used
    # refused before anything is allocated, with the size named
    with pytest.raises(ModelError, match="delta = 100000: needs about .* of memory"):
        build_coalloc(params(delta=100_000))
    with pytest.raises(ModelError, match="needs about 2 KB"):
        ensure_fits("x", 2048, available=1024)
    with pytest.raises(ModelError, match="delta"):
        coalloc_memory_bytes(0)


def test_loads() -> None:
    prm = CoallocParams.from_loads(rho1=0.7, rho2=0.9, mu1=1.5, mu2=2.0, p=0.3)
    m = 0.3 + 2 * 0.7
    assert prm.lam1 == pytest.approx(2 * 0.7 * 1.5 / m) and prm.lam2 == pytest.approx(1.8)
    assert prm.rho1 == pytest.approx(0.7) and prm.rho2 == pytest.approx(0.9) and prm.rho == pytest.approx(0.8)
    assert prm.nu_used == pytest.approx(prm.lam1 + prm.lam2 + 2 * 1.5 + 2.0 + 0.7)


@pytest.mark.parametrize("self_loop", ["pre", "post"])
@pytest.mark.parametrize("boundary", ["block", "absorb"])
def test_compiled_builder_equals_event_description(self_loop: str, boundary: str) -> None:
    prm = params(delta=4, self_loop=self_loop, boundary=boundary)
    vec = build_coalloc(prm)
    ref = coalloc_event_model(prm)
    # every state reachable from the empty system is in the compiled model, with the same pairs
    idx = np.array([int(vec.index(*s)) for s in ref.labels])
    assert len(set(idx.tolist())) == ref.n_states
    c = vec.ctmdp
    table = {(int(s), int(a)): k for k, (s, a) in enumerate(zip(c.sa_state, c.sa_action))}
    for k in range(ref.n_pairs):
        s, a = int(ref.sa_state[k]), int(ref.sa_action[k])
        kv = table[(int(idx[s]), a)]
        assert c.cost[kv] == pytest.approx(ref.cost[k])
        assert c.kill[kv] == pytest.approx(ref.kill[k])
        row_ref = ref.R.getrow(k).tocoo()
        row_vec = c.R.getrow(kv).toarray().ravel()
        expect = np.zeros(c.n_states)
        expect[idx[row_ref.col]] = row_ref.data
        assert np.allclose(row_vec, expect, atol=1e-12)
    # the admissible actions follow Omega(S): a choice only in g=2, x11=0, theta>=1
    q1, q2, g, x1, x2, x11 = vec.states.T
    choice = np.bincount(c.sa_state, minlength=c.n_states) == 2
    assert np.array_equal(choice, (g == 2) & (x11 == 0) & (2 - x1 - 2 * x2 - x11 >= 1))
    assert np.all(x1[choice] <= 1) and np.all(x2[choice] == 0)


def test_exit_rates_within_the_printed_bound() -> None:
    prm = params(delta=5)
    m = build_coalloc(prm)
    assert m.ctmdp.max_rate <= prm.nu_used + 1e-12
    assert m.ctmdp.max_rate == pytest.approx(prm.max_rate)


@pytest.mark.parametrize("kw", [dict(), dict(rho=0.9, mu3=0.8, p=0.8), dict(self_loop="post"), dict(boundary="absorb")])
def test_all_solvers_and_mdptoolbox_agree(kw) -> None:
    mdptoolbox = pytest.importorskip("mdptoolbox.mdp")
    prm = params(delta=8, **kw)
    model = build_coalloc(prm)
    sols = {m: solve_coalloc(model, method=m) for m in
            ("gauss-seidel", "jacobi", "policy-iteration", "modified-policy-iteration")}
    ref = sols["policy-iteration"]
    for name, s in sols.items():
        assert s.result.success, (name, s.result.message)
        assert np.array_equal(s.policy, ref.policy), name
    if prm.boundary == "absorb":  # killing rates make P substochastic, which pymdptoolbox refuses
        return
    P, R, disc = to_mdptoolbox(model.ctmdp, prm.beta, nu=prm.nu_used)
    vi = mdptoolbox.ValueIteration(P, R, disc, epsilon=1e-10, max_iter=100000)
    vi.run()
    tb = np.array(vi.policy)
    # pymdptoolbox's argmax breaks exact ties by the lowest action, as our solvers do; compare where certified
    ctm = model.ctmdp
    pair = np.full((ctm.n_states, 2), -1)
    pair[ctm.sa_state, ctm.sa_action] = np.arange(ctm.n_pairs)
    q = ref.result.extra["q"]
    two = pair[:, 1] >= 0
    gap = np.zeros(ctm.n_states)
    gap[two] = np.abs(q[pair[two, 0]] - q[pair[two, 1]])
    clear = gap > 1e-6
    assert np.array_equal(tb[clear], ref.policy[clear])
    # pymdptoolbox stops on the span of V_n+1 - V_n: its V is J* up to a constant shift
    diff = -np.array(vi.V) - ref.result.values
    assert np.ptp(diff) < 1e-6 * np.abs(ref.result.values).max()


def test_local_policy_makes_cluster2_a_truncated_mm1() -> None:
    prm = params(delta=10, rho1=0.7, rho2=0.6, rho=None)
    m = build_coalloc(prm)
    res = average_cost(m, local_policy(m))
    q2 = m.states[:, 1]
    marg = np.bincount(q2, weights=res["pi"], minlength=prm.delta + 1)
    r = prm.lam2 / prm.mu2
    expect = r ** np.arange(prm.delta + 1)
    expect /= expect.sum()
    assert np.allclose(marg, expect, atol=1e-10)
    # and without co-allocation no state with x11 = 1 is ever visited
    assert res["pi"][m.states[:, 5] == 1].sum() < 1e-14


def test_discounted_value_of_local_policy_cluster2_part() -> None:
    # with c1 = 0, Local's discounted cost depends on cluster 2 only: the truncated M/M/1's J
    from hetsched.mdp.ctmdp import build_ctmdp, evaluate_policy

    prm = params(delta=6, c1=0.0, c2=1.0)
    m = build_coalloc(prm)
    J = evaluate_policy(m.ctmdp, local_policy(m), beta=prm.beta)["values"]
    K = prm.delta
    mm1 = build_ctmdp([0], lambda n: [0], lambda n, a: [(prm.lam2, n + 1)] * (n < K) + [(prm.mu2, n - 1)] * (n > 0),
                      lambda n, a: float(n))
    Jq = evaluate_policy(mm1, np.zeros(mm1.n_states, dtype=np.int64), beta=prm.beta)["values"]
    Jq = Jq[np.argsort(np.array(mm1.labels))]
    q2, x11 = m.states[:, 1], m.states[:, 5]
    # from a state without a co-allocated job, Local never preempts cluster 2
    assert np.allclose(J[x11 == 0], Jq[q2[x11 == 0]], rtol=1e-10)
    # with one, cluster 2 first waits for it: its cost can only be higher
    assert np.all(J[x11 == 1] >= Jq[q2[x11 == 1]] - 1e-9)


def test_tables_shape_margins_and_near_ties() -> None:
    sol = solve_coalloc(params(delta=10))
    D = 10
    for key in ("x1=0", "x1=1"):
        assert sol.tables[key].shape == (D, D + 1)
        assert set(np.unique(sol.tables[key])) <= {0, 1}
        # the sign of the margin is the action
        assert np.all((sol.margins[key] > 0) == (sol.tables[key] == 1) | ~sol.certified[key])
    d = sol.as_dict()
    assert d["states"] == len(_paper_state_set(D)) and d["iterations"] >= 1 and d["seconds"] >= 0
    assert len(d["tables"]["x1=1"]) == D and len(d["tables"]["x1=1"][0]) == D + 1
    ties = sol.near_ties(0.005)
    for key, cells in ties.items():
        for q1, q2, m in cells:
            assert abs(m) < 0.005 and 1 <= q1 <= D and 0 <= q2 <= D


def test_decision_table_round_trip_and_heuristic() -> None:
    prm = params(delta=7)
    m = build_coalloc(prm)
    h = heuristic_policy(m)
    tab = decision_table(m, h)
    assert np.array_equal(policy_from_table(m, tab), h)
    # the heuristic co-allocates only at x1 = 1 and where p c1 q1 > c2 q2
    assert tab[0].sum() == 0
    q1, q2 = np.meshgrid(np.arange(8), np.arange(8), indexing="ij")
    assert np.array_equal(tab[1] == 1, (q1 >= 1) & (prm.p * prm.c1 * q1 > prm.c2 * q2))


def test_optimal_beats_local_and_heuristic_in_exact_average_cost_small_model() -> None:
    # on the truncated chain itself the average-cost optimal policy is best by construction
    from hetsched.mdp.ctmdp import average_policy_iteration

    prm = params(delta=12, rho=0.7)
    m = build_coalloc(prm)
    opt = average_policy_iteration(m.ctmdp)
    g_loc = average_cost(m, local_policy(m))["gain"]
    g_heu = average_cost(m, heuristic_policy(m))["gain"]
    assert opt.gain <= g_heu + 1e-9 and opt.gain <= g_loc + 1e-9


def test_param_validation() -> None:
    with pytest.raises(ModelError, match="p: the probability"):
        CoallocParams(lam1=1, lam2=1, p=1.5)
    with pytest.raises(ModelError, match="mu3"):
        CoallocParams(lam1=1, lam2=1, mu3=0)
    with pytest.raises(ModelError, match="delta"):
        CoallocParams(lam1=1, lam2=1, delta=0)
    with pytest.raises(ModelError, match="self_loop"):
        CoallocParams(lam1=1, lam2=1, self_loop="X")
    with pytest.raises(ModelError, match="boundary"):
        CoallocParams(lam1=1, lam2=1, boundary="wrap")
    with pytest.raises(ModelError, match="nu"):
        CoallocParams(lam1=1, lam2=1, nu=1.0)
    with pytest.raises(ModelError, match="not both"):
        CoallocParams.from_loads(rho=0.5, rho1=0.5)
    with pytest.raises(ModelError, match="method"):
        solve_coalloc(params(delta=2), method="newton")


def test_cli_json_contract() -> None:
    from typer.testing import CliRunner

    from hetsched.cli import app

    r = CliRunner().invoke(app, ["mdp", "coalloc", "--delta", "5", "--rho", "0.8", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["states"] == len(_paper_state_set(5))  # the paper's set, enumerated by brute force
    assert isinstance(d["iterations"], int) and d["seconds"] >= 0
    assert set(d["tables"]) >= {"x1=0", "x1=1"}
    for key in ("x1=0", "x1=1"):
        rows = d["tables"][key]
        assert len(rows) == 5 and all(len(row) == 6 and set(row) <= {0, 1} for row in rows)
    r = CliRunner().invoke(app, ["mdp", "coalloc", "--delta", "3"])
    assert r.exit_code == 0 and "x1=1" in r.output and "Margin" in r.output
    r = CliRunner().invoke(app, ["mdp", "coalloc", "--p", "2"])
    assert r.exit_code == 2 and "p: the probability" in r.output


@pytest.mark.parametrize("kw", [dict(delta=12), dict(delta=10, rho=0.95, mu3=0.9, p=0.3, beta=0.02)])
def test_fast_default_solver_equals_plain_value_iteration(kw) -> None:
    """The compiled GS + Anderson default returns plain successive approximation's policy, certified."""
    model = build_coalloc(params(**kw))
    c, prm = model.ctmdp, model.params
    fast = solve_coalloc(model)  # default: compiled Gauss-Seidel sweeps + Anderson mixing
    plain = value_iteration(c, prm.beta, method="jacobi", anderson=0, nu=prm.nu_used, max_iter=500_000)
    assert fast.result.success and plain.success
    assert fast.result.error_bound < fast.result.extra["eps"]
    # where the two actions are separated by more than both certificates, the policies must agree
    q = fast.result.extra["q"]
    pair = np.full((c.n_states, 2), -1)
    pair[c.sa_state, c.sa_action] = np.arange(c.n_pairs)
    two = pair[:, 1] >= 0
    gap = np.full(c.n_states, np.inf)
    gap[two] = np.abs(q[pair[two, 0]] - q[pair[two, 1]]) * (prm.nu_used + prm.beta)
    clear = gap > 2 * (fast.result.error_bound + plain.error_bound)
    assert clear.mean() > 0.95
    assert np.array_equal(fast.policy[clear], plain.policy[clear])
    assert np.array_equal(fast.policy, plain.policy)
    # the two certified brackets [lower, upper] of J* (MacQueen bounds) intersect in every state
    tol = 1e-9 * np.abs(plain.values).max()
    assert np.all(fast.result.lower <= plain.upper + tol)
    assert np.all(plain.lower <= fast.result.upper + tol)


def test_overload_is_reported() -> None:
    # work-conservation bounds: rho2 >= 1, or more node-time than the nodes have, is unstable under every policy
    assert params(rho=0.8).overload_reason() is None
    assert "rho2 = 1.5" in params(rho=1.5).overload_reason()
    # rho1 = 1.2, p = 0.6: lambda1 = 2.4 / 1.4 = 1.714; with mu3 = 0.7 a co-allocated job still holds a
    # cluster-1 node for 1 / 0.7 = 1.43 > 1 time units, so cluster 1 needs at least
    # 1.714 (0.6 + 0.4 x 1.43) = 2.007 node-time per unit time: more than its 2 nodes
    prm = CoallocParams.from_loads(rho1=1.2, rho2=0.1, mu3=0.7, p=0.6, delta=4)
    assert "cluster 1" in prm.overload_reason()
    # a fast co-allocated service (mu3 = 5) lets cluster 1 at rho1 = 1.05 borrow cluster 2's idle node
    assert CoallocParams.from_loads(rho1=1.05, rho2=0.1, mu3=5.0, p=0.6, delta=4).overload_reason() is None
    assert solve_coalloc(params(rho=1.5, delta=4)).as_dict()["overload"].startswith("rho2")


# --------------------------------------------------------------------------- §5 figures and the §6 comparator


@pytest.mark.parametrize("exp_id", ["coalloc-fig2", "coalloc-fig3", "coalloc-fig4"])
def test_reproduce_table_figures_equal_mdp_coalloc(exp_id, tmp_path) -> None:
    """`reproduce coalloc-fig2/3/4` (Delta = 12 here) gives exactly the table `mdp coalloc` computes."""
    from typer.testing import CliRunner

    from hetsched import experiments
    from hetsched.cli import app
    from hetsched.experiments.coalloc import TABLE_FIGS

    spec = TABLE_FIGS[exp_id]
    opts = experiments.RunOptions(quick=True, seed=1, workers=1, outdir=tmp_path, progress=False,
                                  extra={"delta": 12})
    res = experiments.get(exp_id).run(opts)
    r = CliRunner().invoke(app, ["mdp", "coalloc", "--rho", str(spec["rho"]), "--mu3", str(spec["mu3"]),
                                 "--p", str(spec["p"]), "--delta", "12", "--json"])
    assert r.exit_code == 0, r.output
    table = json.loads(r.stdout)["tables"][f"x1={spec['x1']}"]
    got = [[None] * 13 for _ in range(12)]
    for row in res.rows:
        assert row["metric"] == "action" and row["value"] == row["action"] and row["x1"] == spec["x1"]
        got[row["q1"] - 1][row["q2"]] = row["action"]
    assert got == table
    assert res.figures[0].exists() and "Optimal action" in res.table


def test_table_figures_are_listed_and_appear_in_the_report(tmp_path) -> None:
    from hetsched import experiments
    from hetsched.report.html import build_report

    reg = experiments.registry()
    assert {"coalloc-fig2", "coalloc-fig3", "coalloc-fig4"} <= set(reg)
    exp = reg["coalloc-fig2"]
    opts = experiments.RunOptions(quick=True, seed=1, workers=1, outdir=tmp_path / "coalloc-fig2", progress=False,
                                  extra={"delta": 6})
    experiments.prepare_outdir(opts.outdir)
    experiments.write_results(experiments.run_experiment(exp, opts), opts.outdir)
    html = build_report(tmp_path).read_text()
    assert "coalloc-fig2" in html and "Fig. 2" in html


def test_comparator_heuristic_differs_exactly_where_p_matters() -> None:
    prm = CoallocParams.from_loads(rho=0.8, mu3=0.7, p=0.6, delta=10)
    model = build_coalloc(prm)
    a = heuristic_policy(model)                 # p c1 q1 > c2 q2
    b = heuristic_policy(model, rule="c1q1")    # c1 q1 > c2 q2
    q1, q2, g, x1, x2, x11 = model.states.T
    adm = (g == 2) & (x11 == 0) & (x1 == 1) & (x2 == 0)
    between = adm & (prm.p * prm.c1 * q1 <= prm.c2 * q2) & (prm.c2 * q2 < prm.c1 * q1)
    assert np.array_equal(b - a, between.astype(int))  # the comparator co-allocates in these states only
    assert between.any()
    one = build_coalloc(prm.with_(p=1.0))
    assert np.array_equal(heuristic_policy(one), heuristic_policy(one, rule="c1q1"))  # p = 1: the same rule
    with pytest.raises(ModelError, match="heuristic: expected one of pc1q1, c1q1"):
        heuristic_policy(model, rule="pc2")


def test_comparator_option_changes_only_the_heuristic_rows(tmp_path) -> None:
    from hetsched import experiments
    from hetsched.sim.coalloc import SimParams, simulate_coalloc

    base = {"reps": 2, "completions": 3_000, "delta": 6}
    runs = {}
    for rule in ("pc1q1", "c1q1"):
        opts = experiments.RunOptions(quick=True, seed=3, workers=1, outdir=tmp_path / rule, progress=False,
                                      extra={**base, "heuristic": rule})
        runs[rule] = {(r["p"], r["policy"]): r for r in experiments.get("coalloc-fig9").run(opts).rows}
    for key, r in runs["pc1q1"].items():
        other = runs["c1q1"][key]
        same = r["cost"] == other["cost"] and r["coallocations_per_rep"] == other["coallocations_per_rep"]
        assert same == (key[1] != "Heuristic"), key  # Local and Optimal identical (common random numbers)
        assert other["heuristic_rule"] == "c1q1"
    # in the simulator, with c2 = 0 both rules say "q1 > 0": identical runs (the factor p is the only difference)
    sp1 = SimParams(lam1=0.8, lam2=0.8, p=0.6, c2=0.0)
    a = simulate_coalloc(sp1, "heuristic", reps=2, completions=2_000, seed=5)
    b = simulate_coalloc(sp1, "heuristic-c1q1", reps=2, completions=2_000, seed=5)
    assert a.mean == b.mean and a.extra["coallocations_per_rep"] == b.extra["coallocations_per_rep"]
