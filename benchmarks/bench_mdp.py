"""Benchmark the CTMDP solvers on the seed-000 co-allocation model (Delta = 30, 100, 200).

For each truncation level: build time, then solve time of every method to the same
certificate (``J_policy - J* <= eps``, eps = 1e-8 max c / beta), beside plain
successive approximation (scipy.sparse Jacobi, the paper's method) and
pymdptoolbox's ``ValueIteration`` with the same stopping threshold
(``span < eps (1 - alpha) / alpha``). All solvers must return the same policy.
Paper: about 5 hours for Delta = 30.

The default solver is compiled symmetric Gauss-Seidel sweeps with Anderson mixing
(numba, no Python per sweep beyond the call); plain scipy VI is timed up to Delta = 100
(about 30 s more at 200); pymdptoolbox runs at every Delta (its ``run()`` only).

Run: ``python benchmarks/bench_mdp.py [--quick]`` (quick: Delta = 30 and 100 only).
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np


def _median(fn, repeats: int):
    ts, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), out


def _mdptoolbox_vi(model, beta, nu, eps):
    import warnings

    import mdptoolbox.mdp

    from hetsched.mdp.ctmdp import to_mdptoolbox

    P, R, disc = to_mdptoolbox(model, beta, nu=nu)
    # pymdptoolbox 4.0b3 under numpy 2: its input check broadcasts (S,1) - (S,) to S x S (111 GiB
    # at Delta = 100) and its iteration bound loops over states in Python; skip both, time run() only.
    check, bound = mdptoolbox.mdp._util.check, mdptoolbox.mdp.ValueIteration._boundIter
    mdptoolbox.mdp._util.check = lambda *a, **k: None
    mdptoolbox.mdp.ValueIteration._boundIter = lambda self, epsilon: None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            vi = mdptoolbox.mdp.ValueIteration(P, R, disc, epsilon=eps, max_iter=100_000)
            vi.max_iter = 100_000
            t0 = time.perf_counter()
            vi.run()
            t = time.perf_counter() - t0
    finally:
        mdptoolbox.mdp._util.check, mdptoolbox.mdp.ValueIteration._boundIter = check, bound
    return np.array(vi.policy), vi.iter, t


def main(quick: bool = False) -> list[dict]:
    from hetsched.mdp.coalloc import CoallocParams, build_coalloc, solve_coalloc
    from hetsched.mdp.ctmdp import _default_eps

    rows = []
    deltas = (30, 100) if quick else (30, 100, 200)
    for D in deltas:
        prm = CoallocParams.from_loads(rho=0.8, mu3=0.7, p=0.6, delta=D)
        t_build, model = _median(lambda: build_coalloc(prm), 3 if D <= 30 else 1)
        c = model.ctmdp
        eps = _default_eps(c, prm.beta)
        reps = 5 if D <= 30 else 3
        solve_coalloc(model)  # warm the compiled kernels
        t_gs, sol = _median(lambda: solve_coalloc(model, method="gauss-seidel"), reps)
        ref_policy = sol.policy
        label = f"coalloc Delta={D} ({c.n_states} states)"
        rows.append({"benchmark": label, "metric": "build s", "hetsched": t_build, "reference": None,
                     "ratio": None, "note": f"{c.n_pairs} state-action pairs, {c.R.nnz} rates"})
        methods = [("modified-policy-iteration", "MPI(GS, m=20)")]
        if D <= 30:  # SuperLU fill-in makes exact evaluation slow beyond (460 s at Delta = 100)
            methods.append(("policy-iteration", "policy iteration (SuperLU)"))
        ref_t = None
        if D <= 100:  # about 8 s at Delta = 100 and 4x that at 200: not repeated there
            # plain successive approximation, no acceleration: the paper's algorithm vectorized
            from hetsched.mdp.ctmdp import value_iteration

            t_plain, plain = _median(lambda: value_iteration(c, prm.beta, method="jacobi", anderson=0,
                                                             nu=prm.nu_used, max_iter=200_000), 1)
            ref_t = t_plain
            rows.append({"benchmark": label, "metric": "plain scipy VI s", "hetsched": t_plain, "reference": None,
                         "ratio": None, "note": f"{plain.iterations} iterations, same policy: "
                         f"{np.array_equal(plain.policy, ref_policy)}"})
        for meth, name in methods:
            t_m, s = _median(lambda: solve_coalloc(model, method=meth), 1)
            rows.append({"benchmark": label, "metric": f"{name} s", "hetsched": t_m, "reference": ref_t,
                         "ratio": (ref_t / t_m) if ref_t else None,
                         "note": f"{s.result.iterations} iterations, same policy: {np.array_equal(s.policy, ref_policy)}"})
        skip = ""
        try:
            tb_pol, tb_it, t_tb = _mdptoolbox_vi(c, prm.beta, prm.nu_used, eps)
        except ImportError:
            t_tb, tb_pol, tb_it, skip = None, None, None, "pymdptoolbox not installed"
        except MemoryError:
            t_tb, tb_pol, tb_it, skip = None, None, None, "pymdptoolbox skipped: out of memory"
        note = f"{sol.result.iterations} sweeps, certified {sol.result.error_bound:.2g} < eps {eps:.2g}"
        if tb_pol is not None:
            note += f"; pymdptoolbox {tb_it} iterations, same policy: {np.array_equal(tb_pol, ref_policy)}"
        else:
            note += f"; {skip}"
        rows.append({"benchmark": label, "metric": "build + default solve s", "hetsched": t_build + t_gs,
                     "reference": None, "ratio": None,
                     "note": "what `hetsched mdp coalloc` spends (targets: < 0.05 s at Delta=30, < 2 s at 200)"})
        rows.append({"benchmark": label, "metric": "GS+Anderson VI s (default)", "hetsched": t_gs,
                     "reference": t_tb, "ratio": (t_tb / t_gs) if t_tb else None,
                     "note": note + " (reference = pymdptoolbox ValueIteration)"})
    return rows


if __name__ == "__main__":
    for r in main(quick="--quick" in sys.argv):
        ref = "" if r["reference"] is None else f"{r['reference']:.4g}"
        ratio = "" if r["ratio"] is None else f"{r['ratio']:.3g}x"
        print(f"{r['benchmark']:36s} {r['metric']:28s} {r['hetsched']:10.4g} {ref:>10s} {ratio:>8s}  {r['note']}")
