"""Allocation LP: every lambda*/delta* printed in the thesis, plus certificates.

Truths used: the thesis's printed solutions (lambda* and delta* in §2.2.1,
§2.2.2, §2.3.2, §3.3; only delta* in §4.2, whose lambda* is therefore checked
against the capacity that the printed delta* gives), LP duality (weak-duality
bound from the dual prices, complementary slackness), Proposition 2.2.1 (zero
count of a vertex) and the scaling/permutation invariances of the LP. The
price route for large LPs has its own file, ``test_lp_prices.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hetsched.errors import ModelError
from hetsched.lp import allocation_lp, solve_allocation
from hetsched.scenarios import load

# (scenario, kwargs, lambda* as printed or None where the thesis prints only delta*,
#  delta* as printed; for grouped systems per group)
PRINTED = [
    ("2.A", {}, 1.0204, [[0, 0.5], [1, 0.5]]),
    ("2.B", {}, 1.3333, [[0.8333, 0], [0.1667, 1]]),
    ("2.C1", {}, 1.1146, [[0.6270, 0, 0, 0], [0.3730, 1, 0.0712, 1], [0, 0, 0.9288, 0]]),
    ("2.C2", {}, 2.4242, [[1, 1, 0, 0.5881, 0, 1], [0, 0, 0, 0, 0.3071, 0], [0, 0, 0, 0, 0.6489, 0],
                          [0, 0, 0, 0.2009, 0.0439, 0], [0, 0, 1, 0.2111, 0, 0]]),
    ("2.D", {}, 1.3449, [[0, 0, 0.6907, 0, 1, 0, 0], [0.2830, 0, 0.3093, 0, 0, 0.3861, 1],
                         [0.7170, 0, 0, 1, 0, 0, 0], [0, 1, 0, 0, 0, 0.6139, 0]]),
    ("2.E", {}, 1.0844, [[1, 0, 0.8433, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 0.9151],
                         [0, 1, 0.0754, 0, 0, 1, 0], [0, 0, 0.0813, 1, 1, 0, 0.0849]]),
    ("2.F1", {}, 1.1331, [[0, 1, 0, 0, 0.8946, 0, 0.0285], [1, 0, 1, 0.0911, 0, 0, 0],
                          [0, 0, 0, 0.9089, 0, 0, 0.9715], [0, 0, 0, 0, 0.1054, 1, 0]]),
    ("2.F2", {}, 1.0798, [[0, 1, 0.2704, 0, 1, 0, 1], [1, 0, 0.7282, 0, 0, 0, 0],
                          [0, 0, 0.0014, 1, 0, 0.2626, 0], [0, 0, 0, 0, 0, 0.7374, 0]]),
    ("2.G", {}, 1.0557, [[0, 0, 0, 0, 0, 1, 0.6182], [1, 0.8352, 0, 0, 0, 0, 0],
                         [0, 0.1648, 0.9426, 0, 0, 0, 0.3818], [0, 0, 0.0574, 1, 1, 0, 0]]),
    ("3.3-ex1", {"case": 1}, 1.7647, [[0, 0.3529], [1, 0.6471]]),
    ("3.3-ex1", {"case": 2}, 1.2258, [[0.0806, 0.1], [0.9194, 0]]),
    ("3.3-ex2", {"case": 1}, 2.0513, [[1, 0.0769, 1, 1], [0, 0.5128, 0, 0], [0, 0.4103, 0, 0]]),
    ("3.3-ex2", {"case": 2}, 1.0306, [[1, 0, 0.4194, 0.1266], [0, 0, 0, 0.8734], [0, 0, 0.5806, 0]]),
    ("4.2-ex", {}, None, [[0, 0.5], [1, 0.5]]),  # §4.2 prints delta* only
    ("4.2-ex", {"arrivals": "changed"}, None, [[0, 0.3273], [1, 0.6727]]),
]


@pytest.mark.parametrize("sid,kw,lam,delta", PRINTED, ids=[f"{p[0]}{p[1]}" for p in PRINTED])
def test_printed_solutions(sid, kw, lam, delta):
    s = load(sid, **kw)
    res = allocation_lp(s)
    assert res.success and res.status == 0
    delta = np.array(delta, dtype=float)
    if lam is not None:
        assert res.lam == pytest.approx(lam, abs=6e-5)
    else:
        # lambda* not printed: it must equal the capacity min_i sum_j delta_ij mu_ij / alpha_i
        # of the printed delta* (4 printed digits: each entry within 5e-5)
        printed_cap = ((delta * s.mu).sum(axis=1) / s.alpha_array).min()
        slack = 5e-5 * (s.mu.sum(axis=1) / s.alpha_array).max()
        assert res.lam == pytest.approx(printed_cap, abs=slack)
    got = res.delta_groups if res.delta_groups is not None else res.delta
    np.testing.assert_allclose(got, delta, atol=6e-5)


def test_grouped_systems_report_delta_per_machine():
    s = load("2.C1")
    res = allocation_lp(s)
    assert res.delta.shape == (3, 30)
    # thesis: "the delta* matrix has 44 elements that are equal to zero", 58 possible
    assert res.zeros == 44 and res.target_zeros == 58
    # every member of a group gets the group's fraction
    for g in range(4):
        cols = res.delta[:, s.group_of == g]
        assert np.all(cols == cols[:, :1])
    # an ungrouped vertex reaches the Proposition 2.2.1 zero count and the same lambda*
    flat = allocation_lp(s, grouped=False)
    assert flat.lam == pytest.approx(res.lam, rel=1e-9)
    assert flat.zeros >= flat.target_zeros


def test_2c2_nonzeros_and_discount():
    res = allocation_lp(load("2.C2"))
    assert 150 - res.zeros == 52  # "the number of nonzero elements in the delta* matrix is 52"
    assert round(res.discount(res.ns_lpas())) == 58  # "the discount ... is 58%"


def test_stabilizability_and_utilisation():
    met = allocation_lp(load("2.1-met"))  # alpha = 6, mu = (5, 3): capacity 8
    assert met.lam == pytest.approx(8 / 6)
    assert met.stabilizable and met.utilization == pytest.approx(0.75)
    over = solve_allocation([[5, 3]], [9])  # capacity 8 < 9
    assert over.lam == pytest.approx(8 / 9) and not over.stabilizable


def test_central_solution_is_optimal_and_less_sparse():
    s = load("3.A")
    v = allocation_lp(s, solution="vertex", grouped=False)
    c = allocation_lp(s, solution="central", grouped=False)
    assert c.success
    assert c.lam == pytest.approx(v.lam, rel=1e-6)
    assert c.zeros <= v.zeros


def test_lp_static_probabilities_sum_to_one():
    res = allocation_lp(load("2.D"))
    p = res.p_static
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    assert np.all(p[~res.support] == 0)


def test_bad_arrays_are_model_errors():
    with pytest.raises(ModelError, match="alpha: arrival rates must be finite and > 0, got -1"):
        solve_allocation([[1.0]], [-1.0])
    with pytest.raises(ModelError, match="expected 2 arrival rates"):
        solve_allocation([[1.0], [2.0]], [1.0])
    with pytest.raises(ModelError, match=r"a: availabilities must lie in \[0, 1\], got 1.5"):
        solve_allocation([[1.0]], [1.0], a=[1.5])
    with pytest.raises(ModelError, match="counts: machine counts must be finite and > 0, got nan"):
        solve_allocation([[1.0]], [1.0], counts=[float("nan")])
    with pytest.raises(ModelError, match="method: expected one of"):
        solve_allocation([[1.0]], [1.0], method="dual")
    with pytest.raises(ModelError, match="solution: expected one of"):
        solve_allocation([[1.0]], [1.0], solution="simplex")


# ------------------------------------------------------------------ property tests
def _systems():
    return st.integers(1, 4).flatmap(
        lambda n: st.integers(1, 6).flatmap(
            lambda m: st.tuples(
                st.lists(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.5, 7.0, 10.0]), min_size=m, max_size=m),
                         min_size=n, max_size=n),
                st.lists(st.floats(0.1, 20.0), min_size=n, max_size=n),
                st.lists(st.sampled_from([0.25, 0.5, 1.0]), min_size=m, max_size=m),
            )
        )
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_systems())
def test_random_systems_certificates(sys_):
    mu, alpha, a = (np.array(x, dtype=float) for x in sys_)
    mu[:, 0] = np.where(mu[:, 0] == 0, 1.0, mu[:, 0])  # every class can run somewhere
    res = solve_allocation(mu, alpha, a)
    assert res.success, res.message
    d = res.delta
    # primal feasibility
    assert np.all(d >= 0)
    assert np.all(d.sum(axis=0) <= a + 1e-9)
    assert np.all((d * mu).sum(axis=1) >= res.lam * alpha - 1e-8)
    # weak duality with the reported prices: any w >= 0 bounds lambda* from above
    w = res.w
    assert np.all(w >= -1e-12) and alpha @ w == pytest.approx(1.0)
    bound = (a * (w[:, None] * mu).max(axis=0)).sum()
    assert bound == pytest.approx(res.lam, rel=1e-7, abs=1e-9)
    # complementary slackness: allocated pairs use a best class of the machine
    v = (w[:, None] * mu).max(axis=0)
    i, j = np.nonzero(d > 1e-9)
    assert np.all(w[i] * mu[i, j] >= v[j] - 1e-7 * max(1, v.max()))
    # vertex: Proposition 2.2.1
    assert res.zeros >= res.target_zeros
    # scaling alpha by lambda* gives lambda* = 1
    again = solve_allocation(mu, alpha * res.lam, a)
    assert again.lam == pytest.approx(1.0, rel=1e-7)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000))
def test_permuting_identical_machines_permutes_delta(seed):
    rng = np.random.default_rng(seed)
    N, G = 3, 4
    mu_g = rng.choice([1.0, 2.0, 4.0, 8.0], size=(N, G))
    counts = rng.integers(1, 4, size=G)
    alpha = rng.uniform(1, 10, N)
    mu = np.repeat(mu_g, counts, axis=1)
    res = solve_allocation(mu_g, alpha, counts=counts)  # group-symmetric
    delta = np.repeat(res.delta, counts, axis=1)
    perm = rng.permutation(mu.shape[1])
    res_p = solve_allocation(mu[:, perm], alpha)
    assert res_p.lam == pytest.approx(res.lam, rel=1e-9)
    # the group-symmetric solution, permuted, is optimal for the permuted system
    cap = (delta[:, perm] * mu[:, perm]).sum(axis=1)
    assert np.all(cap >= res.lam * alpha * (1 - 1e-9))
    assert np.all(delta[:, perm].sum(axis=0) <= 1 + 1e-9)


def test_central_solution_of_a_one_class_system():
    # alpha = 6, mu = (5, 3): the optimum is unique (both machines fully used), lambda* = 8/6;
    # HiGHS's IPM gives no answer on this LP with presolve, the retry without it does
    res = allocation_lp(load("2.1-met"), solution="central")
    assert res.status == 0 and res.lam == pytest.approx(8 / 6, rel=1e-9)
    np.testing.assert_allclose(res.delta, [[1.0, 1.0]], atol=1e-7)
