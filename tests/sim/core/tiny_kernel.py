"""A tiny kernel for the tests of :func:`hetsched.sim.core.kernels.specialise` (compiles in a fraction of a second).

``run(a)`` sums ``_step(a[k]) * _SCALE``; the tests bind ``_step`` and ``_SCALE``.
"""

import numpy as np
from numba import njit


@njit(inline="always")
def _step(x):
    return x + 1.0


_SCALE = 1.0


@njit
def run(a):
    s = 0.0
    for k in range(a.shape[0]):
        s += _step(a[k]) * _SCALE
    return s


def main():
    """Used by the subprocess tests: bind ``_step`` to doubling and scale 3, print result and cache hits."""
    import json

    from hetsched.sim.core.kernels import specialise

    @njit(inline="always")
    def double(x):
        return 2.0 * x

    k = specialise(__import__(__name__), ["run"], {"_step": double, "_SCALE": 3.0}, key=("double", 3.0),
                   label="tiny-double")["run"]
    v = k(np.arange(4.0))
    print(json.dumps({"value": v, "hits": sum(k.stats.cache_hits.values()),
                      "misses": sum(k.stats.cache_misses.values())}))


if __name__ == "__main__":
    main()
