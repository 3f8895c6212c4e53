"""The scenario file format as a schema: every field's type, shape, range, finiteness.

One pydantic (v2) model per TOML table checks each field of a parsed scenario
file in one pass, before anything is computed; :func:`validate` turns the first
problem into one line naming the file, the field's full path (e.g.
``groups[3].mu[2]``) and the value. The same models give the JSON Schema of
the format, shipped as ``scenarios/schema.json`` for editors (Taplo / "Even
Better TOML": put ``#:schema ./schema.json`` on a scenario's first line) and
kept equal to :func:`json_schema` by a test.

What needs several fields at once (a rate vector's length against the number
of classes, machine numbers against the number of machines, ``power`` against
``base_time``) is checked in :mod:`hetsched.scenarios` right after, with the
same kind of message. Ranges are the limits of :mod:`hetsched.system`
(``MAX_RATE``, ``MAX_MACHINES``, ...), listed in ``docs/input-validation.md``.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    model_validator,
)
from pydantic_core import PydanticCustomError

from ..errors import ScenarioError
from ..fields import (
    MAX_CLASSES,
    MAX_MACHINES,
    MAX_NAME,
    MAX_RATE,
    MAX_TIME,
    MIN_RATE,
    MIN_TIME,
    SCV_MAX,
    WEIBULL_SHAPE,
)
from ..validation import pydantic_path, pydantic_type_message
from ..validation import show as _show

__all__ = ["ScenarioFile", "validate", "json_schema", "MAX_CASES"]

MAX_CASES = 10_000
SEED_MAX = 2**63 - 1

_CONFIG = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, frozen=True)


def _zero_or_rate(v: float) -> float:
    if v != 0 and v < MIN_RATE:
        raise PydanticCustomError("rate_range", f"rate must be 0 or >= {MIN_RATE:g}")
    return v


def _row_sum(row: list[float]) -> list[float]:
    s = sum(row)
    if s != 0 and abs(s - 1) > 2e-3:
        raise PydanticCustomError("row_sum", "row must sum to 1 (or be all 0), sums to {s}", {"s": f"{s:.6g}"})
    return row


def _some_row(P: list[list[float]]) -> list[list[float]]:
    if not any(sum(r) > 0 for r in P):
        raise PydanticCustomError("row_sum", "every row is 0; at least one state must be visited")
    return P


Name = Annotated[str, Field(min_length=1, max_length=MAX_NAME)]
Text = Annotated[str, Field(max_length=10 * MAX_NAME)]
PosRate = Annotated[float, Field(ge=MIN_RATE, le=MAX_RATE, description="a rate > 0 (per time unit)")]
Rate = Annotated[float, Field(ge=0, le=MAX_RATE, description="a rate (per time unit); 0 = none / cannot run"),
                 AfterValidator(_zero_or_rate)]
Time = Annotated[float, Field(ge=MIN_TIME, le=MAX_TIME, description="a time (time units) > 0")]
Prob = Annotated[float, Field(ge=0, le=1)]
RateVector = Annotated[list[Rate], Field(min_length=1, max_length=MAX_CLASSES)]
PosRateVector = Annotated[list[PosRate], Field(min_length=1, max_length=MAX_CLASSES)]
RateMatrix = Annotated[list[Annotated[list[Rate], Field(min_length=1, max_length=MAX_MACHINES)]],
                       Field(min_length=1, max_length=MAX_CLASSES)]
ChainRow = Annotated[list[Prob], Field(min_length=3, max_length=3), AfterValidator(_row_sum)]
ChainMatrix = Annotated[list[ChainRow], Field(min_length=3, max_length=3), AfterValidator(_some_row)]
UpDist = Literal["exp", "hyperexp", "weibull"]
DownDist = Literal["exp", "hyperexp", "const"]
ExecDist = Literal["exp", "det", "hyperexp"]
Scv = Annotated[float, Field(ge=1, le=SCV_MAX)]


def _vec_or_matrix(v: Any) -> str:
    return "matrix" if isinstance(v, list) and v and isinstance(v[0], list) else "vector"


ArrivalValue = Annotated[
    Union[Annotated[PosRateVector, Tag("vector")], Annotated[RateMatrix, Tag("matrix")]],
    Discriminator(_vec_or_matrix),
]


class _Model(BaseModel):
    model_config = _CONFIG


class Availability(_Model):
    """``{machines = [...], a = ...}``: CPU availability ``a`` of the listed machines (1-based)."""

    machines: Annotated[list[Annotated[int, Field(ge=1, le=MAX_MACHINES)]], Field(min_length=1, max_length=MAX_MACHINES)]
    a: Prob


class Group(_Model):
    """``[[groups]]``: ``count`` identical machines; ``mu`` (one rate per class) or ``power``."""

    name: Name
    count: Annotated[int, Field(ge=1, le=MAX_MACHINES)] = 1
    mu: Optional[RateVector] = None
    power: Optional[Annotated[float, Field(ge=MIN_RATE, le=MAX_RATE)]] = None
    cpu_chain: Optional[ChainMatrix] = None
    weibull_shape: Optional[Annotated[float, Field(ge=WEIBULL_SHAPE[0], le=WEIBULL_SHAPE[1])]] = None
    weibull_scale: Optional[Time] = None

    @model_validator(mode="after")
    def _one_rate_spec(self) -> "Group":
        if (self.mu is None) == (self.power is None):
            raise PydanticCustomError("rate_spec", "give exactly one of 'mu' (one rate per class) or 'power'")
        if (self.weibull_shape is None) != (self.weibull_scale is None):
            raise PydanticCustomError("weibull", "give 'weibull_shape' and 'weibull_scale' together, or neither")
        return self


class FailuresSpec(_Model):
    """``[failures]``: every machine alternates up periods (rate) and faults (mean_down)."""

    rate: Rate = 0.0
    mean_down: Time
    up_dist: UpDist = "exp"
    down_dist: DownDist = "exp"
    scv: Scv = 5.0


class Case(_Model):
    """``[[cases]]``: a failure/availability case of one arrival variant (or of all)."""

    case: Annotated[int, Field(ge=1, le=MAX_CASES)]
    arrivals: Optional[Name] = None
    failure_rate: Rate = 0.0
    mean_fault: Optional[Time] = None
    availability: Optional[Annotated[list[Availability], Field(max_length=MAX_MACHINES)]] = None
    up_dist: UpDist = "exp"
    down_dist: DownDist = "exp"
    scv: Scv = 5.0
    note: Text = ""

    @model_validator(mode="after")
    def _fault_time(self) -> "Case":
        if self.failure_rate > 0 and self.mean_fault is None:
            raise PydanticCustomError("missing_fault", "'failure_rate' > 0 needs 'mean_fault'")
        return self


class Arrivals(_Model):
    """``[arrivals]``: named arrival variants (vectors, or N x M per-machine matrices)."""

    model_config = ConfigDict(extra="allow", strict=True, allow_inf_nan=False, frozen=True)
    __pydantic_extra__: dict[Annotated[str, Field(min_length=1, max_length=MAX_NAME)], ArrivalValue]
    default: Optional[Name] = None

    @model_validator(mode="after")
    def _variants(self) -> "Arrivals":
        names = list(self.__pydantic_extra__ or {})
        if not names:
            raise PydanticCustomError("no_variant", "no arrival variant given (add e.g. alpha1 = [...])")
        if self.default is not None and self.default not in names:
            raise PydanticCustomError(
                "bad_default", "'default' names no variant: {d} (variants: {v})",
                {"d": repr(self.default), "v": ", ".join(names)},
            )
        return self

    def variants(self) -> dict[str, Any]:
        return dict(self.__pydantic_extra__ or {})


class PowerRandom(_Model):
    """``[power_random]``: every machine draws a power per class from ``values`` (seeded)."""

    values: Annotated[list[Annotated[float, Field(ge=MIN_RATE, le=MAX_RATE)]], Field(min_length=1, max_length=1000)]
    seed: Annotated[int, Field(ge=0, le=SEED_MAX)]


class Meta(_Model):
    """``[meta]``: model parameters of the decentralized grid (thesis §4.3)."""

    rate_change_rate: Optional[Rate] = None
    alpha_levels: Optional[Annotated[list[Annotated[float, Field(gt=0, le=1e3)]], Field(min_length=3, max_length=3)]] = None
    mu_levels: Optional[Annotated[list[Annotated[float, Field(gt=0, le=1e3)]], Field(min_length=3, max_length=3)]] = None
    cpu_change_mean_interval: Optional[Annotated[float, Field(ge=0, le=MAX_TIME)]] = None


class ScenarioFile(_Model):
    """A hetsched scenario file (TOML): one heterogeneous computing system and its source."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, frozen=True,
                              title="hetsched scenario")
    id: Name
    title: Text = ""
    source: Text = ""
    alpha: Optional[PosRateVector] = None
    alpha_matrix: Optional[RateMatrix] = None
    alpha_per_machine: Optional[Literal["uniform"]] = None
    exec_dist: ExecDist = "exp"
    mu: Optional[RateMatrix] = None
    machine_names: Optional[Annotated[list[Name], Field(max_length=MAX_MACHINES)]] = None
    groups: Optional[Annotated[list[Group], Field(min_length=1, max_length=MAX_MACHINES)]] = None
    arrivals: Optional[Arrivals] = None
    cases: Annotated[list[Case], Field(max_length=MAX_CASES)] = []
    failures: Optional[FailuresSpec] = None
    replicate: Annotated[int, Field(ge=1, le=MAX_MACHINES)] = 1
    base_time: Optional[Annotated[list[Time], Field(min_length=1, max_length=MAX_CLASSES)]] = None
    power_random: Optional[PowerRandom] = None
    class_names: Optional[Annotated[list[Name], Field(min_length=1, max_length=MAX_CLASSES)]] = None
    meta: Meta = Meta()
    availability: Optional[Annotated[list[Availability], Field(max_length=MAX_MACHINES)]] = None

    @model_validator(mode="after")
    def _exclusive(self) -> "ScenarioFile":
        if (self.mu is None) == (self.groups is None):
            raise PydanticCustomError("machines", "give exactly one of 'mu' (a matrix) or '[[groups]]'")
        rates = [k for k in ("alpha", "alpha_matrix", "arrivals") if getattr(self, k) is not None]
        if not rates:
            raise PydanticCustomError("arrivals", "give the arrival rates: 'alpha', 'alpha_matrix' or '[arrivals]'")
        if len(rates) > 1 and rates != ["alpha", "alpha_matrix"]:
            raise PydanticCustomError("arrivals", "give only one of {r}", {"r": ", ".join(rates)})
        if self.machine_names is not None and self.mu is None:
            raise PydanticCustomError("names", "'machine_names' goes with a 'mu' matrix (groups have 'name')")
        return self


