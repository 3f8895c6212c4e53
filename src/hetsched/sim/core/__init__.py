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
