"""PNML reader: place/transition nets with the GSPN elements Storm and PIPE write.

Read (namespaces ignored; ``<page>`` elements of a net are flattened, as the
PNML standard and Storm do):

* place ``id``; ``initialMarking`` as ``<text>k</text>`` (PNML 2009) or
  ``<value>Default,k</value>`` / ``<value>k</value>`` (PIPE, Storm);
  ``capacity`` the same way (0 = no capacity, PIPE's convention);
* transition ``id``; ``<timed><value>true|false</value></timed>`` (Storm's default
  when absent: immediate); ``<rate><value>x</value></rate>`` - the rate of a timed
  transition, the weight of an immediate one - a number or an expression
  (``#(P)`` or ``#P`` for a marking, PIPE's functional rates); ``<priority>``
  (``<text>k</text>`` or ``<value>Default,k</value>``; default 0 as in Storm);
  ``<infiniteServer><value>true</value></infiniteServer>`` (PIPE; default single
  server, as Storm reads PNML);
* arc ``source``/``target``; ``inscription`` as ``text`` or ``value``;
  ``<type value="normal|inhibition|inhibitor"/>``;
* ``<toolspecific tool="hetsched"><measure name="..">E{..}</measure></toolspecific>``
  under the net: performance indices (written by hetsched's exports).

Names are the ``id`` attributes (what arcs refer to and what Storm uses), so
they may contain ``.``, ``-`` or spaces.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from ..errors import ModelError
from .draft import Draft, NetPage, tag

__all__ = ["draft_pnml", "net_pages"]


def _children(el: ET.Element, name: str):
    return [c for c in el if tag(c) == name]


def _child(el: ET.Element, name: str):
    for c in el:
        if tag(c) == name:
            return c
    return None


def _nets(root: ET.Element) -> list[ET.Element]:
    return [c for c in root if tag(c) == "net"]


def net_pages(root: ET.Element) -> list[NetPage]:
    return [NetPage(n.get("id") or f"net{i + 1}", "net") for i, n in enumerate(_nets(root))]


def _walk(el: ET.Element):
    """Places, transitions and arcs of a net, through its (nested) pages."""
    for c in el:
        t = tag(c)
        if t == "page":
            yield from _walk(c)
        elif t in ("place", "transition", "arc"):
            yield t, c


def _text_value(el: ET.Element | None, what: str, default: str | None = None) -> str | None:
    """The number or expression of a PNML label: ``<text>`` (PNML 2009) or ``<value>`` (PIPE/Storm,
    optionally prefixed ``Default,``)."""
    if el is None:
        return default
    t = _child(el, "text")
    v = _child(el, "value")
    s = t.text if t is not None and t.text is not None else (v.text if v is not None else None)
    if s is None:
        return default
    s = s.strip()
    if s.startswith("Default,"):
        s = s[len("Default,"):].strip()
    elif re.fullmatch(r"[A-Za-z_][\w ]*,\s*\d+(\s*,\s*[A-Za-z_][\w ]*,\s*\d+)*", s):
        raise ModelError(f"{what}: coloured token value {s!r} is not supported (only the Default token)")
    return s


def draft_pnml(root: ET.Element, source: str, page: str | None) -> Draft:
    nets = _nets(root)
    if not nets:
        raise ModelError(f"{source}: the PNML file has no <net>")
    ids = [n.get("id") or f"net{i + 1}" for i, n in enumerate(nets)]
    if page is not None:
        if page not in ids:
            raise ModelError(f"--page {page}: {source} has no net of that id (nets: {', '.join(ids)})")
        net_el = nets[ids.index(page)]
    elif len(nets) > 1:
        raise ModelError(f"{source}: {len(nets)} nets ({', '.join(ids)}); choose one with --page (page=)")
    else:
        net_el = nets[0]
    name = ids[nets.index(net_el)]
    where = f"{source}, net {name!r}"
    typ = (net_el.get("type") or "").lower()
    if "symmetric" in typ or "highlevel" in typ or "hlpn" in typ:
        raise ModelError(f"{where}: coloured (high-level) PNML ({net_el.get('type')}) is not supported: "
                         f"only place/transition nets")
    d = Draft(name=name, source=source, fmt="pnml", page=name if len(nets) > 1 else None)
    seen: set[str] = set()
    stochastic = False
    for kind, el in _walk(net_el):
        if kind == "arc":
            continue
        nid = el.get("id")
        if not nid:
            raise ModelError(f"{where}: a <{kind}> without an id")
        if nid in seen:
            raise ModelError(f"{where}: id {nid!r} is used twice")
        seen.add(nid)
        for c in el:
            if tag(c) in ("hlinitialMarking", "type"):
                raise ModelError(f"{where}: {kind} {nid!r} has a colour domain (<{tag(c)}>): coloured nets are "
                                 f"not supported")
            if tag(c) == "toolspecific" and c.get("tool") == "hetsched":
                if any((x.text or "").startswith("function:") for x in c.iter()):
                    raise ModelError(f"{where}: {kind} {nid!r} holds a Python function (a record written by "
                                     f"hetsched's to_pnml); write the net with to_gspn_pnml to solve it")
        if kind == "place":
            d.places.append((nid, _text_value(_child(el, "initialMarking"), f"{where}: place {nid!r}", "0"),
                             _text_value(_child(el, "capacity"), f"{where}: place {nid!r}")))
        else:
            timed = _text_value(_child(el, "timed"), f"{where}: transition {nid!r}")
            rate = _text_value(_child(el, "rate"), f"{where}: transition {nid!r}")
            if timed is not None or rate is not None:
                stochastic = True
            if rate is None:
                raise ModelError(f"{where}: transition {nid!r} has no <rate>: a place/transition net without "
                                 f"stochastic timing is not a CTMC")
            is_timed = (timed or "false").strip().lower() == "true"
            inf = (_text_value(_child(el, "infiniteServer"), "") or "false").strip().lower() == "true"
            d.transitions.append({"name": nid, "timed": is_timed, "value": rate,
                                  "priority": _text_value(_child(el, "priority"), f"{where}: transition {nid!r}",
                                                          "0"),
                                  "servers": "Infinite" if inf else "1"})
    places = {p[0] for p in d.places}
    trans = {t["name"] for t in d.transitions}
    if not stochastic and trans:
        raise ModelError(f"{where}: no transition has a <rate> or <timed>: a place/transition net without "
                         f"stochastic timing is not a CTMC")
    for kind, el in _walk(net_el):
        if kind != "arc":
            continue
        src, dst = el.get("source"), el.get("target")
        aid = el.get("id") or f"{src}->{dst}"
        t_el = _child(el, "type")
        atype = (t_el.get("value") if t_el is not None else None) or "normal"
        if atype not in ("normal", "inhibition", "inhibitor"):
            raise ModelError(f"{where}: arc {aid!r} has type {atype!r} (reset, read and other arc types are not "
                             f"supported; normal and inhibitor arcs are)")
        mult = _text_value(_child(el, "inscription"), f"{where}: arc {aid!r}", "1")
        if src in places and dst in trans:
            d.arcs.append(("inh" if atype != "normal" else "in", src, dst, mult))
        elif src in trans and dst in places:
            if atype != "normal":
                raise ModelError(f"{where}: inhibitor arc {aid!r} goes from a transition to a place")
            d.arcs.append(("out", dst, src, mult))
        else:
            raise ModelError(f"{where}: arc {aid!r} must join a place and a transition ({src!r} -> {dst!r})")
    for ts in _children(net_el, "toolspecific"):
        if ts.get("tool") == "hetsched":
            for m in _children(ts, "measure"):
                if m.get("name") and (m.text or "").strip():
                    d.measures[m.get("name")] = m.text.strip()
    return d
