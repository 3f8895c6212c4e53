"""The one compiled LP tableau (``hetsched.lp.tableau``) against HiGHS, on both models' uses."""

from __future__ import annotations

import numpy as np
import pytest

from hetsched.lp import solve_allocation
from hetsched.scenarios import load
from hetsched.lp import tableau as L
from hetsched.sim.decentral import per_machine_alpha


def _tableau(N, C):
    m, w = L.tableau_shape(N, C)
    return np.zeros((m, w)), np.zeros(w), np.zeros(m, np.int64)


@pytest.mark.parametrize("seed", range(5))
def test_dual_simplex_after_capacity_changes_matches_highs(seed):
    """Re-optimised tableau after random capacity changes: lambda* equals HiGHS, delta* feasible, a vertex."""
    rng = np.random.default_rng(seed)
    N, C = 4, 7
    mu = rng.uniform(0.5, 10, size=(N, C))
    alpha = rng.uniform(1, 5, size=N)
    cap = rng.integers(1, 5, size=C).astype(float)
    muT = np.ascontiguousarray(mu.T)
    T, obj, basis = _tableau(N, C)
    nv = T.shape[1] - 1
    L.build(T, obj, basis, muT, alpha, cap)
    assert L.primal(T, obj, basis) >= 0
    sup = np.zeros((C, N), dtype=np.bool_)
    for step in range(40):
        c = int(rng.integers(C))
        L.set_cap(T, obj, cap, N, c, float(rng.integers(0, 5)))
        if cap.sum() == 0:
            continue
        assert L.dual(T, obj, basis) >= 0
        if step % 10 == 9:  # the refactored tableau is the same optimum
            assert L.refactor(T, obj, basis, muT, alpha, cap)
        _, lam = L.support(T, basis, muT, sup)
        x = np.zeros(nv)
        x[basis] = T[:, nv]
        d = x[: N * C].reshape(N, C)
        assert (d >= -1e-9).all()
        assert (d.sum(axis=0) <= cap + 1e-9).all()
        assert ((d * mu).sum(axis=1) >= lam * alpha - 1e-7).all()
        if all((mu[i] * cap).sum() > 0 for i in range(N)):
            ref = solve_allocation(mu, alpha, a=(cap > 0).astype(float), counts=np.maximum(cap, 1))
            assert lam == pytest.approx(ref.lam, rel=1e-7, abs=1e-9)
        assert (sup.T == (d > 1e-9)).all()
    # number of nonzeros of a vertex: at most N + C - 1 (Proposition 2.2.1)
    assert sup.sum() <= N + C - 1


def test_support_reports_changes():
    mu = np.array([[9.0, 5.0], [2.0, 1.0]])
    muT = np.ascontiguousarray(mu.T)
    T, obj, basis = _tableau(2, 2)
    L.build(T, obj, basis, muT, np.array([1.0, 1.5]), np.ones(2))
    L.primal(T, obj, basis)
    sup = np.zeros((2, 2), np.bool_)
    changed, lam = L.support(T, basis, muT, sup)
    assert changed and lam == pytest.approx(solve_allocation(mu, np.array([1.0, 1.5])).lam)
    changed, _ = L.support(T, basis, muT, sup)
    assert not changed


def _vertex_support(mu, alpha, cap):
    sup = np.zeros(mu.shape, np.bool_)
    basis = np.zeros(sum(mu.shape), np.int64)
    lam, piv, _ = L.solve_vertex(np.asarray(alpha, float), np.ascontiguousarray(mu), np.asarray(cap, float), sup,
                                 basis, False)
    assert piv >= 0
    return sup, lam


