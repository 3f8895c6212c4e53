"""The per-machine vertex of LPAS_DG's LP expanded from the grouped LP (thesis §3.3; Systems 3.F, 3.G).

Certificates, not pinned numbers: the expanded solution of System 3.F is feasible, has the thesis's
zero count ``NM + 1 - N - M``, reaches HiGHS's ``lambda*`` of the per-machine LP (optimal), and its
nonzero columns form a nonsingular basis (a vertex); the kernel's machine supports and idle lists
equal what the plain-Python expansion and the list invariants say, after many availability events.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.linalg import splu

from hetsched.errors import ModelError
from hetsched.lp import solve_allocation
from hetsched.scenarios import load
from hetsched.lp.tableau import LP_TOL
from hetsched.sim.desktop import kernel as K
from hetsched.sim.desktop import layout as L
from hetsched.sim.desktop import one_run, prepare
from hetsched.sim.desktop.expand import grouped_to_machines, staircase
from hetsched.sim.desktop.run import fresh_state


def _grouped_x(lp, m, N, C):
    """``x[i, c]`` of the kernel's current grouped tableau."""
    x = np.zeros((N, C))
    nv = lp.T.shape[1] - 1
    for r, k in enumerate(lp.basis):
        if k < N * C and lp.T[r, nv] > LP_TOL:
            i, c = divmod(int(k), C)
            if m.mu_colT[c, i] > 0:
                x[i, c] = lp.T[r, nv]
    return x


def _state_after(system, horizon, **kw):
    """Kernel state at ``horizon`` (``None``: right after the initial state)."""
    p = prepare(system, "lpas-dg", horizon=horizon or 1.0, **kw)
    assert p.grouping == "expanded"
    init, run = K.kernels(p.code)
    m, s, lp, ev, st, out = fresh_state(p, np.random.SeedSequence(5))
    assert init(m, s, lp, ev, st, out) == L.DONE
    if horizon is not None:
        assert run(m, s, lp, ev, st, out) == L.DONE
    return p, m, s, lp, out


def test_staircase_splits_a_group():
    """Amounts of 1.5, 0 and 2.5 machine units over 5 machines of capacity 0.5: a staircase, the last
    machine unused (slack)."""
    d = staircase(np.array([0.75, 0.0, 1.25]), 5, 0.5)
    assert np.allclose(d.sum(axis=1), [0.75, 0.0, 1.25]) and np.allclose(d.sum(axis=0), [0.5, 0.5, 0.5, 0.5, 0])
    assert np.array_equal(d > 0, [[1, 1, 0, 0, 0], [0, 0, 0, 0, 0], [0, 1, 1, 1, 0]])


def test_expanded_3F_is_an_optimal_vertex_with_the_thesis_zero_count():
    s = load("3.F", case=1)
    p, m, st_, lp, out = _state_after(s, None)
    N, M, C = p.N, p.M, p.C
    x = _grouped_x(lp, m, N, C)
    a = np.asarray(s.a, float)
    delta = grouped_to_machines(x, m.col, a)
    lam = float(out.lam[0])
    mu = np.asarray(s.mu, float)
    alpha = s.alpha_array
    # feasible: machine capacities, class demands at lam
    assert (delta >= 0).all() and (delta.sum(axis=0) <= a + 1e-9).all()
    assert ((mu * delta).sum(axis=1) >= lam * alpha * (1 - 1e-9)).all()
    # optimal: the per-machine LP's optimum by HiGHS
    assert lam == pytest.approx(solve_allocation(mu, alpha, a=a).lam, rel=1e-9)
    # the thesis's count: exactly NM + 1 - N - M zeros
    nz = delta > 1e-12
    assert N * M - nz.sum() == N * M + 1 - N - M
    # a vertex: the N + M columns (nonzero delta_ij and lam) of [class rows; machine rows] are a basis
    rows, cols, vals = [], [], []
    for k, (i, j) in enumerate(zip(*np.nonzero(nz))):
        rows += [i, N + j]
        cols += [k, k]
        vals += [-mu[i, j], 1.0]
    k = int(nz.sum())
    rows += list(range(N))
    cols += [k] * N
    vals += list(alpha)
    B = sp.csc_matrix((vals, (rows, cols)), shape=(N + M, k + 1))
    assert B.shape[0] == B.shape[1]
    splu(B)  # raises RuntimeError "Factor is exactly singular" otherwise
    # the kernel's machine supports are this expansion's
    assert np.array_equal(lp.msup, nz.T)


UPKEEP = [("3.F", dict(case=1), 1.0, {}),
          ("3.A", dict(arrivals="alpha1", case=5), 300.0, {"lp_grouping": "expanded"}),
          ("3.A", dict(arrivals="alpha1", case=3), 300.0, {"lp_grouping": "expanded", "lp_order": "reverse"}),
          ("3.A", dict(arrivals="alpha1", case=3), 300.0, {"lp_grouping": "expanded", "machine_rule": "fastest"}),
          ("3.A", dict(arrivals="alpha1", case=5), 300.0, {"lp_grouping": "expanded", "tie": "lowest",
                                                             "resubmit": "back", "lp_order": 4})]


