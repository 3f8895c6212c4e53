"""Task files and journals are safe (issue 23): a schema with one-line errors, regular files only, bounded.

Truths checked: every invalid task file of the issue's list (``command = nan``,
a non-callable ``call``, unknown keys, ``classes = 5``, binary garbage,
non-numeric availability, availability of a worker the file does not list) is
refused with one ``ModelError`` line naming the field and the value; a few
hundred seeded mutations of a valid file end either in a valid load or in
such a line, never in another exception; pipes, devices, directories and
oversized files are refused before anything is read (a FIFO never blocks).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

from hetsched.dispatch.taskfile import MAX_TASKFILE_BYTES, load_taskfile
from hetsched.errors import HetschedError, ModelError
from helpers import REPO_ROOT

REPO = REPO_ROOT
ENV = dict(os.environ, PYTHONPATH=str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""))

VALID = """\
policy = "gcmu"
time_unit = 0.01
[classes]
names = ["small", "big"]
alpha = [1.0, 1.0]
[workers]
"0" = [4.0, 1]
"1" = [1.0, 4.0]
[availability]
"1" = 0.5
[[tasks]]
class = "small"
command = "echo one"
[[tasks]]
class = "big"
call = "math:factorial"
args = [10]
[[tasks]]
class = "small"
command = ["sh", "-c", "exit 3"]
"""


def _write(tmp_path, text, name="t.toml") -> Path:
    p = tmp_path / name
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    return p


def test_valid_file_loads(tmp_path):
    spec = load_taskfile(_write(tmp_path, VALID))
    assert spec["classes"] == ["small", "big"] and spec["policy"] == "gcmu" and spec["time_unit"] == 0.01
    assert spec["rates"] == {"0": [4.0, 1.0], "1": [1.0, 4.0]} and spec["availability"] == {"1": 0.5}
    kinds = [k for _, k, _ in spec["items"]]
    assert len(kinds) == 3 and spec["items"][1][2][0](*spec["items"][1][2][1]) == 3628800
    assert spec["items"][2][2] == ["sh", "-c", "exit 3"]


@pytest.mark.parametrize("change, where, what", [
    (('command = "echo one"', "command = nan"), "tasks[0].command", "nan"),
    (('call = "math:factorial"', 'call = "math:pi"'), "tasks[1].call", "not callable"),
    (('call = "math:factorial"', 'call = "no_such_module_xyz:f"'), "tasks[1].call", "cannot import"),
    (('call = "math:factorial"', 'call = "factorial"'), "tasks[1].call", "module:function"),
    (('time_unit = 0.01', 'time_unit = 0.01\ncolour = "red"'), "colour", "unknown field"),
    (('args = [10]', 'args = [10]\nretries = 3'), "tasks[1].retries", "unknown field"),
    (('alpha = [1.0, 1.0]', 'alpha = [1.0, 1.0]\nweights = [1, 2]'), "classes.weights", "unknown field"),
    (('[classes]\nnames = ["small", "big"]\nalpha = [1.0, 1.0]', 'classes = 5'), "classes", "expected a table"),
    (('"1" = 0.5', '"1" = "half"'), "availability.1", "expected a number"),
    (('"1" = 0.5', '"7" = 0.5'), "availability.7", "no worker '7'"),
    (('"1" = 0.5', '"1" = 1.5'), "availability.1", "must be <= 1, got 1.5"),
    (('"0" = [4.0, 1]', '"0" = [4.0]'), "workers.0", "expected 2 rates"),
    (('"0" = [4.0, 1]', '"0" = [4.0, -1]'), "workers.0[1]", "must be >= 0"),
    (('"0" = [4.0, 1]', '"0" = [0, 0]'), "workers.0", "can run no class"),
    (('alpha = [1.0, 1.0]', 'alpha = [1.0]'), "classes.alpha", "expected 2 rates"),
    (('alpha = [1.0, 1.0]', 'alpha = [1.0, inf]'), "classes.alpha[1]", "finite"),
    (('names = ["small", "big"]', 'names = ["small", "small"]'), "classes.names", "unique"),
    (('policy = "gcmu"', 'policy = "sjf"'), "policy", "expected one of"),
    (('time_unit = 0.01', 'time_unit = -1'), "time_unit", "must be > 0"),
    (('class = "big"', 'class = "huge"'), "tasks[1].class", "unknown class 'huge'"),
    (('command = "echo one"', 'command = "echo one"\nargs = [1]'), "tasks[0]", "go with 'call'"),
    (('command = "echo one"', 'work = 1.0'), "tasks[0].work", "unknown field"),
    (('[workers]\n"0" = [4.0, 1]\n"1" = [1.0, 4.0]', '[workers]'), "workers", "must not be empty"),
])
def test_invalid_files_one_line_naming_field_and_value(tmp_path, change, where, what):
    old, new = change
    assert old in VALID
    p = _write(tmp_path, VALID.replace(old, new, 1))
    with pytest.raises(ModelError) as e:
        load_taskfile(p)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"task file {str(p)!r}"), msg
    assert f"'{where}'" in msg and what in msg, msg


def test_garbage_empty_and_bad_toml(tmp_path):
    for data, what in ((bytes(range(256)) * 4, "not a text file"), (b"", "missing field 'classes'"),
                       (b"[classes\nnames = 1", "not valid TOML"), (b"a = [" * 100_000, "TOML")):
        with pytest.raises(ModelError, match=what):
            load_taskfile(_write(tmp_path, data))


def test_pipes_devices_directories_and_size_refused_before_reading(tmp_path):
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    for path, what in ((fifo, "not a regular file"), ("/dev/zero", "not a regular file"),
                       (tmp_path, "is a folder"), (tmp_path / "missing.toml", "no such file")):
        with pytest.raises(HetschedError, match=f"task file .*{what}"):
            load_taskfile(path)
    big = tmp_path / "big.toml"
    with open(big, "wb") as fh:  # sparse: no disk used
        fh.truncate(MAX_TASKFILE_BYTES + 1)
    with pytest.raises(HetschedError, match="over the limit of 64,000,000"):
        load_taskfile(big)


def _mutations(doc: dict, rng: np.random.Generator, n: int):
    """Seeded mutations of a parsed task file: drop, retype or add fields at every depth."""
    odd = [float("nan"), float("inf"), -1, 0, 1e400 if False else 1e300, "", "x" * 300, [], {}, [1, "a"],
           {"k": [1]}, True, 2**70, -0.0, [[1.0]], "math:pi", "os:getcwd", ["sh"], {"class": "small"}]

    def paths(x, pre=()):
        yield pre
        if isinstance(x, dict):
            for k, v in x.items():
                yield from paths(v, pre + (k,))
        elif isinstance(x, list):
            for i, v in enumerate(x):
                yield from paths(v, pre + (i,))

    all_paths = [p for p in paths(doc) if p]
    for _ in range(n):
        d = json.loads(json.dumps(doc))
        for _ in range(int(rng.integers(1, 3))):
            p = all_paths[int(rng.integers(len(all_paths)))]
            try:
                parent = d
                for k in p[:-1]:
                    parent = parent[k]
                op = int(rng.integers(3))
                if op == 0 and isinstance(parent, dict):
                    parent.pop(p[-1], None)
                elif op == 1:
                    parent[p[-1]] = odd[int(rng.integers(len(odd)))]
                elif isinstance(parent, dict):
                    parent["extra_" + str(int(rng.integers(9)))] = odd[int(rng.integers(len(odd)))]
            except (KeyError, IndexError, TypeError):
                pass
        yield d


def test_mutated_files_never_an_internal_error(tmp_path):
    tomli_w = pytest.importorskip("tomli_w")
    doc = tomllib.loads(VALID)
    outcomes = {"valid": 0, "refused": 0}
    for k, d in enumerate(_mutations(doc, np.random.default_rng(2309), 300)):
        try:
            text = tomli_w.dumps(d)
        except (TypeError, ValueError):  # not representable in TOML (e.g. NaN keys): nothing to test
            continue
        p = _write(tmp_path, text, f"m{k}.toml")
        try:
            load_taskfile(p)
            outcomes["valid"] += 1
        except ModelError as exc:
            msg = str(exc)
            assert "\n" not in msg and msg.startswith("task file "), msg
            outcomes["refused"] += 1
    assert outcomes["refused"] > 150 and outcomes["valid"] > 5, outcomes


# --------------------------------------------------------------------- the CLI never hangs on a pipe or a device
_CHILD = """
import faulthandler, json, sys
faulthandler.dump_traceback_later(60, exit=True)  # a hang fails the test instead of blocking it
from typer.testing import CliRunner
from hetsched.cli import app
out = []
for args in json.loads(sys.argv[1]):
    r = CliRunner().invoke(app, args)
    out.append([r.exit_code, r.stderr])
print(json.dumps(out))
"""


def test_cli_refuses_fifo_and_dev_zero_as_task_file_or_journal(tmp_path):
    tf = _write(tmp_path, VALID)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    cases = [["dispatch", "run", str(fifo)], ["dispatch", "run", "/dev/zero"],
             ["dispatch", "run", str(tf), "--journal", str(fifo)], ["dispatch", "run", str(tf), "--journal", "/dev/zero"],
             ["dispatch", "demo", "--tasks", "5", "--journal", str(fifo)]]
    cp = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(cases)], capture_output=True, text=True, env=ENV,
                        timeout=120)
    assert cp.returncode == 0, cp.stderr[-2000:]
    for args, (code, err) in zip(cases, json.loads(cp.stdout)):
        assert code == 2, (args, err)
        assert err.count("\n") == 1 and "not a regular file" in err, (args, err)
    assert fifo.exists() and not fifo.is_file()  # untouched
