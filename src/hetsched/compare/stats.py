"""Paired statistics of a comparison: differences on common random numbers, and a ranking with ties.

Every policy of a comparison runs replication ``r`` from the same child seed
``SeedSequence(seed).spawn(R)[r]`` (or, on a trace, replays the same window
``r``), so the arrivals, sizes and availability periods of replication ``r``
are the same under every policy (common random numbers). Replication ``r``
of policy ``A`` and of policy ``B`` therefore form a *pair*; the pairs are
independent across ``r``. The difference of the means is estimated from the
per-replication differences ``d_r = x_{A,r} - x_{B,r}``:

.. math:: \\bar d \\pm t_{R-1, 0.975} \\, s_d / \\sqrt{R}

(the paired-t interval; Law, *Simulation Modeling and Analysis*, 5th ed.,
§10.2.1 and §11.2 on common random numbers). When the two policies' results
are positively correlated through the shared streams, ``s_d`` is much smaller
than the unpaired (Welch) standard error, which is also computed for
reference (:func:`welch_interval`).

A difference is *significant* when its interval excludes 0. The ranking
(:func:`rank_with_ties`) is the competition ranking of that partial order:
``rank(A) = 1 + (number of policies significantly better than A)``. Two
policies whose paired interval contains 0 are tied unless a third policy
separates them. Every metric here is "lower is better" (numbers in system,
response times, costs, messages). Intervals are individual 95 % intervals,
not simultaneous ones (no multiple-comparison correction); with many
policies, pass a higher ``confidence``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..errors import ModelError

__all__ = ["Difference", "paired_difference", "welch_interval", "rank_with_ties"]


@dataclass(frozen=True)
class Difference:
    """``mean(A) - mean(B)`` with its paired interval (and the unpaired one, for reference)."""

    mean: float
    low: float
    high: float
    n: int
    #: Welch's unpaired interval of the same difference (ignores the pairing)
    unpaired_low: float
    unpaired_high: float

    @property
    def significant(self) -> bool:
        """The paired interval excludes 0 (``False`` when it cannot be computed)."""
        return bool(math.isfinite(self.low) and math.isfinite(self.high) and (self.low > 0 or self.high < 0))

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2.0

    @property
    def unpaired_half_width(self) -> float:
        return (self.unpaired_high - self.unpaired_low) / 2.0


def _check_conf(confidence: float) -> float:
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0.0 < confidence < 1.0:
        raise ModelError(f"confidence: must lie in (0, 1), got {confidence!r}")
    return float(confidence)


def welch_interval(a: Sequence[float], b: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """Welch's interval of ``mean(a) - mean(b)`` for independent samples (NaN when undefined)."""
    from scipy.stats import t as student_t

    confidence = _check_conf(confidence)
    x = np.asarray(a, float)
    y = np.asarray(b, float)
    x, y = x[np.isfinite(x)], y[np.isfinite(y)]
    if x.size < 2 or y.size < 2:
        return float("nan"), float("nan")
    d = float(x.mean() - y.mean())
    vx, vy = float(x.var(ddof=1)) / x.size, float(y.var(ddof=1)) / y.size
    se2 = vx + vy
    if se2 == 0.0:
        return d, d
    df = se2 ** 2 / ((vx ** 2 / (x.size - 1) if vx else 0.0) + (vy ** 2 / (y.size - 1) if vy else 0.0))
    hw = float(student_t.ppf(0.5 + confidence / 2.0, df)) * math.sqrt(se2)
    return d - hw, d + hw


def paired_difference(a: Sequence[float], b: Sequence[float], confidence: float = 0.95) -> Difference:
    """The paired-t interval of ``mean(a - b)`` over pairs ``(a[r], b[r])`` (module docstring).

    Pairs where either value is missing or not finite (e.g. a replication with
    no completed task) are left out; ``n`` counts the pairs used. With fewer
    than two pairs the interval is ``(-inf, inf)``; identical inputs give
    exactly ``0`` with the interval ``[0, 0]``.
    """
    from scipy.stats import t as student_t

    confidence = _check_conf(confidence)
    x = np.asarray(a, float)
    y = np.asarray(b, float)
    if x.shape != y.shape or x.ndim != 1:
        raise ModelError(f"paired values must be two sequences of the same length, got {x.shape} and {y.shape}")
    ok = np.isfinite(x) & np.isfinite(y)
    d = x[ok] - y[ok]
    n = int(d.size)
    ulo, uhi = welch_interval(x[ok], y[ok], confidence)
    if n == 0:
        nan = float("nan")
        return Difference(nan, nan, nan, 0, nan, nan)
    m = float(d.mean())
    if n == 1:
        return Difference(m, -math.inf, math.inf, 1, ulo, uhi)
    s = float(d.std(ddof=1))
    hw = float(student_t.ppf(0.5 + confidence / 2.0, n - 1)) * s / math.sqrt(n) if s > 0 else 0.0
    return Difference(m, m - hw, m + hw, n, ulo, uhi)


def rank_with_ties(n: int, better: dict[tuple[int, int], bool], usable: Sequence[bool]) -> list[int]:
    """Competition ranks from a "significantly better" relation.

    ``better[(a, b)]`` is true when ``a`` is significantly better than ``b``;
    ``usable[k]`` is false for policies without a trustworthy number
    (unstable), which all share the last rank, after every usable one.
    ``rank(a) = 1 + #{b usable: b significantly better than a}``.
    """
    ranks = []
    n_usable = sum(bool(u) for u in usable)
    for a in range(n):
        if not usable[a]:
            ranks.append(n_usable + 1)
            continue
        ranks.append(1 + sum(1 for b in range(n) if b != a and usable[b] and better.get((b, a), False)))
    return ranks
