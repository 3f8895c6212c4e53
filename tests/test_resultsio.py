"""Results files: the one writer and reader (:mod:`hetsched.resultsio`) and the validation layer they use."""

from __future__ import annotations

import json
import os

import pytest

from hetsched import resultsio
from hetsched.errors import HetschedError, ScenarioError
from hetsched.safeio import InputError, check_input, inside
from hetsched.validation import check_file


def _doc(**kw):
    doc = {"id": "x", "kind": "experiment", "status": 0, "success": True, "message": "complete: 2 rows",
           "rows": [{"policy": "mct", "W": 1.5, "stable": True}, {"policy": "lpas", "W": None, "stable": False,
                                                                   "value_untrusted": 9.0}],
           "units": {"W": "time units"}, "notes": ["n"], "figures": [], "provenance": {"seed": 1}}
    doc.update(kw)
    return doc


def test_round_trip_json_csv_parquet(tmp_path):
    import pandas as pd
    import pyarrow.parquet as pq

    d = resultsio.prepare_outdir(tmp_path / "x")
    written = resultsio.write_results(d, _doc(), table="the table")
    assert {p.name for p in written} == set(resultsio.RESULTS_FILES)
    (rec,), problems = resultsio.read_results_dir(tmp_path)
    assert problems == [] and rec.id == "x" and rec.kind == "experiment" and rec.status == 0
    assert rec.rows == _doc()["rows"] and rec.table_text == "the table\n" and rec.units == {"W": "time units"}
    csv = pd.read_csv(d / "results.csv")
    assert list(csv["policy"]) == ["mct", "lpas"] and csv["W"].iloc[0] == 1.5 and pd.isna(csv["W"].iloc[1])
    meta = json.loads(pq.read_schema(d / "results.parquet").metadata[b"hetsched"])
    assert meta == {"id": "x", "kind": "experiment", "status": 0, "units": {"W": "time units"},
                    "provenance": {"seed": 1}}
    assert not [p for p in d.iterdir() if p.name.endswith(".tmp")]  # no temporary file left


def test_writer_refuses_links_and_special_files(tmp_path):
    d = resultsio.prepare_outdir(tmp_path / "x")
    victim = tmp_path / "victim"
    victim.write_text("keep")
    (d / "results.json").symlink_to(victim)
    with pytest.raises(HetschedError, match="symbolic link"):
        resultsio.write_results(d, _doc())
    assert victim.read_text() == "keep"
    (d / "results.json").unlink()
    os.mkfifo(d / "table.txt")
    with pytest.raises(HetschedError, match="not a regular file"):
        resultsio.write_results(d, _doc(), table="t")


@pytest.mark.parametrize("content, problem", [
    ("not json", "not a hetsched results file"),
    ("[1, 2]", "expected a JSON object"),
    ('{"id": "x"}', "no list 'rows'"),
    ('{"rows": [1]}', "rows\\[0\\] is not an object"),
    ('{"rows": [], "status": "3"}', None),  # an old text status is read (as interrupted)
    ('{"rows": [], "status": 1.5}', "'status' is not an integer"),
    ('{"rows": [], "units": []}', "'units' is not an object"),
    ('{"rows": [], "units": {"W": 3}}', "'units' values must be text"),
    ('{"rows": [], "notes": "n"}', "'notes' is not a list of text"),
    ('{"rows": [], "figures": [1]}', "'figures' is not a list of text"),
    ('{"rows": [], "provenance": 3}', "'provenance' is not an object"),
    ('{"rows": [], "message": 3}', "'message' is not text"),
    ('{"rows": [], "id": {"a": 1}}', "'id' is not text"),
    ("[" * 100_000, "not a hetsched results file"),
    (b"\xff\xfe", "not a hetsched results file"),
])
def test_malformed_results_are_one_problem_line_and_skipped(tmp_path, content, problem):
    good = resultsio.prepare_outdir(tmp_path / "good")
    resultsio.write_results(good, _doc(id="good"))
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "results.json").write_bytes(content if isinstance(content, bytes) else content.encode())
    recs, problems = resultsio.read_results_dir(tmp_path)
    if problem is None:
        assert problems == [] and {r.id for r in recs} == {"good", "bad"}
        assert next(r for r in recs if r.id == "bad").status == 2
        return
    assert [r.id for r in recs] == ["good"]
    assert len(problems) == 1 and "bad/results.json" in problems[0] and "\n" not in problems[0]
    assert any(__import__("re").search(problem, p) for p in problems), problems


