"""Issue 23, files written: every write call site goes through the one safe writer (hetsched.safeio).

Each case of the issue is reproduced here and checked against the file system itself: the bytes of
the user's file are unchanged, the link's target is unchanged, a device node is still a device, no
temporary file is left, and a folder keeps the user's files.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from hetsched import resultsio, safeio
from hetsched.cli import app
from hetsched.errors import HetschedError
from hetsched.traces import records_frame, write_records


def _cli(*args, cwd=None):
    return CliRunner().invoke(app, [str(a) for a in args])


def _records(path: Path) -> Path:
    n = 12
    t = np.arange(n, dtype=float)
    write_records(records_frame(np.arange(n), np.zeros(n, int), t, t + 0.5, t + 1.0, np.arange(n) % 2), path)
    return path


def _refused(r, *words):
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output and r.stderr.count("\n") == 1, r.stderr
    for w in words:
        assert w in r.stderr, r.stderr


def _no_temp(folder: Path):
    assert not [p.name for p in folder.iterdir() if ".tmp" in p.name], list(folder.iterdir())


# --------------------------------------------------------------------------- never replace a user's file
def test_simulate_records_never_replaces_a_user_file(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes")
    r = _cli("simulate", "2.A", "--policy", "mct", "--reps", "2", "--horizon", "50", "--records", notes)
    _refused(r, "notes.txt")  # (a suffix records are not written as; with --force too)
    assert notes.read_text() == "my notes"
    mine = tmp_path / "mine.csv"
    mine.write_text("a,b\n1,2\n")
    r = _cli("simulate", "2.A", "--policy", "mct", "--reps", "2", "--horizon", "50", "--records", mine)
    _refused(r, "mine.csv", "exists", "--force")
    assert mine.read_text() == "a,b\n1,2\n"
    r = _cli("simulate", "2.A", "--policy", "mct", "--reps", "2", "--horizon", "50", "--records", mine, "--force")
    assert r.exit_code == 0, r.output
    assert mine.read_text().splitlines()[1].startswith("task") or "task" in mine.read_text()[:300]
    _no_temp(tmp_path)


def test_muscle_records_never_replaces_a_user_file(tmp_path):
    doc = tmp_path / "thesis.docx"
    doc.write_bytes(b"PK\x03\x04 my thesis")
    for force in ([], ["--force"]):
        r = _cli("muscle", "run", "--jobs", "20", "--no-ga", "--records", doc, *force)
        _refused(r, "thesis.docx")
    assert doc.read_bytes() == b"PK\x03\x04 my thesis"


@pytest.mark.parametrize("kind", ["gantt", "utilisation"])
def test_plots_never_replace_an_image(tmp_path, kind):
    rec = _records(tmp_path / "r.parquet")
    default = tmp_path / f"r-{kind}.png"
    default.write_bytes(b"an image of mine")
    _refused(_cli("plot", kind, rec), "exists", "--force")
    assert default.read_bytes() == b"an image of mine"
    fig = tmp_path / "fig.png"
    fig.write_bytes(b"mine too")
    _refused(_cli("plot", kind, rec, "-o", fig), "fig.png", "exists")
    assert fig.read_bytes() == b"mine too"
    assert _cli("plot", kind, rec, "-o", fig, "--force").exit_code == 0
    assert fig.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    _no_temp(tmp_path)


# --------------------------------------------------------------------------- never write through a link
def _links(tmp_path: Path, name: str) -> tuple[Path, Path, Path]:
    """(a link to an outside file, a dangling link, the outside file)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.txt"
    secret.write_text("do not touch")
    work = tmp_path / "work"
    work.mkdir()
    link = work / name
    link.symlink_to(secret)
    dangling = work / f"dangling-{name}"
    dangling.symlink_to(outside / "created-by-hetsched")
    return link, dangling, secret


def _untouched(secret: Path):
    assert secret.read_text() == "do not touch"
    assert sorted(p.name for p in secret.parent.iterdir()) == ["secret.txt"]  # nothing created outside


def test_records_link_and_dangling_link_are_refused(tmp_path):
    link, dangling, secret = _links(tmp_path, "link.parquet")
    for target in (link, dangling):
        for force in ([], ["--force"]):
            r = _cli("simulate", "2.A", "--policy", "mct", "--reps", "2", "--horizon", "50", "--records", target,
                     *force)
            _refused(r, "symbolic link")
    with pytest.raises(HetschedError, match="symbolic link"):  # the API: the same refusal
        _records(link)
    _untouched(secret)


