"""Array layouts of the desktop-grid kernel: the named tuples it takes and the fields of its arrays.

Plain Python (no numba): :mod:`.model` builds these, :mod:`.kernel` and :mod:`.expand` read them.
"""

from __future__ import annotations

from collections import namedtuple

#: the model: arrays made once per (system, policy, options); ``iopt``/``fopt`` scalars below
Model = namedtuple("Model", ["col", "muT", "mu_colT", "a_true", "a_est0", "chain_id", "Pm", "Ppow", "logstay",
                             "levels", "stat", "alpha", "up_par", "down_par", "exec_par", "gmem", "goff", "mpos",
                             "iopt", "fopt"])
#: the replication state
State = namedtuple("State", ["mi", "mf", "p_arr", "p_next", "free", "qhead", "qtail", "ql", "head_arr",
                             "chead", "ctail", "cidle", "ninit", "ist", "fst", "sg", "cls_n", "cls_w", "up_time"])
#: the LP state (vertex tableau, robust support table; the expanded per-machine vertex of :mod:`.expand`:
#: class covers ``qa..qb`` per group, up members per group ``nup`` and their Fenwick tree ``fen``, machine
#: supports ``msup``, idle lists per (group, class) ``xprev/xnext/xhead/xtail/xcnt/xninit``, initial ranks)
LPState = namedtuple("LPState", ["T", "obj", "basis", "cap", "support", "elig_static", "keys_cap", "key_used",
                                 "sup_table", "xs", "xs_int", "qa", "qb", "nup", "fen", "msup", "xprev", "xnext",
                                 "xhead", "xtail", "xcnt", "xninit", "irank"])

#: three event lists of the core, one per kind of event (see the module docstring)
Events = namedtuple("Events", ["task", "avail", "arrival"])

# iopt fields
I_POLICY, I_MRULE, I_RESUB, I_LPMODE, I_TIE, I_FAIL, I_UPK, I_DOWNK, I_EXECK, I_BOUND, I_USES_LP, I_EXPAND = range(12)
N_IOPT = 12
# fopt fields
F_HORIZON, F_WARMUP, F_INACC, F_STEP = range(4)
N_FOPT = 4
# machine int fields (mi[j, .])
UP, BUSY, CST, CK, PREV, NEXT, TKIND, INIT = range(8)
N_MI = 8
# machine float fields (mf[j, .])
TARR, REM, SEGT, LEVEL, IDLE_SINCE, AEST, SEGEND, UPSINCE = range(8)
N_MF = 8
# ist fields
(EVENTS, PENDING, MISS_SLOT, LP_SOLVES, PIVOTS, AVAIL_EVENTS, RESUB, STATUS, ARRIVALS, PIV_SINCE, SUP_CHANGES,
 LP_FAIL, PEND_MACHINE, TABLE_COUNT, STARTS, LOOKUPS, NFREE, ERR_MACHINE, ERR_VALUE, PEAK, HW) = range(21)
N_IST = 21
# fst fields
T_NOW, LAM = 0, 1
N_FST = 2

# policy codes (hetsched.policies.pull), machine rules, tie rules
FCFS, GCMU, LPAS_DG, LPAS_DG_ROBUST, USER = 0, 1, 2, 3, 4
R_LONGEST_IDLE, R_FASTEST, R_LOWEST_INDEX, R_RANDOM = 0, 1, 2, 3
TIE_LOWEST, TIE_HIGHEST, TIE_RANDOM = 0, 1, 2
TIE_RULES_CODE = {"lowest": TIE_LOWEST, "highest": TIE_HIGHEST, "random": TIE_RANDOM}
# streams
S_ARR, S_EXEC, S_FAIL, S_CHAIN, S_TIE, S_EST, S_USER = range(7)
N_STREAMS = 7
# event priorities
PRIO_TASK, PRIO_AVAIL, PRIO_ARRIVAL = 0, 1, 2

# return codes / status
DONE = 0
NEED_SUPPORT = 1
BOUND = 2
BAD_CHOICE = 3
LP_FAILED = 4

