r"""Optimal co-allocation across two heterogeneous clusters as a CTMDP.

Source: Filippopoulos and Karatza, *A dynamic programming model of two
heterogeneous clusters with co-allocation of jobs* (the seed-000 paper),
§2 (model), §3 (uniformization, Bellman equation), §4 (truncation), §5 (tables).

System
------
Cluster 1 has two nodes and an unbounded FCFS queue; cluster 2 has one node and
an unbounded FCFS queue. Jobs arrive to cluster ``i`` as Poisson(``lambda_i``).
A cluster-1 job needs one node with probability ``p``, two nodes with ``1-p``;
cluster-2 jobs need one node. Local service is Exp(``mu_1``) at cluster 1 (for
either size) and Exp(``mu_2``) at cluster 2. A *co-allocated* job (a two-node
job from queue 1 placed on one node of cluster 1 and the node of cluster 2)
takes Exp(``mu_3``) and preempts the cluster-2 job in service, which resumes
where it stopped (preemptive-resume). A job of queue 1 holds cost ``c_1`` per
unit time in the system, a job of queue 2 ``c_2``.

State ``S = (q1, q2, g, x1, x2, x11)``
    ``q1`` jobs waiting in queue 1 (not in service); ``q2`` jobs at cluster 2
    *including* the one in service; ``g`` in {0, 1, 2} nodes needed by the head
    of queue 1 (``g = 0`` iff ``q1 = 0``); ``x1`` one-node jobs and ``x2``
    two-node jobs in local service at cluster 1; ``x11`` in {0, 1} co-allocated
    jobs. Free nodes of cluster 1: ``theta = 2 - x1 - 2 x2 - x11 >= 0``, so
    ``(x1, x2, x11)`` is one of six configurations
    ``(0,0,0) (1,0,0) (2,0,0) (0,1,0) (0,0,1) (1,0,1)``. With truncation
    ``q1, q2 <= Delta`` there are ``6 (Delta+1) (2 Delta+1)`` states (§4).

Actions ``Omega(S)``
    ``{0, 1}`` if ``g = 2``, ``x11 = 0``, ``theta >= 1`` (so ``x2 = 0``,
    ``x1 in {0, 1}``); ``{0}`` otherwise. 1 = co-allocate the head job, 0 = do
    not (start it locally if it fits, else leave it waiting). At most one job
    starts per decision epoch.

Post-decision sets ``Psi_d(S)`` (pairs ``(X, prob)``)
    ``d = 0``: if ``g = 0`` or the head job does not fit (``theta < g``),
    ``{(S, 1)}``. Otherwise the head job starts locally (``x1+1`` if ``g=1``,
    ``x2+1`` if ``g=2``) and the queue advances: ``q1 = 1`` gives
    ``{((0, q2, 0, x1', x2', x11), 1)}``; ``q1 > 1`` gives the next head's size,
    ``{((q1-1, q2, 1, ...), p), ((q1-1, q2, 2, ...), 1-p)}``.
    ``d = 1``: as ``d = 0`` with ``x11 + 1`` instead of a local start.

Rates ``eta(X, Y)`` out of a post-decision state ``X = (q1', q2', g', x1', x2', x11')``
    * arrival to queue 1: ``lambda_1`` to ``q1'+1`` if ``q1' > 0``; if ``q1' = 0``,
      ``lambda_1 p`` to ``(1, q2', 1, ...)`` and ``lambda_1 (1-p)`` to ``(1, q2', 2, ...)``;
    * arrival to queue 2: ``lambda_2`` to ``q2'+1``;
    * completions: ``mu_1 x1'`` (``x1'-1``), ``mu_1 x2'`` (``x2'-1``),
      ``mu_3 x11'`` (``x11'-1``), and ``mu_2`` (``q2'-1``) if ``x11' = 0, q2' > 0``.

    ``r_d(S) = sum_X prob sum_Y eta(X, Y)``. Cost rate ``c1 (q1 + x1 + x2 + x11) + c2 q2``
    (the same in ``S`` and in every ``X``: starting a job moves it, it does not remove it).

Bellman equation (§3, printed), with ``nu = lambda_1 + lambda_2 + 2 mu_1 + mu_2 + mu_3``:

    J(S) = min_d [c(S) + sum_X prob sum_Y eta(X, Y) J(Y) + (nu - r_d(S)) J(S)] / (nu + beta).

As a CTMDP over pre-decision states this is: from ``S`` under ``d`` the rate to
``Y`` is ``sum_X prob eta(X, Y)``. The exit rate does not depend on which ``X``
occurs (``g'`` changes no rate), so this is an exact CTMDP, and ``nu`` does not
change ``J``.

Ambiguities (see ``docs/assumptions.md``) and the options that select them:

* ``self_loop``: ``"pre"`` (default, printed: the fictitious uniformization
  transition returns to ``S`` and so undoes nothing — an exact uniformization) or
  ``"post"`` (it returns to ``X``, which then becomes a new decision epoch: the
  model then depends on ``nu``, and more than one job can start between two real
  events).
* ``boundary``: ``"block"`` (default, the printed truncated state space: an arrival
  to a full queue is lost) or ``"absorb"`` (the transition leaves the truncated
  space and contributes ``J = 0``: the reading of an implementation whose value
  array beyond ``Delta`` holds zeros).
* The printed arrival of a two-node job to an empty queue 1,
  ``(1, q2, 2, x1, x2, x11 + 1)``, is read as the formal ``eta`` list says,
  ``(1, q2', 2, x1', x2', x11')``: the printed ``x11 + 1`` would count the job both
  in the queue and in service and leave the state space (``x11 = 2``).
* ``nu``: the printed bound by default; any ``nu >= max r`` may be given.

Modules: :mod:`.params` (parameters, state count), :mod:`.builder` (state
indexing, the compiled builder, the line-by-line reference), :mod:`.solution`
(policies, tables, :class:`CoallocSolution`, :func:`solve_coalloc`); the stability
of the untruncated system is :mod:`hetsched.mdp.stability`.
"""

from __future__ import annotations

from .builder import CoallocModel, build_coalloc, coalloc_event_model
from .params import CONFIGS, CoallocParams, coalloc_memory_bytes, n_pairs, n_states
from .solution import (
    HEURISTICS,
    CoallocSolution,
    average_cost,
    decision_table,
    heuristic_policy,
    local_policy,
    policy_from_table,
    solve_coalloc,
)

__all__ = [
    "CoallocParams",
    "CoallocModel",
    "CoallocSolution",
    "CONFIGS",
    "HEURISTICS",
    "build_coalloc",
    "coalloc_event_model",
    "solve_coalloc",
    "local_policy",
    "heuristic_policy",
    "decision_table",
    "policy_from_table",
    "average_cost",
    "n_states",
    "n_pairs",
    "coalloc_memory_bytes",
]