def test_plot_output_link_is_refused(tmp_path):
    link, dangling, secret = _links(tmp_path, "fig.png")
    rec = _records(tmp_path / "r.parquet")
    for target in (link, dangling):
        _refused(_cli("plot", "gantt", rec, "-o", target, "--force"), "symbolic link")
    _untouched(secret)


def test_mdp_export_link_dangling_link_and_full_disk(tmp_path, monkeypatch):
    link, dangling, secret = _links(tmp_path, "m.npz")
    for target in (link, dangling):
        _refused(_cli("mdp", "coalloc", "--rho", "0.5", "--delta", "4", "--export", target, "--force"),
                 "symbolic link")
    _untouched(secret)
    # a full disk during the write: the error names the path; no .npz, whole or truncated, is left
    out = tmp_path / "work" / "full.npz"

    def enospc(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(safeio.os, "fsync", enospc)
    r = _cli("mdp", "coalloc", "--rho", "0.5", "--delta", "4", "--export", out)
    _refused(r, "full.npz", "no space left")
    assert not out.exists()
    _no_temp(out.parent)


def test_srn_export_link_is_refused(tmp_path):
    link, dangling, secret = _links(tmp_path, "g.pnml")
    small = ["--servers", "4", "--gang-size", "2", "--capacity", "6", "--local-capacity", "1"]
    for target in (link, dangling):
        r = _cli("srn", "export", "gang", *small, "--format", "drn", "-o", target, "--force")
        _refused(r, "symbolic link")
    _untouched(secret)
    from hetsched.srn import Net, solve
    from hetsched.srn.export import to_drn

    net = Net("mm1k")  # M/M/1/3: enough for a chain to export
    net.places(Free=3, Busy=0)
    net.timed("arrive", 1.0, inputs={"Free": 1}, outputs={"Busy": 1})
    net.timed("done", 2.0, inputs={"Busy": 1}, outputs={"Free": 1})
    ctmc = solve(net, method="direct").ctmc
    ok = tmp_path / "work" / "g.drn"
    to_drn(ctmc, ok)
    with pytest.raises(HetschedError, match="exists"):  # the API: overwrite=True to replace
        to_drn(ctmc, ok)
    to_drn(ctmc, ok, overwrite=True)
    for target in (link, dangling):
        with pytest.raises(HetschedError, match="symbolic link"):
            to_drn(ctmc, target, overwrite=True)
    _untouched(secret)


# --------------------------------------------------------------------------- the report
def _results_folder(root: Path) -> Path:
    d = resultsio.prepare_outdir(root / "exp")
    resultsio.write_results(d, {"id": "exp", "kind": "experiment", "status": 0, "success": True, "message": "ok",
                                "rows": [{"x": 1, "y": 2.5}], "units": {}, "provenance": {}})
    return d


def test_report_tmp_link_and_device_targets(tmp_path):
    from hetsched.report.html import build_report

    root = tmp_path / "results"
    _results_folder(root)
    secret = tmp_path / "secret.html"
    secret.write_text("do not touch")
    (root / "report.html.tmp").symlink_to(secret)  # planted: the writer's temporary name is not predictable
    out = build_report(root)
    assert secret.read_text() == "do not touch"
    assert out.is_file() and not out.is_symlink() and "<html" in out.read_text().lower()
    # a device node or a FIFO as -o, even with --force: refused, the node stays what it was
    fifo = tmp_path / "pipe.html"
    os.mkfifo(fifo)
    nodes = [fifo]
    if os.geteuid() == 0:
        dev = tmp_path / "full"
        os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 7))  # a /dev/full of our own
        nodes.append(dev)
    for node in nodes:
        mode = os.lstat(node).st_mode
        r = _cli("report", root, "-o", node, "--force")
        _refused(r, "not a regular file")
        assert os.lstat(node).st_mode == mode
    if os.path.exists("/dev/full"):
        r = _cli("report", root, "-o", "/dev/full", "--force")  # the issue's own reproduction
        _refused(r, "not a regular file")
        assert stat.S_ISCHR(os.lstat("/dev/full").st_mode)


