"""Exchange formats: GSPN as PNML (Storm, GreatSPN), the tangible CTMC as DRN and explicit files.

* :func:`to_gspn_pnml` writes the net as a *GSPN* in PNML that Storm's GSPN
  parser (``storm-gspn --gspnfile``, ``stormpy.gspn.load_gspn_file``) reads:
  the PT-net core of the 2009 PNML grammar (``initialMarking``/``inscription``
  ``text``) plus the GSPN elements Storm's ``PnmlParser`` and PIPE use
  (``<timed>``, ``<rate>``, ``<priority>``, ``<type value="inhibition"/>``,
  ``inscription``/``value`` ``Default,k``). Timed transitions are single-server
  with a constant rate; immediate ones carry a weight and a priority.

  SRN features that a GSPN cannot hold - marking-dependent rates or weights,
  guards, marking-dependent arc multiplicities - are either refused with an
  error that names every transition and feature (``unfold=False``), or
  *unfolded* (default): a transition ``t`` whose functions read the places
  ``S`` becomes one copy per set of values of ``S`` at which ``t`` is enabled in
  some reachable marking, each copy pinned to those values by test arcs (an
  input arc of multiplicity ``v`` given back by an output arc, and an inhibitor
  arc of multiplicity ``v + 1``), with the constant rate, weight and arc
  multiplicities the functions return there; runs of consecutive values of the
  last place of ``S`` with the same effect share one copy (an interval test).
  On every reachable marking a copy is enabled exactly where ``t`` is, with the
  same rate and the same successor, so the reachability graph and the CTMC are
  the same (``check=True`` re-explores the unfolded net and compares the
  chains). The unfolding is exact for the reachable markings only: it is a
  model of *this* initial marking, not of the net for every initial marking.
* :func:`to_pnpro` writes the same GSPN in GreatSPN's own editor format
  (``.PNPRO``), through Storm (``stormpy.gspn.export_gspn_pnpro_file``; needs
  ``stormpy``).
* :func:`to_pnml` writes hetsched's *annotated* PT-net: constant multiplicities
  as ``inscription``, everything else (kinds, rates, guards, functions) as
  ``toolspecific tool="hetsched"`` text. It records the net; other tools cannot
  solve it (use :func:`to_gspn_pnml`).
* :func:`to_drn` writes Storm's explicit DRN format (``storm --explicit-drn``,
  ``stormpy.build_model_from_drn``), with the state rewards given.
* :func:`to_storm_explicit` writes the explicit ``.tra/.lab`` files (plus one
  state-reward file per reward) with the ``ctmc`` model-type line Storm's
  explicit parser needs (``storm --explicit f.tra f.lab``,
  ``stormpy.build_model_from_explicit``).
* :func:`to_prism` writes PRISM's own explicit files ``.tra`` (with the
  ``states transitions`` header), ``.sta``, ``.lab`` and one ``.srew`` per
  reward (``prism -importmodel f.tra,sta,lab -ctmc``).

The explicit formats describe the tangible CTMC after elimination of vanishing
markings; the initial state is the tangible state of largest initial
probability (exact when the initial marking is tangible).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import ModelError
from ..safeio import write_bytes
from .net import Net, Reward
from .reach import CTMC, StateSpace
from .unfold import GSPNForm, GSPNTransition, gspn_form, srn_features

__all__ = ["to_gspn_pnml", "to_pnpro", "gspn_form", "GSPNForm", "GSPNTransition", "srn_features",
           "to_pnml", "to_drn", "to_storm_explicit", "to_prism"]

PNML_NS = "http://www.pnml.org/version-2009/grammar/pnml"
PTNET = "http://www.pnml.org/version-2009/grammar/ptnet"


def _fname(f) -> str:
    return getattr(f, "__name__", repr(f))


def _num(x: float) -> str:
    return repr(float(x))


def to_gspn_pnml(net: Net | GSPNForm, path: str | Path | None = None, *, unfold: bool = True,
                 check: bool = True, space: StateSpace | None = None, overwrite: bool = False) -> str:
    """PNML of the net as a GSPN, read by Storm (``stormpy.gspn.load_gspn_file``); see the module docstring.

    Returns the text; writes it to ``path`` if given. ``unfold``, ``check`` and
    ``space`` as in :func:`gspn_form`. Place capacities are the reachable bounds.
    """
    form = net if isinstance(net, GSPNForm) else gspn_form(net, unfold=unfold, check=check, space=space)
    root = ET.Element("pnml", xmlns=PNML_NS)
    ne = ET.SubElement(root, "net", id=form.name, type=PTNET)
    ET.SubElement(ET.SubElement(ne, "name"), "text").text = form.name
    page = ET.SubElement(ne, "page", id="page0")

    def valued(parent, tag, text):
        ET.SubElement(ET.SubElement(parent, tag), "value").text = text

    for p, init in form.places.items():
        pe = ET.SubElement(page, "place", id=p)
        ET.SubElement(ET.SubElement(pe, "name"), "text").text = p
        ET.SubElement(ET.SubElement(pe, "initialMarking"), "text").text = str(init)
        valued(pe, "capacity", f"Default,{form.bounds[p]}")
    for t in form.transitions:
        te = ET.SubElement(page, "transition", id=t.name)
        ET.SubElement(ET.SubElement(te, "name"), "text").text = t.name
        valued(te, "rate", _num(t.value))
        valued(te, "timed", "true" if t.timed else "false")
        valued(te, "priority", f"Default,{t.priority}")
    k = 0
    for t in form.transitions:
        for kind, arcs in (("normal", t.inputs), ("output", t.outputs), ("inhibition", t.inhibitors)):
            for p, m in arcs.items():
                src, dst = (t.name, p) if kind == "output" else (p, t.name)
                ae = ET.SubElement(page, "arc", id=f"a{k}", source=src, target=dst)
                k += 1
                ins = ET.SubElement(ae, "inscription")
                ET.SubElement(ins, "text").text = str(m)              # PNML PT-net grammar
                ET.SubElement(ins, "value").text = f"Default,{m}"     # Storm / PIPE
                ET.SubElement(ae, "type", value="inhibition" if kind == "inhibition" else "normal")
    ET.indent(root)
    text = ET.tostring(root, encoding="unicode", xml_declaration=True)
    if path is not None:
        _put(path, text, overwrite)
    return text


def to_pnpro(net: Net | GSPNForm, path: str | Path, *, unfold: bool = True, check: bool = True,
             space: StateSpace | None = None, overwrite: bool = False) -> Path:
    """The GSPN of :func:`to_gspn_pnml` in GreatSPN's ``.PNPRO`` format, written by Storm.

    Storm reads the PNML and writes the GreatSPN editor project (single-server
    ``EXP`` transitions with ``delay`` = rate, ``IMM`` with weight and priority).
    Raises :class:`ModelError` if ``stormpy`` is not installed.
    """
    import tempfile

    try:
        import stormpy.gspn as sg
    except ImportError:
        raise ModelError("the pnpro format is written by Storm: install stormpy "
                         "(pip install 'hetsched[storm]')") from None
    with tempfile.TemporaryDirectory() as tmp:
        pnml = Path(tmp) / "net.pnml"
        to_gspn_pnml(net, pnml, unfold=unfold, check=check, space=space)
        gspn = sg.load_gspn_file(str(pnml))
        sg.export_gspn_pnpro_file(gspn, str(Path(tmp) / "net.pnpro"))
        _put(path, (Path(tmp) / "net.pnpro").read_bytes(), overwrite)
    return Path(path)


def to_pnml(net: Net, path: str | Path | None = None, *, overwrite: bool = False) -> str:
    """hetsched's annotated PT-net PNML of ``net`` (a record of the net; not loadable by Storm).

    Constant arc multiplicities are ``inscription``; kinds, rates, weights,
    priorities, guards and marking-dependent functions are ``toolspecific
    tool="hetsched"`` text. For a file that Storm or GreatSPN can solve, use
    :func:`to_gspn_pnml`.
    """
    root = ET.Element("pnml", xmlns="http://www.pnml.org/version-2009/grammar/pnml")
    ne = ET.SubElement(root, "net", id=net.name, type="http://www.pnml.org/version-2009/grammar/ptnet")
    ET.SubElement(ET.SubElement(ne, "name"), "text").text = net.name
    page = ET.SubElement(ne, "page", id="page0")
    for p in net.place_names:
        pe = ET.SubElement(page, "place", id=p)
        ET.SubElement(ET.SubElement(pe, "name"), "text").text = p
        init = int(net.initial_marking[net.place_index(p)])
        if init:
            ET.SubElement(ET.SubElement(pe, "initialMarking"), "text").text = str(init)
    k = 0
    for t in net.transitions:
        te = ET.SubElement(page, "transition", id=t.name)
        ET.SubElement(ET.SubElement(te, "name"), "text").text = t.name
        ts = ET.SubElement(te, "toolspecific", tool="hetsched", version="1")
        ET.SubElement(ts, "kind").text = t.kind
        ET.SubElement(ts, "rate" if t.timed else "weight").text = (
            repr(t.value) if not callable(t.value) else f"function:{_fname(t.value)}")
        if not t.timed:
            ET.SubElement(ts, "priority").text = str(t.priority)
        if t.guard is not None:
            ET.SubElement(ts, "guard").text = f"function:{_fname(t.guard)}"
        for kind, arcs in (("normal", t.inputs), ("output", t.outputs), ("inhibitor", t.inhibitors)):
            for p, m in arcs:
                src, dst = (t.name, p) if kind == "output" else (p, t.name)
                ae = ET.SubElement(page, "arc", id=f"a{k}", source=src, target=dst)
                k += 1
                if callable(m):
                    ats = ET.SubElement(ae, "toolspecific", tool="hetsched", version="1")
                    ET.SubElement(ats, "multiplicity").text = f"function:{_fname(m)}"
                elif m != 1:
                    ET.SubElement(ET.SubElement(ae, "inscription"), "text").text = str(m)
                if kind == "inhibitor":
                    ET.SubElement(ae, "type", value="inhibitor")
    ET.indent(root)
    text = ET.tostring(root, encoding="unicode", xml_declaration=True)
    if path is not None:
        _put(path, text, overwrite)
    return text


def _put(path: str | Path, data: str | bytes, overwrite: bool) -> None:
    """One exported file through the safe writer (:func:`hetsched.safeio.write_bytes`): an existing file only
    with ``overwrite``, never through a link or over a device; a full disk leaves no half file."""
    write_bytes(path, data.encode() if isinstance(data, str) else data, force=overwrite, what="export file")


def _rewards(ctmc: CTMC, rewards: dict[str, Reward] | None) -> dict[str, np.ndarray]:
    from .steady import reward_vector

    return {k: reward_vector(ctmc, r) for k, r in (rewards or {}).items()}


def to_drn(ctmc: CTMC, path: str | Path, rewards: dict[str, Reward] | None = None, *,
           overwrite: bool = False) -> Path:
    """Write the CTMC in Storm's DRN format (rates; state rewards in brackets)."""
    path = Path(path)
    R = _rewards(ctmc, rewards)
    names = list(R)
    Q = ctmc.Q.tocsr()
    init = int(np.argmax(ctmc.p0))
    exit_rate = -Q.diagonal()
    lines = ["// exported by hetsched.srn", "@type: CTMC", "@value_type: double", "@parameters", "", "@reward_models",
             " ".join(names), "@nr_states", str(ctmc.n), "@nr_choices", str(ctmc.n), "@model"]
    for s in range(ctmc.n):
        rw = f" [{', '.join(repr(float(R[k][s])) for k in names)}]" if names else ""
        lab = " init" if s == init else ""
        lines.append(f"state {s} !{float(exit_rate[s])!r}{rw}{lab}")
        lines.append("\taction 0")
        for kk in range(Q.indptr[s], Q.indptr[s + 1]):
            j = Q.indices[kk]
            if j != s:
                lines.append(f"\t\t{j} : {float(Q.data[kk])!r}")
    _put(path, "\n".join(lines) + "\n", overwrite)
    return path


