"""Long-run average cost on multichain models, and pymdptoolbox input without a per-pair loop.

Truths: the Abelian limit ``g = lim_{beta -> 0} beta J_beta`` (an independent
route to every state's gain, computed by a dense solve per policy) minimized over
every deterministic policy; closed classes found by hand; the per-pair loop
``from_mdptoolbox`` used to run.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp

from hetsched.mdp.ctmdp import (
    CTMDP,
    average_policy_iteration,
    evaluate_policy,
    from_mdptoolbox,
    recurrent_classes,
    relative_value_iteration,
)


def _random_multichain(seed: int, S: int = 7, A: int = 2) -> CTMDP:
    """A CTMDP with two absorbing 'sink' groups and transient states that choose where to go."""
    rng = np.random.default_rng(seed)
    sa_state, sa_action, rows, cols, vals, cost = [], [], [], [], [], []
    k = 0
    for s in range(S):
        for a in range(A if s >= 3 else 1):
            sa_state.append(s), sa_action.append(a)
            if s == 0:  # an absorbing state
                targets = []
            elif s in (1, 2):  # a closed class {1, 2}
                targets = [3 - s]
            else:  # transient states: choose among sinks and other transient states
                targets = rng.choice([0, 1, 2] + list(range(3, S)), size=2, replace=False).tolist()
            for t in targets:
                if t != s:
                    rows.append(k), cols.append(t), vals.append(float(rng.uniform(0.2, 2.0)))
            cost.append(float(rng.uniform(0, 5)))
            k += 1
    R = sp.csr_matrix((vals, (rows, cols)), shape=(k, S))
    return CTMDP.from_pairs(sa_state, sa_action, R, cost, S)


def _gains_by_enumeration(m: CTMDP) -> np.ndarray:
    best = np.full(m.n_states, np.inf)
    choices = [np.arange(m.state_ptr[s], m.state_ptr[s + 1]) for s in range(m.n_states)]
    b = 1e-9
    for ks in itertools.product(*choices):
        k = np.array(ks)
        Q = (m.R[k] - sp.diags(m.out[k])).toarray()
        best = np.minimum(best, b * np.linalg.solve(b * np.eye(m.n_states) - Q, m.cost[k]))
    return best


@pytest.mark.parametrize("seed", range(6))
def test_multichain_policy_iteration_gives_every_states_optimal_gain(seed):
    m = _random_multichain(seed)
    res = average_policy_iteration(m)
    assert res.success, res.message
    assert np.allclose(res.gains, _gains_by_enumeration(m), rtol=1e-6, atol=1e-6)
    # the policy it returns attains those gains (evaluated on its own)
    ev = evaluate_policy(m, res.policy)
    assert np.allclose(ev["gains"], res.gains, rtol=1e-9, atol=1e-9)
    # any starting policy reaches the same gains
    rng = np.random.default_rng(seed)
    start = np.array([rng.integers(0, m.state_ptr[s + 1] - m.state_ptr[s]) for s in range(m.n_states)])
    assert np.allclose(average_policy_iteration(m, policy0=start).gains, res.gains, rtol=1e-9, atol=1e-9)


def test_multichain_gain_is_not_one_number():
    # two absorbing states of cost 1 and 3; state 2 may go to either (action 0 -> state 0, action 1 -> state 1)
    R = sp.csr_matrix(np.array([[0, 0, 0], [0, 0, 0], [1.0, 0, 0], [0, 1.0, 0]]))
    m = CTMDP.from_pairs([0, 1, 2, 2], [0, 0, 0, 1], R, [1.0, 3.0, 10.0, 0.0], 3)
    res = average_policy_iteration(m, policy0=np.array([0, 0, 1]))
    assert res.gain is None and res.multichain
    assert res.gains.tolist() == pytest.approx([1.0, 3.0, 1.0])
    assert res.policy[2] == 0 and res.success
    assert res.as_dict()["multichain"] is True


def test_recurrent_classes_by_hand():
    # 0 -> 1 -> 0 closed; 2 -> 0 transient; 3 absorbing; 4 -> 3 or 2 transient
    R = sp.csr_matrix(np.array([[0, 1, 0, 0, 0], [1, 0, 0, 0, 0], [1, 0, 0, 0, 0], [0, 0, 0, 0, 0],
                                [0, 0, 1, 1, 0]], dtype=float))
    assert recurrent_classes(R).tolist() == [0, 0, -1, 1, -1]


def test_multichain_policy_evaluation_mixes_the_classes():
    # state 2 goes to the cost-1 absorbing state at rate 1 and to the cost-3 one at rate 3: gain 1/4 + 9/4
    R = sp.csr_matrix(np.array([[0, 0, 0], [0, 0, 0], [1.0, 3.0, 0]]))
    m = CTMDP.from_pairs([0, 1, 2], [0, 0, 0], R, [1.0, 3.0, 7.0], 3)
    ev = evaluate_policy(m, np.zeros(3, dtype=int))
    assert ev["gain"] is None and ev["gains"].tolist() == pytest.approx([1.0, 3.0, 2.5])


def test_relative_value_iteration_says_it_cannot_do_multichain():
    m = _random_multichain(0)
    res = relative_value_iteration(m, max_iter=2000)
    assert not res.success and "multichain" in res.message


def _from_mdptoolbox_loop(P, R, discount):
    """The per-pair loop from_mdptoolbox ran before (the reference for the vectorized version)."""
    mats = [sp.csr_matrix(p, dtype=float) for p in P]
    A, S = len(mats), mats[0].shape[0]
    kills = [np.clip(1.0 - np.asarray(m.sum(axis=1)).ravel(), 0.0, None) for m in mats]
    kills = [np.where(k < 1e-12, 0.0, k) for k in kills]
    s_idx, a_idx = np.nonzero(np.ones((S, A), bool))
    Rall = sp.vstack(mats, format="csr")[a_idx * S + s_idx]
    kill = np.array([kills[a][s] for s, a in zip(s_idx, a_idx)])
    return CTMDP.from_pairs(s_idx, a_idx, Rall, -np.asarray(R)[s_idx, a_idx] / discount, S, kill=kill)


def test_from_mdptoolbox_vectorized_equals_the_loop():
    rng = np.random.default_rng(3)
    S, A = 40, 3
    P = []
    for _ in range(A):
        M = rng.random((S, S)) * (rng.random((S, S)) < 0.2)
        M /= np.maximum(M.sum(axis=1, keepdims=True), 1e-12) * rng.uniform(1.0, 1.3, (S, 1))  # some rows < 1
        P.append(M)
    R = rng.normal(size=(S, A))
    a, beta = from_mdptoolbox(P, R, 0.9)
    b = _from_mdptoolbox_loop(P, R, 0.9)
    assert beta == pytest.approx(1 / 0.9 - 1)
    assert np.array_equal(a.state_ptr, b.state_ptr) and np.array_equal(a.sa_action, b.sa_action)
    assert np.allclose(a.cost, b.cost) and np.allclose(a.kill, b.kill) and abs(a.R - b.R).max() < 1e-15


def test_large_multichain_evaluation_iterative_solves_match_closed_forms(monkeypatch):
    """Beyond ``operators.DIRECT_MAX`` unknowns the evaluation's systems are solved iteratively (ILU + Krylov).

    Two birth-death classes (gain ``sum pi_i c_i`` with ``pi_i`` proportional to ``(lam/mu)^i``) and a chain of
    transient states absorbed into either (probability by backward recursion): every state's gain in closed form.
    """
    from hetsched.mdp import operators

    n_cls, n_tr = 1200, 2100
    S = 2 * n_cls + n_tr
    assert min(2 * n_cls - 2, n_tr) > operators.DIRECT_MAX  # the recurrent and transient systems: iterative

    def no_lu(A):
        raise AssertionError("the direct fallback ran")

    monkeypatch.setattr(operators, "splu", no_lu)
    rows, cols, vals = [], [], []

    def rate(i, j, r):
        rows.append(i), cols.append(j), vals.append(r)

    gains = []
    for base, lam, mu in ((0, 1.0, 1.5), (n_cls, 2.0, 2.5)):
        for i in range(n_cls):
            if i + 1 < n_cls:
                rate(base + i, base + i + 1, lam)
            if i > 0:
                rate(base + i, base + i - 1, mu)
        pi = (lam / mu) ** np.arange(n_cls)
        gains.append(float(pi @ ((base + np.arange(n_cls)) % 7) / pi.sum()))
    eps = 0.01
    p_a = np.empty(n_tr)
    for t in range(n_tr - 1, -1, -1):  # transient state 2 n_cls + t
        s = 2 * n_cls + t
        rate(s, 5, eps)
        if t + 1 < n_tr:
            rate(s, s + 1, 1.0)
            p_a[t] = (eps + p_a[t + 1]) / (1 + eps)
        else:
            rate(s, 0, 1.0), rate(s, n_cls, 2.0)
            p_a[t] = (eps + 1.0) / (3.0 + eps)
    cost = np.arange(S) % 7
    R = sp.csr_matrix((vals, (rows, cols)), shape=(S, S))
    m = CTMDP.from_pairs(np.arange(S), np.zeros(S, dtype=np.int64), R, cost.astype(float), S)
    res = average_policy_iteration(m)
    g = np.concatenate([np.full(n_cls, gains[0]), np.full(n_cls, gains[1]), p_a * gains[0] + (1 - p_a) * gains[1]])
    assert res.success and res.multichain
    assert np.allclose(res.gains, g, rtol=1e-9, atol=1e-12)
    # the bias solves c + Q h = g everywhere
    Q = R - sp.diags(np.asarray(R.sum(axis=1)).ravel())
    assert np.abs(cost + Q @ res.values - res.gains).max() <= 1e-7 * np.abs(res.values).max()
