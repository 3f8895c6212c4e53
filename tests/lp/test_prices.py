"""The allocation LP's price route (``method="prices"``, the default for large LPs)
and the LP's statuses.

Truths used: LP duality checked here from scratch (a feasible ``delta`` bounds
``lambda*`` from below by ``min_i sum_j delta_ij mu_ij / alpha_i``, any prices
``w >= 0`` with ``alpha.w = 1`` bound it from above by
``sum_j a_j max_i w_i mu_ij``; equal bounds prove optimality), complementary
slackness, Proposition 2.2.1 (zeros of a vertex), a second implementation
(HiGHS simplex on the whole LP), the aggregated LP of identical machines, and
the LP's scaling invariance ``lambda*(c mu) = c lambda*(mu)``.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hetsched.errors import ModelError, SolverError
from hetsched.lp import AUTO_PAIRS, allocation_lp, solve_allocation
from hetsched.scenarios import load


def check_certificate(res, mu, alpha, a=None, rel=1e-9):
    """Optimality of ``res`` proved from the definitions (no code under test used)."""
    N, M = mu.shape
    a = np.ones(M) if a is None else np.asarray(a, dtype=float)
    d, w = res.delta, res.w
    # primal feasibility and the capacity delta gives each class
    assert np.all(d >= 0)
    assert np.all(d.sum(axis=0) <= a * (1 + 1e-9) + 1e-12)
    lower = ((d * mu).sum(axis=1) / alpha).min()
    # dual feasibility: w >= 0, alpha.w = 1; weak duality bound
    assert np.all(w >= 0) and alpha @ w == pytest.approx(1.0, rel=1e-12)
    upper = (a * (w[:, None] * mu).max(axis=0)).sum()
    assert lower <= upper * (1 + 1e-12)
    assert upper == pytest.approx(lower, rel=rel, abs=1e-300)
    assert res.lam == pytest.approx(lower, rel=rel)
    # complementary slackness: each allocated pair is a best class of its machine
    v = (w[:, None] * mu).max(axis=0)
    i, j = np.nonzero(d > 1e-9)
    assert np.all(w[i] * mu[i, j] >= v[j] * (1 - 1e-7))


def dense_random(N, M, seed):
    rng = np.random.default_rng(seed)
    mu = rng.uniform(0.1, 10, (N, M))
    alpha = rng.uniform(0.5, 2, N) * M / N
    return mu, alpha


# ------------------------------------------------------------------ against HiGHS
@pytest.mark.parametrize("N,M,seed", [(6, 1200, 7), (10, 500, 3), (20, 300, 11)])
def test_price_route_matches_highs_on_dense_random(N, M, seed):
    mu, alpha = dense_random(N, M, seed)
    p = solve_allocation(mu, alpha, method="prices")
    h = solve_allocation(mu, alpha, method="highs")
    assert p.status == 0 and p.solver.startswith("price route:"), p.solver
    assert p.lam == pytest.approx(h.lam, rel=1e-9)
    check_certificate(p, mu, alpha)
    assert p.zeros >= p.target_zeros  # a vertex (Proposition 2.2.1)


def test_auto_takes_the_price_route_above_the_threshold():
    mu, alpha = dense_random(5, AUTO_PAIRS // 5 + 200, 1)
    res = solve_allocation(mu, alpha)
    assert res.status == 0 and res.solver.startswith("price route:")
    check_certificate(res, mu, alpha)
    small = solve_allocation(mu[:, :20], alpha)
    assert small.solver == "HiGHS simplex"


def test_dense_20_by_20000_is_certified():
    mu, alpha = dense_random(20, 20_000, 2009)
    res = solve_allocation(mu, alpha)
    assert res.status == 0 and res.solver.startswith("price route:"), res.message
    check_certificate(res, mu, alpha)
    assert res.zeros >= res.target_zeros


def test_identical_machines_in_large_groups():
    # 3 distinct machines, thousands of copies: every pair of a group is a tie
    G = np.array([[1.0, 2.0, 4.0], [3.0, 1.0, 1.0], [2.0, 2.0, 2.0]])
    counts = np.array([700, 500, 900])
    mu = np.repeat(G, counts, axis=1)
    alpha = np.array([400.0, 700.0, 500.0])
    res = solve_allocation(mu, alpha, method="prices")
    assert res.status == 0 and res.solver.startswith("price route:")
    grouped = solve_allocation(G, alpha, counts=counts, method="highs")  # the aggregated LP
    assert res.lam == pytest.approx(grouped.lam, rel=1e-9)
    check_certificate(res, mu, alpha)
    assert res.zeros >= res.target_zeros


def test_ungrouped_3f_matches_the_grouped_lp():
    s = load("3.F", case=2)
    grp = allocation_lp(s)
    # N x 3,000 with 13 distinct machines: copies are all tied, so auto takes HiGHS IPM + crossover
    flat = allocation_lp(s, grouped=False)
    assert flat.status == 0 and flat.solver.startswith("HiGHS IPM with crossover (chosen by shape: 4 classes, 13 ")
    for res in (flat, allocation_lp(s, grouped=False, method="prices")):
        assert res.lam == pytest.approx(grp.lam, rel=1e-9)
        check_certificate(res, s.mu, s.alpha_array, s.a)
        assert res.zeros >= res.target_zeros  # a vertex (crossover, or the master's basis)


def test_auto_picks_the_route_by_shape():
    """Fewer machines than classes, or mostly copies: HiGHS IPM with crossover (a vertex);
    otherwise the price route; both certified and equal to HiGHS simplex's lambda*."""
    for N, M, route in [(100, 60, "HiGHS IPM with crossover"), (60, 100, "price route:")]:
        mu, alpha = dense_random(N, M, 5)
        res = solve_allocation(mu, alpha)
        assert res.status == 0 and res.solver.startswith(route), res.solver
        check_certificate(res, mu, alpha)
        assert res.zeros >= res.target_zeros
        assert res.lam == pytest.approx(solve_allocation(mu, alpha, method="highs").lam, rel=1e-9)
    from hetsched.lp._solve import prices_pay

    nu = np.repeat(np.array([[1.0, 0.5], [0.2, 1.0]]), 3000, axis=1)  # 2 distinct machines, 6,000 copies
    assert prices_pay(nu, np.ones(6000)) == (False, 2, 6000)
    nu = dense_random(4, 6000, 1)[0]
    assert prices_pay(nu, np.ones(6000)) == (True, 6000, 6000)
    cap = np.ones(6000)
    cap[:10] = 0.0  # machines without capacity do not count
    assert prices_pay(nu, cap) == (True, 5990, 5990)


