"""Hypothesis strategies for bad input: mutated scenario files and bad option values.

Scenario mutations start from the shipped TOML files (so most of each file is
valid and the mutation is what gets tested): a value replaced by a wrong type,
NaN/inf, a negative, huge or tiny number, an integer over 64 bits, an empty or
nested list or a long string; a key deleted or an unknown key added; an array
made ragged; deep nesting; and text-level damage (truncation, garbage bytes,
2,000 nested brackets).
"""

from __future__ import annotations

import datetime as _dt
import math
import os
import tomllib
from dataclasses import dataclass
from importlib import resources
from typing import Any

import tomli_w
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

SCALE = float(os.environ.get("HETSCHED_FUZZ_SCALE", "1"))


def fuzz_settings(n: int, **kw: Any) -> settings:
    """``n`` examples in CI (x HETSCHED_FUZZ_SCALE for ``make fuzz``); deterministic in CI.

    No shrinking: a failing example is reported as found (shrinking would re-run
    commands that may hang until their timeout)."""
    return settings(
        max_examples=max(1, int(n * SCALE)), deadline=None, derandomize=SCALE == 1, database=None,
        phases=[Phase.explicit, Phase.generate], print_blob=False,
        suppress_health_check=list(HealthCheck), **kw,
    )


def shipped_ids() -> list[str]:
    return sorted(p.name[:-5] for p in resources.files("hetsched.scenarios").iterdir() if p.name.endswith(".toml"))


def shipped_text(sid: str) -> str:
    return (resources.files("hetsched.scenarios") / f"{sid}.toml").read_text()


NONFINITE = [math.nan, math.inf, -math.inf]
BAD_VALUES: list[Any] = NONFINITE + [
    -1, 0, -1e-300, 1e-300, 1e300, -5.5, 2**64, 10**400, -(10**30), True, "x", "", "1.5", [], [[]], [1, "a"],
    {"a": 1}, "y" * 5000, _dt.date(2020, 1, 1), [[[[1]]]], 0.5, 3, 1e9 + 1,
]


