"""Issue 23, terminal output: user strings reach a terminal inert (no control character, no markup).

The commands run in a pseudo-terminal (what a user sees: click and rich behave as on a real terminal);
the only escape sequences allowed in the output are rich's own colour codes (SGR: ``ESC [ digits m``)
and the cursor show/hide of its progress bar.
"""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hetsched.validation import InertStream, inert

SCENARIO = Path(__file__).resolve().parents[1] / "src" / "hetsched" / "scenarios" / "2.A.toml"
HOSTILE_TITLE = "x\\u001b]0;PWNED\\u0007 [/bold] y \\u001b[2J [red]z\\u009b31m"
#: what rich itself may print on a terminal: colours (SGR) and the cursor hidden/shown by a bar
_RICH_OWN = re.compile(r"\x1b\[[0-9;]*m|\x1b\[\?25[lh]|\x1b\[2K|\x1b\[1A|\r")


def _hostile_scenario(folder: Path) -> Path:
    lines = SCENARIO.read_text().split("\n")
    assert lines[0].startswith("id =") and lines[1].startswith("title =")
    lines[0] = 'id = "evil[/]\\u001b[31m"'
    lines[1] = f'title = "{HOSTILE_TITLE}"'
    p = folder / "hostile.toml"
    p.write_text("\n".join(lines))
    return p


def _in_pty(args, timeout=120) -> tuple[int, str]:
    """Run ``hetsched ARGS`` with stdout and stderr on a pseudo-terminal; (exit code, everything printed)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "hetsched.cli", *args], stdin=subprocess.DEVNULL, stdout=slave,
                            stderr=slave, env={**os.environ, "COLUMNS": "200", "TERM": "xterm"})
    os.close(slave)
    out = b""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        r, _, _ = select.select([master], [], [], 0.5)
        if r:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        elif proc.poll() is not None:
            break
    os.close(master)
    proc.wait(timeout=10)
    return proc.returncode, out.decode("utf-8", "replace")


def _inert(text: str) -> None:
    rest = _RICH_OWN.sub("", text)
    bad = sorted({f"{ord(c):#04x}" for c in rest if (ord(c) < 32 and c not in "\n\t") or 0x7f <= ord(c) <= 0x9f})
    assert not bad, (bad, text[:600])


@pytest.mark.parametrize("command", [["lp"], pytest.param(["simulate", "--policy", "mct", "--reps", "2", "--horizon",
                                                                   "20"], marks=pytest.mark.slow)])
def test_hostile_scenario_strings_are_inert_on_a_terminal(tmp_path, command):
    """``lp`` with a title ``[/bold] x`` was an internal error (exit 70) and printed ``ESC]0;`` raw."""
    path = _hostile_scenario(tmp_path)
    code, out = _in_pty([command[0], str(path), *command[1:]])
    assert code == 0, out
    _inert(out)
    assert "internal error" not in out and "Traceback" not in out
    plain = _RICH_OWN.sub("", out)  # rich's colours split the text
    assert "\\x1b]0;PWNED\\x07" in plain or "evil[/]\\x1b[31m" in plain  # shown, visibly escaped
    if command[0] == "lp":
        assert "[/bold] y" in plain and "[red]z" in plain  # rich markup printed as text, never interpreted


def test_error_lines_quote_hostile_paths_inertly(tmp_path, capsys):
    """An error line quoting a hostile path, through the stream every command prints to."""
    import sys as _sys

    from typer.testing import CliRunner

    from hetsched.cli import app

    bad = tmp_path / "a\x1b]0;T\x07b.toml"
    r = CliRunner().invoke(app, ["lp", str(bad)])
    assert r.exit_code == 2 and "error:" in r.stderr
    stream = InertStream(_sys.stderr)
    stream.write(r.stderr)
    _inert(capsys.readouterr().err)


def test_inert_helper():
    assert inert("a\x1b[2Jb\x07c\x9b") == "a\\x1b[2Jb\\x07c\\x9b"
    assert inert("l1\nl2\tx") == "l1\nl2\tx" and inert("l1\nl2", newlines=False) == "l1\\nl2"
    assert inert("[/bold] x", markup=True) == "\\[/bold] x"
    assert inert("\u202eevil") == "\\u202eevil"  # a bidirectional override cannot disguise text

    class Sink:
        def __init__(self):
            self.parts = []

        def write(self, s):
            self.parts.append(s)

    sink = Sink()
    s = InertStream(sink)
    s.write("t\x1b]0;x\x07\n")
    assert sink.parts == ["t\\x1b]0;x\\x07\n"]
    with pytest.raises(TypeError):  # a text stream (click must not take it for a binary one)
        s.write(b"")
