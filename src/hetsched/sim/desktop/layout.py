"""Array layouts of the desktop-grid kernel: the named tuples it takes and the fields of its arrays.

Plain Python (no numba): :mod:`.model` builds the parameters, :mod:`.run` the
state and outputs of a replication, :mod:`.kernel` and :mod:`.expand` read them.

The kernel takes six arguments: ``p`` (:class:`Params`), ``s`` (:class:`State`),
``lp`` (:class:`LPState`), ``ev`` (:class:`Events`), ``st`` (the xoshiro streams)
and ``out`` (:class:`Out`). Per-machine fields are two matrices, ``s.mi[j, f]``
(integers) and ``s.mf[j, f]`` (floats), one row per machine, so that the few
fields an event touches share a cache line (3.F has 3,000 machines); the field
indices are the constants below.
"""

from __future__ import annotations

from collections import namedtuple

__all__ = ["Params", "State", "Control", "LPState", "Out", "Events", "XLists", "Machines"]

#: the model: arrays made once per (system, policy, options), then the options as scalars
Params = namedtuple("Params", [
    "col",        # machine -> its LP column (group of interchangeable machines, or the machine)
    "muT",        # [M, N] nominal rates mu'_ij, transposed
    "mu_colT",    # [C, N] nominal rates of the LP columns
    "a_true",     # [M] static CPU availability (machines with a chain ignore it)
    "a_est0",     # [M] the policies' estimate of a (cpu_info=False: 1)
    "chain_id",   # [M] CPU chain of the machine (-1: static a)
    "Pm", "Ppow", "logstay", "levels", "stat",  # CPU chains: P, P^(2^b), log P_ss, levels, stationary laws
    "alpha",      # [N] arrival rates
    "up_par",     # [M, 4] availability-period variate of each machine
    "down_par",   # [4] fault-period variate
    "exec_par",   # [4] execution-size variate (unit mean)
    "gmem", "goff", "mpos",  # expanded vertex: members of each column in staircase order, offsets, places
    "policy", "machine_rule", "resubmit", "lp_mode", "tie", "failures", "up_kind", "down_kind", "exec_kind",
    "bound", "uses_lp", "expand",  # integers (codes below; flags 0/1)
    "horizon", "warmup", "inaccuracy", "step",  # floats
])
#: the resumable kernel's control registers (one-element int arrays)
Control = namedtuple("Control", ["status", "pending", "miss_slot", "pend_machine", "table_count", "piv_since",
                                 "err_machine", "err_value"])
#: the replication state: machines, the pool of waiting tasks (one FCFS queue per class, ``pool.qlen`` the
#: numbers waiting), the idle lists per LP column, scratch, control
State = namedtuple("State", ["mi", "mf", "pool", "p_arr", "p_size", "head_arr", "chead", "ctail", "cidle", "ninit",
                             "buf", "ctl"])
#: the LP state (vertex tableau, robust support table; the expanded per-machine vertex of :mod:`.expand`:
#: class covers ``qa..qb`` per group, up members per group ``nup`` and their Fenwick tree ``fen``, machine
#: supports ``msup``, idle lists per (group, class) ``xprev/xnext/xhead/xtail/xcnt/xninit``, initial ranks)
LPState = namedtuple("LPState", ["T", "obj", "basis", "cap", "support", "elig_static", "keys_cap", "key_used",
                                 "sup_table", "xs", "xs_int", "qa", "qb", "nup", "fen", "msup", "xprev", "xnext",
                                 "xhead", "xtail", "xcnt", "xninit", "irank"])
#: the measures of one replication (counters are one-element arrays; ``sg`` the instability segments)
Out = namedtuple("Out", ["events", "arrivals", "starts", "resubmissions", "avail_events", "lp_solves", "pivots",
                         "lp_failures", "support_changes", "lookups", "peak", "t_now", "lam", "size_sum", "cls_n",
                         "cls_w", "up_time", "sg"])
#: small views made once per run for the expanded vertex's idle lists (what :mod:`.expand`'s list functions
#: read from ``lp`` and ``s``): passing them per event instead of the tuples saves a reference count per array
XLists = namedtuple("XLists", ["msup", "xprev", "xnext", "xhead", "xtail", "xcnt", "xninit", "irank"])
Machines = namedtuple("Machines", ["mi", "mf"])
#: three event lists of the core, one per kind of event (see :mod:`.kernel`)
Events = namedtuple("Events", ["task", "avail", "arrival"])

# machine int fields (mi[j, .])
UP, BUSY, CST, CK, PREV, NEXT, TKIND, INIT = range(8)
N_MI = 8
# machine float fields (mf[j, .])
TARR, REM, SEGT, LEVEL, IDLE_SINCE, AEST, SEGEND, UPSINCE = range(8)
N_MF = 8

# policy codes (hetsched.policies.pull), machine rules, tie rules
FCFS, GCMU, LPAS_DG, LPAS_DG_ROBUST, USER = 0, 1, 2, 3, 4
R_LONGEST_IDLE, R_FASTEST, R_LOWEST_INDEX, R_RANDOM = 0, 1, 2, 3
TIE_LOWEST, TIE_HIGHEST, TIE_RANDOM = 0, 1, 2
TIE_RULES_CODE = {"lowest": TIE_LOWEST, "highest": TIE_HIGHEST, "random": TIE_RANDOM}
# streams
S_ARR, S_EXEC, S_FAIL, S_CHAIN, S_TIE, S_EST, S_USER, S_RESTART = range(8)
N_STREAMS = 8
# event priorities
PRIO_TASK, PRIO_AVAIL, PRIO_ARRIVAL = 0, 1, 2

# return codes / status
DONE = 0
NEED_SUPPORT = 1
BOUND = 2
BAD_CHOICE = 3
LP_FAILED = 4
