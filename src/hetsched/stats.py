"""Statistics of independent replications: mean and Student-t confidence interval.

Each replication of a simulation yields one number (e.g. the time-average number
in system); the replications are independent and identically distributed, so the
classical interval ``mean +- t_{n-1, (1+c)/2} * s / sqrt(n)`` applies. The
*relative half-width* ``half_width / |mean|`` is the "accuracy" the thesis
reports (Appendix, "within x % with 95 % confidence").
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Iterable

import numpy as np

from .errors import ModelError

__all__ = ["Estimate", "t_interval", "warmup_mean"]


@dataclass
class Estimate:
    """A point estimate with its confidence interval ``[low, high]``."""

    mean: float
    low: float
    high: float
    half_width: float
    rel_half_width: float
    n: int

    def to_dict(self) -> dict:
        return asdict(self)


def t_interval(values: Iterable[float], confidence: float = 0.95) -> Estimate:
    """Mean and two-sided Student-t confidence interval of i.i.d. values.

    Parameters
    ----------
    values : sequence of float
        One value per independent replication. Non-finite values are an error
        (an unstable replication has no mean: leave it out and report it).
    confidence : float
        Confidence level in (0, 1).

    Returns
    -------
    Estimate
        With ``n == 1`` the half-width is ``inf`` (no variance estimate); with
        ``n == 0`` every field is ``nan``.
    """
    if not (0.0 < confidence < 1.0):
        raise ModelError(f"confidence must lie in (0, 1), got {confidence!r}")
    x = np.asarray(list(values), dtype=float).ravel()
    n = int(x.size)
    if n == 0:
        nan = float("nan")
        return Estimate(nan, nan, nan, nan, nan, 0)
    if not np.all(np.isfinite(x)):
        raise ModelError(f"values must be finite, got {x[~np.isfinite(x)][:3].tolist()}")
    mean = float(x.mean())
    if n == 1:
        hw = float("inf")
    else:
        from scipy.stats import t as student_t

        s = float(x.std(ddof=1))
        hw = float(student_t.ppf(0.5 + confidence / 2.0, n - 1) * s / math.sqrt(n))
    rel = hw / abs(mean) if mean != 0.0 else (0.0 if hw == 0.0 else float("inf"))
    return Estimate(mean, mean - hw, mean + hw, hw, rel, n)


def warmup_mean(times: np.ndarray, values: np.ndarray, warmup: float, horizon: float) -> float:
    """Time average of a piecewise-constant path on ``[warmup, horizon]``.

    ``values[k]`` holds on ``[times[k], times[k+1])`` (the last one up to
    ``horizon``). Used by tests; the kernels accumulate the same integral online.
    """
    t = np.asarray(times, float)
    v = np.asarray(values, float)
    ends = np.append(t[1:], horizon)
    lo = np.clip(t, warmup, horizon)
    hi = np.clip(ends, warmup, horizon)
    return float(np.sum(v * (hi - lo)) / (horizon - warmup))
