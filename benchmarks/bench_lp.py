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
   * a scaling sweep: the exponent ``b`` of ``time ~ M^b`` fitted by least
     squares on log-log times, for the default route (M = 12,500 ... 100,000;
     1,250 ... 10,000 with ``--quick``; medians of 3) and for HiGHS IPM
     (M = 1,250, 2,500, 5,000, 10,000, and 100,000 with ``--full``; one solve each),
     on CPU seconds (wall seconds on a shared machine include waiting for a core).
Rows 2 report wall seconds (the targets' unit) and, in the note, CPU seconds.
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
    """Median wall seconds of ``repeats`` calls and the last result."""
    t, _cpu, out = _median_times(fn, repeats)
    return t, out


def _median_times(fn, repeats):
    """Median wall and CPU seconds (all threads of this process) of ``repeats`` calls.

    On a shared, loaded machine the wall time includes waiting for a core; the
    CPU time does not, so both are reported for the dense LPs.
    """
    ts, cs, out = [], [], None
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        ts.append(time.perf_counter() - t0)
        cs.append(time.process_time() - c0)
    return statistics.median(ts), statistics.median(cs), out


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
    t_hs, c_hs, r = _median_times(lambda: solve_allocation(mu, alpha), repeats)
    cert = "certified optimal" if r.status == 0 else f"NOT certified ({r.message})"
    note = (f"default route ({r.solver.split(':')[0]}; {cert}, gap {r.residuals['duality_gap']:.1e}) "
            f"vs HiGHS IPM on the full LP; seed {SEED}; median of {repeats}; CPU s {c_hs:.3g}")
    row = {"benchmark": f"lp dense random {N_CLASSES} x {M:,}", "metric": "wall seconds per solve",
           "size": f"{N_CLASSES} x {M:,}, default_rng({SEED})", "hetsched": t_hs, "reference": None, "ratio": None,
           "cpu": c_hs, "target": "certified, < 10 s" if M >= 100_000 else "certified, ratio >= 10"}
    if with_ipm:
        t_ipm, c_ipm, lam_ipm = _median_times(lambda: _highs_ipm(mu, alpha), 1)
        row.update(reference=t_ipm, ratio=t_ipm / t_hs, cpu_reference=c_ipm)
        note += (f" vs {c_ipm:.3g} (CPU ratio {c_ipm / c_hs:.3g}); lambda* {r.lam:.10g} vs IPM {lam_ipm:.10g} "
                 f"(rel. diff {(lam_ipm - r.lam) / lam_ipm:.1e})")
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
    rows.append({"benchmark": "lp 3.F (3,000 machines, case 2)", "size": "scenario 3.F case 2, 10 x 3,000",
                 "metric": "seconds per solve (median)",
                 "hetsched": t_grp, "reference": t_flat, "ratio": t_flat / t_grp,
                 "target": "< 5 ms", "target_met": t_grp < 0.005,
                 "note": f"grouped vs per-machine HiGHS simplex; target < 5 ms; lambda*={r.lam:.4f}"})
    solve_allocation(*dense_instance(5_000))  # load the compiled kernels before timing
    ipm_times: dict[int, float] = {}  # CPU seconds
    for M in [10_000, 100_000]:  # issue 17's two rows, also in --quick (100,000: one solve, no IPM)
        row = _dense_row(M, 1 if quick and M > 10_000 else 3, with_ipm=M <= 10_000 or full)
        rows.append(row)
        if row["reference"] is not None:
            ipm_times[M] = row["cpu_reference"]
    # scaling sweep: the default route on growing M, HiGHS IPM on the smaller sizes
    # (plus the 10,000 / 100,000 solves above)
    sizes = [1_250, 2_500, 5_000, 10_000] if quick else [12_500, 25_000, 50_000, 100_000]
    t_route = []
    for M in sizes:
        mu, alpha = dense_instance(M)
        t_route.append(_median_times(lambda: solve_allocation(mu, alpha), 3)[1])
    for M in [1_250, 2_500, 5_000]:
        mu, alpha = dense_instance(M)
        ipm_times[M] = _median_times(lambda: _highs_ipm(mu, alpha), 1)[1]
    ipm_sizes = sorted(ipm_times)
    t_ipm = [ipm_times[m] for m in ipm_sizes]
    b_route, b_ipm = _exponent(sizes, t_route), _exponent(ipm_sizes, t_ipm)
    rows.append({"benchmark": f"lp scaling, {N_CLASSES} x M", "size": f"{N_CLASSES} x M, default_rng({SEED})",
                 "metric": "exponent b of CPU time ~ M^b",
                 "hetsched": b_route, "reference": b_ipm, "ratio": None,
                 "note": "default route, M = " + ", ".join(f"{m:,}" for m in sizes) + ": "
                         + ", ".join(f"{t:.3g}" for t in t_route) + " CPU s (medians of 3) vs HiGHS IPM, M = "
                         + ", ".join(f"{m:,}" for m in ipm_sizes) + ": " + ", ".join(f"{t:.3g}" for t in t_ipm)
                         + " s; least squares on log-log; seed 2009"})
    return rows


if __name__ == "__main__":
    for row in main(quick="--quick" in sys.argv, full="--full" in sys.argv):
        print(row)
