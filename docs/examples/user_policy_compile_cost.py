"""Compile cost of a user-written mapping policy (docs/policies.md): python docs/examples/user_policy_compile_cost.py"""
import time
import hetsched as hs
s = hs.load("2.C1")
hs.simulate(s, "mct", reps=1, horizon=1.0, workers=1)  # built-in kernel from the disk cache
@hs.mapping_policy
def my_mct(i, mu, n, work, u):
    best, best_v = -1, 0.0
    for j in range(mu.shape[1]):
        if mu[i, j] > 0.0:
            v = work[j] + 1.0 / mu[i, j]
            if best < 0 or v < best_v:
                best, best_v = j, v
    return best
t0 = time.perf_counter(); c0 = time.process_time()
r = hs.simulate(s, my_mct, reps=1, horizon=1.0, workers=1)
print(f"first run of a user policy: {time.perf_counter() - t0:.1f} s wall, {time.process_time() - c0:.1f} s CPU; startup_seconds {r.startup_seconds:.1f}")
t0 = time.perf_counter()
hs.simulate(s, my_mct, reps=1, horizon=1.0, workers=1)
print(f"second run: {time.perf_counter() - t0:.2f} s")
