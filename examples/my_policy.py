"""An example of a policy of your own, for ``hetsched compare --policy-file examples/my_policy.py:my_rule``.

``my_rule`` ("fast-enough MCT"): send an arriving class-``i`` task to the machine
with the least expected completion time among the machines whose rate for class
``i`` is at least half of the best rate any machine offers that class. Slow
machines are never used for a class that has much faster ones, which keeps them
free for the classes they are good at (the idea behind LPAS, without the LP).

Arguments (the contract of ``@hs.mapping_policy``): ``i`` the class of the
arriving task; ``mu`` the N x M execution rates; ``n[j]`` tasks at machine ``j``;
``work[j]`` the sum of ``1/mu`` over the tasks at machine ``j``; ``u`` a
uniform(0, 1] from the policy's own stream. Return a machine index (from 0).
"""

import hetsched as hs


@hs.mapping_policy
def my_rule(i, mu, n, work, u):
    best_rate = 0.0
    for j in range(mu.shape[1]):
        if mu[i, j] > best_rate:
            best_rate = mu[i, j]
    best, best_ect = -1, 0.0
    for j in range(mu.shape[1]):
        if mu[i, j] >= 0.5 * best_rate:
            ect = work[j] + 1.0 / mu[i, j]
            if best < 0 or ect < best_ect:
                best, best_ect = j, ect
    return best
