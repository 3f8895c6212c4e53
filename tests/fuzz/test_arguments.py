"""The argument checks of `_cliutil` and `reproduce --set`, case by case (complements the generated inputs)."""

from __future__ import annotations

import ast
import inspect
import math
import warnings
from pathlib import Path

import pytest

from hetsched import experiments
from hetsched._cliutil import (
    check_choice,
    check_event_budget,
    check_float,
    check_int,
    estimated_events,
    guard,
)
from hetsched.errors import HetschedError
from hetsched.experiments import RunOptions, parse_sets, sizes


def test_check_float():
    assert check_float("2.5", "--x", 0, 10) == 2.5
    for bad, msg in (("nan", "expected a finite number"), ("inf", "expected a finite number"),
                     ("-inf", "expected a finite number"), ("abc", "expected a number"), ("1e400", "expected a finite number"),
                     ("0", "must be > 0 and <= 10"), ("10.5", "must be > 0 and <= 10")):
        with pytest.raises(HetschedError, match=f"--x: {msg}"):
            check_float(bad, "--x", 0, 10, lo_open=True)


def test_check_int():
    assert check_int("1e3", "--n", 1, 10_000) == 1000 and check_int(" 7 ", "--n") == 7 and check_int(3.0, "--n") == 3
    for bad, msg in (("1.5", "expected an integer"), ("abc", "expected an integer"), (True, "expected an integer"),
                     ("nan", "expected an integer"), ("0", "must be >= 1 and <= 10,000, got 0"),
                     (str(10**40), "must be >= 1 and <= 10,000, got an integer of 41 digits"),
                     ("1e30", "must be >= 1 and <= 10,000, got an integer of 31 digits")):
        with pytest.raises(HetschedError, match=f"--n: {msg}"):
            check_int(bad, "--n", 1, 10_000)


def test_check_choice_lists_the_names():
    assert check_choice("LPAS-dg", "--policy", ("fcfs", "lpas-dg")) == "lpas-dg"
    with pytest.raises(HetschedError, match="--policy: expected one of fcfs, lpas-dg, got 'x'"):
        check_choice("x", "--policy", ("fcfs", "lpas-dg"))


def test_event_budget():
    assert estimated_events(10.0, 1000.0, 3) == 60_000.0  # 2 events per task
    check_event_budget(1e9, "run")
    with pytest.raises(HetschedError, match="run: about 3e\\+10 events estimated, over the limit of 2e\\+10"):
        check_event_budget(3e10, "run")
    with pytest.raises(HetschedError, match="events estimated"):
        check_event_budget(math.inf, "run")


def test_guard_drops_runtime_warnings_and_keeps_one_line(capsys):
    import numpy as np
    import typer

    @guard
    def cmd():
        np.float64(1.0) / np.float64(0.0)  # RuntimeWarning: divide by zero
        raise HetschedError("bad\nvalue")

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        with pytest.raises(typer.Exit) as ei:
            cmd()
    assert ei.value.exit_code == 2
    err = capsys.readouterr().err
    assert err == "error: bad value\n"


def test_parse_sets_per_experiment():
    exp = experiments.get("thesis-table-4.1")
    got = parse_sets(exp, ["reps=3", "horizon=1e3", "ks=2,3", "tie=RANDOM", "include_local=yes"])
    assert got == {"reps": 3, "horizon": 1000.0, "ks": [2, 3], "tie": "random", "include_local": True}
    assert parse_sets(exp, ["ks=[4, 5]"]) == {"ks": [4, 5]}
    with pytest.raises(HetschedError, match="--set: unknown key 'rep' for thesis-table-4.1; valid keys: reps, "
                                            "horizon, ks, propagation"):
        parse_sets(exp, ["rep=3"])
    for item, msg in (("reps=abc", "--set reps: expected an integer, got 'abc'"),
                      ("reps=0", "--set reps: must be >= 1 and <= 10,000, got 0"),
                      ("horizon=nan", "--set horizon: expected a finite number"),
                      ("horizon=-5", "--set horizon: must be > 0"),
                      ("ks=2,x", "--set ks\\[1\\]: expected an integer, got 'x'"),
                      ("tie=sideways", "--set tie: expected one of lowest, random, got 'sideways'"),
                      ("include_local=maybe", "--set include_local: expected true or false"),
                      ("reps", "--set: expected KEY=VALUE, got 'reps'")):
        with pytest.raises(HetschedError, match=msg):
            parse_sets(exp, [item])
    assert parse_sets(experiments.get("thesis-4.3.1"), []) == {}
    with pytest.raises(HetschedError, match="valid keys: none"):
        parse_sets(experiments.get("thesis-4.3.1"), ["reps=3"])


def test_set_values_apply_under_quick():
    """`--quick` changes only the defaults: the old chapter-2 code ignored --set there."""
    from hetsched.experiments import thesis_ch2, thesis_ch3, thesis_ch4  # noqa: F401

    q = RunOptions(quick=True, extra={"reps": 3, "horizon": 123.0})
    assert sizes(q, 30, 20_000.0, 5, 2_000.0) == (3, 123.0)
    assert sizes(RunOptions(quick=True), 30, 20_000.0, 5, 2_000.0) == (5, 2_000.0)
    assert sizes(RunOptions(quick=False), 30, 20_000.0, 5, 2_000.0) == (30, 20_000.0)
    assert thesis_ch2._sizes(q, ["2.A"], 3) == (3, 123.0)
    assert thesis_ch3._cfg(q, runs=[("3.A", "alpha1", 1, 3)]) == (3, 123.0)
    with pytest.raises(HetschedError, match="events estimated"):
        thesis_ch2._sizes(RunOptions(quick=True, extra={"reps": 10_000, "horizon": 1e12}), ["2.C1"], 3)


