"""General finite continuous-time Markov decision processes (CTMDPs): one import for the whole solver.

This module gathers the public names of the solver, which lives in one module
per idea:

* :mod:`.model` — :class:`CTMDP` (states, admissible actions, sparse rates and
  cost rates, stored by state-action pairs) and :func:`build_ctmdp` (enumerate a
  model from a Python description of its events);
* :mod:`.result` — :class:`MDPResult`, the outcome of every solver (the
  project's result protocol);
* :mod:`.kernels` — the compiled (numba) sweeps;
* :mod:`.operators` — uniformized Bellman operators and the discounted certificate;
* :mod:`.discounted` — :func:`value_iteration` (Jacobi or compiled Gauss-Seidel
  with Anderson acceleration), :func:`policy_iteration`,
  :func:`modified_policy_iteration`; every one stops on the MacQueen bound
  ``alpha sp(T v - v) / (1 - alpha) < eps`` (Puterman 1994, §6.6.3), so the
  policy returned is certified ``eps``-optimal in every state;
* :mod:`.average` — long-run average cost: :func:`average_policy_iteration`
  (multichain policy iteration: the optimal gain of every state, Puterman 1994,
  §9.2), :func:`relative_value_iteration` (unichain or communicating models),
  :func:`evaluate_policy`, :func:`stationary_distribution`;
* :mod:`.interop` — :func:`to_mdptoolbox` / :func:`from_mdptoolbox`.

Files of other tools (Storm's DRN, PRISM's explicit format) are read by
:mod:`hetsched.mdp.files` and solved by :func:`hetsched.mdp.solve_file`.
"""

from __future__ import annotations

from .average import (
    average_policy_iteration,
    evaluate_policy,
    recurrent_classes,
    relative_value_iteration,
    stationary_distribution,
)
from .discounted import modified_policy_iteration, policy_iteration, value_iteration
from .interop import from_mdptoolbox, to_mdptoolbox
from .model import CTMDP, build_ctmdp
from .operators import q_values
from .result import MDPResult

__all__ = [
    "CTMDP",
    "MDPResult",
    "build_ctmdp",
    "value_iteration",
    "policy_iteration",
    "modified_policy_iteration",
    "relative_value_iteration",
    "average_policy_iteration",
    "evaluate_policy",
    "recurrent_classes",
    "stationary_distribution",
    "q_values",
    "to_mdptoolbox",
    "from_mdptoolbox",
]
