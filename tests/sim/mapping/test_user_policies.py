"""User-written mapping policies (issue 12): exact agreement with the built-in MCT, clear errors."""

import numpy as np
import pytest

import hetsched as hs
from hetsched.errors import ModelError
from hetsched.scenarios import scenario_ids


@hs.mapping_policy
def my_mct(i, mu, n, work, u):
    """The issue's MCT: least work[j] + 1/mu[i, j]; lowest index on ties (strict <)."""
    best, best_v = -1, 0.0
    for j in range(mu.shape[1]):
        if mu[i, j] > 0.0:
            v = work[j] + 1.0 / mu[i, j]
            if best < 0 or v < best_v:
                best, best_v = j, v
    return best


@hs.mapping_policy
def off_by_class(i, mu, n, work, u):
    """Returns machine M-1+i: with mu[0, M-1] = 0 or for class 1 out of range, an error."""
    return mu.shape[1] - 1 + i


# the scenarios the mapping model runs: one arrival stream per class, no machine failures
MAPPING_SCENARIOS = [s for s in scenario_ids() if hs.load(s).alpha_matrix is None and hs.load(s).failures is None]


@pytest.mark.parametrize("sid", MAPPING_SCENARIOS)
def test_user_mct_equals_builtin_mct(sid):
    system = hs.load(sid)
    # a short horizon: about 20,000 arrivals per replication (3.F has 3000 machines)
    horizon = float(min(300.0, 20_000.0 / system.alpha_array.sum()))
    kw = dict(reps=2, horizon=horizon, seed=1, workers=1, tie="lowest")
    mine = hs.simulate(system, my_mct, **kw)
    builtin = hs.simulate(system, "mct", **kw)
    assert [r["Q"] for r in mine.replications] == [r["Q"] for r in builtin.replications]
    assert [r["events"] for r in mine.replications] == [r["events"] for r in builtin.replications]
    assert mine.policy == "my_mct" and mine.options["tie"] == "user-defined"


def test_user_policy_choices_match_its_python_function():
    """The compiled policy is the user's function: same answers on random states (plain Python call)."""
    rng = np.random.default_rng(0)
    mu = np.ascontiguousarray(hs.load("2.D").mu)
    fn = my_mct.compiled()
    for _ in range(200):
        n = rng.integers(0, 5, mu.shape[1])
        work = rng.random(mu.shape[1]) * 3
        i = int(rng.integers(mu.shape[0]))
        assert fn(i, mu, n, work, 0.5) == my_mct(i, mu, n, work, 0.5)


def test_machine_that_cannot_run_the_class_is_an_error():
    system = hs.System.from_arrays(alpha=[1.0], mu=[[2.0, 0.0]], id="zero")
    with pytest.raises(ModelError, match=r"'off_by_class' returned machine 1 for a task of class 1.*mu\[0, 1\] = 0"):
        hs.simulate(system, off_by_class, reps=1, horizon=50.0, workers=1)


def test_index_out_of_range_is_an_error():
    system = hs.System.from_arrays(alpha=[0.001, 1.0], mu=[[1.0, 2.0], [1.0, 1.0]], id="range")
    with pytest.raises(ModelError, match=r"'off_by_class' returned machine 2 for a task of class 2.*outside 0\.\.1"):
        hs.simulate(system, off_by_class, reps=1, horizon=50.0, workers=1)


def test_policy_that_does_not_compile_or_returns_a_float():
    @hs.mapping_policy
    def uses_python_objects(i, mu, n, work, u):
        return {"a": object()}["a"]

    @hs.mapping_policy
    def returns_float(i, mu, n, work, u):
        return 0.5

    system = hs.load("2.B")
    with pytest.raises(ModelError, match="'uses_python_objects' does not compile"):
        hs.simulate(system, uses_python_objects, reps=1, horizon=10.0, workers=1)
    with pytest.raises(ModelError, match="'returns_float' must return a machine index"):
        hs.simulate(system, returns_float, reps=1, horizon=10.0, workers=1)
    with pytest.raises(ModelError, match="5 arguments"):
        hs.mapping_policy(lambda i, mu: 0)
    with pytest.raises(ModelError, match="decorate it"):
        hs.simulate(system, lambda i, mu, n, work, u: 0, reps=1, horizon=10.0, workers=1)