# ------------------------------------------------------------------ property tests
@st.composite
def degenerate_systems(draw):
    """Small systems with ties, identical machines, zero rows/columns and a = 0."""
    N = draw(st.integers(1, 5))
    G = draw(st.integers(1, 6))
    base = np.array(draw(st.lists(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.5, 7.0]), min_size=G,
                                                     max_size=G), min_size=N, max_size=N)))
    reps = draw(st.lists(st.integers(1, 8), min_size=G, max_size=G))
    mu = np.repeat(base, reps, axis=1)  # identical machines
    M = mu.shape[1]
    a = np.array(draw(st.lists(st.sampled_from([0.0, 0.25, 1.0, 1.0]), min_size=M, max_size=M)))
    alpha = np.array(draw(st.lists(st.sampled_from([0.5, 1.0, 1.0, 3.0, 10.0]), min_size=N, max_size=N)))
    perm = np.random.default_rng(draw(st.integers(0, 2**16))).permutation(M)
    return mu[:, perm], alpha, a[perm]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(degenerate_systems())
def test_price_route_certificates_on_degenerate_systems(sys_):
    mu, alpha, a = sys_
    res = solve_allocation(mu, alpha, a, method="prices")
    if ((mu * a[None, :]).sum(axis=1) == 0).any():
        # a class no machine can run: lambda* = 0 is a status, proved by w = e_i / alpha_i
        assert res.status == 2 and not res.success and res.lam == 0.0
        i = int(np.flatnonzero((mu * a[None, :]).sum(axis=1) == 0)[0])
        assert f"class {i + 1} cannot run on any available machine" in res.message
        assert (a * (res.w[:, None] * mu).max(axis=0)).sum() == 0.0
        with pytest.raises(SolverError, match="cannot run"):
            res.raise_for_status()
        return
    assert res.status == 0, res.message
    assert res.solver.startswith("price route:"), res.solver  # certified without falling back
    check_certificate(res, mu, alpha, a)
    assert res.zeros >= res.target_zeros
    ref = solve_allocation(mu, alpha, a, method="highs")
    assert res.lam == pytest.approx(ref.lam, rel=1e-9)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from([1e-300, 1e-12, 1e12, 1e300]))
