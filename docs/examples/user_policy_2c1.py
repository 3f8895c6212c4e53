"""A user-written mapping policy against LPAS on System 2.C1 (docs/policies.md).

Run: ``python docs/examples/user_policy_2c1.py`` (30 replications x 20,000
time units, seed 2009, the default random ties; as Table 2.1).
"""

import time

import numpy as np

import hetsched as hs


@hs.mapping_policy
def affinity(i, mu, n, work, u):
    """Least expected completion time among the machines on which class i is
    relatively fastest (mu_ij / max_j' mu_ij' largest over the classes); MCT
    over all machines if there is none. Ties: lowest index."""
    N, M = mu.shape
    top = np.empty(N)  # each class's best rate
    for c in range(N):
        top[c] = mu[c].max()
    best, best_v = -1, 0.0
    for j in range(M):
        if mu[i, j] <= 0.0:
            continue
        mine = mu[i, j] / top[i]
        preferred = True
        for c in range(N):
            if mu[c, j] / top[c] > mine:
                preferred = False
        if preferred:
            v = work[j] + 1.0 / mu[i, j]
            if best < 0 or v < best_v:
                best, best_v = j, v
    if best < 0:
        for j in range(M):
            if mu[i, j] > 0.0:
                v = work[j] + 1.0 / mu[i, j]
                if best < 0 or v < best_v:
                    best, best_v = j, v
    return best


if __name__ == "__main__":
    system = hs.load("2.C1")
    for policy in (affinity, "lpas", "mct"):
        t0 = time.perf_counter()
        r = hs.simulate(system, policy, reps=30, horizon=20_000, seed=2009, workers=2)
        state = "UNSTABLE" if r.unstable else f"{r.mean:8.3f}  [{r.ci[0]:.3f}, {r.ci[1]:.3f}]"
        name = policy if isinstance(policy, str) else policy.name
        print(f"2.C1 {name:9s} Qbar {state}   {r.events / r.wall_seconds / 1e6:.1f} M events/s "
              f"({time.perf_counter() - t0:.1f} s with compilation)", flush=True)