def test_user_policy_in_worker_processes_same_numbers():
    """Pickled to pool workers (compiled again there): the result depends only on the seed."""
    system = hs.load("2.B")
    one = hs.simulate(system, my_mct, reps=4, horizon=200.0, seed=3, workers=1)
    two = hs.simulate(system, my_mct, reps=4, horizon=200.0, seed=3, workers=2)
    assert [r["Q"] for r in one.replications] == [r["Q"] for r in two.replications]


@hs.mapping_policy
def uniform_choice(i, mu, n, work, u):
    """Uniform over the machines that can run class i, from the policy's own u."""
    M = mu.shape[1]
    k = int(u * M)
    return min(k, M - 1)


def test_u_is_uniform_random_routing_gives_independent_mm1(closed_forms):
    """Routing by u to M identical machines splits Poisson arrivals: M independent M/M/1 queues."""
    M, lam_each = 4, 0.75
    system = hs.System.from_arrays(alpha=[M * lam_each], mu=[[1.0] * M], id="iid")
    res = hs.simulate(system, uniform_choice, reps=10, horizon=200_000.0, seed=7, workers=1, warmup=1_000.0)
    truth = M * closed_forms.mm1_L(lam_each)
    hw = (res.ci[1] - res.ci[0]) / 2
    assert abs(res.mean - truth) <= 3 * hw, (res.mean, res.ci, truth)
    assert abs(res.mean - truth) <= 0.02 * truth and hw <= 0.0125 * truth, (res.mean, res.ci, truth)  # issue 14
    assert uniform_choice.uses_u and not my_mct.uses_u


# ----------------------------------------------------------------------------- a user policy cannot crash us
@hs.mapping_policy
def writes_far_out(i, mu, n, work, u):
    work[10_000_000] = 1.0
    return 0


@hs.mapping_policy
def writes_n(i, mu, n, work, u):
    n[0] = 0
    return 0


@hs.mapping_policy
def reads_far_out(i, mu, n, work, u):
    return int(work[10_000_000])


@hs.mapping_policy
def divides_by_zero(i, mu, n, work, u):
    return int(1.0 / (work[0] - work[0]))


@hs.mapping_policy
def loops_when_busy(i, mu, n, work, u):
    j = 0
    while n[0] > 2:  # a data-dependent endless loop: starts once machine 0 holds three tasks
        j = (j + 1) % 2
    return j


@pytest.mark.parametrize("policy, match", [
    (writes_far_out, "'writes_far_out' writes to one of its arguments mu, n, work, which are read-only"),
    (writes_n, "'writes_n' writes to one of its arguments"),
    (reads_far_out, "'reads_far_out' failed: IndexError: index is out of bounds"),
    (divides_by_zero, "'divides_by_zero' failed: ZeroDivisionError: division by zero"),
])
def test_bad_policies_are_clear_errors(policy, match):
    with pytest.raises(ModelError, match=match):
        hs.simulate("2.B", policy, reps=1, horizon=50.0, workers=1)


def test_an_endless_loop_is_stopped():
    import time

    t0 = time.monotonic()
    with pytest.raises(ModelError, match="'loops_when_busy' made no progress for 1 s .*policy_timeout"):
        hs.simulate("2.B", loops_when_busy, reps=1, horizon=5_000.0, workers=1, policy_timeout=1.0)
    assert time.monotonic() - t0 < 120


def test_ctrl_c_stops_an_endless_loop():
    import os
    import signal
    import threading

    timer = threading.Timer(2.0, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            hs.simulate("2.B", loops_when_busy, reps=1, horizon=5_000.0, workers=1, policy_timeout=600.0)
    finally:
        timer.cancel()
