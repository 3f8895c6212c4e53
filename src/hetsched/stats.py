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

__all__ = ["Estimate", "t_interval", "t_quantile", "warmup_mean"]


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
        s = float(x.std(ddof=1))
        hw = float(t_quantile(0.5 + confidence / 2.0, n - 1) * s / math.sqrt(n))
    rel = hw / abs(mean) if mean != 0.0 else (0.0 if hw == 0.0 else float("inf"))
    return Estimate(mean, mean - hw, mean + hw, hw, rel, n)


# ----------------------------------------------------------------------------- Student-t quantile
# Plain Python, so that a confidence interval does not import scipy.stats (about 1.8 CPU-s of a short
# ``hetsched simulate``). The upper tail of Student's t with nu degrees of freedom is
#   P(T > t) = I_x(nu/2, 1/2) / 2,   x = nu / (nu + t^2)
# (Abramowitz & Stegun 26.7.1 with 26.5.x), I the regularized incomplete beta function, evaluated by its
# continued fraction (Lentz's method; Numerical Recipes 3rd ed. §6.4). The quantile is found by Newton's
# method on that tail, kept inside a bracket (bisection when a step leaves it), from the closed forms for
# nu = 1, 2 and a Cornish-Fisher start otherwise; for nu >= 1000 that expansion (to 1/nu^4) is the answer.
# Tested against scipy.stats.t.ppf for nu = 1 .. 10^6.


def _betacf(a: float, b: float, x: float) -> float:
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 100_000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        de = d * c
        h *= de
        if abs(de - 1.0) < 1e-16:
            break
    return h


def _ibeta(a: float, b: float, x: float, y: float, log_x: float, log_y: float) -> float:
    """Regularized incomplete beta ``I_x(a, b)``, with ``y = 1 - x`` and both logs given accurately."""
    if x <= 0.0:
        return 0.0
    if y <= 0.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * log_x + b * log_y)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, y) / b


def _t_tail(t: float, nu: float, central: bool) -> float:
    """``P(T > t)``, or with ``central`` ``P(|T| < t) = I_y(1/2, nu/2)``, ``y = t^2 / (nu + t^2)`` (``t >= 0``;
    the central form has no cancellation near ``t = 0``)."""
    r = t * t / nu
    x, y = 1.0 / (1.0 + r), r / (1.0 + r)
    log_x, log_y = -math.log1p(r), (math.log(y) if y > 0 else -math.inf)
    if central:
        return _ibeta(0.5, nu / 2.0, y, x, log_y, log_x)
    return 0.5 * _ibeta(nu / 2.0, 0.5, x, y, log_x, log_y)


def _t_pdf(t: float, nu: float) -> float:
    return math.exp(math.lgamma((nu + 1) / 2) - math.lgamma(nu / 2) - 0.5 * math.log(nu * math.pi)
                    - (nu + 1) / 2 * math.log1p(t * t / nu))


def _normal_quantile(p: float) -> float:
    """Standard normal quantile (Acklam's rational approximation, then one Halley step on erfc)."""
    a = (-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02, 1.383577518672690e+02,
         -3.066479806614716e+01, 2.506628277459239e+00)
    b = (-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02, 6.680131188771972e+01,
         -1.328068155288572e+01)
    c = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00, -2.549732539343734e+00,
         4.374664141464968e+00, 2.938163982698783e+00)
    d = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00)
    q = min(p, 1 - p)
    if q < 0.02425:
        r = math.sqrt(-2 * math.log(q))
        z = (((((c[0] * r + c[1]) * r + c[2]) * r + c[3]) * r + c[4]) * r + c[5]) / \
            ((((d[0] * r + d[1]) * r + d[2]) * r + d[3]) * r + 1)
    else:
        r = (q - 0.5) ** 2
        z = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * (q - 0.5) / \
            (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1)
    z = -z if p > 0.5 else z  # z was the quantile of q = min(p, 1 - p) <= 1/2
    e = 0.5 * math.erfc(-z / math.sqrt(2)) - p
    u = e * math.sqrt(2 * math.pi) * math.exp(z * z / 2)
    return z - u / (1 + z * u / 2)


def t_quantile(p: float, df: float) -> float:
    """Quantile ``t_{df}(p)`` of Student's t distribution (``0 < p < 1``, ``df > 0``), to about 1e-13 relative."""
    if not (0.0 < p < 1.0) or not (df > 0):
        raise ModelError(f"t_quantile needs 0 < p < 1 and df > 0, got p={p!r}, df={df!r}")
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    q = 1.0 - p  # upper tail
    if df == 1:
        return math.tan(math.pi * (p - 0.5))
    if df == 2:
        return (2 * p - 1) / math.sqrt(2 * p * (1 - p))
    z = _normal_quantile(p)
    g = ((z**3 + z) / 4, (5 * z**5 + 16 * z**3 + 3 * z) / 96, (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384,
         (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160)
    t = z + g[0] / df + g[1] / df**2
    if df >= 1000:  # the expansion in 1/df (A&S 26.7.5) to 1/df^4: about 1e-14 relative from here on
        return z + g[0] / df + g[1] / df**2 + g[2] / df**3 + g[3] / df**4
    central = p < 0.75  # solve P(|T| < t) = 2p - 1 near the centre, P(T > t) = 1 - p in the tail
    target = 2 * p - 1 if central else q
    sign = -1.0 if central else 1.0  # both written as a function decreasing in t
    lo, hi = 0.0, math.inf
    for _ in range(200):
        f = sign * (_t_tail(t, df, central) - target)
        if f > 0:
            lo = t
        else:
            hi = t
        step = f / ((2.0 if central else 1.0) * _t_pdf(t, df))
        nxt = t + step
        if not (lo < nxt < hi):
            nxt = (lo + hi) / 2 if math.isfinite(hi) else max(2 * t, lo + 1.0)
        if abs(nxt - t) <= 1e-15 * max(1.0, abs(nxt)):
            return nxt
        t = nxt
    return t


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
