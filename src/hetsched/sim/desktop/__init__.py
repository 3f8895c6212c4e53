"""Desktop grids: fault-aware pull scheduling (thesis §1.4.1, chapter 3).

Model
-----
*Tasks.* ``N`` classes arrive in independent Poisson streams (rates ``alpha_i``).
A central scheduler keeps one FCFS queue per class; a task keeps its original
arrival time for its whole life.

*Machines.* ``M`` machines, each either *available* (up) or *unavailable* (down).
An available idle machine requests a task (pull); it runs one task at a time,
without preemption. A task of class ``i`` started on machine ``j`` needs a
nominal execution time ``X`` (mean ``1/mu'_ij``; exponential, deterministic or
hyperexponential with scv 2, drawn afresh at every start). It progresses at the
machine's current CPU availability level: with a static ``a_j`` it finishes after
``X / a_j`` (effective rate ``mu_ij = a_j mu'_ij``, §1.4.1); with a three-state
CPU chain (Table 3.13: 100/50/33 %, one step every ``step = 10`` time units on a
global grid ``k*step``) its remaining nominal work decreases at rate
``level(state)`` and the state may change several times during one task (exact:
the chain is simulated through geometric sojourns while the machine is busy,
caught up with ``P^k`` when it was idle).

*Failures.* Each machine alternates availability periods (exponential,
hyperexponential scv 5, or per-group Weibull) and fault periods (exponential,
hyperexponential scv 5, or constant 120). When a machine fails, its running task
is lost (no checkpointing) and resubmitted to the scheduler; the machine pulls
again when it comes back. The scheduler learns of failures instantly.

*Events* (one slot each on the core's event list, ordered by ``(time,
priority, sequence)``): task timer per machine (completion, or a CPU-chain
state change of a running task; priority 0), availability timer per machine
(failure or repair; 1), arrival per class (2).

*Ties* (``tie``, default ``random``): between classes with equal policy keys,
and between idle machines equal under ``machine_rule`` (in practice: machines
idle since time 0, and identical machines under ``fastest``): uniform, from
the run's own tie stream; ``lowest`` / ``highest`` index as options.

*Policies* (:mod:`hetsched.policies.pull`, plain Python; user policies with
:func:`~hetsched.policies.pull.pull_policy`): ``fcfs``, ``gcmu``, ``lpas-dg``
(support of a *vertex* ``delta*`` of the allocation LP (3.1)-(3.3) restricted to
the available machines, re-optimised at every availability/unavailability event),
``lpas-dg-robust`` (support of the *central* solution, §3.4.6). The policy's LP
uses the *estimated* ``a_j``: the static value, the chain's steady-state mean, 1
without CPU information (§3.4.4, ``cpu_info=False``), or
``a'_j = clip(a_j (1+E), 0, 1)``, ``E ~ U[-I, I]`` drawn whenever ``j`` becomes
available (§3.4.6, ``inaccuracy=I``).

*LP re-solving.* ``lpas-dg`` uses, by default, one LP column per machine, so
its optimal *vertex* has at least ``NM + 1 - N - M`` zeros -- the solution the
thesis uses "throughout the chapter" (§3.3, end); with it, 22 of the 25
printed LPAS_DG ``W`` of Tables 3.3-3.6 and 3.11 are matched within 5 %, and
§3.4.4's Delta without CPU information within ~10 points (evidence in
``docs/desktop-grid.md``). Which machines of a group receive the nonzeros
depends on the vertex the simplex reaches (``lp_order``). With
``lp_grouping="groups"`` (default above 100 machines, i.e. Systems 3.F and 3.G, and
for the robust variant) machines that are interchangeable for the LP (same rate
column and same estimated ``a``) are aggregated into one column whose capacity
is the sum of the up members' ``a`` (the group-symmetric vertex: far fewer
zeros, a less restrictive policy). An availability event changes one column's
right-hand side; ``lpas-dg`` re-optimises the previous optimal tableau with a
dual simplex (no Python per event; ``lp_solves`` = availability events + 1);
``lpas-dg-robust`` caches central supports keyed by the capacity vector
(``lp_solves`` = number of distinct keys, solved by HiGHS IPM).

*Measured.* ``W``: mean completion time (departure - original arrival, including
resubmissions) of the tasks that arrive after ``warmup`` and finish by
``horizon``; ``W_i`` per class.

*Instability* (the core's rule, :mod:`hetsched.sim.core.instability`): a
replication stops when more than ``max_in_system`` tasks are in system, or is
flagged when its number in system grows through the run; and before any
simulation, a configuration whose allocation LP with the machines' long-run
capacities ``a_j E[up] / (E[up] + E[down])`` gives ``lambda* < 1`` is
reported unstable at once (no policy can keep up).

Three layers on the simulation core: :func:`prepare` (:mod:`.model`:
validate once, arrays) -> :func:`replication` (:mod:`.run`, the compiled
kernel of :mod:`.kernel`) -> :func:`summarize` (a
:class:`~hetsched.sim.core.result.SimResult`); :func:`simulate` does all three
with replications in parallel.

Modelling choices the thesis leaves open are parameters (defaults chosen against
Tables 3.3-3.6 and 3.11, see ``docs/_parts/assumptions-desktop.md``):
``machine_rule`` (which idle machine receives an arriving task),
``resubmit`` (where a resubmitted task re-enters its queue), ``lp_grouping``
and ``lp_order`` (which optimal vertex LPAS_DG uses).
"""

from .model import MACHINE_RULES, OPTIONS, POLICIES, RESUBMIT_RULES, Prepared, capacity_lambda, prepare
from .run import one_run, plan, replication, simulate, simulate_cli, summarize, warm_up_kernels

__all__ = ["simulate", "plan", "prepare", "replication", "summarize", "one_run", "simulate_cli", "warm_up_kernels",
           "capacity_lambda", "Prepared", "POLICIES", "MACHINE_RULES", "RESUBMIT_RULES", "OPTIONS"]
