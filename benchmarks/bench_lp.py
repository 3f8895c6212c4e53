"""Allocation LP benchmarks (issue 17 and issue 24's LP rows).

Instances ("dense random N x M"): ``mu ~ U(0.1, 10)`` (N x M), then
``alpha ~ U(0.5, 2) * M / N``, drawn in that order by
``numpy.random.default_rng(2009)``; every machine can run every class.

1. System 3.F (3,000 machines in groups, case 2): the group-aggregated solve
   that hetsched uses by default vs the same LP solved per machine by HiGHS
   simplex; target under 5 ms.
2. Shapes (issue 24: ">= 1.0x HiGHS IPM on every shape, certified"): the
   default route (``solve_allocation(mu, alpha)``: the route picked by shape,
   certified by duality) vs plain HiGHS interior point (its defaults: presolve,
   crossover) on the whole LP, both in this process, on 20 x 100,000,
   200 x 100,000 and 500 x 500 (``--quick``: 20 x 10,000, 200 x 10,000,
   500 x 500). Columns: CPU seconds of this process (all threads; on a shared
   machine wall seconds include waiting for a core, so they are in the note).
   hetsched: median of 3 solves (1 above 10^7 pairs); IPM: one solve (it takes
   minutes on the large shapes) under a time limit (``IPM_LIMIT`` s of wall
   time, ``--full``: ``IPM_LIMIT_FULL``); an IPM stopped by the limit gives a
   lower bound on the ratio, and the row says so.
3. ``--json`` of a large answer (issue 24: "no more than the solve"):
   ``AllocationResult.to_json()`` vs the solve it prints, CPU seconds, medians
   of 3, on (a) a 20 x 1,000,000 system of 10 groups of 100,000 identical
   machines (the group-symmetric answer; JSON in its grouped form; each solve
   on a new System, whose arrays it computes, as ``hetsched lp FILE`` does)
   and (b) dense random 20 x 1,000,000 (a vertex; JSON sparse). Ratio =
   solve / JSON.
``python benchmarks/bench_lp.py --grid`` (not part of ``make bench``) prints the
route ``auto`` picks on a grid of shapes against each route and HiGHS IPM
(``docs/lp.md``, "The route by shape").

4. Scaling: the exponent ``b`` of CPU time ~ M^b of the default route, fitted
   by least squares on log-log medians, for N = 20 from M = 10,000 to
   1,000,000 and for N = 200 from 10,000 to 100,000; the reference column
   holds HiGHS IPM's exponent over the sizes where it ran (20 x M: the IPM
   solves of rows 2 and of M = 10,000 ... 31,623 where affordable).
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
IPM_LIMIT = 600.0  # wall seconds for one IPM reference solve (make bench)
IPM_LIMIT_FULL = 3600.0
IPM_LIMIT_QUICK = 120.0


def _median_times(fn, repeats):
    """Median wall and CPU seconds (all threads of this process) of ``repeats`` calls, and the last result."""
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


def _what(N: int, M: int) -> str:
    return f"dense random {N} x {M:,}: mu ~ U(0.1, 10), alpha ~ U(0.5, 2) M/N, default_rng({SEED})"


def highs_ipm(mu, alpha, limit: float = float("inf")):
    """The full LP by HiGHS interior point (its defaults: presolve, crossover), no structure used.

    Returns ``lambda*``, or None if the wall-time ``limit`` stopped it."""
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
    if np.isfinite(limit):
        h.setOptionValue("time_limit", float(limit))
    h.passModel(lp)
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    return float(h.getSolution().col_value[K])



def _exponent(ms, ts) -> float:
    return float(np.polyfit(np.log(ms), np.log(ts), 1)[0])


def _shape_row(N: int, M: int, limit: float) -> dict:
    mu, alpha = dense_instance(M, N)
    repeats = 1 if N * M > 10_000_000 else 3
    w_hs, c_hs, r = _median_times(lambda: solve_allocation(mu, alpha), repeats)
    w_ipm, c_ipm, lam_ipm = _median_times(lambda: highs_ipm(mu, alpha, limit), 1)
    route = r.solver.split(":")[0].split(" (")[0]
    cert = "certified optimal" if r.status == 0 else f"NOT certified ({r.message})"
    if lam_ipm is None:
        ratio_txt = f">= {c_ipm / c_hs:.3g} (IPM stopped by its {limit:g} s wall limit)"
        agree = "IPM gave no answer within the limit"
    else:
        ratio_txt = f"{c_ipm / c_hs:.3g}"
        agree = f"lambda* {r.lam:.10g} vs IPM {lam_ipm:.10g} (rel. diff {abs(lam_ipm - r.lam) / lam_ipm:.1e})"
    note = (f"{_what(N, M)}; default route: {route} ({cert}, duality gap {r.residuals['duality_gap']:.1e}), "
            f"median of {repeats}, {w_hs:.3g} s wall; HiGHS IPM (defaults, crossover) on the whole LP, one solve, "
            f"{w_ipm:.3g} s wall; CPU ratio {ratio_txt}; {agree}")
    return {"benchmark": f"lp shape {N} x {M:,}", "size": f"{N} x {M:,} dense random, default_rng({SEED})",
            "metric": "CPU seconds per solve", "hetsched": c_hs, "reference": c_ipm, "ratio": c_ipm / c_hs,
            "target": ">= 1.0x HiGHS IPM, certified", "target_met": r.status == 0 and c_ipm / c_hs >= 1.0,
            "note": note, "_cpu_ipm": c_ipm if lam_ipm is not None else None}


def grouped_million(N: int = N_CLASSES, G: int = 10, count: int = 100_000, seed: int = SEED):
    """A system of ``G`` groups of ``count`` identical machines (rates U(0.1, 10)), ``alpha`` as above."""
    from hetsched.system import MachineGroup, System

    rng = np.random.default_rng(seed)
    mu = rng.uniform(0.1, 10, (N, G))
    alpha = rng.uniform(0.5, 2, N) * G * count / N
    return System(id="grouped-1e6", alpha=tuple(alpha), groups=tuple(
        MachineGroup(f"g{g + 1}", count, tuple(mu[:, g])) for g in range(G)))


def _json_rows(quick: bool) -> list[dict]:
    rows = []
    reps = 1 if quick else 3
    fresh = [grouped_million() for _ in range(reps)]  # a new System per solve: its arrays are computed once
    cases = [("grouped", f"{N_CLASSES} x 1,000,000 in 10 groups of 100,000 identical machines (rates U(0.1, 10), "
                         f"default_rng({SEED})); the solve includes the system's arrays, as in `hetsched lp FILE`",
              lambda: allocation_lp(fresh.pop())),
             ("dense", _what(N_CLASSES, 1_000_000), None)]
    for kind, what, solve in cases:
        if solve is None:
            mu, alpha = dense_instance(1_000_000)
            solve = (lambda mu=mu, alpha=alpha: solve_allocation(mu, alpha))
        w_s, c_s, res = _median_times(solve, reps)
        w_j, c_j, text = _median_times(res.to_json, reps)
        fmt = "grouped" if '"format": "grouped"' in text[:2000] else ("sparse" if '"format": "sparse"' in text[:2000]
                                                                       else "rows")
        rows.append({"benchmark": f"lp --json, {kind} 20 x 1,000,000", "size": what,
                     "metric": "CPU seconds: solve / JSON", "hetsched": c_j, "reference": c_s, "ratio": c_s / c_j,
                     "target": "JSON <= solve", "target_met": c_j <= c_s,
                     "note": f"{what}: AllocationResult.to_json() (what `hetsched lp --json` prints; delta in its "
                             f"{fmt} form, {len(text) / 1e6:.1f} MB) vs the solve it prints ({res.solver.split(':')[0]}; "
                             f"status {res.status}); medians of {reps}; wall {w_j:.3g} s vs {w_s:.3g} s; "
                             "ratio = solve / JSON"})
    return rows


def _scaling_rows(quick: bool, ipm_points: dict[int, float]) -> list[dict]:
    rows = []
    for N, sizes in ((N_CLASSES, [10_000, 100_000, 1_000_000] if quick else
                      [10_000, 31_623, 100_000, 316_228, 1_000_000]),
                     (200, [10_000, 100_000] if quick else [10_000, 31_623, 100_000])):
        times = []
        for M in sizes:
            mu, alpha = dense_instance(M, N)
            reps = 1 if (quick and N * M > 2_000_000) or N * M > 10_000_000 else 3
            times.append(_median_times(lambda: solve_allocation(mu, alpha), reps)[1])
            del mu
        ipm = ipm_points if N == N_CLASSES else {}
        b_ipm = _exponent(sorted(ipm), [ipm[m] for m in sorted(ipm)]) if len(ipm) >= 2 else None
        note = (f"dense random {N} x M (as above); default route CPU s (medians of 3, 1 above 10^7 pairs"
                f"{' or 2*10^6 in --quick' if quick else ''}) at M = "
                + ", ".join(f"{m:,}: {t:.3g}" for m, t in zip(sizes, times))
                + "; least squares on log-log")
        if b_ipm is not None:
            note += ("; HiGHS IPM CPU s at M = " + ", ".join(f"{m:,}: {ipm[m]:.3g}" for m in sorted(ipm))
                     + f" (exponent {b_ipm:.3g})")
        rows.append({"benchmark": f"lp scaling, {N} x M", "size": f"{N} x {sizes[0]:,} ... {sizes[-1]:,}",
                     "metric": "exponent b of CPU time ~ M^b", "hetsched": _exponent(sizes, times),
                     "reference": b_ipm, "ratio": None, "note": note})
    return rows


def main(quick: bool = False, full: bool | None = None) -> list[dict]:
    if full is None:
        full = "--full" in sys.argv
    limit = IPM_LIMIT_QUICK if quick else (IPM_LIMIT_FULL if full else IPM_LIMIT)
    rows = []
    s = load("3.F", case=2)
    t_grp, _, r = _median_times(lambda: allocation_lp(s), 21)
    t_flat, _, r2 = _median_times(lambda: allocation_lp(s, grouped=False, method="highs"), 3)
    assert abs(r.lam - r2.lam) < 1e-7
    rows.append({"benchmark": "lp 3.F (3,000 machines, case 2)", "size": "scenario 3.F case 2, 4 x 3,000",
                 "metric": "wall seconds per solve (median)",
                 "hetsched": t_grp, "reference": t_flat, "ratio": t_flat / t_grp,
                 "target": "< 5 ms", "target_met": t_grp < 0.005,
                 "note": f"grouped (median of 21) vs per-machine HiGHS simplex (median of 3); lambda*={r.lam:.4f}"})
    solve_allocation(*dense_instance(5_000))  # load the compiled kernels before timing
    solve_allocation(*dense_instance(600, 60))
    shapes = [(20, 10_000), (200, 10_000), (500, 500)] if quick else [(20, 100_000), (200, 100_000), (500, 500)]
    ipm_points: dict[int, float] = {}
    for N, M in shapes:
        row = _shape_row(N, M, limit)
        if N == N_CLASSES and row["_cpu_ipm"] is not None:
            ipm_points[M] = row["_cpu_ipm"]
        rows.append(row)
    for M in ([2_500, 5_000] if quick else [10_000, 31_623]):  # IPM's own scaling on 20 x M
        mu, alpha = dense_instance(M)
        _, c, lam = _median_times(lambda: highs_ipm(mu, alpha, limit), 1)
        if lam is not None:
            ipm_points[M] = c
    rows += _json_rows(quick)
    rows += _scaling_rows(quick, ipm_points)
    for row in rows:
        row.pop("_cpu_ipm", None)
    return rows


GRID = ((50, 50), (100, 100), (200, 200), (300, 300), (500, 500), (1000, 1000), (60, 100), (100, 400),
        (100, 50), (100, 80), (200, 50), (200, 100), (200, 150), (1000, 300))


def grid(shapes=GRID) -> None:
    """The route picked by shape against each route and HiGHS IPM (``python benchmarks/bench_lp.py --grid``):
    CPU seconds, medians of 3 (IPM and simplex: one solve above 10^5 pairs), on dense random instances."""
    solve_allocation(*dense_instance(5_000))
    solve_allocation(*dense_instance(600, 60))
    print("N x M: auto (its route) | price route | HiGHS simplex | HiGHS IPM | IPM / auto")
    for N, M in shapes:
        mu, alpha = dense_instance(M, N)
        one = N * M > 100_000
        _, c_auto, r = _median_times(lambda: solve_allocation(mu, alpha), 3)
        _, c_pr, _ = _median_times(lambda: solve_allocation(mu, alpha, method="prices"), 1 if one else 3)
        _, c_sx, _ = _median_times(lambda: solve_allocation(mu, alpha, method="highs"), 1) if N * M <= 250_000 \
            else (None, float("nan"), None)
        _, c_ipm, _ = _median_times(lambda: highs_ipm(mu, alpha), 1 if one else 3)
        print(f"{N} x {M}: {c_auto:.3g} ({r.solver.split(':')[0].split(' (')[0]}) | {c_pr:.3g} | {c_sx:.3g} | "
              f"{c_ipm:.3g} | {c_ipm / c_auto:.2f}", flush=True)


if __name__ == "__main__":
    if "--grid" in sys.argv:
        grid()
    else:
        for row in main(quick="--quick" in sys.argv, full="--full" in sys.argv):
            print(row)