def test_report_embeds_nothing_linked_and_no_svg_markup(tmp_path):
    from hetsched.report.html import build_report

    root = tmp_path / "results"
    d = _results_folder(root)
    assert not (d / "table.txt").exists()  # no table given
    secret = tmp_path / "passwd"
    secret.write_text("root:SECRET-LINE:0:0")
    (d / "table.txt").symlink_to(secret)
    svg = '<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><script>alert(2)</script></svg>'
    (d / "evil.svg").write_text(svg)
    doc = json.loads((d / "results.json").read_text())
    doc["figures"] = ["evil.svg"]
    (d / "results.json").write_text(json.dumps(doc))
    html = build_report(root).read_text()
    assert "SECRET-LINE" not in html
    assert "onload" not in html and "alert(2)" not in html  # the SVG is an <img> of base64 data, never markup
    assert "data:image/svg+xml;base64," in html
    assert "Content-Security-Policy" in html


# --------------------------------------------------------------------------- results folders
def test_force_replaces_only_what_hetsched_wrote(tmp_path):
    d = _results_folder(tmp_path)
    resultsio.record_written(d, [d / "records" / "r.parquet"])
    (d / "records").mkdir()
    (d / "records" / "r.parquet").write_bytes(b"ours")
    (d / "records" / "mine.txt").write_text("a user's file inside a folder hetsched made")
    (d / "my-notes.txt").write_text("mine")
    (d / "my-folder").mkdir()
    (d / "my-folder" / "x").write_text("mine")
    with pytest.raises(HetschedError, match="already holds results .*--force"):
        resultsio.prepare_outdir(d)
    resultsio.prepare_outdir(d, force=True)
    left = sorted(str(p.relative_to(d)) for p in d.rglob("*"))
    assert left == [".hetsched.lock", "my-folder", "my-folder/x", "my-notes.txt", "records", "records/mine.txt"]
    # a user's file with a results name in a folder hetsched never wrote: refused, even with --force
    user = tmp_path / "user"
    user.mkdir()
    (user / "results.csv").write_text("a,b\n1,2\n")
    with pytest.raises(HetschedError, match="did not write .*results.csv"):
        resultsio.prepare_outdir(user, force=True)
    assert (user / "results.csv").read_text() == "a,b\n1,2\n"


_HOLDER = """
import sys, time
from hetsched import resultsio
resultsio.prepare_outdir(sys.argv[1])
print("locked", flush=True)
time.sleep(60)
"""


