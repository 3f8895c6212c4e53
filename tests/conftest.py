"""Shared fixtures and closed-form truths for every test.

Closed forms (textbook queueing results; Kleinrock, *Queueing Systems* I,
ch. 3 and 5; Gross & Harris, *Fundamentals of Queueing Theory*):

* :func:`mm1_L` — M/M/1 mean number in system ``rho / (1 - rho)``;
* :func:`erlang_c` — M/M/c probability of waiting (Erlang C);
* :func:`mmc_L`, :func:`mmc_W` — M/M/c mean number in system and response time;
* :func:`pk_L` — M/G/1 mean number in system (Pollaczek-Khinchine),
  ``rho + rho^2 (1 + c_s^2) / (2 (1 - rho))``;
* :func:`mmck` — M/M/c/K stationary distribution, mean number, blocking.

Use them as plain functions (``from conftest import mm1_L``; pytest puts
``tests/`` on ``sys.path``) or through the ``closed_forms`` fixture.
Fixtures: ``repo_root``, ``shared_dir`` (``../shared`` next to the
repository, found from this file, never an absolute path), ``closed_forms``.
"""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DIR = REPO_ROOT / ".." / "shared"


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


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED_DIR.is_dir():
        pytest.skip("../shared (papers and references) is not next to this repository")
    return SHARED_DIR


@pytest.fixture(scope="session")
def closed_forms() -> SimpleNamespace:
    return SimpleNamespace(mm1_L=mm1_L, erlang_c=erlang_c, mmc_L=mmc_L, mmc_W=mmc_W, pk_L=pk_L, mmck=mmck)
