"""SRN solver: closed forms (M/M/1/K, M/M/c/K), certificates, error branches, exports."""

import math
import xml.etree.ElementTree as ET

import numpy as np
import pytest
import scipy.linalg

from hetsched.errors import ModelError
from hetsched.srn import Net, explore, mark, rate, reward, solve, steady_state, to_ctmc, transient
from hetsched.srn.export import to_drn, to_pnml, to_prism


def mmck_closed(lam, mu, c, K):
    p = np.array([(lam / mu) ** n / math.factorial(min(n, c)) / c ** max(n - c, 0) for n in range(K + 1)])
    return p / p.sum()


def mmck_rate_net(lam, mu, c, K, scalar=False):
    net = Net("mmck")
    net.place("Q", 0)
    if scalar:  # a guard written for scalars: exercises the per-marking fall-back
        net.timed("arr", lam, outputs={"Q": 1}, guard=lambda m: m["Q"] < K and True)
    else:
        net.timed("arr", lam, outputs={"Q": 1}, guard=lambda m: m["Q"] < K)
    net.timed("srv", lambda m: mu * np.minimum(m["Q"], c), inputs={"Q": 1})
    return net


def mmck_token_net(lam, mu, c, K):
    """M/M/c/K with servers as tokens and an immediate 'start' (vanishing markings)."""
    net = Net("mmck_tokens")
    net.places(F=K, W=0, S=c, B=0)
    net.timed("arr", lam, inputs={"F": 1}, outputs={"W": 1})
    net.immediate("start", inputs={"W": 1, "S": 1}, outputs={"B": 1})
    net.timed("done", lambda m: mu * m["B"], inputs={"B": 1}, outputs={"S": 1, "F": 1})
    return net


CASES = [(0.5, 1.0, 1, 8), (2.0, 1.0, 3, 10), (5.0, 2.0, 4, 12)]


@pytest.mark.parametrize("lam,mu,c,K", CASES)
@pytest.mark.parametrize("method", ["direct", "iad", "sor"])
def test_mmck_closed_form(lam, mu, c, K, method):
    p = mmck_closed(lam, mu, c, K)
    n = np.arange(K + 1)
    r = solve(mmck_rate_net(lam, mu, c, K), method=method)
    assert r.success
    assert r.expect(mark("Q")) == pytest.approx((n * p).sum(), rel=1e-9)
    assert r.expect(rate("arr")) == pytest.approx(lam * (1 - p[-1]), rel=1e-9)
    # throughput balance and Little's law
    L = r.expect(mark("Q"))
    X = r.expect(rate("srv"))
    assert X == pytest.approx(r.expect(rate("arr")), rel=1e-9)
    W = sum(p[k] * k for k in range(K + 1)) / (lam * (1 - p[-1]))
    assert L / X == pytest.approx(W, rel=1e-9)


@pytest.mark.parametrize("lam,mu,c,K", CASES)
def test_mmck_with_immediate_transitions(lam, mu, c, K):
    p = mmck_closed(lam, mu, c, K)
    n = np.arange(K + 1)
    r = solve(mmck_token_net(lam, mu, c, K))
    assert r.space.n_vanishing > 0
    assert r.expect(mark("W") + mark("B")) == pytest.approx((n * p).sum(), rel=1e-9)
    assert r.expect(mark("B")) == pytest.approx((np.minimum(n, c) * p).sum(), rel=1e-9)
    # token conservation: F + W + B = K and S + B = c in every tangible marking
    M = r.ctmc.markings
    idx = {p_: j for j, p_ in enumerate(r.space.net.place_names)}
    assert np.all(M[:, idx["F"]] + M[:, idx["W"]] + M[:, idx["B"]] == K)
    assert np.all(M[:, idx["S"]] + M[:, idx["B"]] == c)


def test_scalar_fallback_gives_same_answer():
    a = solve(mmck_rate_net(2.0, 1.0, 3, 10))
    b = solve(mmck_rate_net(2.0, 1.0, 3, 10, scalar=True))
    assert a.expect(mark("Q")) == pytest.approx(b.expect(mark("Q")), rel=1e-12)