def _is_opts_extra(base: ast.AST) -> bool:
    """``opts.extra`` or a local ``ex`` (the modules' alias for it)."""
    if isinstance(base, ast.Attribute):
        return base.attr == "extra" and getattr(base.value, "id", "") == "opts"
    return getattr(base, "id", "") == "ex"


def _extra_keys_read(module) -> set[str]:
    """Keys an experiment module reads from ``opts.extra`` (``opts.extra.get("k")``, ``opts.extra["k"]``, ``ex.get``)."""
    tree = ast.parse(Path(inspect.getsourcefile(module)).read_text())
    keys = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
            if _is_opts_extra(node.func.value) and node.args and isinstance(node.args[0], ast.Constant):
                keys.add(node.args[0].value)
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            if _is_opts_extra(node.value) and isinstance(node.slice.value, str):
                keys.add(node.slice.value)
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "_MODEL_KEYS" for t in node.targets):
            keys |= {e.value for e in node.value.elts}
    return keys - {"_id"}  # set internally by the -full variant


def test_every_key_an_experiment_reads_is_declared():
    """Source scan: a key read from opts.extra but not declared could never be set (it would be refused)."""
    import importlib

    reg = experiments.registry()
    by_module: dict[str, set[str]] = {}
    for e in reg.values():
        by_module.setdefault(e.run.__module__, set()).update(p.name for p in e.params)
    for modname, declared in by_module.items():
        read = _extra_keys_read(importlib.import_module(modname))
        assert read <= declared, f"{modname} reads {sorted(read - declared)} from --set but does not declare them"


def test_check_file(tmp_path):
    import os

    from hetsched._cliutil import check_budget, check_file

    f = tmp_path / "ok.swf"
    f.write_text("1 2 3\n")
    assert check_file(str(f), "--swf") == str(f)
    os.mkfifo(tmp_path / "fifo")
    for path, msg in ((tmp_path, "is a folder"), (tmp_path / "fifo", "not a regular file"),
                      ("/dev/zero", "not a regular file"), (tmp_path / "missing", "no such file"),
                      ("x\x00y", "not a file path")):
        with pytest.raises(HetschedError, match=f"--swf: .*{msg}|--swf: {msg}"):
            check_file(path, "--swf")
    with pytest.raises(HetschedError, match="--swf: .*ok.swf: file too large \\(6 bytes, over the limit of 5\\)"):
        check_file(str(f), "--swf", max_bytes=5)
    assert check_file(str(tmp_path / "new.db"), "--journal", must_exist=False).endswith("new.db")
    with pytest.raises(HetschedError, match="--journal: folder does not exist"):
        check_file(str(tmp_path / "no" / "new.db"), "--journal", must_exist=False)
    with pytest.raises(HetschedError, match="--delta: about 2.5e\\+07 states estimated, over the limit of 1e\\+07"):
        check_budget(2.5e7, 1e7, "--delta", "states")


def test_muscle_sizes_and_rates_are_checked_by_option():
    """`muscle run --sizes/--rates`: each value and the two lengths are named by the CLI option (issue 15)."""
    from hetsched.muscle.cli import MAX_CLUSTER_SIZE, _system

    assert _system("20,16,12,10", "1.0, 1.2,1.4,1.6").sizes == (20, 16, 12, 10)
    for sizes, rates, msg in (("20,16,12,10", "1,2", "--sizes/--rates: --sizes gives 4 cluster\\(s\\) but --rates 2"),
                              ("1,2", "1,1,1", "--sizes/--rates: --sizes gives 2 cluster\\(s\\) but --rates 3"),
                              ("1,,2", "1,1", "--sizes: value 2 of '1,,2' is empty"),
                              ("4,0", "1,1", "--sizes\\[1\\]: must be >= 1"),
                              (f"{MAX_CLUSTER_SIZE + 1}", "1",
                               f"--sizes\\[0\\]: must be >= 1 and <= {MAX_CLUSTER_SIZE:,}"),
                              ("4,4", "1,nan", "--rates\\[1\\]: expected a finite number"),
                              ("4,4", "1,-2", "--rates\\[1\\]: must be > 0")):
        with pytest.raises(HetschedError, match=msg):
            _system(sizes, rates)


def test_dispatch_run_time_budgets():
    """`dispatch demo/bench`: the documented uses run, a run over the budget is refused with the estimate."""
    from hetsched.dispatch.emulate import (
        DEMO_BUDGET_SECONDS,
        PULL_TASKS_PER_SECOND,
        check_bench_budget,
        check_demo_budget,
    )

    for tasks in (200, 400, 2000):  # README / docs/dispatch.md examples
        check_demo_budget(tasks, 100.0)
    top = int(DEMO_BUDGET_SECONDS * PULL_TASKS_PER_SECOND)  # 60,000 at the default --rate 100
    check_demo_budget(top, 100.0)
    with pytest.raises(HetschedError, match="--tasks: 60,001 tasks at about 100 per second .* give at most 60,000"):
        check_demo_budget(top + 1, 100.0)
    with pytest.raises(HetschedError, match="--tasks: 100,000 tasks .* about 1,000 s"):
        check_demo_budget(100_000, 1e5)  # a faster --rate does not make pure pull faster
    check_demo_budget(100_000, 1e3, prefetch=0.05)  # with prefetch: 200 s
    for tasks, repeats in ((5000, 3), (20_000, 3), (5000, 20)):  # default, issue 17, most repeats
        check_bench_budget(tasks, repeats, 0.05)
    with pytest.raises(HetschedError, match="--tasks: 100,000 tasks x 3 repeats on 4 workers take about 1,802 s"):
        check_bench_budget(100_000, 3, 0.05)
