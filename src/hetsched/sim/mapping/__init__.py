"""Immediate-mode mapping model of a cluster (thesis §1.3.1, §2.2.2).

Model. ``N`` task classes arrive as independent Poisson streams with rates
``alpha_i``; ``M`` machines execute a class-``i`` task at rate ``mu_ij``
(``0``: cannot). Each arrival is mapped at once, by the policy, to one machine
and queued FCFS there; machine ``j`` runs it for ``X / mu_ij``, where ``X``
has mean 1 (exponential, deterministic, hyperexponential or any scipy-like
distribution: :mod:`hetsched.sim.core.variates`). The performance measure is
``Qbar``, the time-average number of tasks in system on ``[warmup,
horizon]`` (per class too, with the mean completion time ``W_i``).

Trace replay (issue 13; ``simulate(..., trace=...)``): the arrivals are those
of a real log instead -- task ``k`` arrives at ``t_k`` with class ``i_k`` and
size ``X_k`` (:func:`hetsched.traces.workload`), runs ``X_k / mu_ij`` on the
machine the policy picks, and the run ends when the last task is done; the
measure is ``W``, the mean response time of the log's tasks, with batch-means
confidence intervals over consecutive windows of equal job counts. The
LP-based policies allocate for the log's work arrival vector. Per-task records
(``records=True``): arrival, start, end and machine of every finished task.

Three layers, on the simulation core (:mod:`hetsched.sim.core`):

1. :func:`prepare` (:mod:`.model`) validates the system, policy and options
   once and turns them into plain arrays (LP sets, candidate lists, weights);
2. :func:`replication` runs the compiled kernel (:mod:`.kernel`) for one seed;
3. :func:`summarize` turns replications into a
   :class:`~hetsched.sim.core.result.SimResult`; :func:`simulate` does all
   three with replications in parallel.

Policies: :mod:`.policies` (built-in registry, ties, user-written policies
with :func:`mapping_policy`).
"""

from ..._lazy import lazy_names

__all__ = ["simulate", "plan", "prepare", "replication", "summarize", "ect_weights", "integer_weights", "instability_rule",
           "default_bound", "warm_up_kernels", "simulate_cli", "mapping_policy", "MappingPolicy", "POLICIES",
           "TIE_RULES", "DEFAULT_TIE", "get_policy"]

# lazy: ``hetsched.sim.mapping.policies`` (the decorator users import) must not load numba
_WHERE = {"prepare": "model", "ect_weights": "model", "integer_weights": "model", "default_bound": "model",
          "simulate": "run", "plan": "run", "replication": "run", "summarize": "run", "instability_rule": "run",
          "warm_up_kernels": "run", "simulate_cli": "run",
          "mapping_policy": "policies", "MappingPolicy": "policies", "POLICIES": "policies",
          "TIE_RULES": "policies", "DEFAULT_TIE": "policies", "get_policy": "policies"}


__getattr__, __dir__ = lazy_names(__name__, globals(), _WHERE)
