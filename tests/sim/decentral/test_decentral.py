"""Decentralized grid model (thesis ch. 4): truths, hand counts, cross-implementation checks.

The LP inside the kernel is tested with the shared tableau in tests/lp/test_tableau.py."""

from __future__ import annotations

import heapq
from collections import deque

import numpy as np
import pytest

from hetsched.errors import ModelError
from hetsched.lp import solve_allocation
from hetsched.scenarios import load
from hetsched.sim.decentral import per_machine_alpha, prepare, replication, simulate
from hetsched.stats import t_interval
from hetsched.system import System, groups_from_matrix


def grid(mu, alpha_matrix, **kw):
    A = np.asarray(alpha_matrix, float)
    return System(id="t", alpha=tuple(A.sum(axis=1)), groups=groups_from_matrix(mu),
                  alpha_matrix=tuple(map(tuple, A)), **kw)


def one_run(system, policy, seed=1, **kw):
    return replication(np.random.SeedSequence(seed), prepare(system, policy, **kw))


def simulate_command(system, policy, **kw):
    """The command line's JSON object for this model."""
    return simulate(system, policy, **kw).as_dict()


# ------------------------------------------------------------------ closed forms
@pytest.mark.parametrize("policy,k", [("mct", None), ("kpb", 1), ("lpas-dec", None)])
def test_one_machine_is_mm1(policy, k):
    s = grid([[1.0]], [[0.7]])
    res = simulate(s, policy, k=k, reps=10, horizon=300_000.0, seed=5, workers=1, progress=False)
    truth = 1.0 / (1.0 - 0.7)  # M/M/1 number in system at rho = 0.7
    hw = (res.ci[1] - res.ci[0]) / 2
    # within 2 % and 3 half-widths, on a run long enough (half-width <= 1.25 %) for 2 % to mean something
    assert abs(res.mean - truth) <= 0.02 * truth and abs(res.mean - truth) <= 3 * hw, (res.mean, res.ci)
    assert hw <= 0.0125 * truth, (res.mean, res.ci)
    assert res.messages == 0 and not res.unstable


def test_arrival_and_rate_change_counts_are_poisson():
    s = load("4.A")
    runs = [one_run(s, "mct", seed=r, horizon=2_000.0) for r in range(6)]
    lam = per_machine_alpha(s).sum()
    arr = t_interval([r["arrivals"] / 2_000.0 for r in runs])
    # rates are raised by level 1, 1.1 or 1.2 over time: the mean rate lies in [lam, 1.2 lam]
    assert arr.low <= 1.2 * lam and arr.high >= lam
    rc = np.mean([r["rate_change_events"] for r in runs])
    assert abs(rc - 0.035 * 2_000) < 4 * np.sqrt(0.035 * 2_000 / 6)


# ------------------------------------------------------------------ message counts (§4.1-4.2)
def _hand_count(log, cand_sets):
    return int(sum(2 * len(set(cand_sets[i]) - {o}) for i, o in zip(log["i"], log["o"])))


TINY_MU = [[4.0, 2.0, 1.0], [1.0, 3.0, 5.0]]
TINY_A = [[0.8, 0.6, 0.4], [0.5, 0.9, 0.7]]


def test_message_counts_by_hand():
    s = grid(TINY_MU, TINY_A)
    mu = np.asarray(TINY_MU)
    sets = {
        "mct": [[0, 1, 2], [0, 1, 2]],
        "kpb": [list(np.argsort(-mu[i], kind="stable")[:2]) for i in range(2)],
        "lpas-dec": [list(np.flatnonzero(r)) for r in solve_allocation(mu, np.sum(TINY_A, 1)).support],
    }
    for pol, cs in sets.items():
        r = one_run(s, pol, k=2 if pol == "kpb" else None, horizon=300.0, log=100_000)
        assert r["messages"] == _hand_count(r["log"], cs), pol
        if pol == "mct":
            assert r["messages"] == 2 * (3 - 1) * r["arrivals"]  # 2 (M - 1) per task (§4.1)
        # the task went to a machine of its candidate set
        assert all(d in cs[i] for i, d in zip(r["log"]["i"], r["log"]["d"]))


def test_include_local_adds_the_origin():
    s = grid(TINY_MU, TINY_A)
    r0 = one_run(s, "kpb", k=1, horizon=300.0, log=100_000)
    r1 = one_run(s, "kpb", k=1, horizon=300.0, log=100_000, include_local=True)
    best = np.argmax(np.asarray(TINY_MU), axis=1)
    # k = 1: a message pair unless the origin is the fastest machine, whatever include_local says
    for r in (r0, r1):
        assert r["messages"] == 2 * int(sum(o != best[i] for i, o in zip(r["log"]["i"], r["log"]["o"])))
    assert r1["mean_candidates"] > r0["mean_candidates"]