def _walk(obj: Any, path: tuple = ()) -> list[tuple]:
    """Every path into a parsed TOML document (tables, arrays and leaves)."""
    out = [path] if path else []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _walk(v, path + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _walk(v, path + (i,))
    return out


def _get(obj: Any, path: tuple) -> Any:
    for p in path:
        obj = obj[p]
    return obj


def fmt_path(path: tuple) -> str:
    """``("groups", 3, "mu", 2)`` -> ``groups[3].mu[2]`` (the loader's notation)."""
    s = ""
    for p in path:
        s += f"[{p}]" if isinstance(p, int) else (("." if s else "") + str(p))
    return s


@dataclass
class Mutation:
    sid: str
    kind: str
    path: tuple
    value: Any
    text: bytes

    def describe(self) -> str:
        v = repr(self.value)
        return f"{self.sid}: {self.kind} at {fmt_path(self.path) or '-'} = {v[:80]}"


def _dump(doc: dict) -> bytes | None:
    try:
        return tomli_w.dumps(doc).encode()
    except (TypeError, ValueError):  # tomli_w cannot write it (e.g. a key that is not a string)
        return None


@st.composite
def mutated_scenarios(draw, kinds: tuple[str, ...] | None = None) -> Mutation:
    """A shipped scenario with one mutation (see the module docstring)."""
    sid = draw(st.sampled_from(shipped_ids()))
    text = shipped_text(sid)
    doc = tomllib.loads(text)
    kinds = kinds or ("value", "value", "value", "nonfinite", "delete", "add_key", "ragged", "nest", "text")
    kind = draw(st.sampled_from(kinds))
    paths = _walk(doc)
    if kind in ("value", "nonfinite", "delete", "nest"):
        path = draw(st.sampled_from(paths))
        parent = _get(doc, path[:-1])
        if kind == "delete":
            del parent[path[-1]]
            value = None
        else:
            if kind == "value":
                value = draw(st.sampled_from(BAD_VALUES) | st.floats(allow_nan=True, allow_infinity=True)
                             | st.integers(min_value=-(2**70), max_value=2**70))
            elif kind == "nonfinite":
                value = draw(st.sampled_from(NONFINITE))
            else:
                depth = draw(st.integers(1, 60))
                value = 1.0
                for _ in range(depth):
                    value = [value]
            parent[path[-1]] = value
        out = _dump(doc)
        if out is None:
            kind, out = "text", text.encode()
        return Mutation(sid, kind, path, value, out)
    if kind == "add_key":
        tables = [()] + [p for p in paths if isinstance(_get(doc, p), dict)]
        path = draw(st.sampled_from(tables))
        key = draw(st.sampled_from(["muu", "alpha2", "count2", "x", "Mu", "rate"]))
        table = _get(doc, path)
        if key in table:
            key = key + "_extra"
        table[key] = draw(st.sampled_from([1, "a", [1.0], 0.5]))
        return Mutation(sid, kind, path + (key,), table[key], _dump(doc))
    if kind == "ragged":
        lists = [p for p in paths if isinstance(_get(doc, p), list) and _get(doc, p)
                 and isinstance(_get(doc, p)[0], list)]
        if lists:
            path = draw(st.sampled_from(lists))
            rows = _get(doc, path)
            r = draw(st.integers(0, len(rows) - 1))
            if rows[r]:
                rows[r].pop()
            else:
                rows[r].append(1.0)
            return Mutation(sid, kind, path + (r,), rows[r], _dump(doc))
        kind = "text"
    # text-level damage
    raw = text.encode()
    how = draw(st.sampled_from(["truncate", "garbage", "brackets", "replace_char", "duplicate_line"]))
    if how == "truncate":
        raw = raw[: draw(st.integers(0, len(raw)))]
    elif how == "garbage":
        at = draw(st.integers(0, len(raw)))
        raw = raw[:at] + draw(st.binary(min_size=1, max_size=40)) + raw[at:]
    elif how == "brackets":
        n = draw(st.sampled_from([50, 500, 2000, 5000]))
        raw = raw + b"\ndeep = " + b"[" * n + b"]" * n + b"\n"
    elif how == "replace_char":
        at = draw(st.integers(0, max(0, len(raw) - 1)))
        raw = raw[:at] + bytes([draw(st.integers(0, 255))]) + raw[at + 1:]
    else:
        lines = raw.split(b"\n")
        k = draw(st.integers(0, len(lines) - 1))
        lines.insert(k, lines[k])
        raw = b"\n".join(lines)
    return Mutation(sid, "text:" + how, (), None, raw)


# --------------------------------------------------------------------------- option values

def bad_floats(positive: bool = True, nonneg: bool = False) -> st.SearchStrategy[str]:
    """Text a positive (``nonneg``: non-negative; else any finite) float option must refuse."""
    base = ["nan", "NaN", "inf", "-inf", "abc", "", "1e400", "1,5", "0x10"]
    if positive or nonneg:
        base += ["-1", "-0.5", "-1e-300", "1e308"]
    if positive and not nonneg:
        base += ["0"]
    return st.sampled_from(base)


def bad_ints(lo: int = 1) -> st.SearchStrategy[str]:
    """Text a bounded integer option must refuse."""
    return st.sampled_from(["abc", "", "1.5", "nan", "-1", str(lo - 1), "1e30", str(2**64), "9" * 40, "0x",
                            "10000000000"])


def bad_seeds() -> st.SearchStrategy[str]:
    return st.sampled_from(["-1", str(2**63), str(2**64), "abc", "1.5", "nan", "", "-99999999999999999999"])


def junk_words() -> st.SearchStrategy[str]:
    return st.sampled_from(["--bogus", "-x", "--help-me", "???", "--json=maybe", "\x00", "-1", "--Json"])
