"""Moved to :mod:`hetsched.sim.core.rng`; this re-export stays until its last users move."""

from .core.rng import expo, make_streams, next_u64, uniform  # noqa: F401
