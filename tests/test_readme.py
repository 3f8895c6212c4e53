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


def _compare_section() -> str:
    m = re.search(r"^## Compare policies on your own system\s*$(.*?)(?=^## |\Z)", (ROOT / "README.md").read_text(),
                  re.M | re.S)
    assert m is not None, "README has no 'Compare policies on your own system' section"
    return m.group(1)


def test_readme_compare_section_runs(monkeypatch, capsys):
    """The README's "Compare policies on your own system" section: its Python runs as printed (its console
    example runs above, with the other `$ hetsched ...` examples). In this process, so that the policy of
    examples/my_policy.py, loaded once per process, is compiled once for this test and tests/compare/test_compare.py."""
    blocks = re.findall(r"```python\n(.*?)```", _compare_section(), re.S)
    assert blocks and "hs.compare(" in blocks[0] and "class_names=" in blocks[0] and "my_rule" in blocks[0]
    monkeypatch.chdir(ROOT)
    exec(compile("\n".join(blocks), "README.md", "exec"), {"__name__": "readme"})  # noqa: S102 - our own README
    out = capsys.readouterr().out
    assert "1 (web)" in out and "rank" in out and "paired differences" in out and "my_rule" in out


def test_readme_shows_the_policy_file_as_it_is():
    """The policy the README shows is the code of examples/my_policy.py (docstring aside)."""
    import ast

    (shown,) = re.findall(r"```py\n(.*?)```", _compare_section(), re.S)
    tree = ast.parse((ROOT / "examples" / "my_policy.py").read_text())
    tree.body = [n for n in tree.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    assert ast.dump(ast.parse(shown)) == ast.dump(tree)