def test_marking_dependent_arc_catastrophe():
    """Arrivals up to K, a catastrophe removes all tokens (input multiplicity #P)."""
    lam, gam, K = 1.5, 0.5, 6
    net = Net("cat")
    net.place("P", 0)
    net.timed("arr", lam, outputs={"P": 1}, inhibitors={"P": K})
    net.timed("clear", gam, inputs={"P": lambda m: m["P"]}, guard=lambda m: m["P"] > 0)
    r = solve(net)
    rr = lam / (lam + gam)
    p = np.array([rr ** n for n in range(K)] + [rr ** (K - 1) * lam / gam])
    p /= p.sum()
    assert r.expect(mark("P")) == pytest.approx((np.arange(K + 1) * p).sum(), rel=1e-10)
    assert r.expect(reward(lambda m: m["P"] == K)) == pytest.approx(p[-1], rel=1e-10)


def test_immediate_priorities_and_weights():
    """Two immediate transitions race with weights 1:3; a higher-priority one pre-empts."""
    net = Net("w")
    net.places(A=1, B=0, C=0)
    net.immediate("toB", 1.0, inputs={"A": 1}, outputs={"B": 1})
    net.immediate("toC", 3.0, inputs={"A": 1}, outputs={"C": 1})
    net.timed("backB", 2.0, inputs={"B": 1}, outputs={"A": 1})
    net.timed("backC", 2.0, inputs={"C": 1}, outputs={"A": 1})
    r = solve(net)
    assert r.expect(mark("C")) == pytest.approx(0.75, rel=1e-12)
    net2 = Net("w2")
    net2.places(A=1, B=0, C=0)
    net2.immediate("toB", 1.0, priority=2, inputs={"A": 1}, outputs={"B": 1})
    net2.immediate("toC", 3.0, inputs={"A": 1}, outputs={"C": 1})
    net2.timed("backB", 2.0, inputs={"B": 1}, outputs={"A": 1})
    net2.timed("backC", 2.0, inputs={"C": 1}, outputs={"A": 1})
    assert solve(net2).expect(mark("B")) == pytest.approx(1.0)


def test_transient_matches_expm():
    net = mmck_rate_net(2.0, 1.0, 2, 6)
    c = to_ctmc(explore(net))
    t = [0.0, 0.3, 2.0, 7.5]
    P = transient(c, t)
    for ti, row in zip(t, P):
        ref = c.p0 @ scipy.linalg.expm(c.Q.toarray() * ti)
        np.testing.assert_allclose(row, ref, atol=1e-10)


def test_unbounded_net_hits_state_limit():
    net = Net("unb")
    net.place("P", 0)
    net.timed("grow", 1.0, outputs={"P": 1})
    with pytest.raises(ModelError, match=r"max_states=500 .*'P'.*unbounded"):
        explore(net, max_states=500, detect_unbounded=False)


def test_unboundedness_is_proved_early_and_names_the_place():
    """A cycle that returns with one more token in Q (and A back to 1): proved unbounded at 64 markings."""
    net = Net("leak")
    net.places(A=1, B=0, Q=0)
    net.timed("go", 2.0, inputs={"A": 1}, outputs={"B": 1})
    net.immediate("back", inputs={"B": 1}, outputs={"A": 1, "Q": 1})
    net.timed("other", lambda m: 1.0 + m["A"], inputs={"A": 1}, outputs={"A": 1})  # reads A, not Q
    with pytest.raises(ModelError, match=r"net 'leak' is unbounded: place 'Q' grows .*(go, back|back, go) adds.*'Q' \+1.*"
                                         r"found after \d+ markings"):
        explore(net, max_states=10**6)


@pytest.mark.parametrize("limit", [
    dict(inhibitors={"P": 700}),                        # an inhibitor arc stops the growth
    dict(guard=lambda m: m["P"] < 700),                 # so does a guard
    dict(rate=lambda m: np.where(m["P"] < 700, 1.0, 0.0)),   # and a rate that drops to zero
])
def test_no_false_unboundedness_proof(limit):
    """Covering markings abound in these bounded nets, but what reads P can stop the growth: no proof,
    the exploration runs to the end (701 markings)."""
    net = Net("bounded")
    net.place("P", 0)
    net.timed("grow", limit.pop("rate", 1.0), outputs={"P": 1}, **limit)
    net.timed("drain", 1.0, inputs={"P": 1})
    assert explore(net).n_states == 701


def test_capacity_and_token_bound():
    net = Net("cap")
    net.place("P", 0, capacity=5)
    net.timed("grow", 1.0, outputs={"P": 2})
    net.timed("drain", 1.0, inputs={"P": 1})
    sp = explore(net)
    assert sp.markings.max() == 5 and sp.n_states == 6   # grow (+2) is disabled at P = 4 and 5
    with pytest.raises(ModelError, match=r"max_tokens: place 'P' reaches 4 tokens, more than its bound 3"):
        explore(net, max_tokens=3)
    with pytest.raises(ModelError, match="capacity must be"):
        Net("x").place("P", 3, capacity=2)


