"""Benchmark MUSCLE (seed 002): jobs per second of a 40,000-job run, alone and with
TITAN's GA, and one GA run of ours against pygad on the same instance.

Run: ``python benchmarks/bench_muscle.py [--quick]`` (quick: 4,000 jobs).
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np


def _median_time(fn, repeats: int) -> float:
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def _pygad_ga(avail, t0, pref, base, dl, phi, pop, gens, seed):
    """Reference: the same CP decoding under pygad, random-key encoding of the order."""
    import pygad

    from hetsched.muscle.metrics import CPWeights
    from hetsched.muscle.titan import _decode

    n, m = pref.shape[0], avail.shape[0]
    w = CPWeights().as_array()
    work, st, fi = np.empty(m), np.empty(n), np.empty(n)

    def fitness(ga, sol, idx):
        perm = np.argsort(sol[:n]).astype(np.int64)
        return -_decode(avail, t0, perm, pref, pref, base, dl, phi, w, work, st, fi)

    ga = pygad.GA(num_generations=gens, num_parents_mating=pop // 2, sol_per_pop=pop, num_genes=n,
                  fitness_func=fitness, init_range_low=0.0, init_range_high=1.0, keep_elitism=1,
                  mutation_percent_genes=10, random_seed=seed, suppress_warnings=True)
    ga.run()
    return -ga.best_solution()[1]


def main(quick: bool = False) -> list[dict]:
    from hetsched.muscle import TABLE1, GAOptions, WorkloadParams, generate_workload, simulate, titan_improve

    n_jobs = 4000 if quick else 40_000
    wl = generate_workload(WorkloadParams(n_jobs=n_jobs), TABLE1, seed=1)
    # warm-up: compile / load the cached kernels outside the timings
    simulate(wl.head(300), TABLE1, "muscle", ga=GAOptions(max_gen=3))
    rows = []

    def run(policy, ga):
        return simulate(wl, TABLE1, policy, ga=ga, seed=2)  # backlog trigger (Algorithm 2), load 0.8

    reps = 3 if quick else 1
    t_dll = _median_time(lambda: run("dll", None), reps)
    t_mus = _median_time(lambda: run("muscle", None), reps)
    t_ga = _median_time(lambda: run("muscle", GAOptions()), reps)
    rows.append({"benchmark": f"muscle-{n_jobs}-jobs", "metric": "jobs/s (MUSCLE alone, no GA)",
                 "hetsched": n_jobs / t_mus, "reference": n_jobs / t_dll, "ratio": t_dll / t_mus,
                 "note": f"reference: DLL allocation without GA, same workload; Table 1, load 0.8, backlog trigger; median of {reps}"})
    rows.append({"benchmark": f"muscle-{n_jobs}-jobs", "metric": "jobs/s (MUSCLE + TITAN GA)",
                 "hetsched": n_jobs / t_ga, "reference": n_jobs / t_mus, "ratio": t_mus / t_ga,
                 "note": "reference: MUSCLE without GA; GA pop 24, patience 15, max_gen 100"})

    # one GA run on a 25-job batch of a 12-computer cluster: ours vs pygad, same generations
    rng = np.random.default_rng(0)
    n, m, gens, pop = 25, 12, 50, 24
    pref = rng.integers(1, 11, n).astype(np.int64)
    base = rng.uniform(5, 100, n)
    dl = base * rng.uniform(2, 6, n)
    avail = np.sort(rng.uniform(0, 20, m))
    opts = GAOptions(pop_size=pop, max_gen=gens, patience=10**6)
    titan_improve(avail, 0.0, np.arange(n), pref, base, dl, options=opts, seed=1)
    t_ours = _median_time(lambda: titan_improve(avail, 0.0, np.arange(n), pref, base, dl, options=opts, seed=1), 5)
    row = {"benchmark": "titan-ga-25-jobs", "metric": f"seconds per GA run ({gens} generations, pop {pop})",
           "hetsched": t_ours, "reference": None, "ratio": None, "note": ""}
    try:
        _pygad_ga(avail, 0.0, pref, base, dl, 0.05, pop, 2, 1)
        t_py = _median_time(lambda: _pygad_ga(avail, 0.0, pref, base, dl, 0.05, pop, gens, 1), 3)
        row.update(reference=t_py, ratio=t_py / t_ours,
                   note="reference: pygad GA, random-key order encoding, same numba CP decoding; ratio = pygad/ours")
    except ImportError:
        row["note"] = "pygad not installed: no reference"
    rows.append(row)
    return rows


if __name__ == "__main__":
    for r in main(quick="--quick" in sys.argv):
        print(r)
