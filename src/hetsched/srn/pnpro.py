"""GreatSPN project reader (``.PNPRO``, the format of the GreatSPN editor).

A project holds pages: ``<gspn>`` pages are nets; ``dta``, ``measures``,
``multinet``, ``unfolding``, ... are other kinds. A net page has ``<nodes>``
(places, transitions, constants, templates, text boxes, colour declarations) and
``<edges>`` (arcs). Read, with GreatSPN's defaults (its editor's
``Transition``/``Place``/``GspnEdge`` classes):

* place ``name``, ``marking`` (an integer expression of constants; default 0);
  ``type="CONTINUOUS"`` and a colour ``domain`` are refused;
* transition ``name``, ``type``: ``EXP`` with ``delay`` (the rate; default 1.0, an
  expression that may read the marking, ``2*#P0``) and ``nservers`` (default
  ``Infinite``); ``IMM`` with ``weight`` (default 1.0, may read the marking) and
  ``priority`` (default 1); ``guard`` (a condition, default ``True``); ``GEN``
  (general, deterministic included) and ``CONT`` are refused;
* ``constant`` (``consttype`` INTEGER or REAL, ``value`` an expression of earlier
  constants) and ``template`` (a parameter: its ``last-binding`` is the default,
  ``params``/``--param`` override it);
* arc ``head``, ``tail``, ``kind`` INPUT/OUTPUT/INHIBITOR (``type`` in files of version < 110,
  whose multiplicity attribute is ``multiplicity`` up to version 119; absent: INPUT from a place, OUTPUT
  from a transition, as the editor reads it), ``mult`` (default 1, an
  expression that may read the marking).

A ``<measures gspn-name=PAGE>`` page adds its ``PERFORMANCE_INDEX`` formulas to the
net's measures (named by their text), and the results GreatSPN recorded there
(``<all-measures>``: mean tokens and throughputs of a steady-state solution) to
``net.meta["recorded"]`` with the parameter values they were computed for.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from ..errors import ModelError
from .draft import Draft, NetPage, tag

__all__ = ["draft_pnpro", "project_pages"]

_IGNORED_NODES = {"text-box", "clock"}
_COLOURED_NODES = {"color-class", "color-var", "colour-class", "colour-var"}


def project_pages(root: ET.Element) -> list[NetPage]:
    out = []
    for el in root:
        t = tag(el)
        if t == "resource-list" or not el.get("name"):
            continue
        out.append(NetPage(el.get("name"), "net" if t == "gspn" else t))
    return out


def draft_pnpro(root: ET.Element, source: str, page: str | None) -> Draft:
    all_pages = project_pages(root)
    nets = [p.name for p in all_pages if p.kind == "net"]
    if page is not None:
        match = [p for p in all_pages if p.name == page]
        if not match:
            raise ModelError(f"--page {page}: {source} has no page of that name (net pages: "
                             f"{', '.join(nets) or 'none'})")
        if match[0].kind != "net":
            raise ModelError(f"--page {page}: page {page!r} of {source} is a {match[0].kind} page, not a net "
                             f"(GreatSPN <{match[0].kind}>)")
        name = page
    elif len(nets) == 1:
        name = nets[0]
    elif not nets:
        raise ModelError(f"{source}: the project has no net page")
    else:
        raise ModelError(f"{source}: {len(nets)} net pages ({', '.join(nets)}); choose one with --page (page=)")
    el = next(e for e in root if tag(e) == "gspn" and e.get("name") == name)
    d = Draft(name=name, source=source, fmt="pnpro", page=name)
    where = f"{source}, page {name!r}"
    nodes = [c for c in el if tag(c) == "nodes"]
    edges = [c for c in el if tag(c) == "edges"]
    for n in (c for ns in nodes for c in ns):
        t = tag(n)
        nm = n.get("name")
        if t in _COLOURED_NODES or n.get("domain"):
            raise ModelError(f"{where}: coloured net ({t} {nm!r}{' of domain ' + n.get('domain') if n.get('domain') else ''})"
                             f" - only uncoloured GSPNs are a CTMC this solver reads")
        if t == "place":
            if (n.get("type") or "DISCRETE").upper() != "DISCRETE":
                raise ModelError(f"{where}: place {nm!r} is {n.get('type').lower()} (fluid places are not supported)")
            d.places.append((nm, n.get("marking") or "0", None))
        elif t == "transition":
            typ = (n.get("type") or "").upper()
            if typ == "EXP":
                d.transitions.append({"name": nm, "timed": True, "value": n.get("delay") or "1.0",
                                      "servers": n.get("nservers") or "Infinite", "guard": n.get("guard")})
            elif typ == "IMM":
                d.transitions.append({"name": nm, "timed": False, "value": n.get("weight") or "1.0",
                                      "priority": n.get("priority") or "1", "guard": n.get("guard")})
            elif typ in ("GEN", "DET"):
                raise ModelError(f"{where}: transition {nm!r} is general ({typ}: deterministic or general "
                                 f"firing time, delay {n.get('delay')!r}); a CTMC needs exponential and "
                                 f"immediate transitions only")
            elif typ == "CONT":
                raise ModelError(f"{where}: transition {nm!r} is continuous (CONT, a fluid transition); a CTMC "
                                 f"needs exponential and immediate transitions only")
            else:
                raise ModelError(f"{where}: transition {nm!r} has unknown type {n.get('type')!r}")
        elif t == "constant":
            typ = (n.get("consttype") or "REAL").upper()
            if typ not in ("INTEGER", "REAL"):
                raise ModelError(f"{where}: constant {nm!r} of type {typ} is not supported (INTEGER, REAL)")
            d.constants[nm] = (typ, n.get("value") or "")
        elif t == "template":
            typ = (n.get("type") or "REAL").upper()
            if typ not in ("INTEGER", "REAL"):
                raise ModelError(f"{where}: parameter {nm!r} of type {typ} is not supported (INTEGER, REAL)")
            d.templates[nm] = (typ, n.get("last-binding"))
        elif t in _IGNORED_NODES:
            continue
        else:
            raise ModelError(f"{where}: element <{t}> ({nm!r}) is not supported")
    places = {p[0] for p in d.places}
    trans = {t["name"] for t in d.transitions}
    # file versions before 110 name the arc kind "type", before 120 the multiplicity "multiplicity"
    # (the editor's PnProFormat / GspnEdge.exchangeXML)
    try:
        version = int(root.get("version") or 121)
    except ValueError:
        version = 121
    kind_attr, mult_attr = ("kind" if version >= 110 else "type"), ("mult" if version >= 120 else "multiplicity")
    for a in (c for es in edges for c in es):
        if tag(a) != "arc":
            continue
        head, tail, kind = a.get("head"), a.get("tail"), (a.get(kind_attr) or "").upper()
        if kind in ("", "INPUT_OR_OUTPUT"):   # GreatSPN's default: the direction decides
            kind = "INPUT" if tail in places else "OUTPUT"
        mult = a.get(mult_attr) or "1"
        if mult.strip().startswith("<") or "<" in mult and ">" in mult and "," in mult:
            raise ModelError(f"{where}: arc {tail!r} -> {head!r} has a coloured multiplicity {mult!r}")
        if kind in ("INPUT", "INHIBITOR"):
            if tail not in places or head not in trans:
                raise ModelError(f"{where}: {kind.lower()} arc {tail!r} -> {head!r} must go from a place to a "
                                 f"transition")
            d.arcs.append(("in" if kind == "INPUT" else "inh", tail, head, mult))
        elif kind == "OUTPUT":
            if tail not in trans or head not in places:
                raise ModelError(f"{where}: output arc {tail!r} -> {head!r} must go from a transition to a place")
            d.arcs.append(("out", head, tail, mult))
        else:
            raise ModelError(f"{where}: arc {tail!r} -> {head!r} has unknown kind {a.get('kind')!r}")
    _measures(root, name, d)
    return d


def _measures(root: ET.Element, page: str, d: Draft) -> None:
    for mp in root:
        if tag(mp) != "measures" or mp.get("gspn-name") != page:
            continue
        # results of a transient solution (GreatSPN's sol-time="TRANSIENT") are not steady-state values
        transient = "TRANSIENT" in (mp.get("rapid-type") or "").upper() or any(
            (c.get("sol-time") or "").upper() == "TRANSIENT" for c in mp.iter())
        for f in mp.iter():
            if tag(f) != "formula":
                continue
            lang = (f.get("language") or "").upper()
            if lang == "PERFORMANCE_INDEX" and (f.get("expr") or "").strip():
                d.measures[f.get("expr").strip()] = f.get("expr").strip()
            if lang != "ALL" or transient:
                continue
            for res in f.iter():
                if tag(res) != "all-measures":
                    continue
                binds = {b.get("name"): b.get("value") for b in res.iter() if tag(b) == "binding"}
                means = {m.get("place"): float(m.get("value")) for m in res if tag(m) == "mean"}
                thr = {m.get("transition"): float(m.get("value")) for m in res if tag(m) == "throughput"}
                if means or thr:
                    d.recorded.append({"source": f"GreatSPN, measures page {mp.get('name')!r}", "bindings": binds,
                                       "tokens": means, "throughput": thr})