def test_vanishing_loop_is_reported():
    net = Net("trap")
    net.places(A=1, B=0, C=0)
    net.timed("go", 1.0, inputs={"C": 1}, outputs={"A": 1})
    net.immediate("ab", inputs={"A": 1}, outputs={"B": 1})
    net.immediate("ba", inputs={"B": 1}, outputs={"A": 1})
    with pytest.raises(ModelError, match="timeless trap"):
        to_ctmc(explore(net))


def test_absorbing_state_in_steady_state():
    net = Net("abs")
    net.places(A=1, B=0)
    net.timed("die", 1.0, inputs={"A": 1}, outputs={"B": 1})
    c = to_ctmc(explore(net))
    st = steady_state(c)
    assert st.success and st.absorbing == 1 and st.pi[c.markings[:, 1].argmax()] == 1.0
    # transient analysis agrees at a long horizon
    assert transient(c, [50.0])[0][c.markings[:, 1].argmax()] == pytest.approx(1.0)


def test_long_run_distribution_with_several_closed_classes():
    """From A the chain ends in absorbing B (rate 2) or in the class {C, D} (rate 1), where it spends
    3/4 of the time in C: long run 2/3, 1/3 * 3/4, 1/3 * 1/4 (closed form)."""
    net = Net("two")
    net.places(A=1, B=0, C=0, D=0)
    net.timed("toB", 2.0, inputs={"A": 1}, outputs={"B": 1})
    net.timed("toC", 1.0, inputs={"A": 1}, outputs={"C": 1})
    net.timed("cd", 1.0, inputs={"C": 1}, outputs={"D": 1})
    net.timed("dc", 3.0, inputs={"D": 1}, outputs={"C": 1})
    r = solve(net)
    assert r.success and r.steady.closed_classes == 2 and "2 closed classes" in r.message
    for p, v in (("A", 0.0), ("B", 2 / 3), ("C", 0.25), ("D", 1 / 12)):
        assert r.tokens[p] == pytest.approx(v, abs=1e-15)
    assert r.throughputs["cd"] == pytest.approx(r.throughputs["dc"]) == pytest.approx(1 / 12 * 3)


def test_guard_that_raises_names_the_transition():
    net = Net("bad")
    net.place("P", 1)

    def guard(m):
        raise KeyError("boom")

    net.timed("t", 1.0, inputs={"P": 1}, outputs={"P": 1}, guard=guard)
    with pytest.raises(ModelError, match=r"guard of transition 't' raised KeyError"):
        explore(net)


@pytest.mark.parametrize("bad,match", [
    (lambda n: n.place("P", -1), "initial marking"),
    (lambda n: n.timed("t", -1.0), "rate must be"),
    (lambda n: n.timed("t", 1.0, inputs={"X": 1}), "unknown place 'X'"),
    (lambda n: n.immediate("t", priority=-1), "priority"),
    (lambda n: n.timed("t", 1.0, servers=0), "servers"),
    (lambda n: n.place("", 0), "name"),
    (lambda n: n.timed("t", 1.0, inputs={"Q": 0}), "multiplicity"),
])
def test_validation_messages(bad, match):
    net = Net("v")
    net.place("Q", 0)
    with pytest.raises(ModelError, match=match):
        bad(net)


def test_exports(tmp_path):
    net = mmck_token_net(2.0, 1.0, 2, 4)
    xml = to_pnml(net, tmp_path / "n.pnml")
    root = ET.fromstring(xml.split("?>", 1)[1])
    ns = "{http://www.pnml.org/version-2009/grammar/pnml}"
    assert len(root.findall(f".//{ns}place")) == 4
    assert len(root.findall(f".//{ns}transition")) == 3
    r = solve(net)
    drn = to_drn(r.ctmc, tmp_path / "m.drn", rewards={"busy": mark("B")})
    assert "@type: CTMC" in drn.read_text()
    files = to_prism(r.ctmc, tmp_path / "m", rewards={"busy": mark("B")})
    tra = files[0].read_text().splitlines()
    n, m = map(int, tra[0].split())
    assert n == r.ctmc.n and m == len(tra) - 1


