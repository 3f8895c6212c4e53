"""The one FCFS task pool against Python deques: random pushes, sorted inserts and pops."""

from collections import deque

import numpy as np
from numba import njit

from hetsched.sim.core.pool import (pool_alloc, pool_append, pool_insert_sorted, pool_new, pool_new_jit, pool_pop,
                                    pool_push, pool_size)


@njit
def _apply(pl, ops, key, out):
    """ops rows (kind, q, value): 0 push, 1 pop, 2 sorted insert with key value; out[r] = slot or -1."""
    for r in range(ops.shape[0]):
        kind, q = ops[r, 0], ops[r, 1]
        if kind == 0:
            out[r] = pool_push(pl, q)
            if out[r] >= 0:
                key[out[r]] = ops[r, 2]
        elif kind == 1:
            out[r] = pool_pop(pl, q) if pl.qlen[q] > 0 else -2
        else:
            k = pool_alloc(pl)
            if k >= 0:
                key[k] = ops[r, 2]
                pool_insert_sorted(pl, q, k, key)
            out[r] = k
    return pool_size(pl)


def _queue(pl, q):
    out, k = [], pl.head[q]
    while k >= 0:
        out.append(int(k))
        k = pl.nxt[k]
    return out


def test_pool_is_fcfs_and_never_overruns():
    rng = np.random.default_rng(7)
    cap, nq, n = 40, 5, 4000
    ops = np.column_stack([rng.choice(3, n, p=[0.45, 0.4, 0.15]), rng.integers(0, nq, n),
                           rng.integers(0, 6, n)]).astype(np.int64)
    pl = pool_new(cap, nq)
    key = np.zeros(cap, np.int64)
    out = np.empty(n, np.int64)
    used = _apply(pl, ops, key, out)
    # replay on deques of (slot, key) with the slots the pool handed out
    ref = [deque() for _ in range(nq)]
    live = 0
    for r in range(n):
        kind, q, v = (int(x) for x in ops[r])
        if kind == 1:
            if ref[q]:
                assert out[r] == ref[q].popleft()[0]
                live -= 1
            else:
                assert out[r] == -2
            continue
        if live == cap:
            assert out[r] == -1  # full: refused, never overrun
            continue
        assert out[r] >= 0
        live += 1
        if kind == 0:
            ref[q].append((int(out[r]), v))
        else:  # before the first with key >= v (ties: the new one goes first)
            items = list(ref[q])
            pos = next((p for p, (_, kv) in enumerate(items) if kv >= v), len(items))
            items.insert(pos, (int(out[r]), v))
            ref[q] = deque(items)
    assert used == live
    for q in range(nq):
        assert _queue(pl, q) == [s for s, _ in ref[q]]
        assert pl.qlen[q] == len(ref[q])
        assert pl.tail[q] == (ref[q][-1][0] if ref[q] else -1)
    live_slots = [s for q in range(nq) for s, _ in ref[q]]
    assert len(set(live_slots)) == len(live_slots)  # no slot in two places


def test_pool_new_in_a_kernel_and_append():
    pl = pool_new_jit(3, 2)
    assert pl.nxt.shape == (3,) and pl.qlen.tolist() == [0, 0]
    k = pool_alloc(pl)
    pool_append(pl, 1, k)
    assert pl.head[1] == k and pl.tail[1] == k and pl.qlen[1] == 1
