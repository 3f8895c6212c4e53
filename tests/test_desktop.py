"""Desktop-grid model (thesis ch. 3): checks against closed forms and certificates."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hetsched.errors import ModelError
from hetsched.system import CpuChain, Failures, MachineGroup, System
from hetsched.sim.desktop import simulate_desktop
from hetsched.sim import _desktop_kernel as K
from hetsched.stats import t_interval


def erlang_c_W(lam: float, mu: float, c: int) -> float:
    a = lam / mu
    rho = a / c
    s = sum(a**k / math.factorial(k) for k in range(c))
    top = a**c / math.factorial(c) / (1 - rho)
    pw = top / (s + top)
    return 1 / mu + pw / (c * mu - lam)


def _mmc(c=3, mu=1.0, lam=2.4, **kw):
    return System(id="mmc", alpha=(lam,), groups=(MachineGroup("A", c, (mu,), **kw),))


@pytest.mark.parametrize("policy", ["fcfs", "gcmu", "lpas-dg", "lpas-dg-robust"])
def test_pull_without_failures_is_mmc(policy):
    """One class, c identical dedicated machines, no failures: M/M/c (Erlang C)."""
    s = _mmc()
    ws = [simulate_desktop(s, policy, horizon=4000, seed=100 + k, warmup=200).W for k in range(8)]
    est = t_interval(ws)
    truth = erlang_c_W(2.4, 1.0, 3)
    assert abs(est.mean - truth) <= max(2.5 * est.half_width, 0.02 * truth), (est, truth)


def test_static_availability_scales_rate():
    """a_j = 0.5 on one machine: M/M/1 with rate a*mu' (effective rate, §1.4.1)."""
    s = System(id="mm1", alpha=(0.6,), groups=(MachineGroup("A", 1, (2.0,)),), availability=(0.5,))
    ws = [simulate_desktop(s, "gcmu", horizon=5000, seed=k, warmup=100).W for k in range(8)]
    est = t_interval(ws)
    truth = 1 / (1.0 - 0.6)
    assert abs(est.mean - truth) <= max(2.5 * est.half_width, 0.03 * truth), (est, truth)


def test_cpu_chain_stuck_in_half_state_is_mm1():
    """A CPU chain that always sits in the 50 % state behaves like a = 0.5."""
    chain = CpuChain(P=((0, 0, 0), (0, 1, 0), (0, 0, 0)))
    s = System(id="mm1c", alpha=(0.6,), groups=(MachineGroup("A", 1, (2.0,), cpu_chain=chain),))
    assert s.a[0] == pytest.approx(0.5)
    ws = [simulate_desktop(s, "fcfs", horizon=5000, seed=k, warmup=100).W for k in range(8)]
    est = t_interval(ws)
    assert abs(est.mean - 2.5) <= max(2.5 * est.half_width, 0.03 * 2.5), est


def test_cpu_chain_progress_matches_mean_level():
    """A fast-mixing chain (steps << task length): W -> X / E[level] for a lone task stream."""
    P = ((0.5, 0.25, 0.25), (0.25, 0.5, 0.25), (0.25, 0.25, 0.5))
    chain = CpuChain(P=P, step=0.001)
    s = System(id="chain", alpha=(0.01,), groups=(MachineGroup("A", 1, (1.0,), cpu_chain=chain),))
    abar = chain.mean_availability()
    ws = [simulate_desktop(s, "fcfs", horizon=20000, seed=k).W for k in range(6)]
    est = t_interval(ws)
    # light load: W ~ (1/abar) * (1 + small queueing term)
    rho = 0.01 / abar
    truth = (1 / abar) / (1 - rho)
    assert abs(est.mean - truth) <= max(3 * est.half_width, 0.05 * truth), (est, truth)


@pytest.mark.parametrize("up,down", [("exp", "exp"), ("hyperexp", "hyperexp"), ("exp", "const")])
def test_available_fraction(up, down):
    """Long-run available fraction of a machine = up / (up + down)."""
    f = Failures(rate=0.05, mean_down=4.0, up_dist=up, down_dist=down, scv=5.0)
    s = _mmc(c=20, lam=2.0).with_(failures=f)
    r = simulate_desktop(s, "gcmu", horizon=40_000, seed=3)
    expect = 20.0 / 24.0
    assert abs(r.up_fraction.mean() - expect) < 0.01, r.up_fraction.mean()


def test_weibull_available_fraction():
    shape, scale = 0.7, 50.0
    f = Failures(rate=1.0, mean_down=10.0, up_dist="weibull", down_dist="const")
    s = System(id="w", alpha=(0.5,), groups=(MachineGroup("A", 30, (1.0,), weibull_shape=shape, weibull_scale=scale),),
               failures=f)
    r = simulate_desktop(s, "fcfs", horizon=100_000, seed=4)
    mup = scale * math.gamma(1 + 1 / shape)
    assert abs(r.up_fraction.mean() - mup / (mup + 10.0)) < 0.01


