"""Generated hostile files, folders and strings against the safe writer and reader (issue 23).

In-process and fast (the CI profile runs a few hundred cases in seconds; ``make fuzz`` scales them).
Truths checked on the file system itself after every case:

* a write either succeeds (the target is then a regular file holding exactly the new bytes) or raises
  the project's error (``HetschedError``) -- never another exception;
* nothing outside the target folder changes: a file a link points to keeps its bytes, no file appears
  outside; a device node or FIFO keeps its type; no temporary file is left behind;
* an existing file is replaced only with ``force``;
* a results folder read for the report never brings in a file from outside it, an SVG is never
  markup, and the report holds no script but its own;
* ``inert`` output holds no control character and prints rich markup literally;
* concurrent writers of one file leave one whole payload; a full disk at any point leaves the old
  file or none, never a truncated one.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
import tempfile
import threading
from pathlib import Path

import pytest
from fuzz_strategies import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

from hetsched import resultsio, safeio
from hetsched.errors import HetschedError
from hetsched.validation import inert

pytestmark = pytest.mark.fuzz

KINDS = ("missing", "regular", "link-out", "dangling", "link-dir", "link-loop", "fifo", "device", "folder",
         "missing-parent", "odd-name")


def _snapshot(root: Path) -> dict[str, tuple]:
    out = {}
    for p in sorted(root.rglob("*")):
        st_ = os.lstat(p)
        data = p.read_bytes() if stat.S_ISREG(st_.st_mode) else None
        out[str(p.relative_to(root))] = (stat.S_IFMT(st_.st_mode), data)
    return out


def _plant(work: Path, outside: Path, kind: str, name: str) -> Path:
    """A target of ``kind`` named ``name`` in ``work``; ``outside`` holds what a link may point to."""
    t = work / name
    if kind == "regular":
        t.write_bytes(b"the user's own bytes")
    elif kind == "link-out":
        t.symlink_to(outside / "secret")
    elif kind == "dangling":
        t.symlink_to(outside / "not-yet")
    elif kind == "link-dir":
        t.symlink_to(outside, target_is_directory=True)
    elif kind == "link-loop":
        t.symlink_to(t)
    elif kind == "fifo":
        os.mkfifo(t)
    elif kind == "device":
        if os.geteuid() == 0:
            os.mknod(t, 0o600 | stat.S_IFCHR, os.makedev(1, 7))  # a /dev/full of our own
        else:
            os.mkfifo(t)
    elif kind == "folder":
        t.mkdir()
        (t / "inside").write_text("x")
    elif kind == "missing-parent":
        t = work / "no" / "such" / name
    elif kind == "odd-name":
        t = work / ("\x1b]0;x\x07" + name)
    return t


@pytest.fixture
def arena():
    root = Path(tempfile.mkdtemp(prefix="hs-fuzz-files-"))
    yield root
    shutil.rmtree(root, ignore_errors=True)


def _fresh(root: Path) -> tuple[Path, Path]:
    for p in root.iterdir():
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        else:
            p.unlink()
    outside, work = root / "outside", root / "work"
    outside.mkdir()
    work.mkdir()
    (outside / "secret").write_bytes(b"do not touch")
    return work, outside


@fuzz_settings(80)
@given(kind=st.sampled_from(KINDS), force=st.booleans(), data=st.binary(max_size=2000),
       name=st.sampled_from(["out.txt", "r.parquet", "fig.png", "report.html", "m.npz", ".hidden", "a b.csv"]),
       how=st.sampled_from(["write_bytes", "atomic_output", "export"]))
def test_safe_writer_against_hostile_targets(arena, kind, force, data, name, how):
    work, outside = _fresh(arena)
    target = _plant(work, outside, kind, name)
    before_out = _snapshot(outside)
    before_mode = stat.S_IFMT(os.lstat(target).st_mode) if os.path.lexists(target) else None
    try:
        if how == "write_bytes":
            safeio.write_bytes(target, data, force=force)
        elif how == "atomic_output":
            with safeio.atomic_output(target, force=force) as tmp:
                tmp.write_bytes(data)
        else:
            from hetsched.srn.export import _put

            _put(target, data, force)
        ok = True
    except HetschedError as exc:
        ok = False
        assert "\n" not in str(exc).strip()
    assert _snapshot(outside) == before_out  # nothing outside changed, nothing created there
    if ok:
        assert kind in ("missing", "regular", "odd-name") and (kind != "regular" or force)
        assert not target.is_symlink() and target.read_bytes() == data
    else:
        assert kind not in ("missing", "odd-name") and not (kind == "regular" and force)
        if before_mode is not None:
            assert stat.S_IFMT(os.lstat(target).st_mode) == before_mode  # a node stays what it was
        if kind == "regular":
            assert target.read_bytes() == b"the user's own bytes"
    if target.parent.is_dir() and not target.parent.is_symlink():
        assert not [p for p in target.parent.iterdir() if ".tmp" in p.name]


@fuzz_settings(60)
@given(where=st.sampled_from(["writer", "fsync", "replace"]), size=st.integers(0, 50_000), existed=st.booleans())
def test_full_disk_at_any_point_leaves_old_or_nothing(arena, where, size, existed):
    work, _ = _fresh(arena)
    target = work / "results.parquet"
    if existed:
        target.write_bytes(b"old whole file")

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    real = {"fsync": safeio.os.fsync, "replace": safeio.os.replace}
    if where != "writer":
        setattr(safeio.os, where, full)
    try:
        with pytest.raises(HetschedError, match="no space left"):
            with safeio.atomic_output(target, force=True) as tmp:
                with open(tmp, "wb") as fh:
                    fh.write(b"n" * size)
                if where == "writer":
                    full()
    finally:
        safeio.os.fsync, safeio.os.replace = real["fsync"], real["replace"]
    if existed:
        assert target.read_bytes() == b"old whole file"
    else:
        assert not target.exists()
    assert not [p for p in work.iterdir() if ".tmp" in p.name]


@fuzz_settings(20)
@given(payloads=st.lists(st.binary(min_size=1, max_size=20_000), min_size=2, max_size=4))
def test_concurrent_writers_leave_one_whole_payload(arena, payloads):
    work, _ = _fresh(arena)
    target = work / "table.txt"
    errors = []

    def writer(b):
        try:
            for _ in range(3):
                safeio.write_bytes(target, b, force=True)
        except HetschedError as exc:  # a link planted meanwhile etc.: refused, never half-written
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(b,)) for b in payloads]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert target.read_bytes() in payloads
    assert not [p for p in work.iterdir() if ".tmp" in p.name]


def _hostile_doc(draw_rows, status, figures, message):
    return {"id": "exp", "kind": "experiment", "status": status, "success": status == 0, "message": message,
            "rows": draw_rows, "units": {}, "provenance": {}, "figures": figures}


_TEXT = st.text(alphabet=st.characters(codec="utf-8", categories=("L", "N", "P", "S", "Cc", "Zs")), max_size=40)
_SCRIPTS = st.sampled_from(["<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "javascript:alert(1)",
                            "\x1b]0;t\x07", "[/bold]", "</table><script>", "{{7*7}}"])


@fuzz_settings(10)
@given(rows=st.lists(st.dictionaries(st.sampled_from(["x", "W", "Qbar", "<b>", "name"]),
                                     st.one_of(st.integers(-10**20, 10**20), st.floats(), _TEXT, _SCRIPTS),
                                     max_size=4), max_size=5),
       status=st.sampled_from([0, 1, 2, 3, "complete", "interrupted"]), message=st.one_of(_TEXT, _SCRIPTS),
       table_kind=st.sampled_from(["none", "text", "link-out", "script"]),
       fig_kind=st.sampled_from(["none", "svg-script", "svg-link", "png-fake", "traversal"]))
def test_hostile_results_folders_make_an_inert_report(arena, rows, status, message, table_kind, fig_kind):
    from hetsched.report.html import build_report

    work, outside = _fresh(arena)
    (outside / "secret").write_text("SECRET-CONTENT-1234")
    d = work / "exp"
    d.mkdir()
    figures = []
    if fig_kind == "svg-script":
        (d / "f.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)">'
                                 '<script>alert(2)</script></svg>')
        figures = ["f.svg"]
    elif fig_kind == "svg-link":
        (d / "f.svg").symlink_to(outside / "secret")
        figures = ["f.svg"]
    elif fig_kind == "png-fake":
        (d / "f.png").write_text("<script>alert(3)</script>")
        figures = ["f.png"]
    elif fig_kind == "traversal":
        figures = ["../../outside/secret", "/etc/passwd"]
    (d / "results.json").write_text(json.dumps(_hostile_doc(rows, status, figures, message)))
    if table_kind == "text":
        (d / "table.txt").write_text("a table " + message)
    elif table_kind == "link-out":
        (d / "table.txt").symlink_to(outside / "secret")
    elif table_kind == "script":
        (d / "table.txt").write_text("<script>alert(4)</script>")
    before = _snapshot(outside)
    out = build_report(work, work / "report.html")
    html = out.read_text()
    assert "SECRET-CONTENT-1234" not in html and "root:" not in html
    tags = _tags(html)  # parsed: escaped text such as "&lt;img onerror=..." is harmless and not a tag
    assert [t for t, _ in tags].count("script") <= 1  # the report's own (hashed in its CSP), nothing else
    for tag, attrs in tags:
        for k, v in attrs:
            assert not k.lower().startswith("on"), (tag, k, v)  # no event handler attribute
            assert not (v or "").strip().lower().startswith("javascript:"), (tag, k, v)
        if tag == "img":
            src = dict(attrs).get("src") or ""
            assert src.startswith("data:image/"), src  # figures only as data: images, never markup or links
    assert "<svg" not in html.lower()
    assert _snapshot(outside) == before


def _tags(html: str) -> list[tuple[str, list]]:
    from html.parser import HTMLParser

    out: list = []

    class P(HTMLParser):
        def handle_starttag(self, tag, attrs):
            out.append((tag, attrs))

    P().feed(html)
    return out


@fuzz_settings(200)
@given(s=st.text(max_size=80))
def test_inert_strings(s):
    from rich.console import Console

    out = inert(s, markup=True, newlines=False)
    assert not any(ord(c) < 32 or 0x7f <= ord(c) <= 0x9f for c in out)
    plain = inert(s, newlines=False)
    con = Console(width=10_000, color_system=None, file=open(os.devnull, "w"))
    with con.capture() as cap:
        con.print(out, end="", soft_wrap=True, highlight=False)
    assert cap.get() == plain  # rich prints the markup-escaped text literally


def test_concurrent_runs_into_one_folder(arena):
    """Two processes racing for one results folder: exactly one gets it."""
    import subprocess
    import sys

    work, _ = _fresh(arena)
    code = ("import sys\nfrom hetsched import resultsio\n"
            "try:\n    resultsio.prepare_outdir(sys.argv[1]); print('won', flush=True); sys.stdin.read()\n"
            "except Exception as e:\n    print('lost', type(e).__name__, flush=True)\n")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(work / "exp")], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True) for _ in range(3)]
    outs = [p.stdout.readline().split() for p in procs]  # the winner holds the lock until its stdin closes
    for p in procs:
        p.communicate(timeout=60)
    assert sorted(o[0] for o in outs) == ["lost", "lost", "won"], outs
    assert all(o[1] == "HetschedError" for o in outs if o[0] == "lost")
