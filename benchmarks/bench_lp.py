"""Allocation LP benchmarks (issue 17, LP rows).

1. System 3.F (3,000 machines in groups, case 2): the group-aggregated solve
   that hetsched uses by default vs the same LP solved per machine by HiGHS
   simplex; target under 5 ms.
2. Dense random systems, 20 classes: ``mu ~ U(0.1, 10)``, ``alpha ~ U(0.5, 2) * M / N``
   drawn by ``numpy.random.default_rng(2009)`` (mu first, then alpha), for M machines.
   hetsched's default route (``solve_allocation(mu, alpha)``: the price route,
   certified by duality or replaced by HiGHS) vs plain HiGHS interior point
   (with crossover, its defaults) on the whole LP, both in this process:
   * M = 10,000: median of 3 default-route solves vs one IPM solve (target >= 10x);
   * M = 100,000: median of 3 default-route solves (target < 10 s); the IPM
     reference on it takes minutes, so it runs only with ``--full``
     (``python benchmarks/run.py lp --full``); without it that row has no ratio;
   * a scaling sweep (M = 12,500 ... 100,000; 1,250 ... 10,000 with
     ``--quick``): the exponent ``b`` of ``time ~ M^b`` fitted by least squares
     on log-log medians, for the default route and for HiGHS IPM on the
     smaller half of the sweep.
``--quick`` keeps everything at or below 10,000 machines.
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np

from hetsched.lp import allocation_lp, solve_allocation
from hetsched.scenarios import load

SEED = 2009
N_CLASSES = 20


def _median_time(fn, repeats):
    ts, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), out


def dense_instance(M: int, N: int = N_CLASSES, seed: int = SEED):
    """The benchmark's random LP: rates U(0.1, 10), arrival rates U(0.5, 2) * M / N."""
    rng = np.random.default_rng(seed)
    mu = rng.uniform(0.1, 10, (N, M))
    alpha = rng.uniform(0.5, 2, N) * M / N
    return mu, alpha


def _highs_ipm(mu, alpha):
    """The full LP by HiGHS interior point (its defaults, crossover on), no structure used."""
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


def _exponent(ms, ts) -> float:
    return float(np.polyfit(np.log(ms), np.log(ts), 1)[0])


def _dense_row(M: int, repeats: int, with_ipm: bool) -> dict:
    mu, alpha = dense_instance(M)
    t_hs, r = _median_time(lambda: solve_allocation(mu, alpha), repeats)
    cert = "certified optimal" if r.status == 0 else f"NOT certified ({r.message})"
    note = (f"default route ({r.solver.split(':')[0]}; {cert}, gap {r.residuals['duality_gap']:.1e}) "
            f"vs HiGHS IPM on the full LP; seed {SEED}; median of {repeats}")
    row = {"benchmark": f"lp dense random {N_CLASSES} x {M:,}", "metric": "seconds per solve",
           "hetsched": t_hs, "reference": None, "ratio": None}
    if with_ipm:
        t_ipm, lam_ipm = _median_time(lambda: _highs_ipm(mu, alpha), 1)
        row.update(reference=t_ipm, ratio=t_ipm / t_hs)
        note += f"; lambda* {r.lam:.10g} vs IPM {lam_ipm:.10g} (rel. diff {(lam_ipm - r.lam) / lam_ipm:.1e})"
    else:
        note += "; IPM reference not run (minutes): python benchmarks/run.py lp --full"
    row["note"] = note
    row["target_met"] = r.status == 0 and (t_hs < 10.0 if M >= 100_000 else (row["ratio"] or 0) >= 10)
    return row


def main(quick: bool = False, full: bool | None = None) -> list[dict]:
    if full is None:
        full = "--full" in sys.argv
    rows = []
    s = load("3.F", case=2)
    t_grp, r = _median_time(lambda: allocation_lp(s), 21)
    t_flat, r2 = _median_time(lambda: allocation_lp(s, grouped=False, method="highs"), 3)
    assert abs(r.lam - r2.lam) < 1e-7
    rows.append({"benchmark": "lp 3.F (3,000 machines, case 2)", "metric": "seconds per solve (median)",
                 "hetsched": t_grp, "reference": t_flat, "ratio": t_flat / t_grp,
                 "note": f"grouped vs per-machine HiGHS simplex; target < 5 ms; lambda*={r.lam:.4f}"})
    solve_allocation(*dense_instance(5_000))  # load the compiled kernels before timing
    rows.append(_dense_row(10_000, 3, with_ipm=True))
    if not quick:
        rows.append(_dense_row(100_000, 3, with_ipm=full))
    # scaling sweep
    sizes = [1_250, 2_500, 5_000, 10_000] if quick else [12_500, 25_000, 50_000, 100_000]
    t_route, t_ipm = [], []
    for M in sizes:
        mu, alpha = dense_instance(M)
        t_route.append(_median_time(lambda: solve_allocation(mu, alpha), 3)[0])
    ipm_sizes = sizes[:2] if not quick else sizes
    for M in ipm_sizes:
        mu, alpha = dense_instance(M)
        t_ipm.append(_median_time(lambda: _highs_ipm(mu, alpha), 1)[0])
    b_route, b_ipm = _exponent(sizes, t_route), _exponent(ipm_sizes, t_ipm)
    rows.append({"benchmark": f"lp scaling, {N_CLASSES} x M, M = {sizes[0]:,}..{sizes[-1]:,}",
                 "metric": "exponent b of time ~ M^b", "hetsched": b_route, "reference": b_ipm, "ratio": None,
                 "note": "default route (medians of 3: " + ", ".join(f"{t:.3g}" for t in t_route) + " s) vs HiGHS "
                         f"IPM (M = {ipm_sizes[0]:,}..{ipm_sizes[-1]:,}: " + ", ".join(f"{t:.3g}" for t in t_ipm)
                         + " s); seed 2009"})
    return rows


if __name__ == "__main__":
    for row in main(quick="--quick" in sys.argv, full="--full" in sys.argv):
        print(row)
