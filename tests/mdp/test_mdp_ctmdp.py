"""General CTMDP solver: closed forms, certificates, cross-solver and pymdptoolbox agreement."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from hetsched.errors import ModelError
from hetsched.mdp.ctmdp import (
    CTMDP,
    average_policy_iteration,
    build_ctmdp,
    evaluate_policy,
    from_mdptoolbox,
    modified_policy_iteration,
    policy_iteration,
    relative_value_iteration,
    stationary_distribution,
    to_mdptoolbox,
    value_iteration,
)


def mm1k(lam: float, mu: float, K: int) -> CTMDP:
    """Uncontrolled M/M/1/K with cost rate = number in system (one action)."""
    return build_ctmdp(
        [0],
        lambda n: [0],
        lambda n, a: [(lam, n + 1)] * (n < K) + [(mu, n - 1)] * (n > 0),
        lambda n, a: float(n),
    )


def admission(K: int = 12, lam: float = 1.0, mu: float = 1.2, r: float = 4.0) -> CTMDP:
    """Controlled queue: action 1 = admit arrivals (cost rate n), 0 = reject at cost r per rejected job."""
    return build_ctmdp(
        [0],
        lambda n: [0, 1] if n < K else [0],
        lambda n, a: ([(lam, n + 1)] if a == 1 else []) + ([(mu, n - 1)] if n > 0 else []),
        lambda n, a: float(n) + (0.0 if a == 1 else r * lam),
    )


def random_ctmdp(S: int, A: int, seed: int) -> CTMDP:
    rng = np.random.default_rng(seed)
    rates = [sp.random(S, S, density=0.3, random_state=rng, format="csr") * 3 for _ in range(A)]
    cost = rng.uniform(0, 10, (S, A))
    adm = rng.random((S, A)) < 0.7
    adm[:, 0] = True
    return CTMDP.from_actions(rates, cost, adm)


def test_mm1k_stationary_matches_closed_form() -> None:
    lam, mu, K = 0.8, 1.0, 20
    m = mm1k(lam, mu, K)
    res = evaluate_policy(m, np.zeros(m.n_states, dtype=np.int64))
    rho = lam / mu
    pi = rho ** np.arange(K + 1)
    pi /= pi.sum()
    order = np.array(m.labels)
    assert np.allclose(res["pi"], pi[order], atol=1e-12)
    assert res["gain"] == pytest.approx(float(np.arange(K + 1) @ pi), rel=1e-10)


def test_discounted_value_of_a_constant_cost_is_c_over_beta() -> None:
    m = build_ctmdp([0], lambda s: [0], lambda s, a: [(2.0, 1 - s)], lambda s, a: 3.0)
    r = value_iteration(m, beta=0.1)
    assert r.success and np.allclose(r.values, 30.0, rtol=1e-8)


@pytest.mark.parametrize("solver", ["vi-gs", "vi-jacobi", "vi-plain", "pi", "mpi"])
def test_discounted_solvers_agree_and_certify(solver: str) -> None:
    m = random_ctmdp(40, 3, seed=1)
    beta = 0.1
    ref = policy_iteration(m, beta, eps=1e-9)
    assert ref.success and ref.error_bound < 1e-9
    if solver == "vi-gs":
        r = value_iteration(m, beta, eps=1e-8)
    elif solver == "vi-jacobi":
        r = value_iteration(m, beta, eps=1e-8, method="jacobi")
    elif solver == "vi-plain":
        r = value_iteration(m, beta, eps=1e-8, anderson=0)
    elif solver == "pi":
        r = policy_iteration(m, beta)
    else:
        r = modified_policy_iteration(m, beta, eps=1e-8)
    assert r.success, r.message
    # certificate: the bounds bracket J* and the policy's own value is within error_bound
    jstar = ref.values
    assert np.all(r.lower <= jstar + 1e-7) and np.all(jstar <= r.upper + 1e-7)
    jpol = evaluate_policy(m, r.policy, beta=beta)["values"]
    assert np.all(jpol - jstar <= r.error_bound + 1e-7)
    assert np.array_equal(r.policy, ref.policy)


def test_value_iteration_reports_non_convergence() -> None:
    m = random_ctmdp(30, 2, seed=2)
    r = value_iteration(m, 0.01, eps=1e-12, max_iter=3, anderson=0, method="jacobi")
    assert not r.success and r.status == 1 and "not converged" in r.message


def test_admission_control_threshold_and_average_cost() -> None:
    m = admission()
    pi = average_policy_iteration(m)
    rvi = relative_value_iteration(m, eps=1e-9)
    assert pi.success and rvi.success
    assert rvi.lower - 1e-8 <= pi.gain <= rvi.upper + 1e-8
    assert np.array_equal(pi.policy, rvi.policy)
    # the policy's exact gain (pi Q = 0) equals the solver's gain
    g = evaluate_policy(m, pi.policy)["gain"]
    assert g == pytest.approx(pi.gain, rel=1e-9)
    # optimal admission is a threshold: admit below some level, reject above
    n = np.array(m.labels)
    adm = pi.policy[np.argsort(n)]
    assert np.all(np.diff(adm) <= 0) and adm[0] == 1 and adm[-1] == 0


def test_mdptoolbox_round_trip_and_cross_check() -> None:
    mdptoolbox = pytest.importorskip("mdptoolbox.mdp")
    m = random_ctmdp(25, 2, seed=3)
    beta = 0.2
    ref = policy_iteration(m, beta)
    P, R, disc = to_mdptoolbox(m, beta)
    assert len(P) == 2 and R.shape == (25, 2)
    for Pa in P:
        assert np.allclose(np.asarray(Pa.sum(axis=1)).ravel(), 1.0)
    tb = mdptoolbox.PolicyIteration(P, R, disc)
    tb.run()
    assert np.array_equal(np.array(tb.policy), ref.policy)
    assert np.allclose(-np.array(tb.V), ref.values, rtol=1e-8)
    # and back: the discrete-time problem read as a CTMDP has the same solution
    m2, beta2 = from_mdptoolbox(P, R, disc, admissible=m.admissible())
    r2 = policy_iteration(m2, beta2)
    assert np.array_equal(r2.policy, ref.policy)
    # values: J of the re-read model is -V of the discrete problem = uniformized J
    assert np.allclose(r2.values, ref.values, rtol=1e-8)


def test_stationary_distribution_rejects_reducible_chain() -> None:
    Q = sp.csr_matrix(np.array([[-1.0, 1.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]))
    from hetsched.errors import SolverError

    with pytest.raises(SolverError, match="irreducible"):
        stationary_distribution(Q)


def test_validation_messages() -> None:
    with pytest.raises(ModelError, match="beta"):
        value_iteration(mm1k(1, 1, 3), beta=0.0)
    with pytest.raises(ModelError, match="cost: expected shape"):
        CTMDP.from_actions([sp.eye(3)], np.zeros((2, 1)))
    with pytest.raises(ModelError, match="no admissible action"):
        CTMDP.from_actions([sp.eye(3)], np.zeros((3, 1)), np.zeros((3, 1), bool))
    with pytest.raises(ModelError, match="rates must be finite and >= 0"):
        CTMDP.from_actions([-sp.eye(3, k=1)], np.zeros((3, 1)))
    with pytest.raises(ModelError, match="not admissible"):
        m = admission(K=3)
        m.pair_index(np.ones(m.n_states, dtype=np.int64))
    with pytest.raises(ModelError, match="nu"):
        value_iteration(mm1k(1, 1, 3), beta=0.1, nu=0.5)
    with pytest.raises(ModelError, match="method"):
        value_iteration(mm1k(1, 1, 3), beta=0.1, method="sor")
    with pytest.raises(ModelError, match="killing"):
        relative_value_iteration(build_ctmdp([0], lambda s: [0], lambda s, a: [(1.0, None)], lambda s, a: 1.0))
