"""Moved to :mod:`hetsched.sim.core.variates`; this re-export stays until its last users move."""

from .core.variates import NAMES, ExecDist, draw_general, exec_dist, hyperexp_params  # noqa: F401

__all__ = ["ExecDist", "exec_dist", "hyperexp_params"]
