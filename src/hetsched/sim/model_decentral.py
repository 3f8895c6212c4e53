"""Registers the decentralized-grid model (thesis ch. 4) with ``hetsched simulate``.

Light module (no numba import): see :mod:`hetsched.sim` for the registry.
Only ``lpas-dec`` is registered here because ``mct`` and ``kpb`` belong to the
mapping model; for scenarios with per-machine arrival streams (``4.A``,
``4.B1``, ``4.B2``, ``4.2-ex``) the command should send those two policies to
:func:`hetsched.sim.decentral.simulate_command` as well.
"""

from __future__ import annotations

from . import Model, register_model

register_model(Model("decentral", ("lpas-dec",), "W", "hetsched.sim.decentral:simulate_cli"))
