"""The exact optimal routing (``hs.optimal_routing``, compare's policy ``optimal``) against independent truths.

Truths: Winston (1977) — on identical machines with one class the optimal routing
is join-the-shortest-queue, whose value the project's simulator measures
independently (MCT is JSQ there); the switching-curve structure of two
heterogeneous servers (Hajek 1984; Lin and Kumar 1984: route to the fast machine
up to a threshold that grows with the other queue); the simulated value of the
optimal table (by the project's simulator, or by an independent event loop over
class sequences written here); the simulated values of the heuristics (no
heuristic can be below the optimum beyond its CI); exact counts of the states.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import hetsched as hs
from hetsched.errors import ModelError
from hetsched.optimal.model import local_states, routing_space, state_count
from helpers import tiny_system


def identical():
    return hs.System.from_arrays(alpha=[1.2], mu=[[1.0, 1.0]])


def two_speeds():  # the thesis' MET example (2.1-met): one class, machines of rates 5 and 3, load 0.75
    return hs.System.from_arrays(alpha=[6.0], mu=[[5.0, 3.0]])


def two_by_two():  # class-dependent rates: the state is the class sequence at each machine
    return tiny_system(mu=((2.0, 1.0), (1.0, 3.0)), alpha=(1.0, 1.0))


@pytest.fixture(scope="module")
def jsq():
    return hs.optimal_routing(identical())


@pytest.fixture(scope="module")
def curve():
    return hs.optimal_routing(two_speeds())


@pytest.fixture(scope="module")
def seq():
    return hs.optimal_routing(two_by_two(), load=0.4)


def scaled(res):
    """The system at the load solved (the arrival rates rescaled)."""
    return hs.System.from_arrays(alpha=res.alpha, mu=res.mu)


# --------------------------------------------------------------------------- state space
def test_state_counts_are_exact():
    """Sequences of length <= B over a symbols: sum a^k; counts: B + 1; the model holds that many states."""
    assert local_states(1, 5) == 6 and local_states(2, 3) == 1 + 2 + 4 + 8 and local_states(3, 2) == 13
    mu = np.array([[2.0, 1.0], [1.0, 3.0]])
    sp = routing_space([1.0, 1.0], mu, 3)
    assert sp.n_states == 15 * 15 == state_count(mu, 3)[0]
    # machine-only rates (mu_ij = mu_j): one symbol per machine, counts are exact
    assert routing_space([1.0, 2.0], np.array([[2.0, 1.0], [2.0, 1.0]]), 4).counts_suffice
    # encode/decode round trip of a sequence state
    s = sp.encode([[1, 0], [1]])
    assert sp.decode(s) == [[0, 1], [1]]  # symbols: rates sorted (class 2 on m1 = rate 1 = symbol 0)


def test_too_large_is_refused_with_its_size_before_building():
    with pytest.raises(ModelError, match=r"2\.A: at load 0\.98 .* about 9e\+102 states .* max_states=300,000"):
        hs.optimal_routing("2.A")
    with pytest.raises(ModelError, match=r"225 states at buffer B=3 .* max_states=100"):
        hs.optimal_routing(two_by_two(), buffer=3, load=0.4, max_states=100)
    assert hs.optimal.routing_size("2.A", 3)["states"] == 225


@pytest.mark.parametrize("kw, match", [({"buffer": 0}, "buffer"), ({"tol": 2.0}, "tol"), ({"load": -1.0}, "load"),
                                       ({"penalty": -1.0}, "penalty"), ({"max_states": 0}, "max_states")])
def test_bad_options_are_one_line(kw, match):
    with pytest.raises(ModelError, match=match):
        hs.optimal_routing(identical(), **kw)


def test_unstable_is_reported_as_unstable():
    r = hs.optimal_routing(identical(), load=1.25)
    assert r.status == 1 and not r.success and math.isnan(r.value) and "unstable" in r.message
    with pytest.raises(ModelError, match="unstable"):
        hs.optimal.exact_answer(hs.System.from_arrays(alpha=[2.5], mu=[[1.0, 1.0]]))


# --------------------------------------------------------------------------- truths
def test_identical_machines_optimal_is_jsq(jsq):
    """Winston 1977: the optimal table joins a shortest queue wherever the queues differ."""
    assert jsq.status == 0 and jsq.counts_suffice
    t = jsq.table(1)
    B = t.shape[0] - 1
    n1, n2 = np.meshgrid(np.arange(B + 1), np.arange(B + 1), indexing="ij")
    inside = (n1 < B) | (n2 < B)
    shorter = np.where(n1 < n2, 1, 2)
    differ = inside & (n1 != n2)
    assert np.array_equal(t[differ], shorter[differ])
    # ... and its exact value is MCT's on the same chain (MCT is JSQ on identical machines)
    assert jsq.mct_value == pytest.approx(jsq.value, rel=1e-7)


def test_identical_machines_exact_value_within_simulated_jsq_ci(jsq):
    sim = hs.simulate(identical(), "mct", reps=10, horizon=20_000, seed=11, workers=1)
    lo, hi = sim.ci
    assert lo <= jsq.value <= hi, (jsq.value, sim.ci)
    assert hi - lo < 0.05 * jsq.value  # the check has power


def test_two_heterogeneous_machines_switching_curve(curve):
    """Route to machine 1 (rate 5) iff n1 <= T(n2), T nondecreasing; the table is not MCT's."""
    assert curve.status == 0
    t = curve.table(1)
    B = t.shape[0] - 1
    thresholds = []
    for n2 in range(B):  # columns where machine 2 has room
        col = t[:B, n2]
        ones = np.flatnonzero(col == 1)
        assert np.array_equal(ones, np.arange(ones.size)), f"n2={n2}: machine 1 not a prefix of n1: {col}"
        thresholds.append(ones.size)
    assert all(a <= b for a, b in zip(thresholds, thresholds[1:])), thresholds
    assert curve.differs_from_mct > 0.05 and curve.mct_value > curve.value