# ---------------------------------------------------------------------------
# error messages: one line, the field's full path, the value

_TABLES: dict[str | None, type[BaseModel]] = {
    None: ScenarioFile, "groups": Group, "cases": Case, "failures": FailuresSpec, "meta": Meta,
    "power_random": PowerRandom, "availability": Availability, "arrivals": Arrivals,
}
_TAGS = {"vector", "matrix"}


def _parent_table(loc: tuple) -> str | None:
    names = [p for p in loc[:-1] if isinstance(p, str) and p not in _TAGS]
    return names[-1] if names else None


def _bound(ctx: dict) -> str:
    parts = []
    for key, sym in (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<=")):
        if key in ctx:
            parts.append(f"{sym} {ctx[key]:g}" if isinstance(ctx[key], float) else f"{sym} {ctx[key]:,}")
    return " and ".join(parts)


def _message(err: dict) -> str:
    """One error of pydantic's ``errors()`` as ``field 'PATH': what, got VALUE``."""
    loc, typ, value = tuple(err["loc"]), err["type"], err.get("input")
    path = pydantic_path(loc, _TAGS)  # a 5,000-character key stays readable
    field = f"field '{path}'" if path else "file"
    got = _show(value)
    ctx = err.get("ctx") or {}
    if typ == "extra_forbidden":
        table = _TABLES.get(_parent_table(loc), ScenarioFile)
        allowed = ", ".join(table.model_fields)
        return f"unknown field '{path}' (allowed here: {allowed})"
    if typ == "missing":
        return f"missing field '{path}'"
    if typ in ("float_type", "int_type") and isinstance(value, int) and not isinstance(value, bool):
        return f"{field}: number too large, got {got}"
    typed = pydantic_type_message(typ, field, got, ctx)
    if typed is not None:
        return typed
    if typ == "greater_than_equal" and ctx.get("ge") == MIN_RATE and isinstance(value, (int, float)) and value <= 0:
        return f"{field}: must be > 0, got {got}"
    if typ in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        return f"{field}: must be {_bound(ctx)}, got {got}"
    if typ in ("too_short", "too_long"):
        what = "characters" if isinstance(value, str) else "entries"
        lo, hi = ctx.get("min_length"), ctx.get("max_length")
        n = ctx.get("actual_length", len(value) if hasattr(value, "__len__") else "?")
        if typ == "too_short":
            return f"{field}: expected at least {lo} {what}, got {n}" + ("" if isinstance(value, str) else f": {got}")
        return f"{field}: expected at most {hi:,} {what}, got {n:,}" if isinstance(n, int) else f"{field}: too long"
    if typ in ("string_too_short", "string_too_long"):
        n = len(value) if isinstance(value, str) else "?"
        if typ == "string_too_short":
            return f"{field}: expected a non-empty string, got {got}"
        return f"{field}: at most {ctx.get('max_length')} characters, got {n:,}"
    if typ == "union_tag_invalid":
        return f"{field}: expected a list of rates or a matrix, got {got}"
    # our own checks (PydanticCustomError) and anything else: pydantic's text
    msg = err.get("msg", typ)
    if typ in ("rate_range", "row_sum"):
        return f"{field}: {msg}, got {got}"
    return f"{field}: {msg}" if path else msg


def validate(data: Any, label: str) -> ScenarioFile:
    """Check a parsed scenario file against the schema; :class:`ScenarioError` on the first problem.

    The message is ``LABEL: field 'PATH': what was expected, got VALUE``, with
    ``(and N more problems)`` when there are several.
    """
    if not isinstance(data, dict):  # pragma: no cover - tomllib always gives a table
        raise ScenarioError(f"{label}: expected a TOML table at the top level")
    try:
        return ScenarioFile.model_validate(data)
    except ValidationError as exc:
        errs = exc.errors(include_url=False)
        more = f" (and {len(errs) - 1} more problem{'s' if len(errs) > 2 else ''})" if len(errs) > 1 else ""
        raise ScenarioError(f"{label}: {_message(errs[0])}{more}") from None


def json_schema() -> dict[str, Any]:
    """The JSON Schema of the scenario format (what ``scenarios/schema.json`` holds)."""
    schema = ScenarioFile.model_json_schema(mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://hetsched.invalid/scenario.schema.json"
    return schema


def json_schema_text() -> str:
    """``schema.json``'s text; regenerate it with ``make schema``."""
    return json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"

