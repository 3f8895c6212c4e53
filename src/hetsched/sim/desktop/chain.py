"""CPU-availability chains of the desktop-grid kernel (thesis §3.4.5, Table 3.13; compiled, no checks).

A machine's CPU availability is a three-state Markov chain stepping on the
global grid ``k * step`` (levels 100/50/33 %). The chain matters only while the
machine runs a task, so it is simulated only then, by jumping over geometric
sojourns (:func:`chain_segment_end`, :func:`chain_step`); an idle machine's
chain is caught up with precomputed powers ``P^(2^b)`` when it next starts a
task (:func:`chain_catch_up`, exact in law: the state after ``d`` steps is drawn
from row ``state`` of ``P^d``).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..core.rng import uniform
from .layout import CK, CST, S_CHAIN

__all__ = ["chain_catch_up", "chain_segment_end", "chain_step"]

INF = np.inf


@njit(cache=True)
def chain_catch_up(mi, Ppow, j, cid, k, st):
    """Machine ``j``'s chain state at step ``k``, drawn from ``P^d`` after ``d`` idle steps."""
    d = k - mi[j, CK]
    if d <= 0:
        return
    st_ = mi[j, CST]
    # distribution after d steps, v P^d, in three scalars (no allocation)
    v0 = 1.0 if st_ == 0 else 0.0
    v1 = 1.0 if st_ == 1 else 0.0
    v2 = 1.0 if st_ == 2 else 0.0
    b = 0
    while d > 0:
        if d & 1:
            w0 = v0 * Ppow[cid, b, 0, 0] + v1 * Ppow[cid, b, 1, 0] + v2 * Ppow[cid, b, 2, 0]
            w1 = v0 * Ppow[cid, b, 0, 1] + v1 * Ppow[cid, b, 1, 1] + v2 * Ppow[cid, b, 2, 1]
            w2 = v0 * Ppow[cid, b, 0, 2] + v1 * Ppow[cid, b, 1, 2] + v2 * Ppow[cid, b, 2, 2]
            v0 = w0
            v1 = w1
            v2 = w2
        d >>= 1
        b += 1
    u = 1.0 - uniform(st, S_CHAIN)
    if u < v0:
        st_ = 0
    elif u < v0 + v1:
        st_ = 1
    else:
        st_ = 2
    mi[j, CST] = st_
    mi[j, CK] = k


@njit(cache=True)
def chain_segment_end(logstay, step, k, state, cid, st):
    """End time of the sojourn in ``state`` that covers step ``k`` (geometric extra steps)."""
    ls = logstay[cid, state]
    if ls >= 0.0:
        return INF
    L = math.floor(math.log(uniform(st, S_CHAIN)) / ls)
    return (k + 1 + L) * step


@njit(cache=True)
def chain_step(mi, Pm, j, cid, st):
    """The state machine ``j``'s chain moves to when its sojourn ends (a state other than the current)."""
    so = mi[j, CST]
    stay = Pm[cid, so, so]
    u = (1.0 - uniform(st, S_CHAIN)) * (1.0 - stay)
    acc = 0.0
    sn = so
    for y in range(3):
        if y != so:
            acc += Pm[cid, so, y]
            sn = y
            if u < acc:
                break
    return sn
