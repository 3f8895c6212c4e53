"""Decentralized load balancing in grids: MCT, KPB, LPAS_dec (thesis §1.5, ch. 4).

Model
-----
*System.* ``M`` machines, ``N`` task classes. Machine ``j`` receives its own
Poisson stream of class-``i`` tasks with rate ``alpha_ij`` (``System.alpha_matrix``;
``alpha_ij = alpha_i / M`` when the scenario says ``alpha_per_machine =
"uniform"``). A class-``i`` task runs on machine ``j`` for an exponential time of
rate ``mu_ij = mu'_ij a_j`` (nominal rate times CPU availability, §4.3.3). Each
machine serves its queue FCFS, one task at a time.

*Decisions (§1.5.1).* When a class-``i`` task arrives at machine ``o`` (the
*origin*), ``o`` at once picks a candidate set ``S`` and sends the task to the
machine of ``S`` with the least expected completion time (§2.2.2)

.. math:: ECT_{ij} = 1/\\hat\\mu_{ij} + \\sum_{i'} Q_{i'j}/\\hat\\mu_{i'j},

computed by machine ``j`` itself from its queue ``Q_{.j}`` and its own rate
estimates ``\\hat\\mu_{.j}``. The task never moves again. Ties between
machines with equal ECT: uniform (``tie="random"``, default, own stream),
lowest or highest machine index.

* ``mct`` (§4.1): ``S`` = every machine able to run class ``i``.
* ``kpb`` (§4.1): ``S`` = the ``k`` (= ``k-bar``) machines with the largest
  ``mu_ij`` in *o's view* (ties: lower index).
* ``lpas-dec`` (§4.2): ``o`` solves the allocation LP (4.1)-(4.3) on its view
  (``alpha_i = sum_j view_alpha_ij``, ``mu = view_mu``; a vertex solution,
  identical view columns aggregated = group-symmetric) and ``S = {j :
  delta*_ij > 0}``. If ``S`` is empty, every machine.

With ``include_local=True`` the origin is always added to ``S``.

*Messages (§1.5.1, §4.1-4.2).* Every machine ``j`` of ``S`` other than the
origin costs one request and one reply: ``X += 2 |S \\ {o}|`` per arrival (MCT:
``2 (M-1)``). The origin knows its own state without messages. Piggy-backed
rates: KPB requests carry ``o``'s execution rates and replies ``j``'s; LPAS_dec
both arrival and execution rates. On receipt each side overwrites the sender's
column in its view. Messages take no time.

*Views.* Machine ``v`` holds ``view_alpha[v]``, ``view_mu[v]`` (``N x M``). At
time 0 every view holds every machine's published estimates (``initial view =
exact``). A machine always knows its own current estimates (its own column is
refreshed at every change); others learn them only through messages
(``propagation="messages"``), or at once (``propagation="instant"``, the
full-information oracle). A machine re-solves its LP at its next arrival after
any entry of its view changed.

*Rate changes (§4.3.1).* Rate-change events form a Poisson process of rate
``rate_change_rate`` (4.A: 0.035). At each, one of the ``2NM`` rates
``alpha_ij``, ``mu_ij`` is picked uniformly and set to its initial value times a
level drawn uniformly from ``alpha_levels`` (1, 1.1, 1.2) or ``mu_levels`` (1,
1.05, 1.15). A running task's remaining time is rescaled (exponential work).

*Estimation inaccuracy (§4.3.2).* Machine ``j`` publishes ``\\hat r = r (1+E)``,
``E ~ U[-I, I]`` for each of its rates ``r``. ``inaccuracy_draw="per-message"``
(default): ``E`` is drawn afresh in every report of the rates -- the deciding
machine reads its own rates afresh at each arrival (one draw per rate, carried
by all its requests of that decision), and each contacted machine draws afresh
for its reply and the ECT it reports. ``"per-rate"``: ``E`` is drawn anew
whenever ``r`` changes (and at time 0) and kept meanwhile. ECTs and views use
estimates; the simulated system the actual rates.

*Dynamic CPU availability (§4.3.3, 4.B).* CPU events form a Poisson process of
mean interval ``cpu_change_mean_interval``; at each, every machine takes the
steady-state availability ``a`` of one of the 15 chains of Table 3.13, drawn
uniformly; between events machines run at ``mu'_ij a_j``.

*State / events.* State: queues (class, arrival time, work of each task),
actual and estimated rates, views, supports. Events: superposed arrival
(rate ``sum alpha_ij``), completion (per machine), rate change, CPU change.

*Output.* ``W`` mean completion time (arrival at the origin to completion),
per class ``W_i``, ``X`` messages, LP solves, remote transfers, instability
(the core's rule, :mod:`hetsched.sim.core.instability`: bound on tasks in
system, or a trend over 10 segments).

Three layers on the simulation core: :func:`prepare` (:mod:`.model`:
validate once, arrays) → :func:`replication` (:mod:`.run`, the compiled
kernel :func:`.kernel.run`) → :func:`summarize` (a
:class:`~hetsched.sim.core.result.SimResult` with ``messages``);
:func:`simulate` does all three with replications in parallel.
"""

from .model import INACCURACY_DRAWS, POLICY_CODES, PROPAGATION, TIES, per_machine_alpha, prepare
from .run import one_run, plan, replication, simulate, simulate_cli, summarize, warm_up_kernels

__all__ = ["simulate", "plan", "prepare", "replication", "summarize", "one_run", "simulate_cli", "warm_up_kernels",
           "per_machine_alpha", "POLICY_CODES", "PROPAGATION", "INACCURACY_DRAWS", "TIES"]
