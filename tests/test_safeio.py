"""The safe writer and reader (:mod:`hetsched.safeio`): invariants on real files, links, FIFOs, devices."""

from __future__ import annotations

import errno
import os
import threading

import pytest

from hetsched.safeio import (InputError, OutputError, atomic_output, check_input, inside, open_input, read_input,
                             write_bytes, write_text)


def _leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if ".tmp" in p.name)


def test_new_file_written_and_existing_needs_force(tmp_path):
    f = tmp_path / "out.txt"
    write_text(f, "one")
    assert f.read_text() == "one"
    with pytest.raises(OutputError, match="exists; pass --force"):
        write_text(f, "two")
    assert f.read_text() == "one"
    write_text(f, "two", force=True)
    assert f.read_text() == "two" and _leftovers(tmp_path) == []


@pytest.mark.parametrize("dangling", [False, True])
def test_symlink_target_refused_and_its_file_untouched(tmp_path, dangling):
    victim = tmp_path / "victim.txt"
    if not dangling:
        victim.write_text("precious")
    link = tmp_path / "link.parquet"
    link.symlink_to(victim)
    for force in (False, True):
        with pytest.raises(OutputError, match="symbolic link"):
            write_bytes(link, b"x", force=force)
    assert (victim.read_text() == "precious") if not dangling else not victim.exists()
    assert link.is_symlink() and _leftovers(tmp_path) == []


def test_fifo_folder_and_device_targets_refused(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(OutputError, match="not a regular file"):
        write_bytes(fifo, b"x", force=True)
    with pytest.raises(OutputError, match="folder"):
        write_bytes(tmp_path, b"x", force=True)
    with pytest.raises(OutputError, match="not a regular file"):
        write_bytes("/dev/null", b"x", force=True)
    assert os.path.exists("/dev/null") and not os.path.isfile("/dev/null")
    with pytest.raises(OutputError, match="does not exist"):
        write_bytes(tmp_path / "no" / "such" / "f.txt", b"x")


def test_failure_leaves_target_and_no_temporary(tmp_path):
    f = tmp_path / "r.csv"
    f.write_text("finished rows")

    class Boom(Exception):
        pass

    with pytest.raises(Boom):
        with atomic_output(f, force=True) as tmp:
            tmp.write_text("half")
            raise Boom()
    assert f.read_text() == "finished rows" and _leftovers(tmp_path) == []


def test_full_disk_names_the_path_and_cleans_up(tmp_path, monkeypatch):
    f = tmp_path / "fig.png"

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OutputError, match=r"fig\.png.*no space left"):
        with atomic_output(f) as tmp:
            with open(tmp, "wb") as fh:
                fh.write(b"partial")
            monkeypatch.setattr(os, "replace", full)
    monkeypatch.undo()
    assert not f.exists() and _leftovers(tmp_path) == []


def test_temporary_keeps_the_suffix_and_is_unpredictable(tmp_path):
    seen = []
    for _ in range(2):
        with atomic_output(tmp_path / "a.npz", force=True) as tmp:
            seen.append(tmp.name)
            assert tmp.suffix == ".npz" and tmp.parent == tmp_path and tmp.exists()
            tmp.write_bytes(b"z")
    assert seen[0] != seen[1]


def test_link_planted_while_writing_is_not_followed(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious")
    f = tmp_path / "out.bin"
    with pytest.raises(OutputError, match="appeared while writing"):
        with atomic_output(f) as tmp:
            tmp.write_bytes(b"data")
            f.symlink_to(victim)
    assert victim.read_text() == "precious" and f.is_symlink()


def test_reader_refuses_fifo_without_blocking(tmp_path):
    fifo = tmp_path / "tasks.toml"
    os.mkfifo(fifo)
    result = {}

    def go():
        try:
            read_input(fifo, what="task file")
        except InputError as exc:
            result["msg"] = str(exc)

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(5)
    assert not t.is_alive(), "reading a FIFO must not block"
    assert "task file" in result["msg"] and "not a regular file" in result["msg"]


def test_reader_limits_and_kinds(tmp_path):
    big = tmp_path / "big.swf"
    big.write_bytes(b"x" * 1001)
    with pytest.raises(InputError, match="1,001 bytes, over the limit of 1,000"):
        read_input(big, max_bytes=1000)
    assert read_input(big, max_bytes=2000, encoding=None) == b"x" * 1001
    with pytest.raises(InputError, match="no such file"):
        check_input(tmp_path / "missing")
    with pytest.raises(InputError, match="folder"):
        check_input(tmp_path)
    with pytest.raises(InputError, match="not a regular file"):
        open_input("/dev/zero")
    bad = tmp_path / "latin.toml"
    bad.write_bytes(b"caf\xe9")
    with pytest.raises(InputError, match="not utf-8 text"):
        read_input(bad)


def test_inside_resolves_links(tmp_path):
    root = tmp_path / "results"
    root.mkdir()
    (root / "t.txt").write_text("ok")
    (root / "out.txt").symlink_to("/etc/hostname")
    assert inside(root / "t.txt", root)
    assert not inside(root / "out.txt", root)
    assert not inside(tmp_path / "elsewhere", root)