def test_scaling_rates_scales_lambda(seed, c):
    mu, alpha = dense_random(4, 60, seed)
    base = solve_allocation(mu, alpha, method="prices")
    scaled = solve_allocation(mu * c, alpha, method="prices")
    assert base.status == 0 and scaled.status == 0
    assert scaled.lam == pytest.approx(c * base.lam, rel=1e-9)
    assert solve_allocation(mu, alpha * c).lam == pytest.approx(base.lam / c, rel=1e-9)


# ------------------------------------------------------------------ statuses
def test_class_without_capacity_is_a_status_on_every_route():
    mu = np.array([[1.0, 2.0, 3.0], [0.0, 5.0, 0.0]])
    for method in ("auto", "highs", "prices"):
        res = solve_allocation(mu, [1.0, 1.0], a=[1.0, 0.0, 1.0], method=method)
        assert res.status == 2 and res.lam == 0.0 and not res.stabilizable
        assert "mu: class 2 cannot run on any available machine" in res.message
    central = solve_allocation([[0.0]], [1.0], solution="central")
    assert central.status == 2


def test_solver_failure_is_a_status(monkeypatch):
    import hetsched.lp._solve as lp

    def fails(rates, alpha, cap, solution, careful, ipm=False):
        return False, None, float("nan"), None, 0, "Not Set"

    monkeypatch.setattr(lp, "highs_full", fails)
    res = solve_allocation([[1.0, 2.0]], [1.0], method="highs")
    assert res.status == 3 and not res.success and np.isnan(res.lam)
    assert "HiGHS returned 'Not Set'" in res.message and "mu/alpha" in res.message
    with pytest.raises(SolverError, match="Not Set"):
        res.raise_for_status()


def test_an_uncertified_price_answer_falls_back_to_highs(monkeypatch):
    import hetsched.lp._solve as lp

    mu, alpha = dense_random(5, 1500, 4)
    good = solve_allocation(mu, alpha, method="highs")

    def suboptimal(nu, cap):  # feasible, not optimal: every machine to its fastest class
        d = np.zeros_like(nu)
        d[nu.argmax(axis=0), np.arange(nu.shape[1])] = cap
        y = np.full(nu.shape[0], 1.0 / nu.shape[0])
        lam = float((d * nu).sum(axis=1).min())
        return d, lam, y, {"newton_steps": 0, "contested": 0, "rounds": 0, "master_iterations": 0}

    monkeypatch.setattr(lp, "price_route", suboptimal)
    res = solve_allocation(mu, alpha, method="prices")
    assert res.status == 0 and res.solver.startswith("HiGHS simplex (fallback: the price route was not certified")
    assert res.lam == pytest.approx(good.lam, rel=1e-12)


def test_classes_on_very_different_scales():
    rng = np.random.default_rng(1)
    mu = rng.uniform(0.1, 10, (4, 1500))
    alpha = np.array([1.0, 1.0, 1.0, 1e6])  # class 4 needs a millionth of the others' share per unit
    p = solve_allocation(mu, alpha, method="prices")
    h = solve_allocation(mu, alpha, method="highs")
    assert p.status == 0 and h.status == 0
    assert p.lam == pytest.approx(h.lam, rel=1e-8)
    check_certificate(p, mu, alpha, rel=1e-8)
    # 1e20 between the classes' scales: beyond double-precision LP; a status naming mu/alpha
    for method in ("highs", "prices"):
        res = solve_allocation([[1e20, 1.0], [1.0, 1e-20]], [1.0, 1.0], method=method)
        assert res.status == 3 and np.isnan(res.lam)
        assert "mu/alpha: max_j mu_ij/alpha_i spans a factor 1e+20 over the classes" in res.message
        with pytest.raises(SolverError, match="mu/alpha"):
            res.raise_for_status()


def test_price_route_refuses_central_solutions():
    with pytest.raises(ModelError, match="method: 'prices' gives vertex solutions only"):
        solve_allocation([[1.0]], [1.0], solution="central", method="prices")


