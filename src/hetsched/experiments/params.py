"""``--set KEY=VALUE`` parameters of an experiment: declaration (:class:`Param`), parsing
(:func:`parse_sets`) and the run size they decide (:func:`sizes`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from ..errors import HetschedError
from ..validation import check_choice, check_event_budget, check_float, check_int

if TYPE_CHECKING:  # pragma: no cover
    from .core import Experiment, RunOptions

__all__ = ["Param", "KINDS", "REPS", "HORIZON", "parse_sets", "sizes"]

#: the kinds a parameter may have: scalars, or lists of them (a JSON list or comma-separated)
KINDS = ("int", "float", "bool", "str", "ints", "floats", "strs")
MAX_LIST = 1000
MAX_TEXT = 4096


@dataclass(frozen=True)
class Param:
    """One ``--set KEY=VALUE`` parameter an experiment accepts.

    ``kind``: ``int``, ``float``, ``bool``, ``str`` or a list of them
    (``ints``, ``floats``, ``strs``: a JSON list or comma-separated). Numbers
    must be finite and within ``[lo, hi]`` (``lo`` excluded with ``lo_open``);
    strings one of ``choices`` when given; ``check`` may refine a value
    (return it, or raise :class:`HetschedError` with the reason).
    """

    name: str
    kind: str
    help: str = ""
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    choices: tuple[str, ...] | None = None
    check: Callable[[Any], Any] | None = None


REPS = Param("reps", "int", "independent replications", 1, 10_000)
HORIZON = Param("horizon", "float", "simulated time units per replication", 0.0, 1e12, lo_open=True)


def _parse_one(p: Param, text: str) -> Any:
    name = f"--set {p.name}"
    raw = text.strip()
    try:
        val: Any = json.loads(raw)
    except (json.JSONDecodeError, RecursionError, ValueError):
        val = raw
    if p.kind in ("ints", "floats", "strs"):
        if isinstance(val, str):
            items: list[Any] = [s.strip() for s in val.split(",") if s.strip()]
        elif isinstance(val, list):
            items = val
        else:
            items = [val]
        if not items:
            raise HetschedError(f"{name}: expected a list (JSON or comma-separated), got {text!r}")
        if len(items) > MAX_LIST:
            raise HetschedError(f"{name}: at most {MAX_LIST} values, got {len(items):,}")
        return [_scalar(p, p.kind[:-1], f"{name}[{k}]", v) for k, v in enumerate(items)]
    if p.kind == "str" and not isinstance(val, str):
        val = raw  # text as given (e.g. a path that happens to parse as a number)
    return _scalar(p, p.kind, name, val)


def _scalar(p: Param, kind: str, name: str, val: Any) -> Any:
    if kind == "int":
        v = check_int(val, name, None if p.lo is None else int(p.lo), None if p.hi is None else int(p.hi))
    elif kind == "float":
        if isinstance(val, bool) or isinstance(val, (list, dict)):
            raise HetschedError(f"{name}: expected a number, got {val!r}")
        v = check_float(val, name, p.lo, p.hi, lo_open=p.lo_open)
    elif kind == "bool":
        s = str(val).strip().lower()
        if isinstance(val, bool):
            v = val
        elif s in ("true", "1", "yes", "on"):
            v = True
        elif s in ("false", "0", "no", "off"):
            v = False
        else:
            raise HetschedError(f"{name}: expected true or false, got {val!r}")
    else:
        if not isinstance(val, (str, int, float)) or isinstance(val, bool):
            raise HetschedError(f"{name}: expected a text value, got {val!r}")
        v = str(val)
        if len(v) > MAX_TEXT:
            raise HetschedError(f"{name}: at most {MAX_TEXT} characters, got {len(v):,}")
        if p.choices is not None:
            v = check_choice(v, name, p.choices)
    if p.check is not None:
        try:
            v = p.check(v)
        except HetschedError as exc:
            raise HetschedError(f"{name}: {exc}") from None
    return v


def parse_sets(exp: "Experiment", items: list[str]) -> dict[str, Any]:
    """``["reps=10", "ks=[2,3]"]`` -> ``{"reps": 10, "ks": [2, 3]}``, checked against ``exp.params``.

    Values are read as JSON where they parse, else as text; an unknown key is
    refused with the list of valid keys; a bad value with the key, the expected
    type or range, and the value.
    """
    known = {p.name: p for p in exp.params}
    valid = ", ".join(known) or "none"
    extra: dict[str, Any] = {}
    for item in items:
        key, eq, val = str(item).partition("=")
        key = key.strip()
        if not eq or not key:
            raise HetschedError(f"--set: expected KEY=VALUE, got {item!r} (valid keys for {exp.id}: {valid})")
        if key not in known:
            raise HetschedError(f"--set: unknown key {key[:100]!r} for {exp.id}; valid keys: {valid}")
        extra[key] = _parse_one(known[key], val)
    return extra


def sizes(opts: "RunOptions", reps: int, horizon: float, qreps: int, qhorizon: float,
          event_rate: float | None = None) -> tuple[int, float]:
    """``(reps, horizon)`` of a run: ``--set`` values win (also under ``--quick``), then the
    quick or full defaults. With ``event_rate`` (events per time unit of one replication,
    summed over everything the experiment simulates) the run is refused up front when its
    estimated events exceed :data:`hetsched.validation.MAX_EVENTS`.
    """
    r = int(opts.extra.get("reps", qreps if opts.quick else reps))
    h = float(opts.extra.get("horizon", qhorizon if opts.quick else horizon))
    if event_rate is not None and ("reps" in opts.extra or "horizon" in opts.extra):
        check_event_budget(event_rate * h * r, f"--set reps={r} horizon={h:g}")
    return r, h