def test_static_views_solve_once():
    s = load("4.A")
    r = one_run(s, "lpas-dec", horizon=500.0, rate_changes=False)
    assert r["lp_solves"] == 1 and r["view_updates"] == 0  # identical exact views never change


# ------------------------------------------------------------------ LPAS_dec = centralized LPAS
def _central_lpas_replay(log, mu, support):
    """Pure-Python centralized LPAS mapper (thesis §2.2.1) replayed on the logged arrivals."""
    N, M = mu.shape
    queues = [deque() for _ in range(M)]
    Q = np.zeros((N, M), int)
    dep = []  # (time, machine)
    out = []
    for t, i, x in zip(log["t"], log["i"], log["x"]):
        while dep and dep[0][0] < t:
            td, j = heapq.heappop(dep)
            c, _ = queues[j].popleft()
            Q[c, j] -= 1
            if queues[j]:
                c2, x2 = queues[j][0]
                heapq.heappush(dep, (td + x2 / mu[c2, j], j))
        best, dest = np.inf, -1
        for j in np.flatnonzero(support[i]):
            e = 1.0 / mu[i, j] + sum(Q[c, j] / mu[c, j] for c in range(N) if Q[c, j] > 0)
            if e < best:
                best, dest = e, j
        out.append(dest)
        queues[dest].append((i, x))
        Q[i, dest] += 1
        if len(queues[dest]) == 1:
            heapq.heappush(dep, (t + x / mu[i, dest], dest))
    return np.asarray(out)


@pytest.mark.parametrize("sid", ["4.A", "4.2-ex"])
def test_lpas_dec_decisions_equal_central_lpas(sid):
    s = load(sid)
    mu = s.mu_effective
    r = one_run(s, "lpas-dec", horizon=400.0, rate_changes=False, log=200_000, tie="lowest")
    support = solve_allocation(mu, per_machine_alpha(s).sum(1)).support
    ref = _central_lpas_replay(r["log"], mu, support)
    assert len(ref) > 100
    assert np.array_equal(ref, r["log"]["d"])


def test_lpas_dec_static_agrees_with_mapping_model():
    """Static, exact views: W of LPAS_dec within CIs of the centralized mapping model's LPAS."""
    from hetsched.sim.mapping import simulate as map_sim

    s = load("4.A")
    dec = simulate(s, "lpas-dec", reps=6, horizon=3_000.0, seed=11, workers=1, progress=False,
                   rate_changes=False)
    cen = map_sim(s.with_(alpha_matrix=None), "lpas", reps=6, horizon=3_000.0, seed=12, workers=1,
                  progress=False)
    for a, b in zip(dec.per_class, cen.per_class):
        lo = max(a["ci"][0], b["W_ci"][0])
        hi = min(a["ci"][1], b["W_ci"][1])
        assert lo <= hi * 1.02, (a, b)


# ------------------------------------------------------------------ views, propagation, reproducibility
def test_instant_propagation_views_never_differ_from_truth():
    s = load("4.A")
    r_inst = one_run(s, "lpas-dec", horizon=2_000.0, propagation="instant")
    r_msg = one_run(s, "lpas-dec", horizon=2_000.0)
    # same arrivals and rate changes (common random numbers), different information
    assert r_inst["arrivals"] == r_msg["arrivals"]
    assert r_inst["rate_change_events"] == r_msg["rate_change_events"]
    assert r_inst["view_updates"] == 0 < r_msg["view_updates"]


def test_reproducible_and_seed_dependent():
    s = load("4.A")
    a = one_run(s, "kpb", k=3, seed=4, horizon=1_000.0)
    b = one_run(s, "kpb", k=3, seed=4, horizon=1_000.0)
    c = one_run(s, "kpb", k=3, seed=5, horizon=1_000.0)
    assert a["W"] == b["W"] and a["messages"] == b["messages"]
    assert a["W"] != c["W"]


def test_inaccuracy_changes_only_estimates():
    s = load("4.A")
    r0 = one_run(s, "lpas-dec", horizon=1_000.0)
    r1 = one_run(s, "lpas-dec", horizon=1_000.0, inaccuracy=0.5)
    assert r0["arrivals"] == r1["arrivals"]  # the actual system is the same
    assert r0["W"] != r1["W"]


def test_mct_is_unstable_on_its_published_counterexample_shape():
    """An overloaded grid (lambda* < 1) is reported unstable, never as a number."""
    s = grid([[1.0, 1.0]], [[1.2, 1.2]])
    out = simulate_command(s, "mct", reps=2, horizon=20_000.0, workers=1, progress=False,
                           max_in_system=2_000)
    assert out["unstable"] and out["mean"] is None


def test_simulate_command_contract():
    s = grid(TINY_MU, TINY_A)
    out = simulate_command(s, "lpas-dec", reps=2, horizon=200.0, workers=1, progress=False)
    for key in ("policy", "metric", "mean", "ci", "per_class", "unstable", "events", "wall_seconds", "messages"):
        assert key in out
    assert out["metric"] == "W" and out["policy"] == "lpas-dec" and len(out["per_class"]) == 2