# ------------------------------------------------------------------ compiled kernels
def test_top_two_matches_numpy():
    from hetsched.lp import _kernels as K

    rng = np.random.default_rng(5)
    nu = rng.choice([0.0, 0.5, 1.0, 2.0], size=(4, 500))  # ties and classes that cannot run
    y = rng.uniform(0.1, 1.0, 4)
    best, top, second = np.empty(500, dtype=np.int64), np.empty(500), np.empty(500)
    K.top_two(y, nu, best, top, second)
    sc = np.where(nu > 0, y[:, None] * nu, -1.0)
    srt = np.sort(sc, axis=0)
    np.testing.assert_array_equal(top, srt[-1])
    np.testing.assert_array_equal(second, srt[-2])
    runs = (nu > 0).any(axis=0)
    np.testing.assert_array_equal(best[runs], np.argmax(sc, axis=0)[runs])  # lowest index on ties
    assert np.all(best[~runs] == -1)


def test_smoothed_dual_derivatives_match_finite_differences():
    from hetsched.lp import _kernels as K

    rng = np.random.default_rng(8)
    N, M, tau = 4, 50, 0.05
    nu = rng.uniform(0.1, 1.0, (N, M))
    cap = rng.uniform(0.5, 1.0, M)

    def f(y):  # f_tau written from its definition, with numpy
        s = y[:, None] * nu / tau
        mx = s.max(axis=0)
        return float(cap @ (tau * (mx + np.log(np.exp(s - mx).sum(axis=0)))))

    def kernel(y):
        g, H = np.zeros(N), np.zeros((N, N))
        top = (y[:, None] * nu).max(axis=0)
        val = float(cap @ top) + K.smooth_terms(y, np.ascontiguousarray(nu.T), cap, tau, top, 1e9, g, H)
        return val, g, H

    y = rng.uniform(0.2, 1.0, N)
    val, g, H = kernel(y)
    assert val == pytest.approx(f(y), rel=1e-12)
    h = 1e-6
    E = np.eye(N)
    g_fd = np.array([(f(y + h * E[i]) - f(y - h * E[i])) / (2 * h) for i in range(N)])
    H_fd = np.array([(kernel(y + h * E[i])[1] - kernel(y - h * E[i])[1]) / (2 * h) for i in range(N)])
    np.testing.assert_allclose(g, g_fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(H, H_fd, rtol=1e-5, atol=1e-6)


def test_cli_reports_a_class_without_capacity_in_one_line(tmp_path):
    from typer.testing import CliRunner

    from hetsched.cli import app

    f = tmp_path / "zero.toml"
    f.write_text('id = "zero-cap"\ntitle = "t"\nsource = "test"\nalpha = [1, 1.5]\nmu = [[9, 5], [0, 1]]\n'
                 '[[cases]]\ncase = 1\nnote = "a = [1, 0]"\navailability = [{machines = [2], a = 0.0}]\n')
    for extra in ([], ["--json"]):
        r = CliRunner().invoke(app, ["lp", str(f), "--case", "1", *extra])
        assert r.exit_code == 2
        out = r.output.strip().splitlines()
        assert len(out) == 1 and "class 2 cannot run on any available machine" in out[0]
        assert "Traceback" not in r.output


def test_newton_direction_and_lu_solve_match_numpy():
    """The compiled, single-threaded solves of the Newton step against numpy's LAPACK on the same systems."""
    from hetsched.lp import _kernels as K

    rng = np.random.default_rng(11)
    for N in (1, 3, 40):
        B = rng.normal(size=(N, N + 5))
        H = B @ B.T / N  # positive definite
        g = rng.normal(size=N)
        ridge = 1e-12 * np.trace(H) / N
        kkt = np.zeros((N + 1, N + 1))
        kkt[:N, :N] = H + ridge * np.eye(N)
        kkt[:N, N] = kkt[N, :N] = 1.0
        rhs = np.concatenate([-g, [0.0]])
        want = np.linalg.solve(kkt, rhs)
        dy = np.empty(N)
        assert K.newton_direction(H, g, ridge, dy)
        np.testing.assert_allclose(dy, want[:N], rtol=1e-9, atol=1e-12)
        assert abs(dy.sum()) < 1e-9 * max(1.0, np.abs(dy).max())  # stays on the simplex's plane
        x = np.empty(N + 1)
        assert K.lu_solve(kkt, rhs, x)
        np.testing.assert_allclose(x, want, rtol=1e-9, atol=1e-12)
    # a Hessian with a zero row (a class without near ties): Cholesky refuses, LU solves the KKT system
    H = np.diag([2.0, 1.0, 0.0])
    assert not K.newton_direction(H, np.ones(3), 1e-14, np.empty(3))
    assert not K.lu_solve(np.zeros((2, 2)), np.ones(2), np.empty(2))  # singular: the caller's least squares