def test_two_runs_into_one_folder_the_second_is_refused(tmp_path):
    d = tmp_path / "exp"
    p = subprocess.Popen([sys.executable, "-c", _HOLDER, str(d)], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "locked"
        with pytest.raises(HetschedError, match=f"another hetsched run \\(pid {p.pid}"):
            resultsio.prepare_outdir(d, force=True)
        r = _cli("simulate", "2.A", "--policy", "mct", "--reps", "2", "--horizon", "50", "--outdir", d)
        _refused(r, "another hetsched run")
    finally:
        p.kill()
        p.wait()
    # the holder was killed (SIGKILL: no clean-up): its lock is stale and is taken over
    assert (d / resultsio.LOCK).read_text().strip() == str(p.pid)
    resultsio.prepare_outdir(d)
    assert (d / resultsio.LOCK).read_text().strip() == str(os.getpid())
    resultsio.unlock_outdir(d)
    assert not (d / resultsio.LOCK).exists()


def test_interrupted_results_are_complete_and_a_rerun_is_not_blocked(tmp_path):
    import signal

    d = resultsio.prepare_outdir(tmp_path / "exp")
    doc = {"id": "exp", "kind": "experiment", "status": 2, "success": False, "message": "interrupted after 1 row",
           "rows": [{"x": 1}], "units": {}, "provenance": {}}
    # Ctrl-C while the files are written: the set is finished first, then the interrupt is raised
    with pytest.raises(KeyboardInterrupt):
        with resultsio.hold_interrupts():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
            resultsio.write_results(d, doc)
    back = resultsio.read_results(d)
    assert back.status == 2 and back.rows == [{"x": 1}]
    import pandas as pd

    assert pd.read_parquet(d / "results.parquet")["x"].tolist() == [1] and (d / "results.csv").stat().st_size > 0
    resultsio.unlock_outdir(d)
    resultsio.prepare_outdir(d)  # the same command again: not blocked (the unfinished run is replaced)
    assert not (d / "results.json").exists()
    # killed before results.json was written (only some files): also an unfinished run
    resultsio.write_results(d, {**doc, "status": 0})
    (d / "results.json").unlink()
    resultsio.unlock_outdir(d)
    resultsio.prepare_outdir(d)
    assert sorted(p.name for p in d.iterdir()) == [resultsio.LOCK]


def test_full_disk_names_the_path_and_keeps_what_was_there(tmp_path):
    """A real full disk (a 64 kB tmpfs, as root) or, elsewhere, the writer's fsync failing with ENOSPC."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    mounted = os.geteuid() == 0 and subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)],
                                                   capture_output=True).returncode == 0
    try:
        d = resultsio.prepare_outdir(mnt / "exp")
        small = {"id": "exp", "kind": "experiment", "status": 0, "success": True, "message": "ok",
                 "rows": [{"x": 1}], "units": {}, "provenance": {}}
        resultsio.write_results(d, small)
        before = {p.name: p.read_bytes() for p in d.iterdir() if p.is_file()}
        big = {**small, "rows": [{"x": k, "pad": "y" * 200} for k in range(2000)]}
        resultsio.unlock_outdir(d)
        d = resultsio.prepare_outdir(d, force=True)
        if not mounted:
            orig = os.fsync

            def enospc(fd):
                raise OSError(errno.ENOSPC, "No space left on device")
            safeio.os.fsync = enospc
        try:
            with pytest.raises(HetschedError, match=f"{d}.*no space left"):
                resultsio.write_results(d, big)
        finally:
            if not mounted:
                safeio.os.fsync = orig
        _no_temp(d)
        assert not (d / "results.json").exists()  # never a folder that looks finished
        assert set(before)  # (the earlier files were replaced by --force before the run, by design)
    finally:
        resultsio.unlock_outdir(mnt / "exp")
        if mounted:
            subprocess.run(["umount", str(mnt)], check=False)


# --------------------------------------------------------------------------- SIGTERM = Ctrl-C
_SLEEPER = """
import time
from hetsched._cliutil import _terminate_as_interrupt
_terminate_as_interrupt()
try:
    print("ready", flush=True)  # inside the try: the signal may come at once
    time.sleep(30)
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


def test_sigterm_stops_a_command_as_ctrl_c_does():
    import signal

    # as from a shell: SIGTERM at its default (a test runner may start children with it ignored, which is kept)
    p = subprocess.Popen([sys.executable, "-c", _SLEEPER], stdout=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL))
    assert p.stdout.readline().strip() == "ready"
    p.send_signal(signal.SIGTERM)
    out, _ = p.communicate(timeout=20)
    assert out.strip() == "interrupted" and p.returncode == 0


@pytest.mark.slow
def test_sigterm_to_reproduce_keeps_finished_rows_and_a_rerun_resumes(tmp_path):
    """``kill -TERM`` to the process group of a running ``reproduce`` (a batch system's time limit)."""
    import signal

    cmd = [sys.executable, "-m", "hetsched.cli", "reproduce", "thesis-table-2.1", "--outdir", str(tmp_path),
           "--workers", "2"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    out_dir = tmp_path / "thesis-table-2.1"
    seen = []
    for line in p.stderr:  # progress lines (not a terminal): wait for two finished cells
        seen.append(line)
        if "cell 2/" in line:
            break
    os.killpg(p.pid, signal.SIGTERM)
    _, err = p.communicate(timeout=30)
    err = "".join(seen) + err
    assert p.returncode == 130 and "Traceback" not in err, err
    back = resultsio.read_results(out_dir)
    assert back.status == 2 and 0 < len(back.rows) < 33
    assert not (out_dir / resultsio.LOCK).exists()  # released at exit
    resultsio.prepare_outdir(out_dir)  # the same command again is not blocked


@pytest.mark.slow
def test_compare_outdir_force_twice_keeps_user_files(tmp_path):
    """``compare --outdir`` writes figures and a report beside the results: all in the manifest, so a second
    run with --force replaces them (and only them)."""
    d = tmp_path / "cmp"
    args = ["compare", "2.A", "--policy", "mct", "--policy", "lpas", "--reps", "2", "--horizon", "20", "--outdir", d]
    assert _cli(*args).exit_code == 0
    (d / "mine.txt").write_text("mine")
    r = _cli(*args, "--force")
    assert r.exit_code == 0, r.output
    assert (d / "mine.txt").read_text() == "mine"
    assert {"compare-means.png", "report.html", "results.json"} <= set(resultsio.manifest(d))
