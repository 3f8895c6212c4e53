"""Random variates of every simulator: exponential, deterministic, H2, Weibull, general.

A variate is a *kind* code and a row of four parameters ``par`` (made once, in
Python, by :class:`Variate`), drawn in a kernel by :func:`draw` from one
xoshiro stream of :mod:`.rng`:

========  ====  ==========================================================
kind      code  value (``m`` the mean)
========  ====  ==========================================================
exp       0     ``m E``, ``E ~ Exp(1)``
det       1     ``m``
hyperexp  2     two-phase hyperexponential with *balanced means* and squared
                coefficient of variation ``c^2 > 1``: with probability
                ``p1 = (1 + sqrt((c^2-1)/(c^2+1)))/2`` an exponential of mean
                ``m / (2 p1)``, else of mean ``m / (2 (1 - p1))``
weibull   3     ``scale * (-log U)^(1/shape)``; ``scale = m / Gamma(1 + 1/shape)``
general   4     any object with ``rvs(size=, random_state=)`` and ``mean()``
                (a frozen ``scipy.stats`` distribution), divided by its mean and
                times ``m``: drawn in blocks in Python (:func:`draw_block`)
                before the kernel runs, never per event
========  ====  ==========================================================

``par = [m, a, b, c]``: hyperexp ``a = p1``, ``b = m/(2 p1)``,
``c = m/(2(1-p1))``; weibull ``a = 1/shape``, ``b = scale``.

A mean and an SCV leave one parameter of an H2 free; ``form`` (:data:`H2_FORMS`,
:func:`h2_phases`) chooses it: ``balanced`` (the default above), ``gamma``
(the third moment of the gamma distribution with the same mean and SCV,
``m^3 (1 + c^2)(1 + 2 c^2)``), or ``fixed-p`` (the long phase taken with a
given probability ``p < 2/(1 + c^2)``). The kernel draws all three the same
way: phase 1 with probability ``a``, of mean ``b``, else of mean ``c``.

The mapping model's execution times (thesis §2.2.2) are ``X / mu_ij`` with
``X`` of mean 1: :func:`exec_dist` turns its ``dist`` option into an
:class:`ExecDist` (kind + unit-mean parameters).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numba import njit

from ...errors import ModelError
from .rng import expo, uniform

__all__ = ["EXP", "DET", "HYPEREXP", "WEIBULL", "GENERAL", "KINDS", "Variate", "variate", "draw",
           "draw_block", "hyperexp_params", "H2_FORMS", "h2_phases", "ExecDist", "exec_dist", "draw_general"]

EXP, DET, HYPEREXP, WEIBULL, GENERAL = 0, 1, 2, 3, 4
KINDS = {"exp": EXP, "det": DET, "hyperexp": HYPEREXP, "weibull": WEIBULL, "general": GENERAL}
_ALIASES = {"h2": "hyperexp", "const": "det", "deterministic": "det", "exponential": "exp"}


def hyperexp_params(scv: float = 2.0) -> tuple[float, float, float]:
    """``(p1, rate1, rate2)`` of the balanced-means H2 with mean 1 and SCV ``scv`` (> 1)."""
    if not (isinstance(scv, (int, float)) and math.isfinite(scv) and scv > 1.0):
        raise ModelError(f"hyperexp scv must be > 1, got {scv!r}")
    p1 = 0.5 * (1.0 + math.sqrt((scv - 1.0) / (scv + 1.0)))
    return p1, 2.0 * p1, 2.0 * (1.0 - p1)


#: how an H2 of given mean and SCV is completed (see the module docstring)
H2_FORMS = ("balanced", "gamma", "fixed-p")


def h2_phases(scv: float, form: str = "balanced", p: float = 0.1) -> tuple[float, float, float]:
    """``(p1, mean1, mean2)`` of a unit-mean H2 with SCV ``scv`` (> 1) completed by ``form``:
    phase 1 (probability ``p1``) has mean ``mean1``, phase 2 mean ``mean2``.

    ``balanced``: ``p1 mean1 = (1 - p1) mean2``. ``gamma``: the third moment is
    the gamma's, ``(1 + c^2)(1 + 2 c^2)``, solved as the two-point law of the
    centred phase means (``x y = -V``, ``x + y = S / V``). ``fixed-p``: phase 1
    is the long one, taken with probability ``p``:
    ``mean1 = 1 + sqrt((1-p)(c^2-1)/(2p))``, ``mean2 = 1 - sqrt(p(c^2-1)/(2(1-p)))``.
    """
    if form not in H2_FORMS:
        raise ModelError(f"hyperexp form must be one of {', '.join(H2_FORMS)}, got {form!r}")
    if form == "balanced":
        p1, r1, r2 = hyperexp_params(scv)
        return p1, 1.0 / r1, 1.0 / r2
    hyperexp_params(scv)  # checks scv
    c2 = float(scv)
    if form == "fixed-p":
        if not (isinstance(p, (int, float)) and 0.0 < p < 2.0 / (1.0 + c2)):
            raise ModelError(f"hyperexp p must lie in (0, 2/(1 + scv)) = (0, {2.0 / (1.0 + c2):.4g}), got {p!r}")
        return float(p), 1.0 + math.sqrt((1 - p) * (c2 - 1) / (2 * p)), 1.0 - math.sqrt(p * (c2 - 1) / (2 * (1 - p)))
    var = (c2 - 1.0) / 2.0  # p x^2 + (1-p) y^2 with x, y the phase means minus 1
    third = (1.0 + c2) * (1.0 + 2.0 * c2) / 6.0 - 1.0 - 3.0 * var  # p x^3 + (1-p) y^3
    s = third / var
    root = math.sqrt(s * s + 4.0 * var)
    x, y = (s + root) / 2.0, (s - root) / 2.0
    return -y / (x - y), 1.0 + x, 1.0 + y


@dataclass(frozen=True)
class Variate:
    """One distribution: ``kind`` (a name of :data:`KINDS`), ``mean`` and its shape parameter.

    ``scv`` is the hyperexponential's squared coefficient of variation;
    ``shape`` the Weibull shape; ``general`` a scipy-like object. ``code`` and
    ``par`` are what a kernel receives.
    """

    kind: str
    mean: float = 1.0
    scv: float = 2.0
    shape: float = 1.0
    general: Any = field(default=None, compare=False)
    form: str = "balanced"  # hyperexp: how the H2 is completed (:data:`H2_FORMS`)
    p: float = 0.1  # hyperexp form "fixed-p": probability of the long phase

    @property
    def code(self) -> int:
        return KINDS[self.kind]

    @property
    def par(self) -> np.ndarray:
        m = float(self.mean)
        if self.kind == "hyperexp":
            if self.form == "balanced":
                p1, _, _ = hyperexp_params(self.scv)
                return np.array([m, p1, m / (2.0 * p1), m / (2.0 * (1.0 - p1))])
            p1, m1, m2 = h2_phases(self.scv, self.form, self.p)
            return np.array([m, p1, m * m1, m * m2])
        if self.kind == "weibull":
            return np.array([m, 1.0 / self.shape, m / math.gamma(1.0 + 1.0 / self.shape), 0.0])
        return np.array([m, 0.0, 0.0, 0.0])


def variate(kind: Any = "exp", mean: float = 1.0, *, scv: float = 2.0, shape: float = 1.0,
            label: str = "dist", form: str = "balanced", p: float = 0.1) -> Variate:
    """Validate and build a :class:`Variate`; ``label`` names the field in error messages."""
    if isinstance(kind, Variate):
        return kind
    if not (isinstance(mean, (int, float)) and math.isfinite(mean) and mean > 0):
        raise ModelError(f"{label}: mean must be finite and > 0, got {mean!r}")
    if isinstance(kind, str):
        key = _ALIASES.get(kind.strip().lower(), kind.strip().lower())
        if key not in KINDS or key == "general":
            raise ModelError(f"{label} {kind!r} unknown; choose one of exp, det, hyperexp, weibull "
                             f"or pass a scipy.stats object")
        if key == "hyperexp":
            try:
                h2_phases(scv, form, p)
            except ModelError as exc:
                raise ModelError(f"{label}: {exc}") from None
        if key == "weibull" and not (isinstance(shape, (int, float)) and math.isfinite(shape) and shape > 0):
            raise ModelError(f"{label}: weibull shape must be finite and > 0, got {shape!r}")
        return Variate(key, float(mean), float(scv), float(shape), form=form, p=float(p))
    if hasattr(kind, "rvs") and hasattr(kind, "mean"):
        m = float(kind.mean())
        if not (math.isfinite(m) and m > 0):
            raise ModelError(f"{label}: a general distribution needs a finite positive mean, got {m!r}")
        return Variate("general", float(mean), general=kind)
    raise ModelError(f"{label} must be a name (exp, det, hyperexp, weibull) or a scipy-like object, got {kind!r}")


@njit(cache=True)
def draw(st, s, kind, par):
    """One draw of the variate ``(kind, par)`` from stream ``s`` (compiled, no checks; not ``general``)."""
    if kind == EXP:
        return par[0] * expo(st, s)
    if kind == DET:
        return par[0]
    if kind == HYPEREXP:
        u = uniform(st, s)
        e = expo(st, s)
        return e * par[2] if u <= par[1] else e * par[3]
    # WEIBULL
    return par[2] * expo(st, s) ** par[1]


def draw_block(v: Variate, shape, rng: np.random.Generator) -> np.ndarray:
    """Samples of ``v`` (any kind) in a block, from a numpy ``Generator`` (for ``general``)."""
    if v.kind != "general":
        raise ModelError("draw_block is for general distributions; kernels draw the others with draw()")
    x = np.asarray(v.general.rvs(size=shape, random_state=rng), dtype=float) * (v.mean / float(v.general.mean()))
    if not np.all(np.isfinite(x)) or (x < 0).any():
        raise ModelError("dist: the general distribution produced negative or non-finite samples")
    return x


# ----------------------------------------------------------------------- mapping-model execution times
NAMES = ("exp", "det", "hyperexp")


@dataclass(frozen=True)
class ExecDist:
    """Unit-mean execution-time distribution of the mapping model (``X``; time ``X / mu_ij``)."""

    code: int  # kind code of this module
    name: str
    par: tuple = (1.0, 0.0, 0.0, 0.0)
    general: Any = None
    scv: float = 1.0

    @property
    def hp(self) -> tuple[float, float, float]:
        """``(p1, rate1, rate2)`` of the hyperexponential (unit mean)."""
        return (self.par[1], 1.0 / self.par[2], 1.0 / self.par[3]) if self.code == HYPEREXP else (1.0, 1.0, 1.0)


def exec_dist(spec: Any = "exp", scv: float = 2.0) -> ExecDist:
    """Turn ``"exp" | "det" | "hyperexp"`` or a scipy-like object into an :class:`ExecDist`."""
    if isinstance(spec, ExecDist):
        return spec
    if isinstance(spec, str):
        key = spec.strip().lower()
        if key not in ("exp", "det", "hyperexp", "h2"):
            raise ModelError(f"dist {spec!r} unknown; choose one of {', '.join(NAMES)} or pass a scipy.stats object")
        v = variate(key, 1.0, scv=scv)
        return ExecDist(v.code, v.kind, tuple(v.par.tolist()), scv={"exp": 1.0, "det": 0.0}.get(v.kind, scv))
    if hasattr(spec, "rvs") and hasattr(spec, "mean"):
        v = variate(spec, 1.0)
        m = float(spec.mean())
        var = float(spec.var()) if hasattr(spec, "var") else float("nan")
        return ExecDist(GENERAL, getattr(getattr(spec, "dist", None), "name", "general"), general=spec,
                        scv=var / m**2)
    raise ModelError(f"dist must be a name ({', '.join(NAMES)}) or a scipy-like object, got {spec!r}")


def draw_general(d: ExecDist, N: int, L: int, rng: np.random.Generator) -> np.ndarray:
    """``(N, L)`` unit-mean samples of a general distribution."""
    return draw_block(Variate("general", 1.0, general=d.general), (N, L), rng)