def test_old_results_files_are_read_into_the_current_form(tmp_path):
    d = tmp_path / "old"
    d.mkdir()
    (d / "results.json").write_text(json.dumps({"id": "old", "status": "complete", "rows": [{"a": 1}]}))
    rec = resultsio.read_results(d)
    assert rec.status == 0 and rec.doc["success"] is True and rec.kind == "experiment"


def test_reader_takes_only_regular_files_inside_the_folder(tmp_path):
    d = resultsio.prepare_outdir(tmp_path / "x")
    secret = tmp_path / "secret.txt"
    secret.write_text("secret")
    png = tmp_path / "outside.png"
    png.write_bytes(b"\x89PNG")
    resultsio.write_results(d, _doc(figures=[str(png), "inside.png", "../outside.png", "notes.txt"]))
    (d / "inside.png").write_bytes(b"\x89PNG")
    (d / "notes.txt").write_text("not a figure")
    (d / "table.txt").symlink_to(secret)
    rec = resultsio.read_results(d)
    assert rec.table_text == "" and [p.name for p in rec.figures] == ["inside.png"]
    (d / "results.json").unlink()
    (d / "results.json").symlink_to(secret)
    with pytest.raises(HetschedError, match="no results file"):
        resultsio.read_results(d)
    with pytest.raises(HetschedError, match="does not exist"):
        resultsio.read_results_dir(tmp_path / "none")


def test_prepare_outdir_refuses_existing_results_and_links(tmp_path):
    d = resultsio.prepare_outdir(tmp_path / "x")
    resultsio.write_results(d, _doc())
    with pytest.raises(HetschedError, match="already holds results .*--force"):
        resultsio.prepare_outdir(d)
    resultsio.prepare_outdir(d, force=True)
    assert [p.name for p in d.iterdir()] == [resultsio.LOCK]  # the lock of this process, until it exits
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    with pytest.raises(HetschedError, match="symbolic link"):
        resultsio.prepare_outdir(tmp_path / "link" / "exp")


# --------------------------------------------------------------------------- validation layer
def test_check_file_messages_per_caller(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text("x = 1\n")
    assert check_file(f, "--scenario") == str(f)
    os.mkfifo(tmp_path / "fifo.toml")
    cases = [(tmp_path, "s: is a folder, not a scenario file"),
             (tmp_path / "fifo.toml", "s: not a regular file \\(a pipe or a device\\?\\), refused"),
             (tmp_path / "none.toml", "s: no such scenario file")]
    for path, msg in cases:
        with pytest.raises(ScenarioError, match=f"^{msg}$"):
            check_file(path, "s", kind="scenario file", show_path=False, error=ScenarioError)
    with pytest.raises(HetschedError, match=f"^--x: {tmp_path}: is a folder, not a file$"):
        check_file(tmp_path, "--x")
    with pytest.raises(HetschedError, match="file too large \\(6 bytes, over the limit of 5\\)"):
        check_file(f, "--x", max_bytes=5)
    with pytest.raises(InputError, match=f"^task file '{f}': file too large \\(6 bytes, over the limit of 5\\)$"):
        check_input(f, what="task file", max_bytes=5)  # safeio's check is this one, labelled


def test_inside(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "link").symlink_to(tmp_path)
    assert inside(tmp_path / "a" / "f", tmp_path / "a")
    assert not inside(tmp_path / "a" / "link" / "f", tmp_path / "a")
    assert not inside(tmp_path / "a" / ".." / "f", tmp_path / "a")


def test_library_does_not_need_typer():
    """Importing the library's layers (validation, experiments, results I/O) loads no typer."""
    import subprocess
    import sys

    code = ("import sys; import hetsched, hetsched.validation, hetsched.experiments, hetsched.resultsio, "
            "hetsched.runner; hetsched.experiments.registry(); print('typer' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "False", out.stderr
