"""Closed-form truths of queueing theory used by the tests (Kleinrock, *Queueing Systems* I,
ch. 3 and 5; Gross & Harris, *Fundamentals of Queueing Theory*).

Import them as ``from closed_forms import mm1_L`` (``tests/`` is on ``sys.path``
once its ``conftest.py`` is loaded) or use the ``closed_forms`` fixture.
"""

from __future__ import annotations

import math

import numpy as np


def mm1_L(rho: float) -> float:
    """M/M/1: mean number in system."""
    assert 0 <= rho < 1
    return rho / (1.0 - rho)


def erlang_c(c: int, a: float) -> float:
    """M/M/c: probability that an arrival waits; ``a = lambda/mu`` offered load (< c)."""
    assert 0 <= a < c
    s = sum(a**k / math.factorial(k) for k in range(c))
    top = a**c / math.factorial(c) * c / (c - a)
    return top / (s + top)


def mmc_L(c: int, lam: float, mu: float) -> float:
    """M/M/c: mean number in system."""
    a = lam / mu
    return erlang_c(c, a) * a / (c - a) + a


def mmc_W(c: int, lam: float, mu: float) -> float:
    """M/M/c: mean response time (Little's law on :func:`mmc_L`)."""
    return mmc_L(c, lam, mu) / lam


def pk_L(rho: float, scv: float) -> float:
    """M/G/1 (Pollaczek-Khinchine): mean number in system; ``scv`` of the service time."""
    assert 0 <= rho < 1
    return rho + rho**2 * (1.0 + scv) / (2.0 * (1.0 - rho))


def mmck(c: int, K: int, lam: float, mu: float) -> dict:
    """M/M/c/K: stationary probabilities ``p[0..K]``, mean number ``L``, blocking ``p[K]``."""
    w = np.array([(lam / mu) ** n / (math.factorial(n) if n <= c else math.factorial(c) * c ** (n - c))
                  for n in range(K + 1)])
    p = w / w.sum()
    return {"p": p, "L": float(np.arange(K + 1) @ p), "blocking": float(p[K])}