def test_kernels_match_their_python_versions():
    """The compiled kernels against their pure-Python bodies (NUMBA_DISABLE_JIT check)."""
    from hetsched.srn import _kernels as K

    rng = np.random.default_rng(1)
    R = rng.random((6, 6))
    np.fill_diagonal(R, 0.0)
    Q = R - np.diag(R.sum(1))
    a, b = K.gth(Q.copy()), K.gth.py_func(Q.copy())
    np.testing.assert_allclose(a, b, rtol=1e-12)
    np.testing.assert_allclose(a @ Q, 0.0, atol=1e-12)
    cand = rng.integers(0, 3, size=(50, 4)).astype(np.int32)
    out = []
    for f in (K.insert_rows, K.insert_rows.py_func):
        store = np.empty((64, 4), np.int32)
        table = np.full(256, -1, np.int64)
        idx = np.empty(50, np.int64)
        n = f(table, store, 0, cand, idx)
        assert np.array_equal(store[idx], cand)
        out.append((n, idx.copy()))
    assert out[0][0] == out[1][0] == np.unique(cand, axis=0).shape[0]
    assert np.array_equal(out[0][1], out[1][1])


def test_assemble_generator_against_scipy():
    """The compiled generator assembly equals scipy's COO -> CSR (duplicates summed, self-rates dropped)."""
    import scipy.sparse as sp

    from hetsched.srn import _kernels as K

    rng = np.random.default_rng(7)
    n, m = 40, 300
    rows, cols = rng.integers(0, n, m), rng.integers(0, n, m)
    rows[:5] = 3  # state 3 gets several rates, states never drawn stay absorbing
    vals = rng.random(m) + 0.1
    R = sp.coo_matrix((vals, (rows, cols)), shape=(n, n)).tocsr()
    R.setdiag(0.0)
    R.eliminate_zeros()
    expect = (R - sp.diags(np.asarray(R.sum(axis=1)).ravel())).toarray()
    for f in (K.assemble_generator, K.assemble_generator.py_func):
        ip, ind, d = np.empty(n + 1, np.int32), np.empty(m + n, np.int32), np.empty(m + n)
        nnz = f(n, rows, cols, vals, ip, ind, d)
        Q = sp.csr_matrix((d[:nnz], ind[:nnz], ip), shape=(n, n))
        np.testing.assert_allclose(Q.toarray(), expect, rtol=1e-14, atol=1e-15)
        assert np.all(d[:nnz] != 0)  # no explicit zeros
        for i in range(n):  # columns sorted in every row
            assert np.all(np.diff(ind[ip[i]:ip[i + 1]]) > 0)


def test_iad_with_several_partitions_equals_direct_solution():
    """Multi-partition IAD (one partition per queue-like place) against sparse LU on a 3-D gang GSPN."""
    from hetsched.srn.storm import GangGSPN, gang_gspn

    c = to_ctmc(explore(gang_gspn(GangGSPN(servers=10, capacity=12, gang_size=3))))
    a = steady_state(c, method="direct")
    b = steady_state(c, method="iad")
    assert b.success and len(b.extra["aggregates"]) >= 2 and b.iterations < 200
    np.testing.assert_allclose(b.pi, a.pi, rtol=1e-8, atol=1e-14)


def test_memory_estimate_refuses_a_state_space_that_cannot_fit(monkeypatch):
    import hetsched._memory as mem
    from hetsched.srn.reach import reach_memory_bytes

    net = mmck_rate_net(1.0, 2.0, 1, 5000)
    est = reach_memory_bytes(net, 5001)
    space = explore(net)
    used = space.markings.nbytes + space.src.nbytes + space.dst.nbytes + space.trans.nbytes + space.value.nbytes
    assert used <= est
    with pytest.raises(ModelError, match="max_states"):
        reach_memory_bytes(net, 0)
    # on a machine with 64 KB free the exploration stops with one line before growing its arrays
    monkeypatch.setattr(mem, "available_bytes", lambda: 64 * 1024)
    with pytest.raises(ModelError, match=r"state space of net 'mmck' \(reached \d+ markings.*needs about"):
        explore(net)


def test_non_convergence_is_a_status_not_an_exception():
    from hetsched.srn.storm import GangGSPN, gang_gspn

    c = to_ctmc(explore(gang_gspn(GangGSPN(servers=10, capacity=12, gang_size=3))))
    for method in ("iad", "sor"):
        st = steady_state(c, method=method, maxiter=1)
        assert not st.success and st.status == 1 and "not converged" in st.message
