"""A net file's contents before its expressions are parsed (shared by the PNML and GreatSPN readers)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

__all__ = ["Draft", "NetPage", "tag"]


@dataclass(frozen=True)
class NetPage:
    """One page of a net file: ``kind`` is ``"net"`` for a net this solver reads (a GSPN page of a
    GreatSPN project, a ``<net>`` of a PNML file) and GreatSPN's element name otherwise
    (``dta``, ``measures``, ``multinet``, ...)."""

    name: str
    kind: str


@dataclass
class Draft:
    """A net as read from a file, before its expressions are parsed (see :func:`build`)."""

    name: str
    source: str
    fmt: str
    page: str | None = None
    places: list = field(default_factory=list)        # (name, marking text, capacity text | None)
    transitions: list = field(default_factory=list)   # dicts: name, timed, value, priority, servers, guard
    arcs: list = field(default_factory=list)          # (kind "in"|"out"|"inh", place, transition, mult text)
    constants: dict = field(default_factory=dict)     # name -> (type "INTEGER"|"REAL", value text)
    templates: dict = field(default_factory=dict)     # name -> (type, default value text | None)
    measures: dict = field(default_factory=dict)      # name -> GreatSPN measure text
    recorded: list = field(default_factory=list)      # results the file records (GreatSPN all-measures)
    notes: list = field(default_factory=list)


def tag(el: ET.Element) -> str:
    """The element name without its XML namespace."""
    t = el.tag
    return t.rsplit("}", 1)[-1] if isinstance(t, str) else ""


