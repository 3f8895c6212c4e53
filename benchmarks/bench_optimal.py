"""``hs.optimal_routing``: states and seconds of the exact optimal routing at a few sizes.

Rows (one per model size; all in this process, medians of repeats):

* ``optimal routing: build + solve`` -- wall seconds to build the truncated
  routing CTMDP at one buffer and solve it with relative value iteration
  (``hetsched.optimal.solve.solve_level``: build, solve, the stationary
  distribution of the optimal policy and the truncation's measures), against
  the same model solved by the project's average-cost policy iteration
  (``hs.mdp.average_policy_iteration``, exact evaluation by sparse linear
  solves). ``ratio`` = reference / hetsched (> 1: faster than policy
  iteration); the two optimal gains must agree (``note``). Above
  ``PI_LIMIT`` states (``--quick``: ``PI_LIMIT_QUICK``) the reference is not
  run (ratio empty): its sparse LU fills in.

Sizes: one class on machines of rates 5 and 3 (2.1-met's system; counts,
``(B+1)^2`` states) at B = 16, and two classes with class-dependent rates on two
machines (sequence states, ``(2^(B+1) - 1)^2``) at load 0.4, B = 5, 6, 7 (full
run: also B = 8, 261,121 states). ``--quick``: the smallest three, three
repeats; full: one repeat.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time

import numpy as np

PI_LIMIT = 20_000
PI_LIMIT_QUICK = 5_000


def _systems():
    import hetsched as hs

    return {"counts": hs.System.from_arrays(alpha=[6.0], mu=[[5.0, 3.0]]),
            "sequences": hs.System.from_arrays(alpha=[1.0, 1.0], mu=[[2.0, 1.0], [1.0, 3.0]])}


def _arrays(system, load):
    from hetsched.optimal.solve import _arrays as arrays  # the benchmark of a package may read its helpers

    alpha, mu, _ = arrays(system, load)
    return alpha, mu


def _ours(alpha, mu, B):
    from hetsched.optimal.solve import solve_level

    t0 = time.perf_counter()
    lv = solve_level(alpha, mu, B)
    return time.perf_counter() - t0, lv


def _reference(alpha, mu, B):
    import hetsched as hs
    from hetsched.optimal.model import build_model, routing_space

    t0 = time.perf_counter()
    model = build_model(routing_space(alpha, mu, B))
    res = hs.mdp.average_policy_iteration(model)
    return time.perf_counter() - t0, float(res.gain)


def main(quick: bool = False) -> list[dict]:
    systems = _systems()
    cases = [("counts", None, 16), ("sequences", 0.4, 5), ("sequences", 0.4, 6), ("sequences", 0.4, 7)]
    if quick:
        cases = cases[:3]
    else:
        cases.append(("sequences", 0.4, 8))
    repeats = 3 if quick else 1
    limit = PI_LIMIT_QUICK if quick else PI_LIMIT
    _ours(*_arrays(systems["counts"], None), 3)  # start-up (imports, kernels) outside the timing
    rows = []
    for kind, load, B in cases:
        alpha, mu = _arrays(systems[kind], load)
        load0 = os.getloadavg()
        ours, ref, gain_ref, lv = [], [], None, None
        for _ in range(repeats):
            t, lv = _ours(alpha, mu, B)
            ours.append(t)
            if lv.states <= limit:
                t2, gain_ref = _reference(alpha, mu, B)
                ref.append(t2)
        load1 = os.getloadavg()
        a = statistics.median(ours)
        b = statistics.median(ref) if ref else None
        agree = "" if gain_ref is None else (f"gains agree to {abs(gain_ref - lv.upper) / lv.upper:.1e} (relative); ")
        rows.append({
            "benchmark": "optimal routing: build + solve",
            "size": f"{kind}, {len(alpha)}x{mu.shape[1]}, B={B}: {lv.states:,} states, {lv.pairs:,} pairs",
            "metric": "wall seconds (ratio = reference / hetsched)",
            "hetsched": a, "reference": b, "ratio": None if b is None else b / a,
            "command": f"python benchmarks/run.py optimal{' --quick' if quick else ''}",
            "note": (f"reference: average-cost policy iteration on the same model"
                     + ("" if b is not None else f" (not run above {limit:,} states)") + f"; {agree}"
                     f"relative value iteration {lv.iterations:,} iterations, Q = {lv.value:.6g}, boundary mass "
                     f"{lv.boundary_mass:.2g}; median of {repeats}; load average {load0[0]:.2f} -> "
                     f"{load1[0]:.2f} on {os.cpu_count()} cores (shared machine: other work inflates both)"),
        })
    return rows


if __name__ == "__main__":
    np.set_printoptions(precision=4)
    for row in main(quick="--quick" in sys.argv[1:]):
        print(json.dumps(row))
