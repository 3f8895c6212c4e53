"""The optimal table of a counts-only system as a user mapping policy (compiled into the simulator)."""

from __future__ import annotations

import numpy as np

__all__ = ["table_policy"]


def table_policy(table: np.ndarray, strides: np.ndarray, buffer: int, name: str = "optimal-table"):
    """A ``@hs.mapping_policy`` reading ``table[i, s]`` (machine from 0, -1 blocked) at the state ``s`` of the
    queue lengths (each read at ``min(n_j, buffer)``); where that gives no machine with fewer than ``buffer``
    tasks, the machine of least expected completion time (``work_j + 1/mu_ij``, lowest index on ties)."""
    from ..sim.mapping.policies import mapping_policy

    tab = np.ascontiguousarray(table, dtype=np.int64)
    st = np.ascontiguousarray(strides, dtype=np.int64)
    B = int(buffer)

    def optimal_table(i, mu, n, work, u):  # the arrays above are constants of the compiled function
        s = 0
        for j in range(n.shape[0]):
            s += min(n[j], B) * st[j]
        j = tab[i, s]
        if j >= 0 and n[j] < B:
            return j
        best = -1
        best_v = 0.0
        for m in range(mu.shape[1]):
            if mu[i, m] > 0.0:
                v = work[m] + 1.0 / mu[i, m]
                if best < 0 or v < best_v:
                    best = m
                    best_v = v
        return best

    return mapping_policy(optimal_table, name=name)
