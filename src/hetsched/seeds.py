"""The one seed normaliser and the project's default seed (numpy only: the lowest layer, importable anywhere)."""

from __future__ import annotations

import numbers

import numpy as np

from .errors import ModelError

__all__ = ["DEFAULT_SEED", "seed_sequence"]

#: the one default seed of the project (the year of the thesis), used by every command and function
DEFAULT_SEED = 2009


def seed_sequence(seed=None) -> np.random.SeedSequence:
    """The one seed normaliser: ``None`` (the default, 2009), an int >= 0, or a ``SeedSequence``.

    Raises :class:`~hetsched.errors.ModelError` naming the value for anything
    else (a negative or non-integer seed, a string, a float, a bool).
    """
    if seed is None:
        return np.random.SeedSequence(DEFAULT_SEED)
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if isinstance(seed, numbers.Integral) and not isinstance(seed, bool) and int(seed) >= 0:
        return np.random.SeedSequence(int(seed))
    raise ModelError(f"seed must be a non-negative integer (default {DEFAULT_SEED}), got {seed!r}")