def _init_state(ctmc: CTMC) -> int:
    return int(np.argmax(ctmc.p0))


def to_storm_explicit(ctmc: CTMC, prefix: str | Path, rewards: dict[str, Reward] | None = None, *,
                      overwrite: bool = False) -> list[Path]:
    """Write Storm's explicit files: ``prefix.tra``, ``prefix.lab``, ``prefix.<reward>.rew``.

    ``.tra`` starts with the model type ``ctmc`` and lists ``from to rate`` per
    line (sorted, no header of counts); ``.lab`` declares ``init`` and
    ``deadlock``; each reward gets its own state-reward file (Storm's explicit
    parser reads one per model: ``stormpy.build_model_from_explicit(tra, lab,
    state_rewards=rew)``). Rewards must be >= 0 there. A ``prefix.sta`` with the
    markings (PRISM syntax) is written too, for people; Storm ignores it.
    """
    prefix = Path(prefix)
    R = _rewards(ctmc, rewards)
    for k, v in R.items():
        if v.size and v.min() < 0:
            raise ModelError(f"reward {k!r}: Storm's explicit format needs rewards >= 0, "
                             f"got {float(v.min())!r}")
    Q = ctmc.Q.tocoo()
    off = Q.row != Q.col
    order = np.lexsort((Q.col[off], Q.row[off]))
    out = []
    p = Path(f"{prefix}.tra")
    _put(p, "ctmc\n" + "".join(f"{i} {j} {float(v)!r}\n" for i, j, v in
                                zip(Q.row[off][order], Q.col[off][order], Q.data[off][order])), overwrite)
    out.append(p)
    p = Path(f"{prefix}.lab")
    dead = np.flatnonzero(np.diff(ctmc.Q.tocsr().indptr) == 0) if ctmc.n > 1 else np.zeros(0, int)
    labels = {_init_state(ctmc): ["init"]}
    for s in dead:
        labels.setdefault(int(s), []).append("deadlock")
    _put(p, "#DECLARATION\ninit deadlock\n#END\n"
         + "".join(f"{s} {' '.join(v)}\n" for s, v in sorted(labels.items())), overwrite)
    out.append(p)
    for k, v in R.items():
        p = Path(f"{prefix}.{k}.rew")
        nz = np.flatnonzero(v)
        _put(p, "".join(f"{s} {float(v[s])!r}\n" for s in nz), overwrite)
        out.append(p)
    p = Path(f"{prefix}.sta")
    _put(p, _sta_text(ctmc), overwrite)
    out.append(p)
    return out


