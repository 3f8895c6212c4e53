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
    assert r.exit_code == 2 and "no such file" in r.output


def test_bench_json_counts_every_task_once():
    r = CliRunner().invoke(app, ["dispatch", "bench", "--workers", "2", "--tasks", "300", "--repeats", "1", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    for k in ("tasks_per_second", "lost", "duplicated", "reference_tasks_per_second", "ratio",
              "per_worker_tasks_per_second", "ratio_per_worker", "overhead_seconds_per_task"):
        assert k in out
    assert out["policy"] == "lpas-dg" and out["journal"] is False
    assert out["lost"] == 0 and out["duplicated"] == 0
    assert out["batches"] < 300  # prefetch: several tasks per Dask task
    assert out["ratio"] == pytest.approx(out["tasks_per_second"] / out["reference_tasks_per_second"])
    assert out["overhead_seconds_per_task"] == pytest.approx(1 / out["tasks_per_second"]
                                                             - 1 / out["reference_tasks_per_second"])


def test_run_refuses_a_journal_of_another_task_file(tmp_path):
    tf = tmp_path / "tasks.toml"
    tf.write_text(TASKFILE)
    db = tmp_path / "j.db"
    r = CliRunner().invoke(app, ["dispatch", "run", str(tf), "--journal", str(db), "--json"])
    assert r.exit_code == 0, r.output
    tf2 = tmp_path / "other.toml"
    tf2.write_text(TASKFILE.replace("echo one", "echo two"))
    r = CliRunner().invoke(app, ["dispatch", "run", str(tf2), "--journal", str(db), "--json"])
    assert r.exit_code == 2 and "belongs to another task specification" in r.stderr
    assert r.stdout == ""  # the old file's results are not printed as the new file's
