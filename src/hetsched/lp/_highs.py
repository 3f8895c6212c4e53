"""The HiGHS route: the whole allocation LP by HiGHS, and the price route's master LP.

:func:`highs_full` builds the LP as written (one column per runnable pair, then
``lam``) and runs HiGHS simplex (a basic solution) or interior point without
crossover (the central solution); :class:`Master` keeps the price route's
restricted master LP in one HiGHS instance, re-solved warm as rows and
columns are added. Arrays in, arrays out; no validation here (see
:mod:`hetsched.lp._solve`).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def new_highs():
    import highspy

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    return h


def tight(h) -> None:
    """Simplex feasibility tolerances 1e-10 instead of HiGHS's 1e-7, so that a class
    whose demand is small beside the others' (best rates per unit of arrival rate
    differing by up to 1e7) stays resolved and certified."""
    h.setOptionValue("primal_feasibility_tolerance", 1e-10)
    h.setOptionValue("dual_feasibility_tolerance", 1e-10)


def highs_full(rates: np.ndarray, alpha: np.ndarray, cap: np.ndarray, solution: str, careful: bool,
               ipm: bool = False):
    """The whole LP by HiGHS: max lam s.t. sum_j rates_ij d_ij >= lam alpha_i, sum_i d_ij <= cap_j.

    Only pairs with ``rates_ij > 0`` are columns (then lam). Vertex solutions
    by simplex, or (``ipm``) by interior point and crossover (a basic solution
    too; much faster than simplex on large dense LPs). ``careful`` (the
    retry): simplex feasibility tolerances 1e-10 (:func:`tight`), and IPM
    without presolve (which leaves HiGHS's IPM without an answer on LPs it
    reduces to nothing, e.g. one class). Returns ``(ok, d, lam, w,
    iters, status_text)``; ``w`` are the class-row duals (``alpha.w = 1`` at an
    optimum).
    """
    import highspy

    N, M = rates.shape
    nz_i, nz_j = np.nonzero(rates > 0)
    K = len(nz_i)
    # class rows 0..N-1: lam alpha_i - sum_j rates_ij d_ij <= 0; machine rows N..N+M-1: sum_i d_ij <= cap_j
    rows = np.concatenate([nz_i, N + nz_j, np.arange(N)])
    cols = np.concatenate([np.arange(K), np.arange(K), np.full(N, K)])
    vals = np.concatenate([-rates[nz_i, nz_j], np.ones(K), alpha])
    A = sp.csc_matrix((vals, (rows, cols)), shape=(N + M, K + 1))
    lp = highspy.HighsLp()
    lp.num_col_ = K + 1
    lp.num_row_ = N + M
    lp.col_cost_ = np.concatenate([np.zeros(K), [1.0]])
    lp.col_lower_ = np.concatenate([np.zeros(K), [-highspy.kHighsInf]])
    lp.col_upper_ = np.full(K + 1, highspy.kHighsInf)
    lp.row_lower_ = np.full(N + M, -highspy.kHighsInf)
    lp.row_upper_ = np.concatenate([np.zeros(N), cap])
    lp.sense_ = highspy.ObjSense.kMaximize
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = A.indptr
    lp.a_matrix_.index_ = A.indices
    lp.a_matrix_.value_ = A.data
    h = new_highs()
    if solution == "central":
        h.setOptionValue("solver", "ipm")
        h.setOptionValue("run_crossover", "off")
        h.setOptionValue("ipm_optimality_tolerance", 1e-10)
        if careful:
            h.setOptionValue("presolve", "off")
    else:
        h.setOptionValue("solver", "ipm" if ipm else "simplex")
        if careful:
            tight(h)
            if ipm:
                h.setOptionValue("presolve", "off")
    h.passModel(lp)
    h.run()
    status = h.getModelStatus()
    info = h.getInfo()
    iters = int(info.ipm_iteration_count) + int(info.crossover_iteration_count) if solution == "central" or ipm \
        else int(info.simplex_iteration_count)
    if status != highspy.HighsModelStatus.kOptimal:
        return False, None, float("nan"), None, iters, h.modelStatusToString(status)
    sol = h.getSolution()
    x = np.asarray(sol.col_value)
    d = np.zeros((N, M))
    d[nz_i, nz_j] = np.clip(x[:K], 0, None)
    y = np.clip(np.asarray(sol.row_dual)[:N], 0, None)
    return True, d, float(x[K]), y, iters, "Optimal"


class Master:
    """Restricted master LP of the price route, kept in one HiGHS instance.

    ``max lam`` s.t. ``lam - sum_(i,j) in pairs nu_ij d_ij <= base_i`` (class rows
    ``0..N-1``) and ``sum_i d_ij <= cap_j`` for the contested machines (rows
    ``N..``). ``base_i`` is the capacity the decided machines give class ``i``.
    Rows and columns are appended between solves; HiGHS keeps its basis, so
    each re-solve starts from the previous optimum (warm start).
    """

    def __init__(self, base: np.ndarray):
        import highspy

        self._hs = highspy
        N = len(base)
        self.N = N
        self.h = h = new_highs()
        h.setOptionValue("solver", "simplex")
        tight(h)
        lp = highspy.HighsLp()
        lp.num_col_, lp.num_row_ = 1, N
        lp.col_cost_ = np.array([1.0])
        lp.col_lower_ = np.array([-highspy.kHighsInf])
        lp.col_upper_ = np.array([highspy.kHighsInf])
        lp.row_lower_ = np.full(N, -highspy.kHighsInf)
        lp.row_upper_ = np.asarray(base, dtype=float)
        lp.sense_ = highspy.ObjSense.kMaximize
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.start_ = np.array([0, N], dtype=np.int32)
        lp.a_matrix_.index_ = np.arange(N, dtype=np.int32)
        lp.a_matrix_.value_ = np.ones(N)
        h.passModel(lp)
        self.base = np.asarray(base, dtype=float).copy()
        self.machines = np.empty(0, dtype=np.int64)  # machine of each row N + k
        self.pi = np.empty(0, dtype=np.int64)  # class of each pair column
        self.pj = np.empty(0, dtype=np.int64)  # machine of each pair column
        self.iterations = 0

    def add_machines(self, js: np.ndarray, cap: np.ndarray) -> np.ndarray:
        """Append rows for machines ``js``; returns their row indices."""
        n = len(js)
        first = self.N + len(self.machines)
        if n:
            self.h.addRows(n, np.full(n, -self._hs.kHighsInf), cap[js].astype(float), 0,
                           np.zeros(n, dtype=np.int32), np.empty(0, dtype=np.int32), np.empty(0))
            self.machines = np.concatenate([self.machines, js])
        return first + np.arange(n)

    def add_pairs(self, ii: np.ndarray, rows: np.ndarray, jj: np.ndarray, vals: np.ndarray) -> None:
        n = len(ii)
        if n == 0:
            return
        idx = np.empty(2 * n, dtype=np.int32)
        idx[0::2], idx[1::2] = ii, rows
        val = np.empty(2 * n)
        val[0::2], val[1::2] = -vals, 1.0
        self.h.addCols(n, np.zeros(n), np.zeros(n), np.full(n, self._hs.kHighsInf), 2 * n,
                       np.arange(0, 2 * n, 2, dtype=np.int32), idx, val)
        self.pi = np.concatenate([self.pi, ii])
        self.pj = np.concatenate([self.pj, jj])

    def set_base(self, base: np.ndarray) -> None:
        self.base = np.asarray(base, dtype=float).copy()
        self.h.changeRowsBounds(self.N, np.arange(self.N, dtype=np.int32), np.full(self.N, -self._hs.kHighsInf),
                                self.base)

    def solve(self):
        """Returns (status text, lam, pair values, class duals y, machine duals v)."""
        h = self.h
        h.run()
        st = h.getModelStatus()
        self.iterations += int(h.getInfo().simplex_iteration_count)
        if st != self._hs.HighsModelStatus.kOptimal:
            return h.modelStatusToString(st), None, None, None, None
        sol = h.getSolution()
        x = np.asarray(sol.col_value)
        rd = np.asarray(sol.row_dual)
        return "Optimal", float(x[0]), np.clip(x[1:], 0, None), np.clip(rd[: self.N], 0, None), \
            np.clip(rd[self.N:], 0, None)