@pytest.mark.slow
def test_simulated_value_of_the_optimal_table_within_exact(curve):
    """The table as a compiled user mapping policy (about 30 s to compile), simulated without truncation by the
    project's simulator."""
    sim = hs.simulate(two_speeds(), curve.mapping_policy(), reps=10, horizon=10_000, seed=5, workers=1)
    lo, hi = sim.ci
    assert lo <= curve.value <= hi, (curve.value, sim.ci)
    mct = hs.simulate(two_speeds(), "mct", reps=10, horizon=10_000, seed=5, workers=1)
    assert mct.ci[1] >= curve.value  # no heuristic beats the optimum beyond its CI


def _simulate_sequences(res, alpha, mu, events: int, seed: int) -> float:
    """An independent event loop over class sequences (Python lists), routed by ``res.route``; time-average Q."""
    rng = np.random.default_rng(seed)
    expo, unif = rng.exponential(size=events), rng.random(size=(events, 2))
    M = mu.shape[1]
    queues: list[list[int]] = [[] for _ in range(M)]
    lam = float(np.sum(alpha))
    cum = np.cumsum(alpha) / lam
    area = t = 0.0
    cache: dict = {}
    for k in range(events):
        rates = [lam] + [float(mu[q[0] - 1, j]) if q else 0.0 for j, q in enumerate(queues)]
        total = sum(rates)
        dt = expo[k] / total
        area += dt * sum(len(q) for q in queues)
        t += dt
        x, e = unif[k, 0] * total, 0
        while x >= rates[e] and e < M:
            x -= rates[e]
            e += 1
        if e == 0:
            c = int(np.searchsorted(cum, unif[k, 1], side="right")) + 1
            key = (c, tuple(tuple(q) for q in queues))
            if key not in cache:
                cache[key] = res.route(c, queues)
            j = cache[key]
            if j > 0:
                queues[j - 1].append(c)
        else:
            queues[e - 1].pop(0)
    return area / t


def _ci(vals):
    m = float(np.mean(vals))
    h = {4: 3.182, 8: 2.365}[len(vals)] * float(np.std(vals, ddof=1)) / math.sqrt(len(vals))
    return m - h, m + h


def test_counts_table_simulated_by_an_independent_loop(curve):
    """The optimal table of 2.1-met's system, simulated by the event loop above: its CI covers the exact value."""
    alpha, mu = np.array(curve.alpha), np.array(curve.mu)
    lo, hi = _ci([_simulate_sequences(curve, alpha, mu, 25_000, seed) for seed in range(4)])
    assert lo <= curve.value <= hi, (curve.value, lo, hi)


def test_sequences_table_simulated_by_an_independent_loop(seq):
    """Class-dependent rates (sequence states): the optimal table simulated by the event loop over class
    sequences lies within its CI of the exact value."""
    assert seq.status == 0 and not seq.counts_suffice
    alpha, mu = np.array(seq.alpha), np.array(seq.mu)
    lo, hi = _ci([_simulate_sequences(seq, alpha, mu, 25_000, seed) for seed in range(4)])
    assert lo <= seq.value <= hi, (seq.value, lo, hi)


@pytest.mark.slow
def test_two_by_two_every_heuristic_above_the_optimum(seq):
    """The exact optimum is below the CI of every heuristic of the mapping model (compare, 8 policies)."""
    heur = ["mct", "met", "kpb", "lpas", "lpas-2k", "guided-lpas", "guided-lpas-2k", "lp-static"]
    r = hs.compare(scaled(seq), ["optimal", *heur], reps=10, horizon=10_000, seed=2, workers=1, k=1)
    assert r.policy("optimal").exact == pytest.approx(seq.value)
    for name in heur:
        p = r.policy(name)
        assert not p.stable or p.ci[0] > seq.value, name
    assert r.ranking[0] == ["optimal"]  # ranked first, alone


