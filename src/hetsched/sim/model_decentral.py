"""Registers the decentralized-grid model (thesis ch. 4) with ``hetsched simulate``.

Light module (no numba import): see :mod:`hetsched.sim` for the registry.
``lpas-dec`` belongs to this model; ``mct`` and ``kpb`` belong to the mapping
model but run here on systems with per-machine arrival streams (``4.A``,
``4.B1``, ``4.B2``, ``4.2-ex``: the decentralized decision of §4.1).
"""

from __future__ import annotations

from . import Model, register_model


def has_per_machine_streams(system) -> bool:
    return system.alpha_matrix is not None


register_model(Model("decentral", ("lpas-dec",), "W", "hetsched.sim.decentral.run:simulate_cli",
                     shared_policies=("mct", "kpb"),
                     applies="hetsched.sim.model_decentral:has_per_machine_streams"))
