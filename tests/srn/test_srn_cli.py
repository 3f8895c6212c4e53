"""`hetsched srn gang` / `srn export gang`: bad options give one line naming the option, exit 2."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from hetsched.cli import app
from helpers import DATA_DIR

SMALL = ["--servers", "4", "--gang-size", "2", "--capacity", "6", "--local-capacity", "1"]

BAD = [
    (["--arrival-rate", "nan"], "--arrival-rate"), (["--arrival-rate", "0"], "--arrival-rate"),
    (["--arrival-rate", "-2"], "--arrival-rate"), (["--local-rate", "inf"], "--local-rate"),
    (["--local-rate", "-1"], "--local-rate"), (["--task-rate", "0"], "--task-rate"), (["--mu", "nan"], "--mu"),
    (["--servers", "0"], "--servers"), (["--servers", "100000"], "--servers"), (["--gang-size", "0"], "--gang-size"),
    (["--gang-size", "17"], "--gang-size"), (["--capacity", "0"], "--capacity"),
    (["--local-capacity", "-1"], "--local-capacity"), (["--policy", "RR"], "--policy"),
    (["--migration-guard", "x"], "--migration-guard"), (["--lc2-rule", "y"], "--lc2-rule"),
    (["--servers", "200", "--capacity", "5000"], "markings"), (["--arrival-rate", "1e300"], "--arrival-rate"),
    (["--ls-rule", "alternate"], "--ls-rule"), (["--arrival", "mu"], "--arrival"), (["--arrival-mu", "0"], "--arrival-mu"),
    (["--arrival", "mu*pcont", "--arrival-scales-with-pcont"], "--arrival-scales-with-pcont"),
    (["--task-rate", "1e-200"], "--task-rate"), (["--mu", "1e7"], "--mu"),
]


@pytest.mark.parametrize("args,name", BAD)
@pytest.mark.parametrize("cmd", [["srn", "gang"], ["srn", "export", "gang", "--format", "drn", "-o", "x.drn"]])
def test_bad_options(tmp_path, monkeypatch, cmd, args, name):
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(app, [*cmd, *args])
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and name in lines[0], r.stderr
    assert not (tmp_path / "x.drn").exists()


def test_export_format_and_paths(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(app, ["srn", "export", "gang", *SMALL, "--format", "xml", "-o", "a"])
    assert r.exit_code == 2 and "--format" in r.stderr
    r = CliRunner().invoke(app, ["srn", "export", "gang", *SMALL, "--format", "pnml", "-o", "nodir/a.pnml"])
    assert r.exit_code == 2 and "does not exist" in r.stderr
    r = CliRunner().invoke(app, ["srn", "export", "gang", *SMALL, "--format", "pnml", "-o", "a.pnml",
                                 "--no-unfold"])
    assert r.exit_code == 2 and "not a GSPN" in r.stderr and not (tmp_path / "a.pnml").exists()
    r = CliRunner().invoke(app, ["srn", "export", "gang", *SMALL, "--format", "prism-explicit", "-o", "g.tra",
                                 "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["files"][:2] == ["g.tra", "g.lab"] and all((tmp_path / f).exists() for f in out["files"])
    r = CliRunner().invoke(app, ["srn", "export", "gang", *SMALL, "--format", "prism-explicit", "-o", "g"])
    assert r.exit_code == 2 and "'g.tra' exists" in r.stderr


def test_gang_options_reach_the_model():
    """Each reading option changes the answer (it is not ignored)."""
    base = ["srn", "gang", "--policy", "LC2", "--arrival-rate", "3", "--servers", "8", "--gang-size", "3",
            "--capacity", "6", "--local-capacity", "1", "--json"]
    ref = json.loads(CliRunner().invoke(app, base).stdout)
    assert ref["params"]["servers"] == [8, 8] and ref["params"]["capacity"] == 6
    for extra, field in ((["--lc2-rule", "text"], "lc2_rule"), (["--load-includes-waiting"], "load_includes_waiting"),
                         (["--migration-ignores-policy"], "migration_follows_policy"),
                         (["--arrival-scales-with-pcont"], "arrival_scales_with_pcont"),
                         (["--mu", "3"], "mu"), (["--local-rate", "0.2"], "local_rate")):
        out = json.loads(CliRunner().invoke(app, [*base, *extra]).stdout)
        assert out["params"][field] != ref["params"][field]
        assert out["SRT"] != pytest.approx(ref["SRT"], rel=1e-9), extra
    out = json.loads(CliRunner().invoke(app, [*base, "--arrival", "mu*pcont", "--arrival-mu", "0.5"]).stdout)
    assert out["params"]["arrival"] == "mu*pcont" and out["params"]["arrival_mu"] == 0.5
    assert out["SRT"] != pytest.approx(ref["SRT"], rel=1e-9)
    ls = [a if a != "LC2" else "LS" for a in base]
    a = json.loads(CliRunner().invoke(app, ls).stdout)
    b = json.loads(CliRunner().invoke(app, [*ls, "--ls-rule", "race"]).stdout)
    assert b["params"]["ls_rule"] == "race" and b["states"] < a["states"] and b["SRT"] != pytest.approx(a["SRT"])


@pytest.mark.parametrize("args,name", [
    (["--method", "lu"], "--method"), (["--param", "n"], "--param"), (["--param", "n=x"], "--param n"),
    (["--max-states", "0"], "--max-states"), (["--max-tokens", "-1"], "--max-tokens"), (["--page", "nope"], "--page nope"),
])
def test_solve_bad_options(tmp_path, args, name):
    from pathlib import Path

    f = DATA_DIR / "nets" / "greatspn" / "ReaderWriter.PNPRO"
    r = CliRunner().invoke(app, ["srn", "solve", str(f), *args])
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and name in lines[0], r.stderr


def test_solve_missing_and_non_xml_files(tmp_path):
    r = CliRunner().invoke(app, ["srn", "solve", str(tmp_path / "none.pnml")])
    assert r.exit_code == 2 and "no such file" in r.stderr
    (tmp_path / "a.pnml").write_text("not xml")
    r = CliRunner().invoke(app, ["srn", "solve", str(tmp_path / "a.pnml")])
    assert r.exit_code == 2 and "not well-formed XML" in r.stderr
    r = CliRunner().invoke(app, ["srn", "solve", str(tmp_path)])
    assert r.exit_code == 2 and "is a folder, not a file" in r.stderr