def test_lp_solves_equal_availability_events():
    from hetsched.scenarios import load

    s = load("3.A", arrivals="alpha1", case=3)
    r = simulate_desktop(s, "lpas-dg", horizon=300, seed=1)
    assert r.avail_events > 100
    assert r.lp_solves == r.avail_events + 1  # + the initial solve
    rr = simulate_desktop(s, "lpas-dg-robust", horizon=300, seed=1)
    assert 1 <= rr.lp_solves <= rr.avail_events + 1  # cached by capacity key
    assert rr.extra["lookups"] == rr.avail_events


def test_resubmissions_counted_and_tasks_conserved():
    from hetsched.scenarios import load

    s = load("3.A", arrivals="alpha1", case=3)
    r = simulate_desktop(s, "gcmu", horizon=300, seed=2)
    assert r.resubmissions > 0
    in_system_end = r.arrivals - sum(r.completed)
    assert 0 <= in_system_end <= 30 + r.extra["queued_end"]


def test_same_seed_same_result_and_crn():
    from hetsched.scenarios import load

    s = load("3.B", arrivals="alpha1", case=2)
    a = simulate_desktop(s, "lpas-dg", horizon=200, seed=7)
    b = simulate_desktop(s, "lpas-dg", horizon=200, seed=7)
    assert a.W == b.W and a.events == b.events
    c = simulate_desktop(s, "gcmu", horizon=200, seed=7)
    assert c.arrivals == a.arrivals and c.avail_events == a.avail_events  # common random numbers


@pytest.mark.parametrize("seed", range(5))
def test_dual_simplex_matches_highs(seed):
    """Re-optimised tableau after random capacity changes: lambda* equals HiGHS, delta* feasible."""
    from hetsched.lp import solve_allocation

    rng = np.random.default_rng(seed)
    N, C = 4, 7
    mu = rng.uniform(0.5, 10, size=(N, C))
    alpha = rng.uniform(1, 5, size=N)
    cap = rng.integers(1, 5, size=C).astype(float)
    mu_colT = np.ascontiguousarray(mu.T)
    m, nv = N + C, N * C + 1 + N + C
    T = np.zeros((m, nv + 1))
    obj = np.zeros(nv + 1)
    basis = np.zeros(m, dtype=np.int64)
    K.lp_build(T, obj, basis, mu_colT, alpha, cap)
    assert K.lp_primal(T, obj, basis) >= 0
    sup = np.zeros((C, N), dtype=np.bool_)
    for _ in range(40):
        c = int(rng.integers(C))
        K.lp_set_cap(T, obj, cap, N, c, float(rng.integers(0, 5)))
        if cap.sum() == 0:
            continue
        assert K.lp_dual(T, obj, basis) >= 0
        _, lam = K.lp_support(T, basis, mu_colT, sup)
        x = np.zeros(nv)
        x[basis] = T[:, nv]
        d = x[: N * C].reshape(N, C)
        assert (d >= -1e-9).all()
        assert (d.sum(axis=0) <= cap + 1e-9).all()
        assert ((d * mu).sum(axis=1) >= lam * alpha - 1e-7).all()
        if (cap > 0).any() and all((mu[i] * cap).sum() > 0 for i in range(N)):
            ref = solve_allocation(mu, alpha, a=np.minimum(cap, 1) * 0 + (cap > 0), counts=np.maximum(cap, 1))
            # counts*a = cap for integer caps
            assert lam == pytest.approx(ref.lam, rel=1e-7, abs=1e-9)
        assert (sup.T == (d > 1e-9)).all()
    # number of nonzeros of a vertex: at most N + C - 1 (Proposition 2.2.1)
    assert sup.sum() <= N + C - 1


def test_validation_errors():
    s = _mmc()
    with pytest.raises(ModelError, match="policy"):
        simulate_desktop(s, "nope")
    with pytest.raises(ModelError, match="machine_rule"):
        simulate_desktop(s, "fcfs", machine_rule="best")
    with pytest.raises(ModelError, match="resubmit"):
        simulate_desktop(s, "fcfs", resubmit="middle")
    with pytest.raises(ModelError, match="horizon"):
        simulate_desktop(s, "fcfs", horizon=-1)
    with pytest.raises(ModelError, match="inaccuracy"):
        simulate_desktop(s, "fcfs", inaccuracy=2.0)
    with pytest.raises(ModelError, match="lp_grouping"):
        simulate_desktop(s, "fcfs", lp_grouping="x")


def test_unstable_is_reported():
    s = _mmc(c=2, lam=2.5)  # rho > 1
    r = simulate_desktop(s, "fcfs", horizon=3000, seed=1)
    assert r.unstable and not r.success


