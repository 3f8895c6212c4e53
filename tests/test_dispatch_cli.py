"""``hetsched dispatch run``: a task file, a journal, and a rerun that resumes without repeating."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("distributed")

from typer.testing import CliRunner  # noqa: E402

from hetsched.cli import app  # noqa: E402

TASKFILE = """
policy = "gcmu"
time_unit = 0.01
[classes]
names = ["small", "big"]
alpha = [1.0, 1.0]
[workers]
"0" = [4.0, 1.0]
"1" = [1.0, 4.0]
[[tasks]]
class = "small"
command = "echo one"
[[tasks]]
class = "big"
call = "math:factorial"
args = [10]
[[tasks]]
class = "small"
command = "exit 3"
"""


def test_run_taskfile_with_journal_then_resume(tmp_path):
    tf = tmp_path / "tasks.toml"
    tf.write_text(TASKFILE)
    db = tmp_path / "j.db"
    r = CliRunner().invoke(app, ["dispatch", "run", str(tf), "--journal", str(db), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["submitted"] == 3 and out["completed"] == 2 and out["failed"] == 1 and out["lost"] == 0
    by_id = {row["id"]: row for row in out["results"]}
    assert by_id[0]["value"]["stdout"].strip() == "one"
    assert by_id[1]["value"] == 3628800
    assert by_id[2]["state"] == "failed" and by_id[2]["value"]["returncode"] == 3
    # rerun on the same journal: nothing is accepted or run twice
    r = CliRunner().invoke(app, ["dispatch", "run", str(tf), "--journal", str(db), "--json"])
    assert r.exit_code == 0, r.output
    out2 = json.loads(r.stdout)
    assert out2["submitted"] == 0 and [row["id"] for row in out2["results"]] == [0, 1, 2]


def test_run_taskfile_errors(tmp_path):
    tf = tmp_path / "bad.toml"
    tf.write_text(TASKFILE.replace('class = "big"', 'class = "huge"'))
    r = CliRunner().invoke(app, ["dispatch", "run", str(tf)])
    assert r.exit_code == 2 and "unknown class 'huge'" in r.output
    r = CliRunner().invoke(app, ["dispatch", "run", str(tmp_path / "missing.toml")])
    assert r.exit_code == 2 and "does not exist" in r.output