# --------------------------------------------------------------------------- truncation, output
def test_truncation_is_reported(curve):
    levels = curve.truncation
    assert len(levels) >= 3 and [lv["buffer"] for lv in levels] == list(range(levels[0]["buffer"],
                                                                              levels[-1]["buffer"] + 1))
    assert curve.boundary_mass < curve.tol and curve.error < curve.tol
    # the boundary mass falls as the buffer grows
    assert all(b["boundary_mass"] < a["boundary_mass"] for a, b in zip(levels, levels[1:]))
    # a buffer too small is reported, with the value untrusted
    small = hs.optimal_routing(two_speeds(), buffer=4, mct=False)
    assert small.status == 2 and math.isnan(small.value) and small.value_untrusted > 0
    assert "truncation not negligible" in small.message and small.as_dict()["value"] is None


def test_output_and_route(curve):
    text = str(curve)
    assert "class 1: rows n1" in text and "boundary mass" in text
    d = curve.as_dict()
    assert d["status"] == 0 and d["policy"]["class 1"][0][0] == 1
    assert curve.route(1, [[], []]) == 1  # an empty system: the fast machine
    assert curve.route(1, [[1] * 5, []]) == 2
    with pytest.raises(ModelError, match="cls"):
        curve.route(2, [[], []])
    f = curve.to_frame()
    assert {"Q", "W", "boundary_mass"} <= set(f["measure"])


def test_cli_optimal_and_compare_gap():
    from typer.testing import CliRunner

    from hetsched.cli import app

    run = CliRunner()
    out = run.invoke(app, ["optimal", "2.1-met"])
    assert out.exit_code == 0, out.output
    assert "Q (mean number in system)   3.6027" in out.output
    bad = run.invoke(app, ["optimal", "2.A"])
    assert bad.exit_code == 2 and "about 9e+102 states" in bad.output
    size = run.invoke(app, ["optimal", "2.B", "--size"])
    assert size.exit_code == 0 and "67,092,481 states" in size.output
    js = run.invoke(app, ["optimal", "2.1-met", "--buffer", "4", "--json"])
    assert js.exit_code == 1  # a buffer of 4 is not negligible at load 0.75: untrusted, exit 1
    import json

    d = json.loads(js.output)
    assert d["status"] == 2 and d["value"] is None and d["value_untrusted"] > 0 and d["buffer"] == 4
    cmp = run.invoke(app, ["compare", "2.1-met", "--policy", "optimal", "--policy", "mct", "--reps", "2",
                           "--horizon", "500", "--workers", "1", "--no-progress"])
    assert cmp.exit_code == 0, cmp.output
    assert "3.603  [3.603, 3.603]" in cmp.output and "(exact)" in cmp.output


def test_compare_shows_optimal_exact_and_gaps(seq):
    """compare: optimal with its exact value, ranked first alone; the heuristics' CIs lie above it (MCT is about
    7 % worse on this 2 x 2 system at load 0.4); the gap is printed absolute and relative."""
    r = hs.compare(scaled(seq), ["optimal", "mct", "lpas"], reps=10, horizon=10_000, seed=4, workers=1)
    opt = r.policy("optimal")
    assert opt.exact == pytest.approx(seq.value) and not opt.simulated
    for name in ("mct", "lpas"):
        p = r.policy(name)
        assert p.ci[0] > opt.exact and p.rank > opt.rank
    assert r.ranking[0] == ["optimal"]
    text = str(r)
    assert "(exact)" in text and "gap to the exact optimal" in text and "exact: sequences at buffer B=7" in text
    mct = r.policy("mct")
    assert f"({100 * (mct.mean - opt.exact) / opt.exact:+.2f}%)" in text


def test_compare_refuses_the_exact_value_on_a_trace():
    """An exact value assumes Poisson arrivals: compare with a trace replay refuses it in one line."""
    from hetsched.lp import allocation_lp
    from hetsched.traces import TraceWorkload

    s = two_speeds()
    lp = allocation_lp(s)
    n = 50
    tw = TraceWorkload(arrival=np.arange(float(n)), size=np.ones(n), klass=np.zeros(n, np.int64), job_id=np.arange(n),
                       rule="given", rule_detail="", alpha=np.array([1.0]), lp_lambda=float(lp.lam),
                       load=1 / float(lp.lam), time_scale=1.0, target_load=None, dropped={}, lp=lp)
    with pytest.raises(ModelError, match="policy 'optimal': an exact value assumes the model's Poisson arrivals"):
        hs.compare(s, ["optimal", "mct"], trace=tw, reps=2, workers=1)
