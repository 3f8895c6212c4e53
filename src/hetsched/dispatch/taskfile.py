"""Task files of ``hetsched dispatch run``: a schema, a safe reader, and the run itself.

A task file (TOML)::

    policy = "lpas-dg"            # optional; --policy overrides
    time_unit = 1.0               # seconds per time unit of the rates below
    [classes]
    names = ["small", "big"]
    alpha = [2.0, 0.5]            # estimated arrivals per time unit (LPAS_DG)
    [workers]                     # estimated execution rates, one per class
    "0" = [4.0, 1.0]              # keys: Dask worker names (embedded: "0".."W-1")
    "1" = [2.0, 2.0]
    [availability]                # optional CPU availability a_j per worker
    "1" = 0.5
    [[tasks]]
    class = "small"
    command = "echo hello"        # a shell command (or a list: argv), or:
    [[tasks]]
    class = "big"
    call = "math:factorial"       # module:function, with args = [...], kwargs = {...}
    args = [2000]

Reading (:func:`load_taskfile`, through :func:`hetsched.safeio.read_input`): the
file must be a regular file (no pipe or device: they are refused on the open
descriptor, before anything is read) of at most :data:`MAX_TASKFILE_BYTES`,
UTF-8 TOML. One pydantic model per table checks
every field's type, range and finiteness, and refuses unknown keys
(:class:`TaskFile`); what ties fields together is checked right after (lengths
against the number of classes, task classes, availability of a worker that the
file does not list, ``call`` importable and callable). The first problem is one
:class:`~hetsched.errors.ModelError` line naming the file, the field's full path
(``tasks[3].command``) and the value.
"""

from __future__ import annotations

import os
import tomllib
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, ValidationError, model_validator
from pydantic_core import PydanticCustomError

from ..errors import ModelError
from ..validation import pydantic_path, pydantic_type_message, show
from .budget import MAX_TASKS, MAX_WORKERS

__all__ = ["TaskFile", "load_taskfile", "taskfile_spec", "MAX_TASKFILE_BYTES", "run_taskfile"]

MAX_TASKFILE_BYTES = 64_000_000  # a million short tasks
MAX_CLASSES = 1_000
MAX_NAME = 200
MAX_COMMAND = 100_000
MAX_RATE = 1e9
MAX_FILE_WORKERS = 100_000  # workers listed (an external cluster may have more than the embedded one's 256)

_CONFIG = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, frozen=True)

