"""Markov decision processes: a general CTMDP solver, files of other tools, and the co-allocation model.

* :mod:`hetsched.mdp.ctmdp` — a general finite CTMDP (:mod:`.model`), discounted
  value iteration (Jacobi or compiled Gauss-Seidel, :mod:`.kernels`) with a
  certified stopping rule, policy iteration and modified policy iteration
  (:mod:`.discounted`), long-run average cost by multichain policy iteration or
  relative value iteration (:mod:`.average`), pymdptoolbox import/export
  (:mod:`.interop`).
* :func:`read` / :func:`solve` — DTMCs, CTMCs, MDPs, CTMDPs and Markov automata
  from Storm's DRN and PRISM's or Storm's explicit files (:mod:`.files`), solved
  for their optimal discounted or long-run average reward (:mod:`.filesolve`,
  :mod:`.automata`); :mod:`.storm` is the Storm reference the tests use.
* :mod:`hetsched.mdp.coalloc` — the two-cluster co-allocation model of
  Filippopoulos and Karatza (seed 000) built on the solver.
"""

from .._lazy import lazy_names

# The names below are loaded on first access (PEP 562), not at import: ``hetsched``'s command
# line imports this package to register ``mdp``, and numba + scipy cost ~0.4 s of every command.
_LAZY = {
    "CoallocParams": "coalloc",
    "CoallocSolution": "coalloc",
    "build_coalloc": "coalloc",
    "solve_coalloc": "coalloc",
    "HEURISTICS": "coalloc",
    "read": "files",
    "MarkovModel": "filemodel",
    "solve": "filesolve",
    "FileSolution": "filesolve",
    **{name: "ctmdp" for name in (
        "CTMDP", "MDPResult", "average_policy_iteration", "build_ctmdp", "evaluate_policy", "from_mdptoolbox",
        "modified_policy_iteration", "policy_iteration", "recurrent_classes", "relative_value_iteration",
        "stationary_distribution",
        "to_mdptoolbox", "value_iteration")},
}

__getattr__, __dir__ = lazy_names(__name__, globals(), _LAZY)


__all__ = list(_LAZY)
