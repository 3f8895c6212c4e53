"""Desktop-grid benchmark: kernel speed on System 3.A and the System 3.F run.

Rows (medians of repeats, kernel CPU time only = ``DesktopResult.extra["cpu_seconds"]``):

* events/s of the kernel on 3.A case 1 (FCFS, no failures) and 3.F case 1
  (LPAS_DG, 3,000 machines, failures); reference = the previous kernel, kept
  as ``tests/_desktop_kernel_ref.py`` (same random streams, identical results),
  run in the same process on the same seed;
* LP re-solves per second of run time, and per-re-solve cost of the in-kernel
  dual simplex against HiGHS from scratch;
* the LP share of an LPAS_DG run, measured as the extra time that maintaining
  the vertex LP adds to a Gcmu run on the *identical* event sequence (Gcmu does
  not read the LP, so ``track_lp`` changes nothing but the work);
* the projected time of one 20,000-time-unit replication of 3.F (issue target
  < 10 s; ~5e8 events, so out of reach for any one-core event loop at ~10^7 events/s).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np


def _ref_kernel():
    tests = Path(__file__).resolve().parents[1] / "tests"
    if str(tests) not in sys.path:
        sys.path.insert(0, str(tests))
    try:
        import _desktop_kernel_ref as ref
    except ImportError:  # pragma: no cover - running outside the repository
        return None
    return ref


def _time(fn, repeat):
    """Median kernel CPU time (``extra["cpu_seconds"]``: the machine is shared, so
    CPU time is steadier than wall time) and the last result."""
    ts, out = [], None
    for _ in range(repeat):
        out = fn()
        ts.append(out.extra["cpu_seconds"])
    return statistics.median(ts), out


def _with_kernel(kernel, fn):
    import hetsched.sim.desktop as D

    saved = D.K
    D.K = kernel
    try:
        return fn()
    finally:
        D.K = saved


def main(quick: bool = False) -> list[dict]:
    import hetsched.sim.desktop as D
    from hetsched.lp import solve_allocation
    from hetsched.scenarios import load
    from hetsched.sim.desktop import simulate_desktop

    rep = 3
    ref = _ref_kernel()
    rows = []

    # ---- kernel events/s, new vs previous kernel
    for label, system, policy, H in (("3.A case 1 fcfs", load("3.A", arrivals="alpha1", case=1), "fcfs",
                                      2000.0 if quick else 8000.0),
                                     ("3.A case 3 lpas-dg", load("3.A", arrivals="alpha1", case=3), "lpas-dg",
                                      1000.0 if quick else 4000.0),
                                     ("3.F case 1 lpas-dg", load("3.F", case=1), "lpas-dg", 20.0 if quick else 80.0)):
        def go():
            return simulate_desktop(system, policy, horizon=H, seed=1)

        simulate_desktop(system, policy, horizon=1.0, seed=0)  # compile / load cache
        t_new, r_new = _time(go, rep)
        if ref is not None:
            _with_kernel(ref, lambda: simulate_desktop(system, policy, horizon=1.0, seed=0))
            t_old, r_old = _with_kernel(ref, lambda: _time(go, rep))
            old_rate = r_old.events / t_old
        else:
            old_rate = None
        rate = r_new.events / t_new
        rows.append({"benchmark": f"desktop {label}", "metric": "events/s", "hetsched": rate, "reference": old_rate,
                     "ratio": rate / old_rate if old_rate else None,
                     "note": f"{r_new.events} events in {t_new:.2f} s (horizon {H:g}); reference = previous kernel"})
        if label.startswith("3.F"):
            t_l, rl = t_new, r_new

    # ---- LP cost on 3.F
    s = load("3.F", case=1)
    H = 20.0 if quick else 80.0
    t_g, rg = _time(lambda: simulate_desktop(s, "gcmu", horizon=H, seed=1), rep)
    t_gl, rgl = _time(lambda: simulate_desktop(s, "gcmu", horizon=H, seed=1, track_lp=True), rep)
    lp_time = max(0.0, t_gl - t_g)
    share = lp_time / t_l if t_l > 0 else float("nan")
    mu = s.mu_groups
    counts = np.array([g.count for g in s.groups], float)
    alpha = s.alpha_array
    rng = np.random.default_rng(0)
    n_ref = 20 if quick else 100
    solve_allocation(mu, alpha, counts=counts)  # warm up HiGHS
    t0 = time.perf_counter()
    for _ in range(n_ref):
        up = rng.binomial(counts.astype(int), 20 / 24) / counts
        solve_allocation(mu, alpha, a=np.clip(up, 1e-9, 1), counts=counts)
    per_highs = (time.perf_counter() - t0) / n_ref
    per_dual = lp_time / max(1, rgl.lp_solves)
    t20k = t_l * 20_000.0 / H
    s3 = load("3.A", arrivals="alpha1", case=3)
    H3 = 1000.0 if quick else 4000.0
    t3g, _ = _time(lambda: simulate_desktop(s3, "gcmu", horizon=H3, seed=1), rep)
    t3gl, r3gl = _time(lambda: simulate_desktop(s3, "gcmu", horizon=H3, seed=1, track_lp=True), rep)
    t3l, r3l = _time(lambda: simulate_desktop(s3, "lpas-dg", horizon=H3, seed=1), rep)
    lp3 = max(0.0, t3gl - t3g)
    rows += [
        {"benchmark": "desktop 3.A case 3 lpas-dg", "metric": "LP re-solves/s (whole run)",
         "hetsched": r3l.lp_solves / t3l, "reference": None, "ratio": None,
         "note": f"{r3l.lp_solves} re-solves of the per-machine LP ({r3l.extra['columns']} columns), "
                 f"{r3l.lp_pivots} dual-simplex pivots"},
        {"benchmark": "desktop 3.A case 3 lpas-dg", "metric": "LP share of run time", "hetsched": lp3 / t3l,
         "reference": None, "ratio": None,
         "note": f"gcmu {t3g:.3f} s, gcmu+LP {t3gl:.3f} s, lpas-dg {t3l:.3f} s; "
                 f"{1e6 * lp3 / max(1, r3gl.lp_solves):.2f} us per re-solve"},
        {"benchmark": "desktop 3.F lpas-dg", "metric": "LP re-solves/s (whole run)", "hetsched": rl.lp_solves / t_l,
         "reference": None, "ratio": None, "note": f"{rl.lp_solves} re-solves, {rl.lp_pivots} dual-simplex pivots"},
        {"benchmark": "desktop 3.F LP re-solve", "metric": "seconds per re-solve", "hetsched": per_dual,
         "reference": per_highs, "ratio": per_highs / per_dual if per_dual > 0 else None,
         "note": "in-kernel dual simplex (warm; from the gcmu+LP minus gcmu time) vs HiGHS from scratch"},
        {"benchmark": "desktop 3.F lpas-dg", "metric": "LP share of run time", "hetsched": share, "reference": None,
         "ratio": None, "note": f"gcmu {t_g:.3f} s, gcmu+LP {t_gl:.3f} s, lpas-dg {t_l:.3f} s"},
        {"benchmark": "desktop 3.F lpas-dg", "metric": "projected seconds per 20,000-time-unit replication",
         "hetsched": t20k, "reference": 10.0, "ratio": t20k / 10.0,
         "note": f"{rl.events * 20_000.0 / H:.3g} events extrapolated from horizon {H:g}; issue target < 10 s"},
    ]
    _ = D
    return rows


if __name__ == "__main__":
    for row in main(quick="--quick" in sys.argv):
        print(row)