def _sta_text(ctmc: CTMC) -> str:
    names = ctmc.space.net.place_names
    return "(" + ",".join(names) + ")\n" + "".join(
        f"{s}:(" + ",".join(str(int(v)) for v in ctmc.markings[s]) + ")\n" for s in range(ctmc.n))


def to_prism(ctmc: CTMC, prefix: str | Path, rewards: dict[str, Reward] | None = None, *,
             overwrite: bool = False) -> list[Path]:
    """Write PRISM explicit files ``prefix.tra/.sta/.lab`` and ``prefix.<name>.srew``."""
    prefix = Path(prefix)
    Q = ctmc.Q.tocoo()
    off = Q.row != Q.col
    out = []
    p = prefix.with_suffix(".tra")
    rows = [f"{ctmc.n} {int(off.sum())}"]
    order = np.lexsort((Q.col[off], Q.row[off]))
    for i, j, v in zip(Q.row[off][order], Q.col[off][order], Q.data[off][order]):
        rows.append(f"{i} {j} {float(v)!r}")
    _put(p, "\n".join(rows) + "\n", overwrite)
    out.append(p)
    p = prefix.with_suffix(".sta")
    _put(p, _sta_text(ctmc), overwrite)
    out.append(p)
    p = prefix.with_suffix(".lab")
    _put(p, '0="init" 1="deadlock"\n' + f"{int(np.argmax(ctmc.p0))}: 0\n", overwrite)
    out.append(p)
    for k, v in _rewards(ctmc, rewards).items():
        p = Path(f"{prefix}.{k}.srew")
        nz = np.flatnonzero(v)
        _put(p, f"{ctmc.n} {nz.size}\n" + "".join(f"{s} {float(v[s])!r}\n" for s in nz), overwrite)
        out.append(p)
    return out
