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

Loading validates everything and raises :class:`~hetsched.errors.ScenarioError`
naming the file, the field and the value.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ModelError, ScenarioError
from ..system import CpuChain, Failures, MachineGroup, System, groups_from_matrix

__all__ = ["load", "load_file", "list_scenarios", "scenario_ids", "ScenarioInfo"]

_TOP_KEYS = {
    "id", "title", "source", "alpha", "alpha_matrix", "alpha_per_machine", "exec_dist", "mu",
    "machine_names", "groups", "arrivals", "cases", "failures", "replicate", "base_time",
    "power_random", "class_names", "meta", "availability",
}
_GROUP_KEYS = {"name", "count", "mu", "power", "cpu_chain", "weibull_shape", "weibull_scale"}
_CASE_KEYS = {"arrivals", "case", "failure_rate", "mean_fault", "availability", "up_dist", "down_dist", "scv", "note"}
_FAIL_KEYS = {"rate", "mean_down", "up_dist", "down_dist", "scv"}


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


def _read(name_or_path: str) -> tuple[dict[str, Any], str]:
    p = Path(name_or_path)
    if name_or_path.endswith(".toml") or p.exists():
        if not p.is_file():
            raise ScenarioError(f"{name_or_path}: no such scenario file")
        label = str(p)
        text = p.read_bytes()
    else:
        res = _dir() / f"{name_or_path}.toml"
        if not res.is_file():
            # Case-insensitive match on shipped ids
            matches = [i for i in scenario_ids() if i.lower() == name_or_path.lower()]
            if not matches:
                raise ScenarioError(
                    f"unknown scenario id {name_or_path!r}; run `hetsched scenarios` to list them "
                    f"(known: {', '.join(scenario_ids())})"
                )
            res = _dir() / f"{matches[0]}.toml"
        label = f"{res.name}"
        text = res.read_bytes()
    try:
        data = tomllib.loads(text.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ScenarioError(f"{label}: not valid TOML: {exc}") from None
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
        data, _ = _read(sid)
        sys_ = load(sid)
        arr = [k for k in data.get("arrivals", {}) if k != "default"]
        cases = sorted({int(c["case"]) for c in data.get("cases", [])})
        v = []
        if arr:
            v.append("--arrivals " + "|".join(arr))
        if cases:
            v.append("--case " + "|".join(map(str, cases)))
        out.append(
            ScenarioInfo(sid, sys_.title, sys_.source, sys_.N, sys_.M, len(sys_.groups), "; ".join(v) or "-")
        )
    return out


def load(name_or_path: str, arrivals: str | None = None, case: int | None = None) -> System:
    """Load a shipped scenario by id (``"2.D"``) or a TOML file by path.

    ``arrivals`` picks an arrival-rate variant (``"alpha2"``); ``case`` a
    failure/availability case. Raises :class:`ScenarioError` on any bad input.
    """
    data, label = _read(name_or_path)
    try:
        return _build(data, label, arrivals, case)
    except ScenarioError:
        raise
    except ModelError as exc:
        raise ScenarioError(f"{label}: {exc}") from None


def load_file(path: str | Path, arrivals: str | None = None, case: int | None = None) -> System:
    return load(str(path), arrivals=arrivals, case=case)


def _unknown(label: str, where: str, keys: set[str], allowed: set[str]) -> None:
    bad = sorted(keys - allowed)
    if bad:
        raise ScenarioError(f"{label}: unknown field {where}{bad[0]!r} (allowed: {', '.join(sorted(allowed))})")


def _need(label: str, d: dict, key: str, where: str = "") -> Any:
    if key not in d:
        raise ScenarioError(f"{label}: missing field {where}{key!r}")
    return d[key]


def _build(data: dict[str, Any], label: str, arrivals: str | None, case: int | None) -> System:
    _unknown(label, "", set(data), _TOP_KEYS)
    sid = _need(label, data, "id")
    if not isinstance(sid, str) or not sid:
        raise ScenarioError(f"{label}: field 'id': expected a non-empty string, got {sid!r}")

    # --- machines -------------------------------------------------------------
    if ("mu" in data) == ("groups" in data):
        raise ScenarioError(f"{label}: give exactly one of 'mu' (a matrix) or '[[groups]]'")
    base_time = data.get("base_time")
    if "mu" in data:
        mu = data["mu"]
        if not isinstance(mu, list) or not mu or not all(isinstance(r, list) for r in mu):
            raise ScenarioError(f"{label}: field 'mu': expected a matrix (list of rows, one per class), got {mu!r}")
        groups = list(groups_from_matrix(mu, data.get("machine_names")))
    else:
        gl = data["groups"]
        if not isinstance(gl, list) or not gl:
            raise ScenarioError(f"{label}: field 'groups': expected a list of [[groups]] tables")
        groups = []
        for k, g in enumerate(gl):
            where = f"groups[{k}]."
            if not isinstance(g, dict):
                raise ScenarioError(f"{label}: field 'groups[{k}]': expected a table, got {g!r}")
            _unknown(label, where, set(g), _GROUP_KEYS)
            name = str(_need(label, g, "name", where))
            count = g.get("count", 1)
            if "power" in g:
                if base_time is None:
                    raise ScenarioError(f"{label}: field {where}'power' needs a top-level 'base_time' list")
                bt = _vec_or_raise(label, "base_time", base_time)
                if any(b <= 0 for b in bt):
                    raise ScenarioError(f"{label}: field 'base_time': must be > 0, got {bt}")
                mu_g = tuple(float(g["power"]) / b for b in bt)
            else:
                mu_g = _need(label, g, "mu", where)
                if not isinstance(mu_g, list):
                    raise ScenarioError(f"{label}: field {where}'mu': expected a list of rates, got {mu_g!r}")
            chain = None
            if "cpu_chain" in g:
                chain = CpuChain(tuple(tuple(r) for r in g["cpu_chain"]))
            groups.append(
                MachineGroup(
                    name, count, mu_g, cpu_chain=chain,
                    weibull_shape=g.get("weibull_shape"), weibull_scale=g.get("weibull_scale"),
                )
            )
    if "power_random" in data:
        groups = _random_powers(label, data["power_random"], groups, base_time)
    replicate = data.get("replicate", 1)
    if not isinstance(replicate, int) or isinstance(replicate, bool) or replicate < 1:
        raise ScenarioError(f"{label}: field 'replicate': expected a positive integer, got {replicate!r}")
    per_copy = sum(g.count for g in groups)
    if replicate > 1:
        groups = [
            MachineGroup(f"{g.name}.{r + 1}", g.count, g.mu, g.cpu_chain, g.weibull_shape, g.weibull_scale)
            for r in range(replicate)
            for g in groups
        ]
    M = sum(g.count for g in groups)

    # --- arrivals -----------------------------------------------------------
    alpha, alpha_matrix, arr_name = _arrivals(label, data, arrivals, M)
    if data.get("alpha_per_machine") == "uniform":
        alpha_matrix = tuple(tuple(a / M for _ in range(M)) for a in alpha)
    elif "alpha_per_machine" in data:
        raise ScenarioError(f"{label}: field 'alpha_per_machine': expected 'uniform', got {data['alpha_per_machine']!r}")

    # --- cases: failures and availabilities ---------------------------------
    failures = None
    if "failures" in data:
        f = data["failures"]
        _unknown(label, "failures.", set(f), _FAIL_KEYS)
        failures = Failures(
            rate=f.get("rate", 0.0), mean_down=_need(label, f, "mean_down", "failures."),
            up_dist=f.get("up_dist", "exp"), down_dist=f.get("down_dist", "exp"), scv=f.get("scv", 5.0),
        )
    availability = _availability(label, "availability", data.get("availability"), per_copy, replicate)
    cases = data.get("cases", [])
    if case is not None:
        chosen = [
            c for c in cases
            if int(c.get("case", -1)) == case and c.get("arrivals", arr_name) in (arr_name, "*")
        ]
        if not chosen:
            avail = sorted({int(c["case"]) for c in cases if c.get("arrivals", arr_name) in (arr_name, "*")})
            raise ScenarioError(
                f"{label}: no case {case} for arrivals {arr_name!r}; available cases: {avail or 'none'}"
            )
        c = chosen[0]
        _unknown(label, f"cases[{case}].", set(c), _CASE_KEYS)
        rate = c.get("failure_rate", 0)
        if rate:
            failures = Failures(
                rate=rate, mean_down=_need(label, c, "mean_fault", f"cases[{case}]."),
                up_dist=c.get("up_dist", "exp"), down_dist=c.get("down_dist", "exp"), scv=c.get("scv", 5.0),
            )
        else:
            failures = None
        if "availability" in c:
            availability = _availability(label, f"cases[{case}].availability", c["availability"], per_copy, replicate)
    else:
        # Without --case, a scenario with cases loads the lowest case of its variant.
        mine = [int(c["case"]) for c in cases if c.get("arrivals", arr_name) in (arr_name, "*")]
        if mine:
            return _build(data, label, arrivals, min(mine))

    meta = dict(data.get("meta", {}))
    meta.update({"arrivals": arr_name, "case": case, "replicate": replicate})
    exec_dist = data.get("exec_dist", "exp")
    return System(
        id=sid,
        title=str(data.get("title", "")),
        source=str(data.get("source", "")),
        alpha=alpha,
        groups=tuple(groups),
        availability=availability,
        failures=failures,
        exec_dist=exec_dist,
        alpha_matrix=alpha_matrix,
        class_names=tuple(data["class_names"]) if "class_names" in data else None,
        meta=meta,
    )


def _vec_or_raise(label: str, where: str, x: Any) -> tuple[float, ...]:
    if not isinstance(x, list):
        raise ScenarioError(f"{label}: field {where!r}: expected a list of numbers, got {x!r}")
    out = []
    for k, v in enumerate(x):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ScenarioError(f"{label}: field '{where}[{k}]': expected a number, got {v!r}")
        out.append(float(v))
    return tuple(out)


def _arrivals(label: str, data: dict, arrivals: str | None, M: int):
    """Resolve (alpha vector, alpha matrix or None, variant name)."""
    if "arrivals" in data:
        table = data["arrivals"]
        names = [k for k in table if k != "default"]
        name = arrivals or table.get("default") or names[0]
        if name not in names:
            raise ScenarioError(f"{label}: unknown arrivals variant {name!r}; available: {', '.join(names)}")
        val = table[name]
    else:
        if arrivals is not None:
            raise ScenarioError(f"{label}: this scenario has no arrival variants (got --arrivals {arrivals!r})")
        name = None
        if "alpha_matrix" in data:
            val = data["alpha_matrix"]
        else:
            val = _need(label, data, "alpha")
    where = f"arrivals.{name}" if name else ("alpha_matrix" if "alpha_matrix" in data and "alpha" not in data else "alpha")
    if isinstance(val, list) and val and all(isinstance(r, list) for r in val):
        rows = [_vec_or_raise(label, f"{where}[{i}]", r) for i, r in enumerate(val)]
        for i, r in enumerate(rows):
            if len(r) != M:
                raise ScenarioError(f"{label}: field '{where}[{i}]': expected {M} per-machine rates, got {len(r)}")
        alpha = tuple(float(sum(r)) for r in rows)
        return alpha, tuple(rows), name
    return _vec_or_raise(label, where, val), None, name


def _availability(label: str, where: str, spec: Any, per_copy: int, replicate: int) -> tuple[float, ...] | None:
    """``[{machines=[...], a=...}, ...]`` with 1-based machine numbers within one copy."""
    if spec is None:
        return None
    if not isinstance(spec, list):
        raise ScenarioError(f"{label}: field {where!r}: expected a list of {{machines=[...], a=...}}, got {spec!r}")
    a = np.ones(per_copy)
    for k, item in enumerate(spec):
        if not isinstance(item, dict) or set(item) != {"machines", "a"}:
            raise ScenarioError(f"{label}: field '{where}[{k}]': expected {{machines=[...], a=...}}, got {item!r}")
        val = item["a"]
        if isinstance(val, bool) or not isinstance(val, (int, float)) or not 0 <= val <= 1:
            raise ScenarioError(f"{label}: field '{where}[{k}].a': availability must lie in [0, 1], got {val!r}")
        for m in item["machines"]:
            if not isinstance(m, int) or not 1 <= m <= per_copy:
                raise ScenarioError(
                    f"{label}: field '{where}[{k}].machines': machine numbers run 1..{per_copy}, got {m!r}"
                )
            a[m - 1] = val
    return tuple(np.tile(a, replicate).tolist())


def _random_powers(label: str, spec: dict, groups: list[MachineGroup], base_time) -> list[MachineGroup]:
    """Systems 3.G2/4.B2: every machine draws a power per class from ``values``.

    Each declared group becomes ``count`` single machines that keep the group's
    CPU chain and Weibull parameters; the draw depends only on ``seed``.
    """
    if base_time is None:
        raise ScenarioError(f"{label}: field 'power_random' needs a top-level 'base_time' list")
    values = np.asarray(_vec_or_raise(label, "power_random.values", spec.get("values")))
    seed = spec.get("seed")
    if not isinstance(seed, int):
        raise ScenarioError(f"{label}: field 'power_random.seed': expected an integer, got {seed!r}")
    bt = np.asarray(base_time, dtype=float)
    rng = np.random.default_rng(seed)
    out = []
    for g in groups:
        for r in range(g.count):
            p = rng.choice(values, size=len(bt))
            out.append(
                MachineGroup(f"{g.name}.{r + 1}", 1, tuple((p / bt).tolist()), g.cpu_chain, g.weibull_shape, g.weibull_scale)
            )
    return out
