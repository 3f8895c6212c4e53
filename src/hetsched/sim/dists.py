"""Execution-time distributions of the mapping model (thesis §2.2.2).

A task of class ``i`` executed by machine ``j`` takes ``X / mu_ij`` where ``X``
has mean 1 (so the mean is ``1/mu_ij``, as in the thesis):

* ``exp`` — ``X ~ Exp(1)``;
* ``det`` — ``X = 1`` (constant execution time ``1/mu_ij``);
* ``hyperexp`` — two-phase hyperexponential with *balanced means*, mean 1 and
  squared coefficient of variation ``c^2 = 2`` (twice the exponential's
  variance): with probability ``p1 = (1 + sqrt((c^2-1)/(c^2+1)))/2`` the phase
  has rate ``2 p1``, otherwise rate ``2 (1 - p1)``; ``c^2`` is the ``scv``
  parameter;
* a *general* distribution — any object with ``rvs(size=, random_state=)``
  and ``mean()`` (a frozen ``scipy.stats`` distribution); ``X`` is a sample
  divided by the mean. Samples are drawn in blocks before the run from the
  class's own execution stream.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ModelError

__all__ = ["ExecDist", "exec_dist", "hyperexp_params"]

NAMES = ("exp", "det", "hyperexp")


def hyperexp_params(scv: float = 2.0) -> tuple[float, float, float]:
    """``(p1, rate1, rate2)`` of the balanced-means H2 with mean 1 and SCV ``scv`` (> 1)."""
    if not scv > 1.0:
        raise ModelError(f"hyperexp scv must be > 1, got {scv!r}")
    p1 = 0.5 * (1.0 + math.sqrt((scv - 1.0) / (scv + 1.0)))
    return p1, 2.0 * p1, 2.0 * (1.0 - p1)


@dataclass(frozen=True)
class ExecDist:
    code: int  # kernel code: 0 exp, 1 det, 2 hyperexp, 3 general
    name: str
    hp: tuple[float, float, float] = (1.0, 1.0, 1.0)
    general: Any = None
    scv: float = 1.0


def exec_dist(spec: Any = "exp", scv: float = 2.0) -> ExecDist:
    """Turn ``"exp" | "det" | "hyperexp"`` or a scipy-like object into an :class:`ExecDist`."""
    if isinstance(spec, ExecDist):
        return spec
    if isinstance(spec, str):
        key = spec.strip().lower()
        if key == "exp":
            return ExecDist(0, "exp", scv=1.0)
        if key == "det":
            return ExecDist(1, "det", scv=0.0)
        if key in ("hyperexp", "h2"):
            return ExecDist(2, "hyperexp", hyperexp_params(scv), scv=scv)
        raise ModelError(f"dist {spec!r} unknown; choose one of {', '.join(NAMES)} or pass a scipy.stats object")
    if hasattr(spec, "rvs") and hasattr(spec, "mean"):
        m = float(spec.mean())
        if not (math.isfinite(m) and m > 0):
            raise ModelError(f"dist: a general distribution needs a finite positive mean, got {m!r}")
        v = float(spec.var()) if hasattr(spec, "var") else float("nan")
        return ExecDist(3, getattr(getattr(spec, "dist", None), "name", "general"), general=spec, scv=v / m**2)
    raise ModelError(f"dist must be a name ({', '.join(NAMES)}) or a scipy-like object, got {spec!r}")


def draw_general(d: ExecDist, N: int, L: int, rng: np.random.Generator) -> np.ndarray:
    """``(N, L)`` unit-mean samples of a general distribution."""
    x = np.asarray(d.general.rvs(size=(N, L), random_state=rng), dtype=float) / float(d.general.mean())
    if not np.all(np.isfinite(x)) or (x < 0).any():
        raise ModelError("dist: the general distribution produced negative or non-finite samples")
    return x
