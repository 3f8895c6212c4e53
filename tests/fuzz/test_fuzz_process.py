"""A sample of bad inputs as real processes (`python -m hetsched.cli ...`), as a user runs them.

The forked in-process runs of the other fuzz tests share one interpreter set-up;
these check what only a fresh process shows: start-up, import-time warnings, the
entry point's exit code, the HETSCHED_DEBUG switch.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from fuzz_runner import assert_refused, run_process
from fuzz_strategies import fuzz_settings, mutated_scenarios
from hypothesis import given

pytestmark = pytest.mark.fuzz

_CASES = [
    (["lp", "x" * 5000], ("not a scenario id",)),
    (["lp", "/dev/zero"], ("not a regular file",)),
    (["lp", "3.A", "--case", "0"], ("--case",)),
    (["reproduce", "thesis-table-2.1", "--quick", "--set", "reps=abc"], ("--set reps",)),
    (["reproduce", "thesis-table-2.1", "--quick", "--set", "bogus=1"], ("valid keys: reps, horizon, systems",)),
]


@pytest.mark.parametrize("args,names", _CASES, ids=[" ".join(a)[:40] for a, _ in _CASES])
def test_bad_arguments_as_a_process(args, names):
    assert_refused(run_process(args), *names)


@fuzz_settings(3)
@given(m=mutated_scenarios(kinds=("nonfinite", "value", "text")))
def test_bad_scenario_file_as_a_process(tmp_path_factory, m):
    p = tmp_path_factory.mktemp("proc") / "bad.toml"
    p.write_bytes(m.text)
    o = run_process(["lp", str(p)])
    assert not o.hang and "Traceback" not in o.err and o.code in (0, 2), o.show()
    if o.code == 2:
        assert_refused(o, str(p))


def test_a_bug_is_an_internal_error_not_a_user_error(tmp_path):
    """guard: an unexpected exception is 'internal error' with exit 70, and the
    traceback appears only with HETSCHED_DEBUG=1."""
    code = ("import sys, typer\n"
            "from hetsched._cliutil import guard, run\n"
            "app = typer.Typer()\n"
            "@app.command()\n"
            "@guard\n"
            "def boom(kind: str):\n"
            "    if kind == 'bug': {}['missing']\n"
            "    if kind == 'mem': raise MemoryError()\n"
            "    if kind == 'os': open('/nonexistent/dir/file')\n"
            "    if kind == 'rec': raise RecursionError('maximum recursion depth exceeded')\n"
            "@app.command()\n"
            "def other(): pass\n"
            "sys.exit(run(app, sys.argv[1:]))\n")
    script = tmp_path / "boom.py"
    script.write_text(code)
    env = {**os.environ, "HETSCHED_DEBUG": ""}

    def run(*a, debug=""):
        return subprocess.run([sys.executable, str(script), *a], capture_output=True, text=True, timeout=60,
                              env={**env, "HETSCHED_DEBUG": debug})

    r = run("boom", "bug")
    assert r.returncode == 70 and r.stderr.startswith("internal error: KeyError") and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    r = run("boom", "bug", debug="1")
    assert r.returncode != 0 and "Traceback (most recent call last)" in r.stderr and "KeyError" in r.stderr
    r = run("boom", "mem")
    assert r.returncode == 2 and r.stderr.startswith("error: out of memory:")
    r = run("boom", "os")
    assert r.returncode == 2 and r.stderr.strip() == "error: /nonexistent/dir/file: No such file or directory"
    r = run("boom", "rec")
    assert r.returncode == 2 and r.stderr.startswith("error: input nested too deeply")
    r = run("boom", "--nope")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "--nope" in r.stderr
