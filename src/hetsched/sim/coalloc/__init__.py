"""Two-cluster co-allocation model (seed 000): simulation and Local's exact capacity.

:mod:`.model` validates and replicates (the public layer and the model
written down), :mod:`.kernel` is the compiled replication kernel on the shared
core; Local's exact capacity (a quasi-birth-death drift) lives with the other
stability verdicts in :mod:`hetsched.mdp.stability`. The optimal policy comes from the CTMDP solver
(:mod:`hetsched.mdp.coalloc`).
"""

from ...mdp.stability import local_capacity, local_drift, local_stability
from .model import POLICIES, Prepared, SimParams, plan_coalloc, prepare, replication, simulate_coalloc, simulate_one

__all__ = ["POLICIES", "Prepared", "SimParams", "plan_coalloc", "prepare", "replication", "simulate_coalloc",
           "simulate_one", "local_capacity", "local_drift", "local_stability"]
