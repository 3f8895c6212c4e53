"""Continuous-time Markov decision processes (CTMDPs) and the co-allocation model.

* :mod:`hetsched.mdp.ctmdp` — a general finite CTMDP (states, admissible actions,
  sparse transition rates, cost rates), uniformization, discounted value iteration
  (Jacobi or compiled Gauss-Seidel) with a certified stopping rule, policy
  iteration, modified policy iteration, average-cost relative value iteration and
  policy iteration, and pymdptoolbox import/export.
* :mod:`hetsched.mdp.coalloc` — the two-cluster co-allocation model of
  Filippopoulos and Karatza (``shared/papers/seed-000``) built on it.
"""

from .._lazy import lazy_names

# The names below are loaded on first access (PEP 562), not at import: ``hetsched``'s command
# line imports this package to register ``mdp``, and numba + scipy cost ~0.4 s of every command.
_LAZY = {
    "CoallocParams": "coalloc",
    "CoallocSolution": "coalloc",
    "build_coalloc": "coalloc",
    "solve_coalloc": "coalloc",
    **{name: "ctmdp" for name in (
        "CTMDP", "MDPResult", "average_policy_iteration", "build_ctmdp", "evaluate_policy", "from_mdptoolbox",
        "modified_policy_iteration", "policy_iteration", "relative_value_iteration", "stationary_distribution",
        "to_mdptoolbox", "value_iteration")},
}

__getattr__, __dir__ = lazy_names(__name__, globals(), _LAZY)


__all__ = list(_LAZY)
