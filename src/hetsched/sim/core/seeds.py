"""The seed utilities of the simulation core live in :mod:`hetsched.seeds` (a low layer the runner
uses too); this module keeps their old import path."""

from ...seeds import DEFAULT_SEED, seed_sequence

__all__ = ["DEFAULT_SEED", "seed_sequence"]
