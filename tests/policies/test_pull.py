"""Pull policies (hetsched.policies.pull): the written contract, user policies, no numba on import."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from hetsched.errors import ModelError
from hetsched.policies.pull import (FCFS, GCMU, LPAS_DG, LPAS_DG_ROBUST, policy_code, pull_policy, select_class)


def _contract(policy, t, qlen, head, rate, elig, tie_key):
    """The contract, written as a sort: qualifying classes ordered by the policy's key, ties by index."""
    q = [i for i in range(len(qlen)) if qlen[i] > 0 and rate[i] > 0
         and (policy in (FCFS, GCMU) or elig[i])]
    if not q:
        return -1, []
    key = (lambda i: head[i]) if policy == FCFS else (lambda i: -(t - head[i]) * rate[i])
    best = min(key(i) for i in q)
    tied = [i for i in q if key(i) == best]
    return min(tied, key=tie_key), tied


@pytest.mark.parametrize("policy", [FCFS, GCMU, LPAS_DG, LPAS_DG_ROBUST])
def test_selection_follows_the_contract(policy):
    rng = np.random.default_rng(policy)
    for _ in range(400):
        N = int(rng.integers(1, 7))
        qlen = rng.integers(0, 3, size=N)
        head = np.round(rng.uniform(0, 10, size=N), 0)  # coarse values: many ties
        rate = rng.choice([0.0, 1.0, 2.0], size=N)
        elig = rng.random(N) < 0.7
        t = 10.0
        lo, tied = _contract(policy, t, qlen, head, rate, elig, lambda i: i)
        hi, _ = _contract(policy, t, qlen, head, rate, elig, lambda i: -i)
        assert select_class(policy, t, qlen, head, rate, elig) == lo  # the dispatcher's call: lowest
        assert select_class(policy, t, qlen, head, rate, elig, tie="highest") == hi
        # random: u spread over [0, 1) hits every tied class equally often
        n = max(1, len(tied))
        picks = [select_class(policy, t, qlen, head, rate, elig, tie="random", u=(k + 0.5) / n) for k in range(n)]
        assert sorted(picks) == (sorted(tied) if tied else [-1])


def test_thesis_rules_on_a_hand_case():
    q = np.array([1, 1, 1])
    head = np.array([5.0, 4.0, 8.0])
    rate = np.array([1.0, 1.0, 10.0])
    elig = np.array([True, True, False])
    assert select_class(FCFS, 10.0, q, head, rate, elig) == 1  # oldest head (§3.1)
    assert select_class(GCMU, 10.0, q, head, rate, elig) == 2  # D * mu: 5, 6, 20 (§3.2)
    assert select_class(LPAS_DG, 10.0, q, head, rate, elig) == 1  # class 3 not in delta*'s support (§3.3)
    assert select_class(GCMU, 10.0, np.zeros(3, dtype=int), head, rate, elig) == -1


def test_policy_code_and_errors():
    assert policy_code("LPAS-DG") == LPAS_DG
    with pytest.raises(ModelError, match="policy"):
        policy_code("lpas_dg")
    with pytest.raises(ModelError, match="6 arguments"):
        pull_policy(lambda t, q: 0)


def test_importing_pull_policies_does_not_load_numba():
    code = ("import sys, hetsched.policies.pull, hetsched.sim.pull_policies; "
            "assert 'numba' not in sys.modules, 'numba loaded'")
    subprocess.run([sys.executable, "-c", code], check=True)


# ----------------------------------------------------------------------------- user-written policies
@pull_policy
def my_gcmu(t, qlen, head_arrival, rate, eligible, u):
    best, best_key = -1, 0.0
    for i in range(qlen.shape[0]):
        if qlen[i] > 0 and rate[i] > 0.0:
            key = (t - head_arrival[i]) * rate[i]
            if best < 0 or key > best_key:
                best, best_key = i, key
    return best