def test_per_machine_vertex_reproduces_thesis_example():
    """§3.3, second example: delta* supports printed before and after machine 2 fails."""
    s = load("3.3-ex2")
    sup, lam = _vertex_support(s.mu, s.alpha_array, np.ones(4))
    assert lam == pytest.approx(2.0513, abs=1e-4)
    assert (sup.astype(int) == [[1, 1, 1, 1], [0, 1, 0, 0], [0, 1, 0, 0]]).all()
    sup, lam = _vertex_support(s.mu, s.alpha_array, [1.0, 0.0, 1.0, 1.0])
    assert lam == pytest.approx(1.0306, abs=1e-4)
    assert (sup.astype(int) == [[1, 0, 1, 1], [0, 0, 0, 1], [0, 0, 1, 0]]).all()


@pytest.mark.parametrize("sid,arr", [("4.2-ex", None), ("4.2-ex", "changed"), ("4.A", None)])
def test_view_lp_matches_highs(sid, arr):
    s = load(sid, arrivals=arr) if arr else load(sid)
    A, mu = per_machine_alpha(s), np.ascontiguousarray(s.mu_effective)
    sup, lam = _vertex_support(mu, A.sum(1), np.ones(mu.shape[1]))
    ref = solve_allocation(mu, A.sum(1))
    assert lam == pytest.approx(ref.lam, rel=1e-12)
    assert (~sup).sum() >= ref.target_zeros  # a vertex (Proposition 2.2.1)
    if sid == "4.2-ex":  # §4.2: both views give delta* = [[0, +], [1, +]]
        assert sup.tolist() == [[False, True], [True, True]]


def test_warm_start_equals_cold():
    s = load("4.A")
    A, mu = per_machine_alpha(s), np.ascontiguousarray(s.mu_effective)
    M = mu.shape[1]
    rng = np.random.default_rng(3)
    basis = np.zeros(sum(mu.shape), np.int64)
    L.solve_vertex(A.sum(1), mu, np.ones(M), np.zeros(mu.shape, bool), basis, False)
    warm = 0
    for _ in range(30):
        mu2 = np.ascontiguousarray(mu * rng.choice([1.0, 1.05, 1.15], size=mu.shape))
        A2 = A * rng.choice([1.0, 1.1, 1.2], size=A.shape)
        s_w = np.zeros(mu.shape, bool)
        lam_w, piv_w, used = L.solve_vertex(A2.sum(1), mu2, np.ones(M), s_w, basis, True)
        warm += used
        assert piv_w >= 0 and lam_w == pytest.approx(solve_allocation(mu2, A2.sum(1)).lam, rel=1e-9)
        assert (~s_w).sum() >= mu.size + 1 - sum(mu.shape)
    assert warm > 0


@pytest.mark.parametrize("sid", ["4.A", "4.B2"])
def test_structured_simplex_reaches_the_lp_optimum(sid):
    """From an old optimal basis, the O(NM)-per-pivot simplex ends at HiGHS's lambda* and a vertex."""
    s = load(sid)
    A, mu = per_machine_alpha(s), np.ascontiguousarray(s.mu_effective)
    N, M = mu.shape
    rng = np.random.default_rng(7)
    basis = np.zeros(N + M, np.int64)
    sup = np.zeros(mu.shape, bool)
    L.solve_vertex(A.sum(1), mu, np.ones(M), sup, basis, False)
    done = 0
    for _ in range(12 if sid == "4.A" else 4):
        f = rng.choice([0.35, 0.5, 1.0, 1.6], size=M)  # CPU-availability-like column scalings
        mu2 = np.ascontiguousarray(mu * f[None, :])
        b2 = basis.copy()
        piv = L.gub_simplex(A.sum(1), mu2, b2, sup, 500)
        if piv < 0:
            continue
        done += 1
        ref = solve_allocation(mu2, A.sum(1))
        # the support carries the optimum: HiGHS restricted to it gives the same lambda*
        cap = solve_allocation(np.where(sup, mu2, 0.0), A.sum(1)).lam
        assert cap == pytest.approx(ref.lam, rel=1e-9)
        assert (~sup).sum() >= ref.target_zeros
    assert done >= 1
