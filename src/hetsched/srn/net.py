"""Net description: places, timed and immediate transitions, arcs, guards, rewards.

A :class:`Net` is inert data built with a small fluent API::

    net = Net("mm1k")
    net.place("Q", 0)
    net.timed("arrive", rate=2.0, outputs={"Q": 1}, guard=lambda m: m["Q"] < 10)
    net.timed("serve", rate=lambda m: 3.0 * np.minimum(m["Q"], 2), inputs={"Q": 1})

Marking-dependent quantities (rates, weights, guards, arc multiplicities) are
Python callables of a *marking view* ``m``: ``m["Q"]`` (or ``m.Q``) is the number
of tokens of place ``Q``. The state-space generator calls them on a **batch** of
markings at once, so ``m["Q"]`` is a NumPy integer array and the callable should
use array operations (``&``, ``|``, ``np.minimum``, ``np.where``). A callable
written for scalars (``and``, ``if``, ``min``) still works: when the batched call
raises or returns the wrong shape, the generator falls back to calling it once
per marking (slower; see ``docs/srn.md``).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Union

import numpy as np

from ..errors import ModelError

__all__ = ["Net", "Place", "Transition", "MarkingView", "Reward", "mark", "rate", "reward"]

Number = Union[int, float]
Func = Callable[["MarkingView"], Any]
Mult = Union[int, Func]


class MarkingView:
    """Read-only access to a batch of markings by place name (``m["P"]`` or ``m.P``)."""

    __slots__ = ("_X", "_index")

    def __init__(self, X: np.ndarray, index: Mapping[str, int]):
        object.__setattr__(self, "_X", X)
        object.__setattr__(self, "_index", index)

    def __getitem__(self, name: str):
        try:
            j = self._index[name]
        except KeyError:
            raise ModelError(f"unknown place {name!r} used in a marking-dependent function") from None
        return self._X[..., j]

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        return self[name]

    def __setattr__(self, name, value):
        raise AttributeError("markings are read-only")

    def __len__(self) -> int:
        return 1 if self._X.ndim == 1 else self._X.shape[0]

    def as_dict(self) -> dict[str, int]:
        """The marking (for a single marking) as ``{place: tokens}``."""
        return {p: int(self._X[..., j]) for p, j in self._index.items()}

    def __repr__(self) -> str:
        if self._X.ndim == 1:
            return "Marking(" + ", ".join(f"{p}={int(self._X[j])}" for p, j in self._index.items()) + ")"
        return f"MarkingView({self._X.shape[0]} markings)"


class RecordingView(MarkingView):
    """A marking view that records in ``seen`` the names of the places a function reads."""

    __slots__ = ("_seen",)

    def __init__(self, X: np.ndarray, index: Mapping[str, int], seen: set):
        super().__init__(X, index)
        object.__setattr__(self, "_seen", seen)

    def __getitem__(self, name: str):
        v = MarkingView.__getitem__(self, name)
        self._seen.add(name)
        return v


@dataclass(frozen=True)
class Place:
    name: str
    initial: int = 0
    capacity: int | None = None    # at most this many tokens: a firing that would exceed it is disabled


@dataclass(frozen=True)
class Transition:
    """One transition. ``kind`` is ``"timed"`` (``value`` = rate) or ``"immediate"``
    (``value`` = weight, ``priority`` higher fires first). ``servers`` (timed only):
    the firing rate is ``value * min(servers, enabling degree)``; 1 = single server
    (the rate as given), ``math.inf`` = infinite server."""

    name: str
    kind: str
    value: Union[Number, Func]
    priority: int = 0
    guard: Func | None = None
    inputs: tuple[tuple[str, Mult], ...] = ()
    outputs: tuple[tuple[str, Mult], ...] = ()
    inhibitors: tuple[tuple[str, Mult], ...] = ()
    servers: float = 1

    @property
    def timed(self) -> bool:
        return self.kind == "timed"


def _check_name(kind: str, name: Any) -> str:
    # any printable name (files name places "P.1", "a-b", "Polling System"); ``m["P.1"]`` reads it
    if not isinstance(name, str) or not name.strip() or name != name.strip() or not name.isprintable():
        raise ModelError(f"{kind} name must be a non-empty printable string without leading or trailing "
                         f"spaces, got {name!r}")
    return name


class Net:
    """A stochastic reward net (SRN): the model, no solver state.

    Parameters
    ----------
    name : str
        Used in exports and messages.
    """

    def __init__(self, name: str = "net"):
        self.name = _check_name("net", name)
        self._places: dict[str, Place] = {}
        self._transitions: dict[str, Transition] = {}
        #: performance measures the net defines (name -> GreatSPN text, parsed measure or Reward);
        #: :func:`hetsched.srn.solve` evaluates them
        self.measures: dict[str, Any] = {}
        #: where the net comes from (``file``, ``format``, ``page``, ``constants``, ...)
        self.meta: dict[str, Any] = {}

    # -- construction -------------------------------------------------------
    def place(self, name: str, initial: int = 0, capacity: int | None = None) -> "Net":
        """Add a place with ``initial`` tokens; ``capacity``: at most that many tokens (a transition
        whose firing would put more in the place is disabled), ``None`` = unbounded."""
        _check_name("place", name)
        if name in self._places or name in self._transitions:
            raise ModelError(f"name {name!r} is used twice")
        if isinstance(initial, bool) or not isinstance(initial, numbers.Integral) or initial < 0:
            raise ModelError(f"place {name!r}: initial marking must be an integer >= 0, got {initial!r}")
        if capacity is not None:
            if isinstance(capacity, bool) or not isinstance(capacity, numbers.Integral) or capacity < initial:
                raise ModelError(f"place {name!r}: capacity must be an integer >= the initial marking {initial}, "
                                 f"got {capacity!r}")
            capacity = int(capacity)
        self._places[name] = Place(name, int(initial), capacity)
        return self

    def places(self, **initial: int) -> "Net":
        """Add several places at once: ``net.places(P1=1, P2=0)``."""
        for k, v in initial.items():
            self.place(k, v)
        return self

    def timed(self, name: str, rate: Union[Number, Func], *, inputs=None, outputs=None,
              inhibitors=None, guard: Func | None = None, servers: float = 1) -> "Net":
        """Add a timed (exponential) transition; ``rate`` is a number or a function of the marking.

        ``servers``: 1 (default, single server: fires at ``rate``), an integer k (k-server:
        ``rate * min(k, d)``) or ``math.inf`` (infinite server: ``rate * d``), where the
        enabling degree ``d`` is the smallest ``#p // multiplicity`` over the input arcs (1 for a
        transition without input arcs).
        """
        if isinstance(servers, bool) or not isinstance(servers, numbers.Real) or not (
                servers == math.inf or (float(servers).is_integer() and servers >= 1)):
            raise ModelError(f"transition {name!r}: servers must be an integer >= 1 or math.inf, got {servers!r}")
        return self._add(name, "timed", rate, 0, guard, inputs, outputs, inhibitors,
                         servers if servers == math.inf else int(servers))

    def immediate(self, name: str, weight: Union[Number, Func] = 1.0, *, priority: int = 1,
                  inputs=None, outputs=None, inhibitors=None, guard: Func | None = None) -> "Net":
        """Add an immediate transition (``priority`` >= 0, higher fires first, ties by ``weight``).

        Every immediate transition, priority 0 included (Storm's default in PNML), fires before
        any timed one: a marking where one is enabled is vanishing.
        """
        if isinstance(priority, bool) or not isinstance(priority, numbers.Integral) or priority < 0:
            raise ModelError(f"transition {name!r}: priority must be an integer >= 0, got {priority!r}")
        return self._add(name, "immediate", weight, int(priority), guard, inputs, outputs, inhibitors)

    def _add(self, name, kind, value, priority, guard, inputs, outputs, inhibitors, servers=1) -> "Net":
        _check_name("transition", name)
        if name in self._transitions or name in self._places:
            raise ModelError(f"name {name!r} is used twice")
        what = "rate" if kind == "timed" else "weight"
        if not callable(value):
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value) or value <= 0:
                raise ModelError(f"transition {name!r}: {what} must be a number > 0 or a function, got {value!r}")
            value = float(value)
        if guard is not None and not callable(guard):
            raise ModelError(f"transition {name!r}: guard must be a function of the marking, got {guard!r}")
        arcs = []
        for label, d in (("inputs", inputs), ("outputs", outputs), ("inhibitors", inhibitors)):
            d = dict(d or {})
            for p, mlt in d.items():
                if p not in self._places:
                    raise ModelError(f"transition {name!r}: {label} names unknown place {p!r} (add places first)")
                if not callable(mlt):
                    if isinstance(mlt, bool) or not isinstance(mlt, numbers.Integral) or mlt < 1:
                        raise ModelError(f"transition {name!r}: {label}[{p!r}] multiplicity must be an integer >= 1 "
                                         f"or a function, got {mlt!r}")
                    mlt = int(mlt)
            arcs.append(tuple(d.items()))
        self._transitions[name] = Transition(name, kind, value, priority, guard, *arcs, servers=servers)
        return self

    # -- access -------------------------------------------------------------
    @property
    def place_names(self) -> list[str]:
        return list(self._places)

    @property
    def transition_names(self) -> list[str]:
        return list(self._transitions)

    @property
    def transitions(self) -> list[Transition]:
        return list(self._transitions.values())

    def transition(self, name: str) -> Transition:
        try:
            return self._transitions[name]
        except KeyError:
            raise ModelError(f"unknown transition {name!r}; known: {', '.join(self._transitions)}") from None

    def place_index(self, name: str) -> int:
        try:
            return self.place_names.index(name)
        except ValueError:
            raise ModelError(f"unknown place {name!r}; known: {', '.join(self._places)}") from None

    @property
    def initial_marking(self) -> np.ndarray:
        return np.array([p.initial for p in self._places.values()], dtype=np.int64)

    @property
    def capacities(self) -> dict[str, int]:
        """The places that have a capacity: ``{place: capacity}``."""
        return {p.name: p.capacity for p in self._places.values() if p.capacity is not None}

    def is_gspn(self) -> bool:
        """True if the net uses no SRN-only feature (guards, marking-dependent arcs/weights)."""
        for t in self._transitions.values():
            if t.guard is not None or (not t.timed and callable(t.value)):
                return False
            if t.servers != 1:
                return False
            if any(callable(m) for _, m in t.inputs + t.outputs + t.inhibitors):
                return False
        return True

    def __repr__(self) -> str:
        nt = sum(t.timed for t in self._transitions.values())
        return (f"Net({self.name!r}: {len(self._places)} places, {nt} timed and "
                f"{len(self._transitions) - nt} immediate transitions)")


# -- rewards ------------------------------------------------------------------
@dataclass(frozen=True)
class Reward:
    """A reward-rate function of the tangible marking: a linear combination of
    ``mark(p)``, ``rate(t)`` and arbitrary functions ``reward(f)``.

    Rewards add and scale: ``rate("t1") + rate("t2")``, ``2 * mark("Q")``, ``1 - mark("N") / 16``.
    """

    terms: tuple[tuple[str, Any, float], ...] = field(default_factory=tuple)  # (kind, arg, coef)
    const: float = 0.0

    def __add__(self, other):
        if isinstance(other, Reward):
            return Reward(self.terms + other.terms, self.const + other.const)
        if isinstance(other, numbers.Real):
            return Reward(self.terms, self.const + float(other))
        return NotImplemented

    __radd__ = __add__

    def __mul__(self, c):
        if not isinstance(c, numbers.Real):
            return NotImplemented
        return Reward(tuple((k, a, w * float(c)) for k, a, w in self.terms), self.const * float(c))

    __rmul__ = __mul__

    def __neg__(self):
        return self * -1.0

    def __sub__(self, other):
        return self + (-other)

    def __rsub__(self, other):
        return (-self) + other

    def __truediv__(self, c):
        if not isinstance(c, numbers.Real):
            return NotImplemented
        return self * (1.0 / float(c))


def mark(place: str) -> Reward:
    """Reward: number of tokens in ``place``."""
    return Reward((("mark", place, 1.0),))


def rate(transition: str) -> Reward:
    """Reward: firing rate of timed ``transition`` in the marking (0 where disabled)."""
    return Reward((("rate", transition, 1.0),))


def reward(f: Func) -> Reward:
    """Reward: any function of the marking (called on a batch, like guards)."""
    if not callable(f):
        raise ModelError(f"reward(): expected a function of the marking, got {f!r}")
    return Reward((("func", f, 1.0),))