Name = Annotated[str, Field(min_length=1, max_length=MAX_NAME)]
Rate = Annotated[float, Field(ge=0, le=MAX_RATE)]
PosRate = Annotated[float, Field(gt=0, le=MAX_RATE)]
_TAGS = ("command-text", "command-argv")  # union tags, not fields (left out of error paths)
Command = Annotated[
    Union[Annotated[Annotated[str, Field(min_length=1, max_length=MAX_COMMAND)], Tag(_TAGS[0])],
          Annotated[Annotated[list[Annotated[str, Field(max_length=MAX_COMMAND)]], Field(min_length=1, max_length=10_000)],
                    Tag(_TAGS[1])]],
    Discriminator(lambda v: _TAGS[1] if isinstance(v, list) else _TAGS[0]),
]
Call = Annotated[str, Field(pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$", max_length=MAX_NAME)]


class _Model(BaseModel):
    model_config = _CONFIG


class Classes(_Model):
    """``[classes]``: labels, and the estimated arrival rates (per time unit) LPAS_DG needs."""

    names: Annotated[list[Name], Field(min_length=1, max_length=MAX_CLASSES)]
    alpha: Optional[Annotated[list[PosRate], Field(min_length=1, max_length=MAX_CLASSES)]] = None


class TaskSpec(_Model):
    """``[[tasks]]``: one task: its class and exactly one of ``command`` or ``call``."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, frozen=True, populate_by_name=True)
    cls: Name = Field(alias="class")
    command: Optional[Command] = None
    call: Optional[Call] = None
    args: Annotated[list[Any], Field(max_length=10_000)] = []
    kwargs: dict[Annotated[str, Field(min_length=1, max_length=MAX_NAME)], Any] = {}

    @model_validator(mode="after")
    def _one_kind(self) -> "TaskSpec":
        if (self.command is None) == (self.call is None):
            raise PydanticCustomError("task_kind", "give exactly one of 'command' or 'call'")
        if self.command is not None and (self.args or self.kwargs):
            raise PydanticCustomError("task_kind", "'args' and 'kwargs' go with 'call', not with 'command'")
        return self


class TaskFile(_Model):
    """A ``hetsched dispatch run`` task file (TOML)."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, frozen=True,
                              title="hetsched dispatch task file")
    policy: Literal["fcfs", "gcmu", "lpas-dg", "lpas-dg-robust"] = "lpas-dg"
    time_unit: Annotated[float, Field(gt=0, le=1e9)] = 1.0
    classes: Classes
    workers: Annotated[dict[Name, Annotated[list[Rate], Field(min_length=1, max_length=MAX_CLASSES)]],
                       Field(min_length=1, max_length=MAX_FILE_WORKERS)]
    availability: dict[Name, Annotated[float, Field(gt=0, le=1)]] = {}
    tasks: Annotated[list[TaskSpec], Field(max_length=MAX_TASKS)] = []


# ---------------------------------------------------------------------------- messages
def _message(err: dict) -> str:
    """One pydantic error as ``field 'PATH': what, got VALUE``."""
    loc, typ, value, ctx = tuple(err["loc"]), err["type"], err.get("input"), err.get("ctx") or {}
    path = pydantic_path(loc, _TAGS)
    field = f"field '{path}'" if path else "file"
    got = show(value)
    if typ == "extra_forbidden":
        return f"unknown field '{path}'"
    if typ == "missing":
        return f"missing field '{path}'"
    typed = pydantic_type_message(typ, field, got, ctx)
    if typed is not None:
        return typed
    if typ == "string_pattern_mismatch":
        return f"{field}: expected 'module:function', got {got}"
    if typ in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        bound = " and ".join(f"{sym} {ctx[k]:g}" for k, sym in (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<="))
                             if k in ctx)
        return f"{field}: must be {bound}, got {got}"
    if typ in ("too_short", "string_too_short"):
        return f"{field}: must not be empty, got {got}"
    if typ in ("too_long", "string_too_long"):
        return f"{field}: at most {ctx.get('max_length', '?'):,} entries or characters"
    msg = err.get("msg", typ)
    return f"{field}: {msg}" if path else msg


# ---------------------------------------------------------------------------- reading
def load_taskfile(path: Any) -> dict:
    """Read, parse and validate a task file (module docstring); a dict of what the dispatcher needs."""
    from ..safeio import read_input

    raw = read_input(path, what="task file", max_bytes=MAX_TASKFILE_BYTES, encoding=None)
    where = f"task file {os.fspath(path)!r}"
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ModelError(f"{where}: not a text file (UTF-8): byte {exc.start} is "
                         f"{raw[exc.start:exc.start + 1]!r}") from None
    except RecursionError:
        raise ModelError(f"{where}: not valid TOML: arrays or tables nested too deeply") from None
    except ValueError as exc:  # tomllib.TOMLDecodeError, invalid dates
        raise ModelError(f"{where}: not valid TOML: {str(exc)[:200]}") from None
    try:
        tf = TaskFile.model_validate(doc)
    except ValidationError as exc:
        errs = exc.errors(include_url=False)
        more = f" (and {len(errs) - 1} more problem{'s' if len(errs) > 2 else ''})" if len(errs) > 1 else ""
        raise ModelError(f"{where}: {_message(errs[0])}{more}") from None
    return _build(tf, doc, where)


def _build(tf: TaskFile, doc: dict, where: str) -> dict:
    from importlib import import_module

    from .worker import KIND_CALL, KIND_SHELL

    names = list(tf.classes.names)
    N = len(names)
    if len(set(names)) != N:
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ModelError(f"{where}: field 'classes.names': labels must be unique, {dup[0]!r} is repeated")
    if tf.classes.alpha is not None and len(tf.classes.alpha) != N:
        raise ModelError(f"{where}: field 'classes.alpha': expected {N} rates (one per class), got "
                         f"{len(tf.classes.alpha)}")
    for w, r in tf.workers.items():
        if len(r) != N:
            raise ModelError(f"{where}: field 'workers.{w}': expected {N} rates (one per class), got {len(r)}")
        if not any(x > 0 for x in r):
            raise ModelError(f"{where}: field 'workers.{w}': the worker can run no class (all rates are 0)")
    for k in tf.availability:
        base = k.rsplit("#", 1)[0] if "#" in k and k.rsplit("#", 1)[1].isdigit() else k
        if base not in tf.workers:
            raise ModelError(f"{where}: field 'availability.{k}': no worker {base!r} in [workers] "
                             f"(workers: {', '.join(sorted(tf.workers)[:8])})")
    items = []
    imported: dict[str, Any] = {}
    index = set(names)
    for k, t in enumerate(tf.tasks):
        if t.cls not in index:
            raise ModelError(f"{where}: field 'tasks[{k}].class': unknown class {t.cls!r}; known classes are "
                             f"{names}")
        if t.command is not None:
            items.append((t.cls, KIND_SHELL, t.command if isinstance(t.command, str) else list(t.command)))
            continue
        f = imported.get(t.call)
        if f is None:
            mod, _, fn = t.call.partition(":")
            try:
                f = getattr(import_module(mod), fn)
            except Exception:  # noqa: BLE001 - ImportError, AttributeError, or the module failing on import
                raise ModelError(f"{where}: field 'tasks[{k}].call': cannot import {t.call!r}") from None
            if not callable(f):
                raise ModelError(f"{where}: field 'tasks[{k}].call': {t.call!r} is not callable "
                                 f"(a {type(f).__name__})")
            imported[t.call] = f
        items.append((t.cls, KIND_CALL, (f, tuple(t.args), dict(t.kwargs))))
    return {"classes": names, "alpha": None if tf.classes.alpha is None else list(tf.classes.alpha),
            "rates": {w: list(r) for w, r in tf.workers.items()}, "availability": dict(tf.availability),
            "policy": tf.policy, "time_unit": float(tf.time_unit), "items": items, "spec": taskfile_spec(doc)}


def taskfile_spec(doc: dict) -> str:
    """SHA-256 of the task file's content (canonical JSON): a journal belongs to one task file."""
    import hashlib
    import json

    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()


# ---------------------------------------------------------------------------- running
def run_taskfile(path: Any, *, policy: str | None = None, scheduler: str | None = None, journal: str | None = None,
                 processes: bool = False, prefetch: float = 0.0, worker_wait: float = 60.0,
                 resolve_every: float | None = None, progress=None):
    """Run the tasks of a task file; ``(result, rows)``: the :class:`~hetsched.dispatch.DispatchResult` and one
    row per finished task (``id``, ``class``, ``state``, ``value``; from the journal when one is given, so a
    resumed run lists every task of the file).

    Without ``scheduler`` an embedded ``LocalCluster`` with one worker per ``[workers]`` entry runs them
    (named ``"0"``, ``"1"``, ...); ``journal`` makes the run resumable (a rerun on the same journal runs only
    what is unfinished; a journal of another task file is refused).
    """
    from .dispatcher import Dispatcher
    from .emulate import close_quietly, connect, local_cluster, quiet_dask, replenish
    from .journal import Journal
    from .options import DispatchOptions

    spec = load_taskfile(path)
    opts = DispatchOptions(policy=policy or spec["policy"], alpha=spec["alpha"],
                           availability=spec["availability"], time_unit=spec["time_unit"], prefetch=prefetch,
                           worker_wait=worker_wait, resolve_every=resolve_every)
    if scheduler is None and len(spec["rates"]) > MAX_WORKERS:
        raise ModelError(f"task file: {len(spec['rates'])} workers listed; the embedded cluster has at most "
                         f"{MAX_WORKERS} (give --scheduler for a larger cluster)")
    if journal is not None:  # refuse a foreign or corrupt journal before starting a cluster
        Journal(str(journal), spec["classes"], spec=spec["spec"]).close()
    quiet_dask()
    cluster = None
    if scheduler is None:
        cluster, client = local_cluster(len(spec["rates"]), processes=processes)
    else:
        client = connect(scheduler)
    try:
        d = Dispatcher(client, spec["classes"], spec["rates"], opts, journal=None if journal is None else str(journal),
                       journal_spec=spec["spec"], replenish=None if cluster is None else (lambda: replenish(cluster)))
        try:
            if d.next_id == 0:  # a journal that already holds the file's tasks resumes them instead
                d.add_many(spec["items"])
            res = d.run(progress=progress)
            done = d.journal.finished() if d.journal is not None else None
        finally:
            d.close()
    finally:
        close_quietly(client, cluster)
    if done is not None:
        rows = [{"id": r["id"], "class": spec["classes"][r["cls"]], "state": r["state"], "value": r["value"]}
                for r in done]
    else:
        rows = [{"id": tid, "class": d.classes[t.cls], "state": "done" if t.state == 2 else "failed",
                 "value": d.results.get(tid)} for tid, t in sorted(d.tasks.items()) if t.state >= 2]
    return res, rows
