"""The pull selection rule: plain Python and numba versions agree; rules match §3.1-§3.3."""

from __future__ import annotations

import numpy as np
import pytest

from hetsched.errors import ModelError
from hetsched.sim.pull_policies import FCFS, GCMU, LPAS_DG, policy_code, select_class, select_class_nb


@pytest.mark.parametrize("policy", [0, 1, 2, 3])
def test_python_and_numba_agree(policy):
    rng = np.random.default_rng(policy)
    for _ in range(500):
        N = int(rng.integers(1, 6))
        qlen = rng.integers(0, 3, size=N)
        head = np.round(rng.uniform(0, 10, size=N), 1)  # rounding creates ties
        rate = rng.choice([0.0, 1.0, 2.0, 3.5], size=N)
        elig = rng.random(N) < 0.6
        t = 10.0
        assert select_class(policy, t, qlen, head, rate, elig) == select_class_nb(policy, t, qlen, head, rate, elig)


def test_rules():
    q = np.array([1, 1, 1])
    head = np.array([5.0, 4.0, 8.0])
    rate = np.array([1.0, 1.0, 10.0])
    elig = np.array([True, True, False])
    t = 10.0
    assert select_class(FCFS, t, q, head, rate, elig) == 1  # oldest head
    assert select_class(GCMU, t, q, head, rate, elig) == 2  # D*mu: 5, 6, 20
    assert select_class(LPAS_DG, t, q, head, rate, elig) == 1  # class 3 excluded by delta*
    assert select_class(GCMU, t, np.zeros(3, dtype=int), head, rate, elig) == -1


def test_policy_code():
    assert policy_code("LPAS-DG") == LPAS_DG
    with pytest.raises(ModelError, match="policy"):
        policy_code("lpas_dg")
