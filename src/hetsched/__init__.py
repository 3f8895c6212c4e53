"""hetsched: resource management for heterogeneous computing systems.

The user's vocabulary (``import hetsched as hs``)::

    system = hs.load("2.C1")                                   # shipped id or a TOML path
    mine = hs.System.from_arrays(alpha=[1.0, 2.0], mu=[[3.0, 1.0], [2.0, 4.0]])
    lp = hs.solve_allocation(system)                           # lp.lam == lambda*, lp.delta
    res = hs.simulate(system, "lpas", reps=30, horizon=20_000, seed=1)
    res.mean, res.ci, res.status, res.to_frame()

Everything is imported lazily (on first attribute access), so ``import
hetsched`` is fast and loads neither numba nor the solvers.
"""

from __future__ import annotations

from ._lazy import lazy_names

try:
    from importlib.metadata import PackageNotFoundError, version as _version

    __version__ = _version("hetsched")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.1.0"

# public name -> "module:attribute" (module relative to this package)
_LAZY = {
    # systems and the allocation LP
    "load": "api:load",
    "System": "system:System",
    "MachineGroup": "system:MachineGroup",
    "Failures": "system:Failures",
    "list_scenarios": "scenarios:list_scenarios",
    "solve_allocation": "api:solve_allocation",
    # simulation
    "simulate": "api:simulate",
    "SimResult": "sim.core.result:SimResult",
    "mapping_policy": "sim.mapping.policies:mapping_policy",
    "pull_policy": "api:pull_policy",
    "simulate_coalloc": "sim.coalloc:simulate_coalloc",
    # comparing policies on one system (paired, common random numbers)
    "compare": "compare.core:compare",
    "CompareResult": "compare.result:CompareResult",
    # CTMDP (general) and the co-allocation MDP
    "CTMDP": "mdp.ctmdp:CTMDP",
    "build_ctmdp": "mdp.ctmdp:build_ctmdp",
    "value_iteration": "mdp.ctmdp:value_iteration",
    "policy_iteration": "mdp.ctmdp:policy_iteration",
    "relative_value_iteration": "mdp.ctmdp:relative_value_iteration",
    "evaluate_policy": "mdp.ctmdp:evaluate_policy",
    "CoallocParams": "mdp.coalloc:CoallocParams",
    "solve_coalloc": "mdp.coalloc:solve_coalloc",
    # the exact optimal routing of small mapping systems (how far from optimal is a heuristic)
    "optimal_routing": "optimal.solve:optimal_routing",
    "OptimalRouting": "optimal.result:OptimalRouting",
    # stochastic reward nets and the gang-scheduling net
    "Net": "srn.net:Net",
    "solve_srn": "srn.analysis:solve",
    "solve_gang": "srn.gang:solve_gang",
    # errors
    "HetschedError": "errors:HetschedError",
    "ModelError": "errors:ModelError",
}
_SUBMODULES = ("sim", "mdp", "srn", "lp", "scenarios", "muscle", "dispatch", "experiments", "runner", "stats",
               "system", "errors", "traces", "optimal")

__all__ = ["__version__", *_LAZY]


__getattr__, __dir__ = lazy_names(__name__, globals(), _LAZY, _SUBMODULES)
