"""Net files in: PNML (Storm, PIPE, the PNML 2009 grammar) and GreatSPN projects (``.PNPRO``).

``read(path, page=None, params=None)`` returns a :class:`~hetsched.srn.Net`;
``pages(path)`` lists the pages of a file. The format is recognised from the
root element (``<pnml>`` or ``<project>``), whatever the file name.

Both readers produce a neutral *draft* (places, transitions, arcs as text) that
:func:`build` turns into a net: every expression goes through the safe parser
of :mod:`hetsched.srn.expr`, so the net's rates, weights, guards and arc
multiplicities become functions of the marking. Semantics (``docs/srn.md``):

* a timed transition with a constant rate fires at ``rate * min(servers, d)``
  (``d`` its enabling degree); one with a marking-dependent rate fires at that
  rate whatever its number of servers (GreatSPN's rule: the rate function is the
  whole rate);
* immediate transitions have priorities from 0 up (every one of them before any
  timed transition) and weights; a weight of 0 is refused (Storm reads it as a
  non-deterministic choice, which no CTMC has);
* a place capacity disables any firing that would exceed it;
* a timed transition of rate 0 never fires and is left out (as Storm does), and so
  is a transition whose guard is the constant ``False``; ``net.meta["notes"]`` says
  which.

What is not a CTMC is refused with one line naming the element: GreatSPN general
(``GEN``, deterministic among them) and continuous (``CONT``) transitions,
continuous places, coloured nets (colour classes, domains, high-level PNML), and
place/transition nets with no stochastic timing.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from ..errors import ModelError
from .draft import Draft, NetPage, tag
from .expr import parse, parse_measure
from .net import Net
from .pnml import draft_pnml, net_pages
from .pnpro import draft_pnpro, project_pages

__all__ = ["read", "pages", "NetPage", "build", "Draft"]

MAX_FILE_BYTES = 256 * 2**20


def _root(path) -> tuple[Path, ET.Element]:
    from ..safeio import open_input

    p = Path(path)
    with open_input(p, max_bytes=MAX_FILE_BYTES) as fh:   # a regular file, never a FIFO; size limit
        try:
            root = ET.parse(fh).getroot()
        except ET.ParseError as exc:
            raise ModelError(f"{p}: not well-formed XML ({exc})") from None
    return p, root


def pages(path) -> list[NetPage]:
    """The pages of a net file: every page of a GreatSPN project, every ``<net>`` of a PNML file."""
    p, root = _root(path)
    if tag(root) == "pnml":
        return net_pages(root)
    if tag(root) == "project":
        return project_pages(root)
    raise ModelError(f"{p}: not a PNML or GreatSPN project file (root element <{tag(root)}>)")


def read(path, *, page: str | None = None, params: dict[str, Any] | None = None) -> Net:
    """Read a net from a PNML or GreatSPN ``.PNPRO`` file.

    Parameters
    ----------
    path : str or Path
    page : str, optional
        The page (GreatSPN) or ``<net>`` id (PNML) to read; needed when the file has more
        than one net.
    params : dict, optional
        Values of the file's templates (GreatSPN parameters without a fixed value) and
        overrides of its constants, by name.

    Returns
    -------
    Net
        With ``net.measures`` (the performance indices the file defines) and ``net.meta``
        (``file``, ``format``, ``page``, ``constants``, ``recorded`` results, ``notes``).
    """
    p, root = _root(path)
    if tag(root) == "pnml":
        d = draft_pnml(root, str(p), page)
    elif tag(root) == "project":
        d = draft_pnpro(root, str(p), page)
    else:
        raise ModelError(f"{p}: not a PNML or GreatSPN project file (root element <{tag(root)}>)")
    return build(d, params)


def _constants(d: Draft, params: dict[str, Any]) -> dict[str, Any]:
    """Values of the constants and templates (constants may use earlier ones), with ``params`` first."""
    where = f"{d.source}" + (f", page {d.page!r}" if d.page else "")
    for k in params:
        if k not in d.constants and k not in d.templates:
            known = ", ".join(list(d.templates) + list(d.constants)) or "none"
            raise ModelError(f"--param {k}: the net has no parameter or constant of that name (it has: {known})")
    out: dict[str, Any] = {}
    for k, v in params.items():
        typ = (d.templates.get(k) or d.constants.get(k))[0]
        out[k] = _typed(v, typ, f"--param {k}")
    for k, (typ, default) in d.templates.items():
        if k in out:
            continue
        if default is None or str(default).strip() == "":
            raise ModelError(f"{where}: parameter {k!r} has no value; give one with --param {k}=VALUE "
                             f"(params={{{k!r}: ...}})")
        out[k] = _typed(default, typ, f"{where}: parameter {k!r}")
    todo = {k: v for k, v in d.constants.items() if k not in out}
    while todo:
        progress = False
        for k, (typ, text) in list(todo.items()):
            try:
                e = parse(str(text), "int" if typ == "INTEGER" else "real", what=f"{where}: constant {k!r}",
                          consts=out)
            except ModelError as exc:
                if "unknown name" in str(exc) and any(n in str(text) for n in todo if n != k):
                    continue
                raise
            out[k] = e.value
            del todo[k]
            progress = True
        if not progress:
            raise ModelError(f"{where}: constants {', '.join(todo)} refer to each other or to unknown names")
    return out


def _typed(v, typ: str, what: str):
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise ModelError(f"{what}: expected a number, got {v!r}") from None
    if not math.isfinite(x):
        raise ModelError(f"{what}: expected a finite number, got {v!r}")
    if typ == "INTEGER":
        if not x.is_integer():
            raise ModelError(f"{what}: expected an integer, got {v!r}")
        return int(x)
    return x


def build(d: Draft, params: dict[str, Any] | None = None) -> Net:
    """The :class:`Net` of a draft (module docstring for the semantics)."""
    where = f"{d.source}" + (f", page {d.page!r}" if d.page else "")
    consts = _constants(d, dict(params or {}))
    pnames = [p[0] for p in d.places]
    net = Net(d.name)
    for name, marking, capacity in d.places:
        m0 = parse(marking or "0", "int", what=f"{where}: initial marking of place {name!r}", consts=consts)
        if m0.value < 0:
            raise ModelError(f"{where}: place {name!r} has a negative initial marking {m0.value}")
        cap = None
        if capacity not in (None, ""):
            c = parse(capacity, "int", what=f"{where}: capacity of place {name!r}", consts=consts).value
            cap = c if c > 0 else None          # PIPE writes 0 for "no capacity"
            if cap is not None and cap < m0.value:
                raise ModelError(f"{where}: place {name!r} starts with {m0.value} tokens, above its capacity {cap}")
        net.place(name, m0.value, capacity=cap)
    arcs: dict[str, dict[str, dict[str, Any]]] = {}
    for kind, place, trans, mult in d.arcs:
        what = f"{where}: multiplicity of the {dict(inh='inhibitor', out='output').get(kind, 'input')} arc " \
               f"between {place!r} and {trans!r}"
        e = parse(mult or "1", "int", what=what, consts=consts, places=pnames)
        slot = arcs.setdefault(trans, {"in": {}, "out": {}, "inh": {}})[kind]
        if e.constant:
            if e.value < 0:
                raise ModelError(f"{what}: negative multiplicity {e.value}")
            if e.value == 0:
                continue
            prev = slot.get(place, 0)
            if callable(prev):
                raise ModelError(f"{what}: two arcs, one marking-dependent")
            slot[place] = prev + e.value if kind != "inh" else (min(prev, e.value) if prev else e.value)
        else:
            if place in slot:
                raise ModelError(f"{what}: two arcs, one marking-dependent")
            slot[place] = _int_fn(e)
    for t in d.transitions:
        name = t["name"]
        a = arcs.get(name, {"in": {}, "out": {}, "inh": {}})
        kw = dict(inputs=a["in"], outputs=a["out"], inhibitors=a["inh"])
        g = t.get("guard")
        if g not in (None, "", "True"):
            ge = parse(g, "bool", what=f"{where}: guard of transition {name!r}", consts=consts, places=pnames)
            if ge.constant and not ge.value:
                d.notes.append(f"transition {name!r} left out: its guard is False")
                continue
            kw["guard"] = None if ge.constant else ge.fn
        if t["timed"]:
            e = parse(t.get("value") or "1.0", "real", what=f"{where}: rate of transition {name!r}", consts=consts,
                      places=pnames)
            servers = parse(t.get("servers") or "1", "servers", what=f"{where}: servers of transition {name!r}",
                            consts=consts)
            k = servers.value
            if not servers.infinite and (not isinstance(k, int) or k < 1):
                raise ModelError(f"{where}: transition {name!r} has {k!r} servers (must be an integer >= 1 or "
                                 f"Infinite)")
            if e.constant:
                if e.value < 0:
                    raise ModelError(f"{where}: transition {name!r} has a negative rate {e.value}")
                if e.value == 0:
                    d.notes.append(f"transition {name!r} left out: its rate is 0 (it never fires)")
                    continue
                net.timed(name, e.value, servers=k, **kw)
            else:   # GreatSPN: a marking-dependent rate is the whole rate (single server)
                net.timed(name, _real_fn(e), **kw)
        else:
            e = parse(t.get("value") or "1.0", "real", what=f"{where}: weight of transition {name!r}",
                      consts=consts, places=pnames)
            pr = parse(t.get("priority") or "0", "int", what=f"{where}: priority of transition {name!r}",
                       consts=consts)
            if pr.value < 0:
                raise ModelError(f"{where}: transition {name!r} has a negative priority {pr.value}")
            if e.constant and e.value <= 0:
                raise ModelError(f"{where}: immediate transition {name!r} has weight {e.value}: a weight must be "
                                 f"> 0 (Storm reads 0 as a non-deterministic choice, which a CTMC cannot have)")
            net.immediate(name, e.value if e.constant else _real_fn(e), priority=pr.value, **kw)
    for k, text in d.measures.items():
        net.measures[k] = parse_measure(text, what=f"{where}: measure {k!r}", consts=consts, places=pnames,
                                        transitions=net.transition_names)
    net.meta.update(file=d.source, format=d.fmt, page=d.page, constants=consts, recorded=d.recorded,
                    notes=d.notes)
    return net


def _int_fn(e):
    f = e.fn
    return lambda m: f(m)


def _real_fn(e):
    f = e.fn
    return lambda m: f(m)
