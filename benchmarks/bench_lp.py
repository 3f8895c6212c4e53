"""Allocation LP benchmarks.

1. System 3.F (3,000 machines in groups): the group-aggregated solve that
   hetsched uses by default vs the same LP solved per machine (HiGHS simplex);
   target under 5 ms.
2. A dense random system (20 classes; 100,000 machines, 10,000 with --quick):
   hetsched's dual route (class prices from subsamples + contested-machine LP,
   certified exact) vs plain HiGHS interior point on the full LP.
Times are medians of repeats, both sides in this process.
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np

from hetsched.lp import allocation_lp, solve_allocation
from hetsched.scenarios import load


def _median_time(fn, repeats):
    ts, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), out


def _highs_ipm(mu, alpha):
    """The full LP by HiGHS interior point (with crossover), no structure used."""
    import highspy
    import scipy.sparse as sp

    N, M = mu.shape
    K = N * M
    ii, jj = np.meshgrid(np.arange(N), np.arange(M), indexing="ij")
    ii, jj = ii.ravel(), jj.ravel()
    rows = np.concatenate([ii, N + jj, np.arange(N)])
    cols = np.concatenate([np.arange(K), np.arange(K), np.full(N, K)])
    vals = np.concatenate([-mu.ravel(), np.ones(K), alpha])
    A = sp.csc_matrix((vals, (rows, cols)), shape=(N + M, K + 1))
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = K + 1, N + M
    lp.col_cost_ = np.concatenate([np.zeros(K), [1.0]])
    lp.col_lower_ = np.concatenate([np.zeros(K), [-highspy.kHighsInf]])
    lp.col_upper_ = np.full(K + 1, highspy.kHighsInf)
    lp.row_lower_ = np.full(N + M, -highspy.kHighsInf)
    lp.row_upper_ = np.concatenate([np.zeros(N), np.ones(M)])
    lp.sense_ = highspy.ObjSense.kMaximize
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = A.indptr, A.indices, A.data
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("solver", "ipm")
    h.passModel(lp)
    h.run()
    return float(h.getSolution().col_value[K])


def main(quick: bool = False) -> list[dict]:
    rows = []
    s = load("3.F", case=2)
    t_grp, r = _median_time(lambda: allocation_lp(s), 21)
    t_flat, r2 = _median_time(lambda: allocation_lp(s, grouped=False), 3)
    assert abs(r.lam - r2.lam) < 1e-7
    rows.append({"benchmark": "lp 3.F (3,000 machines, case 2)", "metric": "seconds per solve (median)",
                 "hetsched": t_grp, "reference": t_flat, "ratio": t_flat / t_grp,
                 "note": f"grouped vs per-machine HiGHS simplex; target < 5 ms; lambda*={r.lam:.4f}"})
    M = 10_000 if quick else 100_000
    N = 20
    rng = np.random.default_rng(2009)
    mu = rng.uniform(0.1, 10, (N, M))
    alpha = rng.uniform(0.5, 2, N) * M / N
    t_dual, rd = _median_time(lambda: solve_allocation(mu, alpha, method="dual"), 3 if quick else 1)
    t_ipm, lam_ipm = _median_time(lambda: _highs_ipm(mu, alpha), 1)
    rel = (lam_ipm - rd.lam) / lam_ipm
    cert = "certified optimal" if rd.status == 0 else f"NOT certified ({rd.message})"
    rows.append({"benchmark": f"lp dense random {N} x {M:,}", "metric": "seconds per solve",
                 "hetsched": t_dual, "reference": t_ipm, "ratio": t_ipm / t_dual,
                 "note": f"dual route vs plain HiGHS IPM on the full LP; {cert}; "
                         f"lambda* {rd.lam:.9g} vs IPM {lam_ipm:.9g} (rel. diff {rel:.1e})"})
    return rows


if __name__ == "__main__":
    for row in main(quick="--quick" in sys.argv):
        print(row)
