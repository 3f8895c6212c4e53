"""Confidence intervals from one replay of a trace: batch means whose batch size the data choose.

A trace replay gives one value per job (response time, waiting time, bounded
slowdown) in arrival order: one long, autocorrelated and often non-stationary
series, not independent replications. The interval here is **batch means with
tests of independence and normality that choose the batch size**, after
Fishman's LBATCH procedure (Fishman 1978; Law & Kelton, *Simulation Modeling
and Analysis*, 5th ed., §9.5.3) and the tests of ASAP (Steiger & Wilson 2002):

1. The series is cut into ``k`` consecutive windows of equal job counts (within
   one job), for ``k`` from the requested number of windows down to
   :data:`K_MIN` = 10 in steps of ``sqrt(2)`` (``30, 21, 15, 10``); fewer,
   larger windows are tried only when the smaller ones fail a test.
2. At each ``k`` the window means ``b_1 .. b_k`` must pass, in this order:

   * **independence**: von Neumann's ratio test of lag-1 correlation,
     ``C = 1 - sum (b_{i+1} - b_i)^2 / (2 sum (b_i - mean b)^2)``, which is
     approximately normal with mean 0 and variance ``(k - 2) / (k^2 - 1)``
     for independent normal ``b_i`` (Fishman 1978); one-sided at level
     :data:`ALPHA_INDEPENDENCE` = 0.10 (positive correlation is what makes
     a batch-means interval too narrow);
   * **normality**: Shapiro-Wilk (Royston's 1992 approximation, algorithm
     AS R94; :func:`shapiro_wilk`) at level :data:`ALPHA_NORMALITY` = 0.05;
   * **no dominating window** (non-negative metrics): the effective number
     of windows ``(sum b)^2 / sum b^2`` (the participation ratio; ``k`` when
     all are equal, 1 when one window holds everything) at least
     :data:`MIN_EFFECTIVE` = 5.

3. The first ``k`` that passes gives the Student-t interval
   ``mean +- t_{k-1} s_b / sqrt(k)`` around the series' own mean (``s_b`` the
   standard deviation of the window means). For a non-negative metric an
   interval reaching below 0 is not reported either (its relative half-width
   exceeds 1: the normal approximation cannot hold).

When no ``k >= 10`` passes, there is **no interval**: the status is
:data:`NO_CI` with a message naming the test that failed at the fewest, largest
windows and its statistic. The mean is still reported: it is the log's own
mean for this replay (exact for a deterministic policy); what the data cannot
support is a claim about the sampling error of a "log like this one".

Paired differences (:func:`paired_estimate`) apply the same procedure to the
per-job differences of two replays of the same jobs, so both policies are cut
at exactly the same windows. Windows replayed independently
(``windows="independent"``) are independent by construction:
:func:`estimate_from_windows` skips the independence test and the search.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any, ClassVar, Iterable, Mapping, Sequence

import numpy as np

from ..errors import ModelError
from ..results import Result, fmt, jsonable

__all__ = ["WindowEstimate", "window_estimate", "paired_estimate", "estimate_from_windows", "candidate_windows",
           "window_means",
           "von_neumann", "shapiro_wilk", "effective_windows", "K_MIN", "ALPHA_INDEPENDENCE",
           "ALPHA_NORMALITY", "MIN_EFFECTIVE", "OK", "NO_CI", "METHOD"]

#: fewest windows a batch-means interval is computed from (Schmeiser 1982: 10 to 30 batches)
K_MIN = 10
#: level of the one-sided von Neumann test of lag-1 correlation of the window means
ALPHA_INDEPENDENCE = 0.10
#: level of the Shapiro-Wilk test of normality of the window means
ALPHA_NORMALITY = 0.05
#: fewest effective windows ``(sum b)^2 / sum b^2`` of a non-negative metric
MIN_EFFECTIVE = 5.0

OK, NO_CI = 0, 3
METHOD = ("batch means over consecutive windows of equal job counts; window count chosen by von Neumann's "
          "test of lag-1 independence (0.10) and Shapiro-Wilk normality (0.05), at least 10 windows "
          "(Fishman 1978; Law & Kelton 2015, 9.5.3; Steiger & Wilson 2002)")

_N01 = NormalDist()


# --------------------------------------------------------------------------- tests
def von_neumann(b: Sequence[float]) -> tuple[float, float]:
    """Von Neumann's ratio test of lag-1 correlation: ``(C, p)`` with ``p`` one-sided (positive correlation).

    ``C = 1 - sum_{i<k} (b_{i+1} - b_i)^2 / (2 sum_i (b_i - mean)^2)`` estimates the
    lag-1 autocorrelation; for independent normal values it is approximately
    ``N(0, (k-2)/(k^2-1))`` (Fishman 1978). A constant series gives ``(0, 1)``.
    """
    x = np.asarray(b, float)
    k = x.size
    if k < 3:
        raise ModelError(f"von Neumann test: needs at least 3 values, got {k}")
    ss = float(np.sum((x - x.mean()) ** 2))
    if ss <= 0.0:
        return 0.0, 1.0
    C = 1.0 - float(np.sum(np.diff(x) ** 2)) / (2.0 * ss)
    z = C / math.sqrt((k - 2.0) / (k * k - 1.0))
    return C, 1.0 - _N01.cdf(z)


def shapiro_wilk(x: Sequence[float]) -> tuple[float, float]:
    """Shapiro-Wilk test of normality: ``(W, p)`` by Royston's approximation (1992; AS R94), 4 <= n <= 5000.

    Written here so that a trace replay does not import ``scipy.stats`` (seconds
    of start-up); the tests check it against ``scipy.stats.shapiro``. A constant
    sample gives ``(1, 1)``.
    """
    y = np.sort(np.asarray(x, float))
    n = y.size
    if not 4 <= n <= 5000:
        raise ModelError(f"Shapiro-Wilk test: needs 4 to 5000 values, got {n}")
    ss = float(np.sum((y - y.mean()) ** 2))
    if ss <= 0.0 or y[-1] - y[0] <= 1e-300:
        return 1.0, 1.0
    m = np.array([_N01.inv_cdf((i - 0.375) / (n + 0.25)) for i in range(1, n + 1)])
    mm = float(m @ m)
    u = 1.0 / math.sqrt(n)
    c = m / math.sqrt(mm)
    a_n = c[-1] + 0.221157 * u - 0.147981 * u ** 2 - 2.071190 * u ** 3 + 4.434685 * u ** 4 - 2.706056 * u ** 5
    a = np.empty(n)
    if n > 5:
        a_n1 = c[-2] + 0.042981 * u - 0.293762 * u ** 2 - 1.752461 * u ** 3 + 5.682633 * u ** 4 - 3.582633 * u ** 5
        phi = (mm - 2 * m[-1] ** 2 - 2 * m[-2] ** 2) / (1 - 2 * a_n ** 2 - 2 * a_n1 ** 2)
        a[2:-2] = m[2:-2] / math.sqrt(phi)
        a[0], a[1], a[-2], a[-1] = -a_n, -a_n1, a_n1, a_n
    else:
        phi = (mm - 2 * m[-1] ** 2) / (1 - 2 * a_n ** 2)
        a[1:-1] = m[1:-1] / math.sqrt(phi)
        a[0], a[-1] = -a_n, a_n
    W = min(1.0, float(a @ y) ** 2 / ss)
    if W >= 1.0:
        return 1.0, 1.0
    if n <= 11:
        gamma = 0.459 * n - 2.273
        mu = 0.5440 - 0.39978 * n + 0.025054 * n ** 2 - 0.0006714 * n ** 3
        sigma = math.exp(1.3822 - 0.77857 * n + 0.062767 * n ** 2 - 0.0020322 * n ** 3)
        arg = gamma - math.log(1.0 - W)
        if arg <= 0:  # W so small that the transformation leaves its range: far from normal
            return W, 0.0
        z = (-math.log(arg) - mu) / sigma
    else:
        ln = math.log(n)
        mu = 0.0038915 * ln ** 3 - 0.083751 * ln ** 2 - 0.31082 * ln - 1.5861
        sigma = math.exp(0.0030302 * ln ** 2 - 0.082676 * ln - 0.4803)
        z = (math.log(1.0 - W) - mu) / sigma
    return W, 1.0 - _N01.cdf(z)


def effective_windows(b: Sequence[float]) -> float:
    """``(sum b)^2 / sum b^2`` of non-negative window means: ``k`` when equal, 1 when one holds everything."""
    x = np.abs(np.asarray(b, float))
    s2 = float(np.sum(x * x))
    return float(np.sum(x)) ** 2 / s2 if s2 > 0 else float(x.size)


def candidate_windows(requested: int, k_min: int = K_MIN) -> list[int]:
    """Window counts tried, most first: ``requested * 2^(-j/2)`` (rounded down) while at least ``k_min``."""
    ks: list[int] = []
    j = 0
    while True:
        k = int(math.floor(requested * 2.0 ** (-j / 2.0) + 1e-9))
        if k < k_min:
            if ks and ks[-1] > k_min:
                ks.append(k_min)
            break
        if not ks or k < ks[-1]:
            ks.append(k)
        j += 1
    return ks


def _t_half_width(b: np.ndarray, confidence: float) -> float:
    from ..stats import t_interval

    return float(t_interval(b, confidence).half_width)


# --------------------------------------------------------------------------- result
@dataclass(repr=False)
class WindowEstimate(Result):
    """The mean of a per-job series of one trace replay, with a batch-means interval where the data support one.

    ``status`` 0: the interval is trustworthy (the window means passed the
    tests at ``windows`` windows); :data:`NO_CI` (3): no interval (``ci`` is
    NaN; ``message`` says which test failed); ``mean`` is the series' own mean
    either way. ``tried`` lists every window count tested with its statistics.
    """

    STATUS: ClassVar[Mapping[int, str]] = {
        OK: "ok: batch-means interval (the window means passed the tests)",
        NO_CI: "no confidence interval: the windows of this replay cannot support one (see message)"}

    status: int
    message: str
    metric: str
    mean: float
    low: float
    high: float
    windows: int
    requested: int
    jobs: int
    window_means: list[float]
    tried: list[dict]
    confidence: float = 0.95
    nonnegative: bool = True
    method: str = METHOD
    seconds: float = 0.0
    #: the per-job series (arrival order), for paired differences; not in :meth:`as_dict`
    values: np.ndarray | None = field(default=None, repr=False)

    @property
    def ci(self) -> tuple[float, float]:
        return (self.low, self.high)

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2.0 if self.status == OK else float("nan")

    @property
    def rel_half_width(self) -> float:
        hw = self.half_width
        return hw / abs(self.mean) if self.mean and math.isfinite(hw) else (0.0 if hw == 0.0 else float("nan"))

    @property
    def jobs_per_window(self) -> int:
        return self.jobs // max(self.windows, 1)

    def as_dict(self) -> dict[str, Any]:
        return jsonable({
            "metric": self.metric, "mean": self.mean, "ci": [self.low, self.high],
            "rel_half_width": self.rel_half_width, "windows": self.windows, "requested_windows": self.requested,
            "jobs": self.jobs, "jobs_per_window": self.jobs_per_window, "window_means": self.window_means,
            "tried": self.tried, "confidence": self.confidence, "method": self.method,
            "status": int(self.status), "success": self.success, "message": self.message, "seconds": self.seconds})

    def _frame_rows(self) -> Iterable[dict[str, Any]]:
        yield {"measure": self.metric, "value": self.mean, "ci_low": self.low, "ci_high": self.high}
        for r, b in enumerate(self.window_means):
            yield {"rep": r + 1, "measure": f"{self.metric} (window mean)", "value": b}

    def _headline(self) -> str:
        if self.status == OK:
            return (f"{self.metric} = {fmt(self.mean)}, {100 * self.confidence:g}% CI [{fmt(self.low)}, "
                    f"{fmt(self.high)}] over {self.windows} windows of {self.jobs_per_window:,} jobs")
        return f"{self.metric} = {fmt(self.mean)} (the replay's own mean), no CI"


# --------------------------------------------------------------------------- procedure
def window_means(y, k: int) -> np.ndarray:
    """Means of ``k`` consecutive windows of equal counts (within one job) of ``y``, as ``np.array_split`` cuts."""
    y = np.asarray(y, np.float64)
    n = y.size
    q, r = divmod(n, k)
    edges = np.concatenate([[0], np.cumsum(np.where(np.arange(k) < r, q + 1, q))])  # np.array_split's cuts
    sums = np.add.reduceat(y, edges[:-1])
    return sums / np.diff(edges)


def _check(b: np.ndarray, *, nonnegative: bool, independent: bool, alpha_ind: float, alpha_norm: float) -> dict:
    """The tests at one window count: a dict with the statistics and ``failed`` (None or why)."""
    k = b.size
    row: dict[str, Any] = {"windows": k}
    failed = None
    if not independent:
        C, p = von_neumann(b)
        row.update(lag1=C, p_independence=p)
        if p < alpha_ind:
            failed = (f"the window means are correlated (lag-1 correlation {C:.2f}, von Neumann test "
                      f"p = {p:.2g} < {alpha_ind:g})")
    W, p_n = shapiro_wilk(b)
    row.update(shapiro_w=W, p_normality=p_n)
    if failed is None and p_n < alpha_norm:
        failed = f"the window means are not normal (Shapiro-Wilk p = {p_n:.2g} < {alpha_norm:g})"
    if nonnegative:
        eff = effective_windows(b)
        row["effective_windows"] = eff
        if failed is None and eff < MIN_EFFECTIVE:
            j = int(np.argmax(b))
            failed = (f"window {j + 1} of {k} dominates (mean {b[j]:.4g} against a median of "
                      f"{float(np.median(b)):.4g}; {eff:.1f} effective windows < {MIN_EFFECTIVE:g})")
    row["failed"] = failed
    return row


def _finish(metric: str, y_mean: float, b: np.ndarray | None, tried: list[dict], *, requested: int, jobs: int,
            confidence: float, nonnegative: bool, values, method: str = METHOD, why_none: str = "") -> WindowEstimate:
    """The estimate: an interval over the window means ``b``, or none (``why_none`` given; ``b`` then the
    means at the last window count tried, kept for display)."""
    nan = float("nan")
    common = dict(metric=metric, mean=float(y_mean), requested=int(requested), jobs=int(jobs), tried=tried,
                  confidence=confidence, nonnegative=nonnegative, method=method, values=values)
    if why_none:
        k = int(b.size) if b is not None else int(requested)
        return WindowEstimate(status=NO_CI, message=f"no CI: {why_none}", low=nan, high=nan, windows=k,
                              window_means=[] if b is None else [float(v) for v in b], **common)
    k = b.size
    hw = _t_half_width(b, confidence) if k > 1 else math.inf
    lo, hi = y_mean - hw, y_mean + hw
    bm = [float(v) for v in b]
    if nonnegative and lo < 0:
        return WindowEstimate(
            status=NO_CI, low=nan, high=nan, windows=k, window_means=bm,
            message=(f"no CI: the interval over {k} windows would reach below 0 ([{lo:.4g}, {hi:.4g}], relative "
                     f"half-width {hw / abs(y_mean) if y_mean else math.inf:.2f} > 1): too few effective windows "
                     f"for a normal interval"), **common)
    msg = f"ok: batch means over {k} windows of {jobs // k:,} jobs"
    if k != requested:
        msg += f" ({requested} requested; {tried[0]['failed']})"
    return WindowEstimate(status=OK, message=msg, low=lo, high=hi, windows=k, window_means=bm, **common)


def _check_args(windows, confidence, alpha_independence, alpha_normality) -> int:
    if isinstance(windows, bool) or not isinstance(windows, (int, np.integer)) or windows < 1:
        raise ModelError(f"windows: expected a positive integer, got {windows!r}")
    for name, v in (("confidence", confidence), ("alpha_independence", alpha_independence),
                    ("alpha_normality", alpha_normality)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 < v < 1.0:
            raise ModelError(f"{name}: must lie in (0, 1), got {v!r}")
    return int(windows)


def window_estimate(values, windows: int = 30, *, metric: str = "W", nonnegative: bool = True,
                    confidence: float = 0.95, k_min: int = K_MIN, alpha_independence: float = ALPHA_INDEPENDENCE,
                    alpha_normality: float = ALPHA_NORMALITY, keep_values: bool = True) -> WindowEstimate:
    """The mean of a per-job series with a batch-means interval whose window count the tests choose.

    Parameters
    ----------
    values : array of float
        One value per job of one replay, in arrival order (e.g. response times).
    windows : int
        The most windows to try (``--reps`` of a trace replay); fewer, larger
        ones are tried down to ``k_min`` (module docstring).
    nonnegative : bool
        The metric cannot be negative (response, wait, slowdown): an interval
        reaching below 0 is not reported, and a dominating window fails.
    keep_values : bool
        Keep the series in ``.values`` (for :func:`paired_estimate`).

    Returns
    -------
    WindowEstimate
    """
    windows = _check_args(windows, confidence, alpha_independence, alpha_normality)
    y = np.ascontiguousarray(values, dtype=np.float64).ravel()
    n = y.size
    if n == 0 or not np.all(np.isfinite(y)):
        raise ModelError(f"{metric}: expected finite per-job values, got {n} value(s)"
                         + ("" if n == 0 else f" with {int(np.sum(~np.isfinite(y)))} not finite"))
    kept = y if keep_values else None
    mean = float(y.mean())
    ks = [k for k in candidate_windows(windows, k_min) if k <= n // 2]
    if not ks:
        why = (f"{windows} window(s) are too few for a batch-means interval (at least {k_min})" if windows < k_min
               else f"{n} jobs are too few for {k_min} windows of at least 2 jobs")
        shown = window_means(y, min(windows, n)) if windows > 1 else None  # the windows asked for, for display
        return _finish(metric, mean, shown, [], requested=windows, jobs=n, confidence=confidence,
                       nonnegative=nonnegative, values=kept, why_none=why)
    tried: list[dict] = []
    b = None
    for k in ks:
        b = window_means(y, k)
        row = _check(b, nonnegative=nonnegative, independent=False, alpha_ind=alpha_independence,
                     alpha_norm=alpha_normality)
        tried.append(row)
        if row["failed"] is None:
            return _finish(metric, mean, b, tried, requested=windows, jobs=n, confidence=confidence,
                           nonnegative=nonnegative, values=kept)
    span = f"{ks[0]} down to {ks[-1]}" if len(ks) > 1 else f"{ks[0]}"
    why = (f"at every window count from {span}, a test fails; at {ks[-1]} windows of {n // ks[-1]:,} jobs "
           f"{tried[-1]['failed']}")
    return _finish(metric, mean, b, tried, requested=windows, jobs=n, confidence=confidence,
                   nonnegative=nonnegative, values=kept, why_none=why)


def paired_estimate(a: WindowEstimate, b: WindowEstimate, *, windows: int | None = None, metric: str | None = None,
                    confidence: float | None = None) -> WindowEstimate:
    """``mean(a) - mean(b)`` of two replays of the same jobs: :func:`window_estimate` of the per-job differences,
    so both replays are cut at exactly the same windows (signed: no non-negativity rule)."""
    if a.values is None or b.values is None:
        raise ModelError("paired estimate: both estimates must keep their per-job values (keep_values=True)")
    if a.values.shape != b.values.shape:
        raise ModelError(f"paired estimate: the replays have {a.values.size} and {b.values.size} jobs; a paired "
                         f"difference needs two replays of the same jobs")
    return window_estimate(a.values - b.values, a.requested if windows is None else windows,
                           metric=metric or f"{a.metric} difference", nonnegative=False,
                           confidence=a.confidence if confidence is None else confidence)


def estimate_from_windows(window_values, *, metric: str = "W", nonnegative: bool = True, confidence: float = 0.95,
                          jobs: int | None = None, k_min: int = K_MIN,
                          alpha_normality: float = ALPHA_NORMALITY) -> WindowEstimate:
    """An interval from windows replayed independently (each from an empty system): independent by
    construction, so only normality, dominance and the sign are checked, at the given windows."""
    b = np.asarray(window_values, float).ravel()
    k = b.size
    _check_args(max(k, 1), confidence, 0.5, alpha_normality)
    method = "Student-t over independently replayed windows (normality and dominance checked)"
    if k == 0 or not np.all(np.isfinite(b)):
        raise ModelError(f"{metric}: expected finite window values, got {b.tolist()[:5]}")
    jobs = k if jobs is None else int(jobs)
    if k < k_min:
        return _finish(metric, float(b.mean()), b, [], requested=k, jobs=jobs, confidence=confidence,
                       nonnegative=nonnegative, values=b, method=method,
                       why_none=f"{k} window(s) are too few for an interval (at least {k_min})")
    row = _check(b, nonnegative=nonnegative, independent=True, alpha_ind=0.5, alpha_norm=alpha_normality)
    if row["failed"] is not None:
        return _finish(metric, float(b.mean()), b, [row], requested=k, jobs=jobs, confidence=confidence,
                       nonnegative=nonnegative, values=b, method=method, why_none=row["failed"])
    return _finish(metric, float(b.mean()), b, [row], requested=k, jobs=jobs, confidence=confidence,
                   nonnegative=nonnegative, values=b, method=method)
