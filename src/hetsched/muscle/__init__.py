"""MUSCLE: multicluster scheduling of moldable jobs with deadlines (seed 002).

He, Jarvis, Spooner, Chen, Nudd, "Hybrid performance-oriented scheduling of moldable
jobs with QoS demands in multiclusters and grids" (GCC 2004). Two levels:
MUSCLE allocates collected jobs to clusters with a composition table (Algorithm 1,
§4.2) and the epsilon heuristic (Eq. 2), giving each cluster a seed schedule
(Algorithm 2); TITAN's genetic algorithm then improves each cluster's schedule on
the comprehensive performance CP (Eq. 1). Baselines WRAND and DLL use the same GA.

Modules: :mod:`.workload` (system, generator, Eq. 3-5), :mod:`.swf` (SWF logs through :func:`hetsched.traces.read_swf`),
:mod:`.composition` (Algorithm 1, §4.2), :mod:`.titan` (GA, schedule decoding),
:mod:`.scheduler` (online rounds, policies), :mod:`.metrics` (CP, MCP, LBF), :mod:`.result` (:class:`MuscleResult`).
"""

from __future__ import annotations

from .._lazy import lazy_names

# Names load their module on first use: importing ``hetsched.muscle`` (e.g. by the CLI for
# an unrelated command) loads no numba.
_LAZY = {
    "CompositionTable": "composition",
    **{name: "metrics" for name in ("CPWeights", "PAIRINGS", "comprehensive_performance", "mcp_lbf")},
    **{name: "scheduler" for name in ("POLICIES", "check_schedule", "load_for_level", "schedule_violations",
                                      "simulate")},
    "MuscleResult": "result",
    **{name: "swf" for name in ("offered_load", "workload_from_swf")},
    **{name: "titan" for name in ("GAOptions", "GAResult", "decode_schedule", "titan_improve")},
    **{name: "workload" for name in ("TABLE1", "MultiCluster", "Workload", "WorkloadParams", "generate_workload",
                                     "moldable_time")},
}

__getattr__, __dir__ = lazy_names(__name__, globals(), _LAZY)


__all__ = [
    "CompositionTable", "CPWeights", "PAIRINGS", "comprehensive_performance", "mcp_lbf", "POLICIES", "MuscleResult",
    "check_schedule", "schedule_violations", "load_for_level", "simulate", "workload_from_swf", "offered_load",
    "GAOptions", "GAResult", "decode_schedule",
    "titan_improve", "TABLE1", "MultiCluster", "Workload", "WorkloadParams", "generate_workload",
    "moldable_time",
]
