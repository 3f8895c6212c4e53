"""The simulation core every model is built on (compiled with numba, ``cache=True``).

A model (``sim/mapping``, ``sim/desktop``, ...) is three layers: a Python
function that validates and turns the system into arrays once; a compiled
replication kernel using the pieces below; a summary into :class:`SimResult`.
No model imports another model's kernel; everything shared lives here.

Interfaces
----------
:mod:`.rng` — randomness
    ``DEFAULT_SEED = 2009`` (the one default of the project);
    ``seed_sequence(seed)`` the one seed normaliser (None/int/SeedSequence ->
    SeedSequence, bad values -> ModelError); ``make_streams(seed_seq, n)`` ->
    ``(n, 4)`` uint64 xoshiro256+ states, one stream per purpose. Compiled:
    ``uniform(st, s)`` in (0, 1], ``expo(st, s)`` Exp(1), ``below(st, s, n)``
    integer in ``0..n-1``, ``next_u64(st, s)``.
:mod:`.variates` — distributions
    codes ``EXP, DET, HYPEREXP, WEIBULL, GENERAL``; ``variate(kind, mean,
    scv=, shape=, label=)`` -> :class:`Variate` with ``.code`` and ``.par``
    (float[4]); compiled ``draw(st, s, code, par)``; ``draw_block`` for
    general (scipy-like) distributions, drawn in Python before the run.
    Mapping model: ``exec_dist``, ``ExecDist``, ``hyperexp_params``,
    ``draw_general``.
:mod:`.events` — the event list
    ``EventList`` (namedtuple of arrays: one kernel argument); compiled
    ``ev_new(n_slots)``, ``ev_schedule(ev, slot, t, prio)``,
    ``ev_cancel(ev, slot)``, ``ev_pop(ev)``; ``ev.ht[0]``/``ev.hs[0]`` time
    and slot of the first event. Order ``(time, priority, sequence)``.
:mod:`.instability` — the one instability rule
    ``NSEG = 10``; ``default_bound(M)``; ``trend_unstable(seg)``;
    ``verdict(hit_bound_flags, trend_flags)``; compiled segment averages
    ``seg_new(warmup, horizon)``, ``seg_observe(sg, t, n)``,
    ``seg_close(sg, horizon, n, out)``.
:mod:`.ties` — the one tie chooser
    codes ``TIE_LOWEST, TIE_HIGHEST, TIE_RANDOM`` (names of
    :mod:`hetsched.policies.user`); compiled ``tie_pick(tie, buf, nt, st, s)``
    (collect the tied candidates, then choose) and ``tie_keep(tie, j, best,
    w, wtot, st, s)`` (streaming, with weights).
:mod:`.pool` — the one FCFS task pool
    ``TaskPool`` (linked queues in one pool of slots, a free stack);
    ``pool_new(cap, nq)``; compiled ``pool_alloc``, ``pool_append``,
    ``pool_insert_sorted``, ``pool_push``, ``pool_pop``, ``pool_size``.
:mod:`.kernels` — compiling kernels
    ``specialise(module, names, bindings, key=, label=)`` compiles a kernel's
    functions again with some globals rebound (a policy family, a user's
    policy, a constant) and caches each specialisation on disk
    (``cache_dir()``: ``$HETSCHED_CACHE_DIR``, ``$XDG_CACHE_HOME/hetsched``,
    ``~/.cache/hetsched``); ``policy_key(fn)`` the content key of a user
    function; an unusable cache gives one ``KernelCacheWarning``, never an error.
:mod:`.guard` — running user code safely
    ``run_guarded(call, counter, stall=)`` runs a kernel in a forked, watched
    child (progress, Ctrl-C, exceptions and crashes come back as
    ``PolicyFailed``/``PolicyStalled``); ``shared_zeros``/``shared_copy``
    output arrays; compiled ``publish(arr, i, v)`` (a store the parent sees)
    and ``readonly(arr)`` (the same array typed read-only: what a kernel hands
    to a user policy).

Compile time: the event-list functions are compiled (and cached) on their own
and inlined by the optimiser, not by numba's IR inliner (``inline="always"``
tripled a kernel's compile time for no speed). Pass a compiled helper small
tuples or arrays, not a tuple of twenty arrays, per event: each array passed
costs a reference-count update (measured: 25 % of the mapping kernel).
:mod:`.result` — the one result type
    :class:`SimResult` (``status``, ``success``, ``message``, ``metric``,
    ``mean``, ``ci``, ``per_class``, ``events``, ``wall_seconds``, ``extra``
    read as attributes, ``to_frame()``, ``as_dict()`` = CLI JSON, short
    ``repr``, ``_repr_html_``); ``from_replications(...)``,
    ``per_class_entry(i, main, **others)``.

Importing this package does not load numba (``seeds`` and ``result`` are
plain Python; the compiled modules load on first use), so the command line
and ``import hetsched`` stay light.
"""

from ..._lazy import lazy_names
from .result import STATUS_OK, STATUS_UNSTABLE, SimResult, from_replications, per_class_entry
from .seeds import DEFAULT_SEED, seed_sequence

__all__ = ["NSEG", "DEFAULT_SEED", "SimResult", "STATUS_OK", "STATUS_UNSTABLE", "default_bound", "from_replications",
           "make_streams", "per_class_entry", "seed_sequence", "trend_unstable", "verdict"]

_LAZY = {"NSEG": "instability", "default_bound": "instability", "trend_unstable": "instability",
         "verdict": "instability", "make_streams": "rng"}


__getattr__, __dir__ = lazy_names(__name__, globals(), _LAZY)  # the compiled pieces load numba: on first use