@pytest.mark.parametrize("sid,load_kw,horizon,kw", UPKEEP)
def test_kernel_keeps_supports_and_idle_lists_exact(sid, load_kw, horizon, kw):
    """After hundreds of availability events the incremental upkeep equals a fresh expansion of the
    kernel's grouped tableau over the machines up now, and every idle list is sorted and complete."""
    s = load(sid, **load_kw)
    p, m, st_, lp, out = _state_after(s, horizon, **kw)
    assert out.avail_events[0] > 100 and out.support_changes[0] > 0
    N, M, C = p.N, p.M, p.C
    up = st_.mi[:, L.UP] == 1
    a = st_.mf[:, L.AEST]
    x = _grouped_x(lp, m, N, C)
    delta = grouped_to_machines(x, m.col, a, up, order=m.gmem)
    assert np.array_equal(lp.msup, (delta > 1e-12).T)
    assert (~lp.msup[~up]).all()
    idle = up & (st_.mi[:, L.BUSY] < 0)
    for c in range(C):
        for i in range(N):
            members = []
            j = lp.xhead[c, i]
            while j >= 0:
                members.append(j)
                j = lp.xnext[j, i]
            want = [j for j in np.flatnonzero(idle & (m.col == c) & lp.msup[:, i])]
            assert sorted(members) == want and lp.xcnt[c, i] == len(want)
            keys = [(st_.mf[j, L.IDLE_SINCE], lp.irank[j]) for j in members]
            assert keys == sorted(keys)
            assert lp.xninit[c, i] == sum(st_.mi[j, L.INIT] == 1 for j in members)
    # a machine that may take a waiting class is not idle (the pull invariant)
    waiting = st_.pool.qlen > 0
    assert not (lp.msup[idle][:, waiting]).any()


def test_reading_options():
    big, small = load("3.F", case=1), load("3.A", arrivals="alpha1", case=3)
    p = prepare(big, "lpas-dg")
    assert p.grouping == "expanded" and p.options["lp_solution"] == "vertex"
    assert prepare(big, "lpas-dg", lp_solution="symmetric").grouping == "groups"
    assert prepare(small, "lpas-dg").grouping == "machines"
    assert prepare(small, "lpas-dg", lp_grouping="groups").options["lp_solution"] == "symmetric"
    with pytest.raises(ModelError, match="lp_solution"):
        prepare(small, "lpas-dg", lp_solution="central")
    with pytest.raises(ModelError, match="contradicts"):
        prepare(small, "lpas-dg", lp_solution="vertex", lp_grouping="groups")
    with pytest.raises(ModelError, match="MiB"):
        prepare(big, "lpas-dg", inaccuracy=0.1)


def test_symmetric_reading_changes_lpas_dg_only():
    """lp_solution changes which LP solution LPAS_DG reads; FCFS and Gcmu are unchanged bit for bit."""
    s = load("3.A", arrivals="alpha1", case=3)
    for pol in ("fcfs", "gcmu"):
        a = one_run(s, pol, seed=3, horizon=50.0, lp_grouping="expanded")
        b = one_run(s, pol, seed=3, horizon=50.0, lp_solution="symmetric")
        assert a["W"] == b["W"] and a["events"] == b["events"]
    v = one_run(s, "lpas-dg", seed=3, horizon=50.0, lp_grouping="expanded")
    g = one_run(s, "lpas-dg", seed=3, horizon=50.0, lp_solution="symmetric")
    assert v["lambda"] == pytest.approx(g["lambda"], rel=1e-9)  # the same LP optimum, other solutions
    assert v["support_nonzeros"] <= s.N + s.M - 1 < g["support_nonzeros"]
    assert v["W"] != g["W"]


def test_chapter_3_experiments_pass_the_reading(tmp_path):
    """``--set lp_solution=...`` reaches every cell (and the tie rule with it); a cell that sets its own
    LP reading keeps it."""
    from hetsched.experiments import RunOptions
    from hetsched.experiments.thesis_ch3 import _Cells

    opts = RunOptions(quick=True, outdir=tmp_path, progress=False, workers=1,
                      extra={"lp_solution": "symmetric", "tie": "lowest"})
    cells = _Cells(opts, "t")
    s = load("3.A", arrivals="alpha1", case=3)
    cells.add(("a",), s, "lpas-dg", 1, 1.0)
    cells.add(("b",), s, "lpas-dg", 1, 1.0, lp_grouping="machines")
    a = cells.cells[("a",)].planned.job.params
    b = cells.cells[("b",)].planned.job.params
    assert a.options["lp_solution"] == "symmetric" and a.grouping == "groups" and a.options["tie"] == "lowest"
    assert b.options["lp_solution"] == "vertex" and b.grouping == "machines" and b.options["tie"] == "lowest"