def test_lpas_support_restricts_classes():
    """Thesis §3.3 example 1: machine 1 never receives class-1 tasks under LPAS_DG."""
    s = System(id="ex1", alpha=(1.0, 1.5), groups=(MachineGroup("m1", 1, (9.0, 2.0)), MachineGroup("m2", 1, (5.0, 1.0))))
    r = simulate_desktop(s, "lpas-dg", horizon=2000, seed=1)
    assert r.extra["lambda"] == pytest.approx(1.7647, abs=1e-4)
    assert not r.unstable


# ----------------------------------------------------------------------------- LP reading (thesis §3.3)
def _vertex_support(mu, alpha, cap):
    N, M = mu.shape
    muT = np.ascontiguousarray(mu.T)
    m = N + M
    nv = N * M + 1 + m
    T = np.zeros((m, nv + 1))
    obj = np.zeros(nv + 1)
    basis = np.zeros(m, dtype=np.int64)
    K.lp_build(T, obj, basis, muT, alpha, np.asarray(cap, float).copy())
    assert K.lp_primal(T, obj, basis) >= 0
    sup = np.zeros((M, N), dtype=np.bool_)
    _, lam = K.lp_support(T, basis, muT, sup)
    return sup.T, lam


def test_per_machine_vertex_reproduces_thesis_example():
    """§3.3, second example: delta* supports printed before and after machine 2 fails."""
    from hetsched.scenarios import load

    s = load("3.3-ex2")
    sup, lam = _vertex_support(s.mu, s.alpha_array, np.ones(4))
    assert lam == pytest.approx(2.0513, abs=1e-4)
    assert (sup.astype(int) == [[1, 1, 1, 1], [0, 1, 0, 0], [0, 1, 0, 0]]).all()
    sup, lam = _vertex_support(s.mu, s.alpha_array, [1.0, 0.0, 1.0, 1.0])
    assert lam == pytest.approx(1.0306, abs=1e-4)
    assert (sup.astype(int) == [[1, 0, 1, 1], [0, 0, 0, 1], [0, 0, 1, 0]]).all()


@pytest.mark.parametrize("grouping,columns", [("auto", 28), ("machines", 28), ("groups", 7)])
def test_lpas_dg_lp_reading(grouping, columns):
    """Default LPAS_DG LP: one column per machine, a vertex with >= NM+1-N-M zeros (§3.3, end);
    lambda* equals HiGHS's either way."""
    from hetsched.lp import solve_allocation
    from hetsched.scenarios import load

    s = load("3.B", arrivals="alpha1", case=1)  # no failures
    r = simulate_desktop(s, "lpas-dg", horizon=0.05, seed=1, lp_grouping=grouping)
    assert r.extra["columns"] == columns
    assert r.extra["lambda"] == pytest.approx(solve_allocation(s.mu, s.alpha_array).lam, rel=1e-9)
    N, M = s.mu.shape
    if columns == M:
        assert r.extra["support_nonzeros"] <= N + M - 1
    else:
        assert r.extra["support_nonzeros"] > N + M - 1  # group-symmetric: every member of a column shares it


@pytest.mark.parametrize("order", ["reverse", 3])
def test_lp_order_gives_another_optimal_vertex(order):
    from hetsched.scenarios import load

    s = load("3.B", arrivals="alpha1", case=1)
    a = simulate_desktop(s, "lpas-dg", horizon=0.05, seed=1)
    b = simulate_desktop(s, "lpas-dg", horizon=0.05, seed=1, lp_order=order)
    assert b.extra["lambda"] == pytest.approx(a.extra["lambda"], rel=1e-9)
    assert b.extra["support_nonzeros"] <= s.N + s.M - 1


@pytest.mark.parametrize("cpu_info", [True, False])
def test_cpu_info_changes_only_the_policy_lp(cpu_info):
    """§3.4.4: without information the LP assumes a_j = 1; the machines still run at the true a_j."""
    from hetsched.lp import solve_allocation
    from hetsched.scenarios import load

    s = load("3.A-cpuinfo")
    r = simulate_desktop(s, "lpas-dg", horizon=1e-3, seed=1, cpu_info=cpu_info)
    assert r.avail_events == 0
    a = s.a if cpu_info else np.ones(s.M)
    assert r.extra["lambda"] == pytest.approx(solve_allocation(s.mu, s.alpha_array, a=a).lam, rel=1e-9)
    # gcmu ignores cpu_info (it never reads the LP): identical runs
    g1 = simulate_desktop(s, "gcmu", horizon=50, seed=2, cpu_info=True)
    g2 = simulate_desktop(s, "gcmu", horizon=50, seed=2, cpu_info=False)
    assert g1.W == g2.W


def test_lp_order_validation():
    with pytest.raises(ModelError, match="lp_order"):
        simulate_desktop(_mmc(), "lpas-dg", lp_order="sideways")
