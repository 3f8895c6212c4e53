"""Scenario files: every system of the papers as a TOML file, with its source.

Format (all rates per time unit; classes are rows, machines columns)::

    id = "2.C1"
    title = "Large system, 30 machines in 4 groups"
    source = "thesis §2.2.2, Table 2.2"
    alpha = [45, 45, 40]              # or an [arrivals] table of variants
    exec_dist = "exp"                 # exp | det | hyperexp

    mu = [[9, 5], [2, 1]]             # one machine per column, or:
    [[groups]]                        # groups of identical machines
    name = "P"
    count = 10
    mu = [8, 1, 4]                    # one rate per class; 0 = cannot run
    # power = 1.125 with base_time = [...] at top level: mu = power / base_time
    # cpu_chain = [[...], [...], [...]], weibull_shape, weibull_scale

    [arrivals]                        # variants: vectors, or N x M matrices
    default = "alpha1"
    alpha1 = [11.25, 22.5, 36, 63]

    [[cases]]                         # failure / availability cases
    arrivals = "alpha1"               # omit for "every arrival vector"
    case = 4
    failure_rate = 0.02
    mean_fault = 2
    availability = [{machines = [13, 19, 25], a = 0.5}]   # 1-based machine numbers

    replicate = 100                   # the machine list repeated (System 3.F)
    [power_random]                    # per-class random powers (Systems 3.G2/4.B2)
    values = [1, 1.125, 1.4375]
    seed = 2009

Loading validates the whole file once, before anything is computed: every
field's type, shape, range and finiteness by the schema of
:mod:`hetsched.scenarios.schema` (also shipped as ``schema.json``), then what
ties several fields together (lengths against the number of classes and
machines, machine numbers, ``power`` against ``base_time``, variants named by
cases). Any problem raises :class:`~hetsched.errors.ScenarioError` with one
line naming the file, the field's full path (``groups[3].mu[2]``) and the
value. Files are read only if they are regular files of at most
:data:`MAX_FILE_BYTES`; limits on sizes and rates are those of
:mod:`hetsched.system` (``docs/input-validation.md``).
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ModelError, ScenarioError
from ..fields import MAX_RATE, MAX_STREAM_CELLS, MIN_RATE, duplicate, size_problem
from ..system import CpuChain, Failures, MachineGroup, System
from ..validation import check_file
from ..validation import show as _show
from . import schema as _schema

__all__ = ["load", "list_scenarios", "scenario_ids", "ScenarioInfo", "MAX_FILE_BYTES"]

MAX_FILE_BYTES = 4_000_000  # a scenario file is text: the largest shipped one is ~6 kB
_MAX_ARG = 4096


def _dir():
    return resources.files(__package__)


def scenario_ids() -> list[str]:
    ids = [p.name[:-5] for p in _dir().iterdir() if p.name.endswith(".toml")]
    return sorted(ids, key=_sort_key)


def _sort_key(s: str) -> tuple:
    parts = []
    for tok in s.replace("-", ".").split("."):
        parts.append((0, int(tok), "") if tok.isdigit() else (1, 0, tok))
    return tuple(parts)


def _short(s: str, n: int = 240) -> str:
    return s if len(s) <= n else f"{s[: n // 2]}...{s[-n // 2 + 3:]} ({len(s):,} characters)"


def _shipped_id(s: str) -> str | None:
    if s.endswith(".toml") or "/" in s or os.sep in s:
        return None
    for i in scenario_ids():
        if i.lower() == s.lower():
            return i
    return None


def _read(name_or_path: Any) -> tuple[dict[str, Any], str]:
    """Parsed TOML of a shipped id or a file path, and the label messages use."""
    if not isinstance(name_or_path, (str, os.PathLike)):
        raise ScenarioError(f"scenario: expected an id or a file path, got {_show(name_or_path)}")
    s = os.fspath(name_or_path)
    if not isinstance(s, str) or not s.strip() or "\x00" in s or len(s) > _MAX_ARG:
        raise ScenarioError(f"scenario {_show(_short(str(s)))}: not a scenario id or a file path")
    sid = _shipped_id(s)
    if sid is not None:
        label = f"{sid}.toml"
        text = (_dir() / label).read_bytes()
    else:
        label = _short(s)
        if not (s.endswith(".toml") or "/" in s or os.sep in s) and not os.path.exists(s):
            raise ScenarioError(
                f"unknown scenario id {label!r}; run `hetsched scenarios` to list them "
                f"(known: {', '.join(scenario_ids())})"
            )
        check_file(s, label, kind="scenario file", show_path=False, max_bytes=MAX_FILE_BYTES, error=ScenarioError)
        try:
            with open(s, "rb") as fh:
                text = fh.read(MAX_FILE_BYTES + 1)
        except OSError as exc:
            raise ScenarioError(f"{label}: cannot read: {exc.strerror or exc}") from None
        if len(text) > MAX_FILE_BYTES:
            raise ScenarioError(f"{label}: file too large (more than {MAX_FILE_BYTES:,} bytes)")
    try:
        data = tomllib.loads(text.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ScenarioError(f"{label}: not a text file (UTF-8): byte {exc.start} is {text[exc.start:exc.start + 1]!r}") from None
    except RecursionError:
        raise ScenarioError(f"{label}: not valid TOML: arrays or tables nested too deeply") from None
    except ValueError as exc:  # tomllib.TOMLDecodeError and invalid dates/times
        raise ScenarioError(f"{label}: not valid TOML: {_short(str(exc), 200)}") from None
    return data, label


@dataclass(frozen=True)
class ScenarioInfo:
    id: str
    title: str
    source: str
    n_classes: int
    n_machines: int
    n_groups: int
    variants: str

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def list_scenarios() -> list[ScenarioInfo]:
    out = []
    for sid in scenario_ids():
        data, label = _read(sid)
        f = _schema.validate(data, label)
        sys_ = load(sid)
        arr = list(f.arrivals.variants()) if f.arrivals is not None else []
        cases = sorted({c.case for c in f.cases})
        v = []
        if arr:
            v.append("--arrivals " + "|".join(arr))
        if cases:
            v.append("--case " + "|".join(map(str, cases)))
        out.append(
            ScenarioInfo(sid, sys_.title, sys_.source, sys_.N, sys_.M, len(sys_.groups), "; ".join(v) or "-")
        )
    return out


def load(name_or_path: str | os.PathLike, arrivals: str | None = None, case: int | None = None) -> System:
    """Load a shipped scenario by id (``"2.D"``) or a TOML file by path.

    ``arrivals`` picks an arrival-rate variant (``"alpha2"``); ``case`` a
    failure/availability case. Raises :class:`ScenarioError` on any bad input,
    with one line naming the file, the field and the value.
    """
    if arrivals is not None and (not isinstance(arrivals, str) or not arrivals or len(arrivals) > 200):
        raise ScenarioError(f"arrivals: expected a variant name, got {_show(arrivals)}")
    if case is not None and (isinstance(case, bool) or not isinstance(case, (int, np.integer))):
        raise ScenarioError(f"case: expected a case number, got {_show(case)}")
    try:
        data, label = _read(name_or_path)
        f = _schema.validate(data, label)
        try:
            return _build(f, label, arrivals, None if case is None else int(case))
        except ScenarioError:
            raise
        except ModelError as exc:
            raise ScenarioError(f"{label}: {exc}") from None
    except RecursionError:
        raise ScenarioError(f"{_short(str(name_or_path))}: nested too deeply") from None


def _err(label: str, path: str, msg: str) -> ScenarioError:
    return ScenarioError(f"{label}: field '{path}': {msg}")


def _build(f: "_schema.ScenarioFile", label: str, arrivals: str | None, case: int | None) -> System:
    """The :class:`System` of a schema-checked file (cross-field checks here, with field paths)."""
    # --- classes and machines (sizes first: refuse before building anything big)
    if f.mu is not None:
        width = len(f.mu[0])
        for i, row in enumerate(f.mu):
            if len(row) != width:
                raise _err(label, f"mu[{i}]", f"expected {width} columns like row 0, got {len(row)}")
        N, per_copy = len(f.mu), width
        n_src = f"'mu' has {N} row{'s' if N > 1 else ''}"
        if f.machine_names is not None and len(f.machine_names) != width:
            raise _err(label, "machine_names", f"expected {width} names (one per column of 'mu'), got "
                                               f"{len(f.machine_names)}")
        dup = duplicate(f.machine_names or [])
        if dup:
            raise _err(label, f"machine_names[{dup[0]}]", f"machine names must be unique, got {dup[1]!r} twice")
    else:
        sized = [(k, len(g.mu)) for k, g in enumerate(f.groups) if g.mu is not None]
        if sized:
            N = sized[0][1]
            n_src = f"groups[{sized[0][0]}].mu has {N}"
        elif f.base_time is not None:
            N = len(f.base_time)
            n_src = f"'base_time' has {N}"
        else:
            raise _err(label, "groups[0].power", "needs a top-level 'base_time' list (mu = power / base_time)")
        for k, g in enumerate(f.groups):
            if g.mu is not None and len(g.mu) != N:
                raise _err(label, f"groups[{k}].mu", f"expected {N} rates (one per class; {n_src}), got {len(g.mu)}")
            if g.power is not None and f.base_time is None:
                raise _err(label, f"groups[{k}].power", "needs a top-level 'base_time' list (mu = power / base_time)")
        per_copy = sum(g.count for g in f.groups)
        dup = duplicate([g.name for g in f.groups])
        if dup:
            raise _err(label, f"groups[{dup[0]}].name", f"group names must be unique, got {dup[1]!r} twice")
    if f.base_time is not None and len(f.base_time) != N:
        raise _err(label, "base_time", f"expected {N} base times (one per class; {n_src}), got {len(f.base_time)}")
    if f.power_random is not None and f.base_time is None:
        raise _err(label, "power_random", "needs a top-level 'base_time' list")
    M = per_copy * f.replicate
    where_m = "replicate" if f.replicate > 1 else ("mu" if f.mu is not None else "groups")
    n_groups = (per_copy if f.mu is not None or f.power_random is not None else len(f.groups)) * f.replicate
    problem = size_problem(N, M, n_groups)  # before building anything big
    if problem:
        raise _err(label, where_m, problem)

    # --- arrival rates: every variant checked, the chosen one used -------------
    variants = f.arrivals.variants() if f.arrivals is not None else {}
    for name, val in variants.items():
        _check_rates(label, f"arrivals.{name}", val, N, M, n_src)
    if f.alpha is not None and len(f.alpha) != N:
        raise _err(label, "alpha", f"expected {N} arrival rates (one per class; {n_src}), got {len(f.alpha)}")
    if f.alpha_matrix is not None:
        _check_rates(label, "alpha_matrix", f.alpha_matrix, N, M, n_src)
    if f.alpha_per_machine is not None and f.alpha is None:
        raise _err(label, "alpha_per_machine", "needs a top-level 'alpha' vector")
    if (f.alpha_per_machine is not None or f.alpha_matrix is not None or any(
            v and isinstance(v[0], list) for v in variants.values())) and N * M > MAX_STREAM_CELLS:
        raise _err(label, "alpha_per_machine" if f.alpha_per_machine else where_m,
                   f"per-machine arrival streams: N x M = {N * M:,} rates exceed the limit of {MAX_STREAM_CELLS:,}")

    # --- failures, availabilities, cases: all checked --------------------------
    weibull = (f.failures is not None and f.failures.up_dist == "weibull") or any(
        c.up_dist == "weibull" and c.failure_rate > 0 for c in f.cases)
    if weibull and f.groups is not None:
        for k, g in enumerate(f.groups):
            if g.weibull_shape is None:
                raise _err(label, f"groups[{k}].weibull_shape",
                           "missing; up_dist = 'weibull' needs weibull_shape and weibull_scale on every group")
    if weibull and f.mu is not None:
        raise _err(label, "failures.up_dist", "'weibull' needs [[groups]] with weibull_shape and weibull_scale")
    if f.failures is not None and f.failures.up_dist != "weibull" and f.failures.rate == 0:
        raise _err(label, "failures.rate", "must be > 0 (or up_dist = 'weibull'), got 0")
    if f.availability is not None:
        _availability(label, "availability", f.availability, per_copy, f.replicate)
    seen: dict[tuple, int] = {}
    for k, c in enumerate(f.cases):
        if c.arrivals not in (None, "*") and c.arrivals not in variants:
            avail = ", ".join(variants) or "none (no [arrivals] table)"
            raise _err(label, f"cases[{k}].arrivals", f"names no arrival variant, got {c.arrivals!r}; variants: {avail}")
        key = (c.arrivals, c.case)
        if key in seen:
            raise _err(label, f"cases[{k}].case", f"case {c.case} given twice (also cases[{seen[key]}])")
        seen[key] = k
        if c.availability is not None:
            _availability(label, f"cases[{k}].availability", c.availability, per_copy, f.replicate)

    arr_name = None
    if f.arrivals is not None:
        names = list(variants)
        arr_name = arrivals or f.arrivals.default or names[0]
        if arr_name not in variants:
            raise ScenarioError(f"{label}: unknown arrivals variant {arr_name!r}; available: {', '.join(names)}")
        alpha, alpha_matrix = _alpha_of(variants[arr_name])
    else:
        if arrivals is not None:
            raise ScenarioError(f"{label}: this scenario has no arrival variants (got --arrivals {arrivals!r})")
        if f.alpha_matrix is not None:
            a_m = _alpha_of(f.alpha_matrix)
            alpha, alpha_matrix = (tuple(f.alpha) if f.alpha is not None else a_m[0]), a_m[1]
        else:
            alpha, alpha_matrix = tuple(f.alpha), None
    if f.alpha_per_machine == "uniform":
        alpha_matrix = tuple(tuple(a / M for _ in range(M)) for a in alpha)

    mine = [c for c in f.cases if c.arrivals in (None, "*", arr_name)]
    chosen = None
    if case is not None:
        chosen = next((c for c in mine if c.case == case), None)
        if chosen is None:
            avail_cases = sorted({c.case for c in mine})
            raise ScenarioError(
                f"{label}: no case {case} for arrivals {arr_name!r}; available cases: {avail_cases or 'none'}"
            )
    elif mine:  # without --case, a scenario with cases loads the lowest case of its variant
        chosen = min(mine, key=lambda c: c.case)
        case = chosen.case

    failures = None
    if f.failures is not None:
        ff = f.failures
        failures = Failures(rate=ff.rate, mean_down=ff.mean_down, up_dist=ff.up_dist, down_dist=ff.down_dist,
                            scv=ff.scv)
    availability = _availability(label, "availability", f.availability, per_copy, f.replicate)
    if chosen is not None:
        if chosen.failure_rate > 0:
            failures = Failures(rate=chosen.failure_rate, mean_down=chosen.mean_fault, up_dist=chosen.up_dist,
                                down_dist=chosen.down_dist, scv=chosen.scv)
        else:
            failures = None
        if chosen.availability is not None:
            availability = _availability(label, "cases[].availability", chosen.availability, per_copy, f.replicate)

    # --- machines --------------------------------------------------------------
    if f.mu is not None:
        names = f.machine_names or [f"m{j + 1}" for j in range(per_copy)]
        groups = [MachineGroup(names[j], 1, tuple(row[j] for row in f.mu)) for j in range(per_copy)]
    else:
        bt = np.asarray(f.base_time, dtype=float) if f.base_time is not None else None
        groups = []
        for k, g in enumerate(f.groups):
            if g.power is not None:
                mu_g = g.power / bt
                _rate_range(label, f"groups[{k}].power", mu_g, f"power / base_time = {g.power:g} / base_time")
                mu_g = tuple(mu_g.tolist())
            else:
                mu_g = tuple(g.mu)
            chain = CpuChain(tuple(tuple(r) for r in g.cpu_chain)) if g.cpu_chain is not None else None
            groups.append(MachineGroup(g.name, g.count, mu_g, cpu_chain=chain,
                                       weibull_shape=g.weibull_shape, weibull_scale=g.weibull_scale))
    if f.power_random is not None:
        groups = _random_powers(label, f.power_random, groups, f.base_time)
    if f.replicate > 1:
        groups = [
            MachineGroup(f"{g.name}.{r + 1}", g.count, g.mu, g.cpu_chain, g.weibull_shape, g.weibull_scale)
            for r in range(f.replicate)
            for g in groups
        ]

    meta = f.meta.model_dump(exclude_none=True)
    meta.update({"arrivals": arr_name, "case": case, "replicate": f.replicate})
    return System(
        id=f.id, title=f.title, source=f.source, alpha=alpha, groups=tuple(groups), availability=availability,
        failures=failures, exec_dist=f.exec_dist, alpha_matrix=alpha_matrix,
        class_names=tuple(f.class_names) if f.class_names is not None else None, meta=meta,
    )


def _rate_range(label: str, path: str, v: np.ndarray, what: str) -> None:
    bad = np.flatnonzero(~((v >= MIN_RATE) & (v <= MAX_RATE)))
    if bad.size:
        i = int(bad[0])
        raise _err(label, path, f"{what}[{i}] = {v[i]:.6g} is outside the rate range [{MIN_RATE:g}, {MAX_RATE:g}]")


def _check_rates(label: str, path: str, val: list, N: int, M: int, n_src: str) -> None:
    """A vector of N class rates, or an N x M per-machine matrix whose rows are not all 0."""
    if val and isinstance(val[0], list):
        if len(val) != N:
            raise _err(label, path, f"expected {N} rows (one per class; {n_src}), got {len(val)}")
        for i, row in enumerate(val):
            if len(row) != M:
                raise _err(label, f"{path}[{i}]", f"expected {M} per-machine rates, got {len(row)}")
            s = sum(row)
            if not s > 0:
                raise _err(label, f"{path}[{i}]", f"class {i + 1} gets no arrivals (row sums to 0)")
            if s > MAX_RATE:
                raise _err(label, f"{path}[{i}]", f"total rate {s:.6g} exceeds the limit {MAX_RATE:g}")
    elif len(val) != N:
        raise _err(label, path, f"expected {N} arrival rates (one per class; {n_src}), got {len(val)}")


def _alpha_of(val: list) -> tuple[tuple[float, ...], tuple[tuple[float, ...], ...] | None]:
    if val and isinstance(val[0], list):
        rows = tuple(tuple(float(x) for x in r) for r in val)
        return tuple(float(sum(r)) for r in rows), rows
    return tuple(float(x) for x in val), None


def _availability(label: str, path: str, spec: list | None, per_copy: int, replicate: int) -> tuple[float, ...] | None:
    """``[{machines=[...], a=...}, ...]`` with 1-based machine numbers within one copy."""
    if spec is None:
        return None
    a = np.ones(per_copy)
    for k, item in enumerate(spec):
        for m, num in enumerate(item.machines):
            if num > per_copy:
                raise _err(label, f"{path}[{k}].machines[{m}]", f"machine numbers run 1..{per_copy}, got {num}")
        a[np.asarray(item.machines) - 1] = item.a
    return tuple(np.tile(a, replicate).tolist())


def _random_powers(label: str, spec: "_schema.PowerRandom", groups: list[MachineGroup], base_time) -> list[MachineGroup]:
    """Systems 3.G2/4.B2: every machine draws a power per class from ``values``.

    Each declared group becomes ``count`` single machines that keep the group's
    CPU chain and Weibull parameters; the draw depends only on ``seed``.
    """
    values = np.asarray(spec.values, dtype=float)
    bt = np.asarray(base_time, dtype=float)
    for v in range(len(values)):
        _rate_range(label, f"power_random.values[{v}]", values[v] / bt, f"{values[v]:g} / base_time")
    rng = np.random.default_rng(spec.seed)
    out = []
    for g in groups:
        for r in range(g.count):
            p = rng.choice(values, size=len(bt))
            out.append(
                MachineGroup(f"{g.name}.{r + 1}", 1, tuple((p / bt).tolist()), g.cpu_chain, g.weibull_shape, g.weibull_scale)
            )
    return out
