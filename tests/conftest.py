"""Shared fixtures and closed-form truths for every test.

Closed forms (textbook queueing results; Kleinrock, *Queueing Systems* I,
ch. 3 and 5; Gross & Harris, *Fundamentals of Queueing Theory*):

* :func:`mm1_L` — M/M/1 mean number in system ``rho / (1 - rho)``;
* :func:`erlang_c` — M/M/c probability of waiting (Erlang C);
* :func:`mmc_L`, :func:`mmc_W` — M/M/c mean number in system and response time;
* :func:`pk_L` — M/G/1 mean number in system (Pollaczek-Khinchine),
  ``rho + rho^2 (1 + c_s^2) / (2 (1 - rho))``;
* :func:`mmck` — M/M/c/K stationary distribution, mean number, blocking.

Use them as plain functions (``from closed_forms import mm1_L``; pytest puts
``tests/`` on ``sys.path``) or through the ``closed_forms`` fixture.
Fixtures: ``repo_root``, ``shared_dir`` (``../shared`` next to the
repository, found from this file, never an absolute path), ``closed_forms``.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DIR = REPO_ROOT / ".." / "shared"


from closed_forms import erlang_c, mm1_L, mmc_L, mmc_W, mmck, pk_L  # noqa: E402


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
