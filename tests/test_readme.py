"""Every `$ hetsched ...` example of the README runs and prints what the README shows.

Lines that report time (``... events in 2.56 s``) are compared up to the first
number of seconds; everything else, numbers included, must match exactly (the
results depend only on the seed).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_TIMING = re.compile(r"events in [0-9.]+ s")


def _examples() -> list[tuple[str, list[str]]]:
    text = (ROOT / "README.md").read_text()
    out = []
    for block in re.findall(r"```console\n(.*?)```", text, flags=re.S):
        lines = block.rstrip("\n").split("\n")
        cmd, shown = None, []
        for line in lines:
            if line.startswith("$ hetsched "):
                if cmd:
                    out.append((cmd, shown))
                cmd, shown = line[2:], []
            elif cmd is not None:
                shown.append(line)
        if cmd:
            out.append((cmd, shown))
    return out


EXAMPLES = _examples()


def test_the_readme_has_examples():
    assert len(EXAMPLES) >= 4


@pytest.mark.parametrize("cmd,shown", EXAMPLES, ids=[c[:60] for c, _ in EXAMPLES])
def test_readme_example(cmd, shown):
    if "../shared/" in cmd and not (ROOT / ".." / "shared").is_dir():
        pytest.skip("../shared is not next to this repository")
    argv = shlex.split(cmd)
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    r = subprocess.run([sys.executable, "-m", "hetsched.cli", *argv[1:]], cwd=ROOT, capture_output=True,
                       text=True, timeout=600, env=env)
    got = (r.stdout + r.stderr).rstrip("\n").split("\n")
    assert len(got) == len(shown), "\n".join(got)
    for g, s in zip(got, shown):
        assert _TIMING.sub("events in T s", g).rstrip() == _TIMING.sub("events in T s", s).rstrip()


def test_readme_compare_section_runs():
    """The README's "Compare policies on your own system" section: its Python runs as printed (its console
    example runs above, with the other `$ hetsched ...` examples)."""
    m = re.search(r"^## Compare policies on your own system\s*$(.*?)(?=^## |\Z)", (ROOT / "README.md").read_text(),
                  re.M | re.S)
    assert m is not None, "README has no 'Compare policies on your own system' section"
    blocks = re.findall(r"```python\n(.*?)```", m.group(1), re.S)
    assert blocks and "hs.compare(" in blocks[0] and "class_names=" in blocks[0] and "@hs.mapping_policy" in blocks[0]
    r = subprocess.run([sys.executable, "-c", "\n".join(blocks)], capture_output=True, text=True, timeout=900,
                       cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "1 (web)" in r.stdout and "rank" in r.stdout and "paired differences" in r.stdout