# ------------------------------------------------------------------ validation
@pytest.mark.parametrize("kw,match", [
    ({"policy": "fcfs"}, "not a decentralized-grid policy"),
    ({"policy": "kpb"}, "needs k"),
    ({"policy": "kpb", "k": 9}, "k must be an integer"),
    ({"policy": "mct", "k": 2}, "applies to policy 'kpb' only"),
    ({"policy": "mct", "horizon": -1.0}, "horizon"),
    ({"policy": "mct", "inaccuracy": 1.5}, "inaccuracy"),
    ({"policy": "mct", "propagation": "gossip"}, "propagation"),
    ({"policy": "mct", "tie": "middle"}, "tie"),
    ({"policy": "mct", "warmup": float("nan")}, "warmup"),
    ({"policy": "mct", "max_in_system": 0}, "max_in_system"),
])
def test_validation_names_the_field(kw, match):
    s = grid(TINY_MU, TINY_A)
    kw = dict(kw)
    pol = kw.pop("policy")
    with pytest.raises(ModelError, match=match):
        prepare(s, pol, **kw)


def test_unknown_cli_option_rejected():
    from hetsched.sim.decentral import simulate_cli

    with pytest.raises(ModelError, match="--dist"):
        simulate_cli(grid(TINY_MU, TINY_A), "mct", reps=1, horizon=10.0, seed=1, workers=1, backend="local",
                     scheduler=None, progress=False, options={"dist": "det"})
    with pytest.raises(ModelError, match="does not apply"):
        simulate(grid(TINY_MU, TINY_A), "mct", reps=1, horizon=10.0, dist="det")


def test_littles_law():
    s = load("4.A")
    for pol, k in (("mct", None), ("kpb", 2), ("lpas-dec", None)):
        r = one_run(s, pol, k=k, horizon=3_000.0, seed=9)
        lam_hat = r["completions"] / 3_000.0
        assert r["Q"] == pytest.approx(lam_hat * r["W"], rel=0.05), pol


def test_table_4_1_ordering_short_runs():
    """§4.3.1 on System 4.A (4 x 5,000, fast enough for every run): LPAS_dec has the least W, MCT the
    largest; KPB and LPAS_dec cut messages by more than 30 % against MCT."""
    s = load("4.A")
    res = {name: simulate(s, pol, k=k, reps=4, horizon=5_000.0, seed=2009, workers=1)
           for name, pol, k in (("MCT", "mct", None), ("KPB2", "kpb", 2), ("KPB3", "kpb", 3),
                                ("LPAS_dec", "lpas-dec", None))}
    w = {n: r.mean for n, r in res.items() if r.success}
    assert min(w, key=w.get) == "LPAS_dec"
    assert res["LPAS_dec"].ci[1] < min(r.ci[0] for n, r in res.items() if n != "LPAS_dec" and r.success)
    assert "MCT" not in w or max(w, key=w.get) == "MCT"
    assert all(1 - r.messages / res["MCT"].messages > 0.3 for n, r in res.items() if n != "MCT")


@pytest.mark.slow
def test_table_4_1_quick_reproduces_the_papers_ordering(tmp_path):
    """§4.3.1: LPAS_dec has the best W; MCT the worst; every KPB/LPAS_dec cuts messages against MCT."""
    from hetsched.experiments import RunOptions, get

    res = get("thesis-table-4.1").run(RunOptions(quick=True, outdir=tmp_path, progress=False, workers=1))
    rows = {r["policy"]: r for r in res.rows}
    w = {p: r["W"] for p, r in rows.items() if r["W"] is not None}
    assert min(w, key=w.get) == "LPAS_dec"
    assert "MCT" not in w or max(w, key=w.get) == "MCT"
    assert all(r["Delta"] > 30 for p, r in rows.items() if p != "MCT")  # percent


def test_ties_random_by_default_lowest_and_highest_on_request():
    """Two identical machines and one class: every arrival to an empty system is a tie between them."""
    s = grid([[1.0, 1.0]], [[0.05, 0.05]])
    dests = {}
    for tie in ("lowest", "highest", "random"):
        kw = {} if tie == "random" else {"tie": tie}
        r = one_run(s, "mct", seed=2, horizon=4_000.0, log=10_000, **kw)
        dests[tie] = np.bincount(r["log"]["d"], minlength=2)
    assert dests["highest"][1] > 5 * max(1, dests["highest"][0])  # the other only when 1 is busy (~10 %)
    assert dests["lowest"][0] > 5 * max(1, dests["lowest"][1])
    n = dests["random"].sum()
    assert abs(dests["random"][0] - n / 2) < 4 * np.sqrt(n / 4)  # binomial(n, 1/2) within 4 sigma
