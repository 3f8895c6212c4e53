"""The dispatcher's options: one frozen, validated object instead of constructor parameters.

:class:`DispatchOptions` holds every knob of :class:`~hetsched.dispatch.Dispatcher`
that is not the cluster, the classes, the rate estimates or an I/O resource (the
journal, the emulation, the ``replenish`` callback). It is plain data: checked
once when built (a bad value raises :class:`~hetsched.errors.ModelError` naming the
option and the value), hashable, and usable as ``Dispatcher(client, classes,
rates, options)`` or ``Dispatcher(client, classes, rates, policy=..., ...)`` (the
keyword arguments build the options). :meth:`DispatchOptions.replace` gives a
modified copy.

What each option means is described where it acts: the module docstrings of
:mod:`hetsched.dispatch.state` (queues, prefetch, time-outs),
:mod:`hetsched.dispatch.monitor` (LP re-solves, drift) and
:mod:`hetsched.dispatch.dasklayer` (membership, result fetching).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from ..errors import ModelError
from ..policies.pull import LPAS_DG, LPAS_DG_ROBUST, policy_code

__all__ = ["DispatchOptions", "LP_GROUPINGS"]

LP_GROUPINGS = ("auto", "groups", "machines")


def _show(x: Any) -> str:
    import reprlib

    r = reprlib.Repr()
    r.maxstring, r.maxother, r.maxlist, r.maxlevel = 60, 60, 8, 3
    return r.repr(x)


def _number(name: str, v: Any, *, lo: float = 0.0, lo_open: bool = False, hi: float = math.inf,
            what: str = "seconds") -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise ModelError(f"{name}: expected {what}, got {_show(v)}")
    x = float(v)
    if not math.isfinite(x) or (x <= lo if lo_open else x < lo) or x > hi:
        bound = f"> {lo:g}" if lo_open else f">= {lo:g}"
        top = "" if hi == math.inf else f" and <= {hi:g}"
        raise ModelError(f"{name}: expected {what} {bound}{top}, got {_show(v)}")
    return x


def _integer(name: str, v: Any, lo: int, hi: int | None = None) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo or (hi is not None and v > hi):
        rng = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
        raise ModelError(f"{name}: expected an integer {rng}, got {_show(v)}")
    return int(v)


def _frozen_map(name: str, m: Any, value) -> tuple[tuple[str, Any], ...]:
    if m is None:
        return ()
    if isinstance(m, tuple) and all(isinstance(p, tuple) and len(p) == 2 for p in m):
        m = dict(m)
    if not isinstance(m, Mapping):
        raise ModelError(f"{name}: expected a mapping worker name -> value, got {_show(m)}")
    return tuple(sorted((str(k), value(f"{name}[{str(k)!r}]", v)) for k, v in m.items()))


def _avail(name: str, v: Any) -> float:
    return _number(name, v, lo=0.0, lo_open=True, hi=1.0, what="an availability")


@dataclass(frozen=True)
class DispatchOptions:
    """Options of :class:`~hetsched.dispatch.Dispatcher` (validated, immutable).

    Policy and model
        ``policy`` (``fcfs``, ``gcmu``, ``lpas-dg``, ``lpas-dg-robust``);
        ``alpha`` (N arrival rates per time unit; required by the LPAS_DG
        policies, checked for stability whenever given); ``availability``
        (worker name or machine key ``"name#s"`` -> ``a_j`` in (0, 1], default 1);
        ``time_unit`` (seconds per time unit of the rates); ``slots`` (machines
        per worker: an int, a mapping name -> int, or None = the worker's
        threads); ``lp_grouping`` (``auto`` = the simulator's rule, ``groups``,
        ``machines``); ``allow_unstable`` (run although ``lambda* <= 1``).
    LP re-solves and monitoring (recommendations 1-3 of thesis §3.5.2)
        ``resolve_every`` (None = re-solve at every availability event, the
        default; ``T`` seconds = the periodic ``T_system`` re-solve of §3.5.2);
        ``monitor_interval``, ``drift_threshold``, ``min_samples``,
        ``delay_correction``, ``adapt_arrivals``, ``adapt_rates``.
    Faults
        ``timeout_factor`` (None = off), ``timeout_min``, ``worker_wait``,
        ``replenish_after``, ``journal_retries``, ``ignore_unknown_workers``.
    Throughput
        ``prefetch`` (seconds of work decided ahead per machine, 0 = pure
        pull), ``max_prefetch``.
    Dask
        ``fetch_timeout`` (seconds to fetch a finished attempt's value),
        ``direct_fetch`` (fetch from workers directly; None = Dask's default).
    """

    policy: str = "lpas-dg"
    alpha: tuple[float, ...] | None = None
    availability: Any = ()
    time_unit: float = 1.0
    slots: Any = None
    lp_grouping: str = "auto"
    allow_unstable: bool = False
    resolve_every: float | None = None
    monitor_interval: float = 2.0
    drift_threshold: float = 0.3
    min_samples: int = 50
    delay_correction: bool = False
    adapt_arrivals: bool = True
    adapt_rates: bool = True
    timeout_factor: float | None = 10.0
    timeout_min: float = 5.0
    worker_wait: float = 60.0
    replenish_after: float = 5.0
    journal_retries: int = 5
    ignore_unknown_workers: bool = False
    prefetch: float = 0.0
    max_prefetch: int = 64
    fetch_timeout: float = 5.0
    direct_fetch: bool | None = None

    def __post_init__(self):
        s = object.__setattr__
        code = policy_code(self.policy)  # one line naming the policy if unknown
        s(self, "policy", str(self.policy).lower())
        if self.alpha is None:
            if code in (LPAS_DG, LPAS_DG_ROBUST):
                raise ModelError(f"alpha: policy {self.policy!r} needs the classes' arrival rates")
        else:
            try:
                al = np.asarray(self.alpha, dtype=float).reshape(-1)
            except (TypeError, ValueError):
                raise ModelError(f"alpha: expected arrival rates > 0, got {_show(self.alpha)}") from None
            if al.size == 0 or not np.isfinite(al).all() or (al <= 0).any():
                raise ModelError(f"alpha: expected arrival rates > 0, got {_show(al.tolist())}")
            s(self, "alpha", tuple(float(x) for x in al))
        s(self, "availability", _frozen_map("availability", self.availability, _avail))
        s(self, "time_unit", _number("time_unit", self.time_unit, lo_open=True))
        if self.slots is not None:
            if isinstance(self.slots, (Mapping, tuple)):
                s(self, "slots", _frozen_map("slots", self.slots, lambda n, v: _integer(n, v, 1, 4096)))
            else:
                s(self, "slots", _integer("slots", self.slots, 1, 4096))
        if self.lp_grouping not in LP_GROUPINGS:
            raise ModelError(f"lp_grouping: expected 'auto', 'groups' or 'machines', got {_show(self.lp_grouping)}")
        if self.resolve_every is not None:
            s(self, "resolve_every", _number("resolve_every", self.resolve_every, lo_open=True))
        for name in ("monitor_interval", "worker_wait", "fetch_timeout"):
            s(self, name, _number(name, getattr(self, name), lo_open=True))
        s(self, "drift_threshold", _number("drift_threshold", self.drift_threshold, lo_open=True, what="a ratio"))
        s(self, "min_samples", _integer("min_samples", self.min_samples, 1))
        if self.timeout_factor is not None:
            s(self, "timeout_factor", _number("timeout_factor", self.timeout_factor, lo_open=True, what="a factor"))
        for name in ("timeout_min", "replenish_after", "prefetch"):
            s(self, name, _number(name, getattr(self, name)))
        s(self, "journal_retries", _integer("journal_retries", self.journal_retries, 0, 1000))
        s(self, "max_prefetch", _integer("max_prefetch", self.max_prefetch, 1, 100_000))
        for name in ("allow_unstable", "delay_correction", "adapt_arrivals", "adapt_rates", "ignore_unknown_workers"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise ModelError(f"{name}: expected True or False, got {_show(getattr(self, name))}")
            s(self, name, bool(getattr(self, name)))
        if self.direct_fetch is not None and not isinstance(self.direct_fetch, bool):
            raise ModelError(f"direct_fetch: expected True, False or None, got {_show(self.direct_fetch)}")

    # ------------------------------------------------------------------ helpers
    @classmethod
    def build(cls, options: "DispatchOptions | None" = None, **kw: Any) -> "DispatchOptions":
        """``options`` with the keyword arguments applied (unknown names are refused by name)."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(kw) - names)
        if unknown:
            raise ModelError(f"options: unknown option(s) {unknown}; known: {sorted(names)}")
        if options is None:
            return cls(**kw)
        if not isinstance(options, cls):
            raise ModelError(f"options: expected a DispatchOptions, got {_show(options)}")
        return options.replace(**kw) if kw else options

    def replace(self, **kw: Any) -> "DispatchOptions":
        """A copy with some options changed (validated again)."""
        return dataclasses.replace(self, **kw)

    @property
    def code(self) -> int:
        """The policy's integer code (:mod:`hetsched.policies.pull`)."""
        return policy_code(self.policy)

    def availability_of(self, key: str, name: str, address: str) -> float:
        """``a_j`` of machine ``key`` of worker ``name`` at ``address`` (default 1)."""
        av = dict(self.availability)
        return av.get(key, av.get(name, av.get(address, 1.0)))

    def slots_of(self, name: str, nthreads: int) -> int:
        """Machines of worker ``name`` (default: its threads)."""
        if self.slots is None:
            return nthreads
        if isinstance(self.slots, tuple):
            return int(dict(self.slots).get(name, nthreads))
        return int(self.slots)

    def as_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["availability"] = dict(self.availability)
        if isinstance(self.slots, tuple):
            d["slots"] = dict(self.slots)
        return d
