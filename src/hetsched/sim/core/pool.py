"""The one FCFS task pool of every simulator: linked queues in one pool of task records.

A model keeps its waiting tasks in ``nq`` FCFS queues (one per machine, or
one per class) whose records share one pool of ``cap`` slots: a task is a
slot ``k``; its fields (class, size, arrival time, ...) live in the model's
own arrays indexed by ``k``; the pool only links the slots. Memory is
proportional to the instability bound on the number in system, not to bound
x queues, and a full pool is reported (``-1``), never overrun.

The pool is a :class:`TaskPool` (namedtuple of arrays, one kernel argument):
``nxt[k]`` the next slot of ``k``'s queue (``-1`` at the tail), ``head[q]`` /
``tail[q]`` the first and last slot of queue ``q`` (``-1`` when empty),
``qlen[q]`` its length, ``free`` a stack of recycled slots and ``meta =
[n_free, high_water]`` (slots ``>= high_water`` were never used: no set-up
loop over ``cap``).

Compiled, no checks, no allocation (inlined into the calling kernel):

* :func:`pool_alloc` (``pl``) -- a free slot, or ``-1`` when the pool is full;
* :func:`pool_append` (``pl, q, k``) -- put slot ``k`` at the tail of queue ``q``;
* :func:`pool_insert_sorted` (``pl, q, k, key``) -- put ``k`` before the first
  slot of ``q`` whose ``key`` is ``>= key[k]`` (a queue kept in key order);
* :func:`pool_push` (``pl, q``) -- alloc + append: the new slot or ``-1``;
* :func:`pool_pop` (``pl, q``) -- remove the head of non-empty ``q`` and free
  it; returns its slot, whose fields stay readable until the next alloc;
* ``pl.head[q]``, ``pl.nxt[k]``, ``pl.qlen[q]`` -- walk a queue.

:func:`pool_new` (``cap, nq``) makes an empty pool (plain numpy: callable
from Python, where a model allocates its state, and compiled as
:func:`pool_new_jit` inside a kernel).
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

__all__ = ["TaskPool", "pool_new", "pool_new_jit", "pool_alloc", "pool_append", "pool_insert_sorted", "pool_push",
           "pool_pop", "pool_size"]

TaskPool = namedtuple("TaskPool", ["nxt", "head", "tail", "qlen", "free", "meta"])


def pool_new(cap, nq):
    """An empty pool of ``cap`` slots and ``nq`` queues."""
    return TaskPool(np.full(cap, -1, np.int64), np.full(nq, -1, np.int64), np.full(nq, -1, np.int64),
                    np.zeros(nq, np.int64), np.empty(cap, np.int64), np.zeros(2, np.int64))


pool_new_jit = njit(cache=True)(pool_new)


@njit(cache=True, inline="always")
def pool_alloc(pl):
    """A free slot (recycled first, then never used ones), or -1 when all ``cap`` are in use."""
    nf = pl.meta[0]
    if nf > 0:
        pl.meta[0] = nf - 1
        return pl.free[nf - 1]
    k = pl.meta[1]
    if k >= pl.nxt.shape[0]:
        return -1
    pl.meta[1] = k + 1
    return k


@njit(cache=True, inline="always")
def pool_append(pl, q, k):
    """Slot ``k`` joins the tail of queue ``q``."""
    pl.nxt[k] = -1
    t = pl.tail[q]
    if t >= 0:
        pl.nxt[t] = k
    else:
        pl.head[q] = k
    pl.tail[q] = k
    pl.qlen[q] += 1


@njit(cache=True, inline="always")
def pool_insert_sorted(pl, q, k, key):
    """Slot ``k`` joins queue ``q`` before the first slot whose ``key`` is ``>= key[k]``."""
    v = key[k]
    h = pl.head[q]
    if h < 0 or key[h] >= v:
        pl.nxt[k] = h
        pl.head[q] = k
        if h < 0:
            pl.tail[q] = k
    else:
        prev = h
        nx = pl.nxt[prev]
        while nx >= 0 and key[nx] < v:
            prev = nx
            nx = pl.nxt[prev]
        pl.nxt[k] = nx
        pl.nxt[prev] = k
        if nx < 0:
            pl.tail[q] = k
    pl.qlen[q] += 1


@njit(cache=True, inline="always")
def pool_push(pl, q):
    """A new slot at the tail of queue ``q``, or -1 when the pool is full."""
    k = pool_alloc(pl)
    if k >= 0:
        pool_append(pl, q, k)
    return k


@njit(cache=True, inline="always")
def pool_pop(pl, q):
    """Remove the head of the non-empty queue ``q`` and free it; its slot (fields valid until the next alloc)."""
    k = pl.head[q]
    h = pl.nxt[k]
    pl.head[q] = h
    if h < 0:
        pl.tail[q] = -1
    pl.free[pl.meta[0]] = k
    pl.meta[0] += 1
    pl.qlen[q] -= 1
    return k


@njit(cache=True, inline="always")
def pool_size(pl):
    """Slots in use."""
    return pl.meta[1] - pl.meta[0]
