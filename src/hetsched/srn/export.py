"""Exchange formats: the net as PNML, the tangible CTMC for Storm (DRN) and PRISM (explicit).

* :func:`to_pnml` writes a PT-net PNML document. Constant arc multiplicities
  become ``inscription``; rates, weights, priorities and any marking-dependent
  function are kept as ``toolspecific tool="hetsched"`` text (PNML has no
  standard for them).
* :func:`to_drn` writes Storm's explicit DRN format (``storm --explicit-drn``,
  ``stormpy.build_model_from_drn``), with the state rewards given.
* :func:`to_prism` writes PRISM's explicit files ``.tra``, ``.sta``, ``.lab``
  and one ``.srew`` per reward (``prism -importmodel f.tra,sta,lab -ctmc``).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from .net import Net, Reward
from .reach import CTMC

__all__ = ["to_pnml", "to_drn", "to_prism"]


def _fname(f) -> str:
    return getattr(f, "__name__", repr(f))


def to_pnml(net: Net, path: str | Path | None = None) -> str:
    """PNML (PT net) text of ``net``; also written to ``path`` if given."""
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
        Path(path).write_text(text)
    return text


def _rewards(ctmc: CTMC, rewards: dict[str, Reward] | None) -> dict[str, np.ndarray]:
    from .solve import reward_vector

    return {k: reward_vector(ctmc, r) for k, r in (rewards or {}).items()}


def to_drn(ctmc: CTMC, path: str | Path, rewards: dict[str, Reward] | None = None) -> Path:
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
    path.write_text("\n".join(lines) + "\n")
    return path


def to_prism(ctmc: CTMC, prefix: str | Path, rewards: dict[str, Reward] | None = None) -> list[Path]:
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
    p.write_text("\n".join(rows) + "\n")
    out.append(p)
    p = prefix.with_suffix(".sta")
    names = ctmc.space.net.place_names
    p.write_text("(" + ",".join(names) + ")\n" + "\n".join(
        f"{s}:(" + ",".join(str(int(v)) for v in ctmc.markings[s]) + ")" for s in range(ctmc.n)) + "\n")
    out.append(p)
    p = prefix.with_suffix(".lab")
    p.write_text('0="init" 1="deadlock"\n' + f"{int(np.argmax(ctmc.p0))}: 0\n")
    out.append(p)
    for k, v in _rewards(ctmc, rewards).items():
        p = Path(f"{prefix}.{k}.srew")
        nz = np.flatnonzero(v)
        p.write_text(f"{ctmc.n} {nz.size}\n" + "".join(f"{s} {float(v[s])!r}\n" for s in nz))
        out.append(p)
    return out
