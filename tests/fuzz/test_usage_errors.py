"""typer/click's own usage errors, for every command and group: one line on stderr, exit 2.

The argument lists are generated from the command tree itself (every group and
command the CLI registers, every option of each), so a command added later is
covered without editing this file. Kinds: an unknown option, an option without
its value, a flag given a value, a number option given text, a missing argument
or required option, a group without its command, an extra argument.

Truth: exit 2, exactly one line ``error: ...`` on stderr naming the option (and
the refused value where there is one) and the command's ``--help``, nothing on
stdout (no help page, no framed block), no traceback, no hang. None of these
lists reaches a command body, so each takes milliseconds in-process; a sample
runs as real processes (one per top-level command).
"""

from __future__ import annotations

import typing
from concurrent.futures import ThreadPoolExecutor

import pytest
from fuzz_runner import assert_refused, run_fork, run_process
from fuzz_strategies import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

pytestmark = pytest.mark.fuzz


def _tree() -> list[tuple[list[str], object]]:
    """``(path, click command)`` of the app and every group and command under it."""
    import typer

    from hetsched.cli import app

    out = []

    def walk(cmd, path):
        out.append((path, cmd))
        for name, sub in sorted(getattr(cmd, "commands", {}).items()):
            walk(sub, path + [name])

    walk(typer.main.get_command(app), [])
    return out


TREE = _tree()
GROUPS = [(p, c) for p, c in TREE if hasattr(c, "commands")]
LEAVES = [(p, c) for p, c in TREE if not hasattr(c, "commands")]


def _options(cmd) -> list:
    return [p for p in cmd.params if getattr(p, "param_type_name", "") == "option" and not p.hidden
            and p.name not in ("help", "install_completion", "show_completion")]


def _is_flag(p) -> bool:
    return bool(getattr(p, "is_flag", False) or getattr(p, "count", False))


def _numeric(p) -> bool:
    """An option typed int or float taking one value (typer converts it; text is a usage error before any
    callback)."""
    if getattr(p, "nargs", 1) != 1:
        return False
    td = getattr(p, "type_descriptor", None)
    ann = getattr(td, "annotation", None)
    if ann is not None:
        args = [a for a in typing.get_args(ann) if a is not type(None)] if typing.get_origin(ann) else [ann]
        return any(a in (int, float) for a in args)
    return getattr(getattr(p, "type", None), "name", "") in ("integer", "float")


def _required(cmd) -> list:
    return [p for p in cmd.params if p.required]


def _variadic(cmd) -> bool:
    return any(getattr(p, "param_type_name", "") == "argument" and p.nargs == -1 for p in cmd.params)


def _kinds(path, cmd) -> list[str]:
    if hasattr(cmd, "commands"):
        return ["unknown", "missing-command"]
    opts = _options(cmd)
    kinds = ["unknown"]
    if any(not _is_flag(p) for p in opts):
        kinds.append("needs-value")
    if any(_is_flag(p) for p in opts):
        kinds.append("flag-value")
    if any(_numeric(p) for p in opts):
        kinds.append("not-a-number")
    if _required(cmd):  # without a required parameter the bare command would run: not a usage error
        kinds.append("missing")
    if not _variadic(cmd):
        kinds.append("extra")
    return kinds


_JUNK = ["--bogus", "--Json", "--help-me", "-Z", "--nope=1", "--x" * 3]


def _case(data, path, cmd) -> tuple[list[str], tuple[str, ...], str]:
    """(argument list, names the error must mention, kind)."""
    kind = data.draw(st.sampled_from(_kinds(path, cmd)))
    opts = _options(cmd)
    if kind == "unknown":
        w = data.draw(st.sampled_from(_JUNK))
        return path + [w], (w.split("=")[0],), kind
    if kind == "missing-command":
        return list(path), ("missing command",), kind
    if kind == "needs-value":
        p = data.draw(st.sampled_from([p for p in opts if not _is_flag(p)]))
        o = data.draw(st.sampled_from(p.opts))
        return path + [o], (o,), kind
    if kind == "flag-value":
        p = data.draw(st.sampled_from([p for p in opts if _is_flag(p)]))
        o = data.draw(st.sampled_from([x for x in p.opts + p.secondary_opts if x.startswith("--")] or p.opts))
        return path + [f"{o}=maybe"], (o,), kind
    if kind == "not-a-number":
        p = data.draw(st.sampled_from([p for p in opts if _numeric(p)]))
        o = data.draw(st.sampled_from(p.opts))
        v = data.draw(st.sampled_from(["abc", "1,5", "", "1.2.3", "ten", "0x1G"]))
        return path + [o, v], (o,), kind
    if kind == "missing":
        return list(path), ("missing",), kind
    # extra: fill the required parameters with placeholders, then one argument too many
    args = list(path)
    for p in _required(cmd):
        if getattr(p, "param_type_name", "") == "argument":
            args.append("placeholder")
    return args + ["extra-arg-1", "extra-arg-2"], ("extra", "missing"), kind


def _check(o, names, path, kind) -> None:
    assert_refused(o, *names)
    where = " ".join(["hetsched", *path])
    assert f"(see {where} --help)" in o.err, o.show()
    assert o.out == "", f"stdout must stay empty (no help page):\n{o.show()}"
    if kind == "not-a-number":
        assert "got '" in o.err, f"the refused value is not named:\n{o.show()}"


@fuzz_settings(150)
@given(data=st.data())
def test_usage_errors_are_one_line(data):
    path, cmd = data.draw(st.sampled_from(TREE))
    args, names, kind = _case(data, path, cmd)
    _check(run_fork(args, timeout=30), names, path, kind)


def test_every_group_and_command_is_covered():
    """The tree the generated cases draw from holds every top-level command of DESIGN's contract."""
    top = {p[0] for p, _ in TREE if p}
    assert {"scenarios", "lp", "simulate", "mdp", "srn", "muscle", "dispatch", "reproduce", "report", "plot",
            "trace"} <= top, sorted(top)
    for path, cmd in GROUPS:
        o = run_fork(list(path))
        _check(o, ("missing command",), path, "missing-command")
        assert all(n in o.err for n in cmd.commands), o.show()


_PROCESS_CASES = [
    (["simulate", "2.B", "--reps", "abc"], ("--reps", "'abc'")),
    (["lp", "2.B", "--bogus"], ("--bogus",)),
    (["lp"], ("Missing argument",)),
    (["mdp", "coalloc", "--rho"], ("--rho",)),
    (["srn", "gang", "--mu", "x"], ("--mu", "'x'")),
    (["muscle"], ("missing command",)),
    (["dispatch", "demo", "--json=maybe"], ("--json",)),
    (["reproduce", "--seed", "1.5.1"], ("--seed",)),
    (["report", "--bogus"], ("--bogus",)),
    (["plot"], ("missing command",)),
    (["trace", "info"], ("Missing argument",)),
    (["scenarios", "extra"], ("extra",)),
    ([], ("missing command",)),
]


def test_usage_errors_as_real_processes():
    """What a user sees from a fresh process (entry point, exit code), one case per top-level command."""
    with ThreadPoolExecutor(3) as ex:
        outcomes = list(ex.map(lambda c: run_process(c[0], timeout=120), _PROCESS_CASES))
    for (args, names), o in zip(_PROCESS_CASES, outcomes):
        assert_refused(o)
        for n in names:
            assert n in o.err, o.show()
        assert o.out == "", o.show()