@pull_policy(uses_lp=True)
def my_lpas_dg(t, qlen, head_arrival, rate, eligible, u):
    best, best_key = -1, 0.0
    for i in range(qlen.shape[0]):
        if qlen[i] > 0 and rate[i] > 0.0 and eligible[i]:
            key = (t - head_arrival[i]) * rate[i]
            if best < 0 or key > best_key:
                best, best_key = i, key
    return best


@pull_policy
def bad_policy(t, qlen, head_arrival, rate, eligible, u):
    return qlen.shape[0] + 3


SHIPPED = [("3.A", dict(arrivals="alpha1", case=3)), ("3.B", dict(arrivals="alpha2", case=2)),
           ("3.C", dict(arrivals="alpha1", case=1)), ("3.D", dict(arrivals="alpha2", case=2)),
           ("3.E", dict(arrivals="alpha1", case=2)), ("3.H", {}), ("3.A-dist", dict(case=3)), ("3.A-cpuinfo", {}),
           ("3.G2", dict(arrivals="alpha1"))]


@pytest.mark.parametrize("sid,kw", SHIPPED)
def test_user_policies_equal_the_built_ins(sid, kw):
    """A hand-written Gcmu / LPAS_DG gives exactly the built-in's numbers (tie="lowest", same seed)."""
    from hetsched.scenarios import load
    from hetsched.sim.desktop import simulate

    s = load(sid, **kw)
    h = 200_000.0 if sid == "3.G2" else 100.0  # 3.G2: a few tasks per 1,000 time units
    for user, builtin in ((my_gcmu, "gcmu"), (my_lpas_dg, "lpas-dg")):
        a = simulate(s, user, reps=2, horizon=h, seed=5, tie="lowest", workers=1)
        b = simulate(s, builtin, reps=2, horizon=h, seed=5, tie="lowest", workers=1)
        assert a.events == b.events and a.events > 1000
        assert a.mean == b.mean and a.ci == b.ci
        assert [pc["mean"] for pc in a.per_class] == [pc["mean"] for pc in b.per_class]


def test_a_bad_choice_is_a_clear_error():
    from hetsched.scenarios import load
    from hetsched.sim.desktop import simulate

    with pytest.raises(ModelError, match=r"pull policy 'bad_policy' returned class 7 for machine \d+: outside 0\.\.3"):
        simulate(load("3.A", arrivals="alpha1", case=1), bad_policy, reps=1, horizon=50, workers=1)
    # the dispatcher's plain-Python path says the same
    with pytest.raises(ModelError, match="returned class 5 for machine 2"):
        select_class(bad_policy, 1.0, np.array([1, 0]), np.zeros(2), np.ones(2), np.ones(2, bool), machine=2)


def test_user_policy_runs_as_plain_python_in_the_dispatcher_path():
    q = np.array([1, 1, 1])
    head = np.array([5.0, 4.0, 8.0])
    rate = np.array([1.0, 1.0, 10.0])
    elig = np.array([True, True, False])
    assert select_class(my_gcmu, 10.0, q, head, rate, elig) == select_class(GCMU, 10.0, q, head, rate, elig) == 2
    assert select_class(my_lpas_dg, 10.0, q, head, rate, elig) == 1
    assert select_class(my_gcmu, 10.0, np.zeros(3, int), head, rate, elig) == -1


def test_public_api_routes_a_pull_policy_to_the_desktop_model():
    import hetsched as hs

    assert hs.pull_policy is pull_policy or callable(hs.pull_policy)
    s = hs.load("3.A", arrivals="alpha1", case=1)
    a = hs.simulate(s, my_gcmu, reps=2, horizon=100, seed=3, tie="lowest", workers=1)
    b = hs.simulate(s, "gcmu", reps=2, horizon=100, seed=3, tie="lowest", workers=1)
    assert a.model == "desktop" and a.mean == b.mean and a.events == b.events
