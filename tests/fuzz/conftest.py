"""Fuzz suite: bad input of every kind gets exit 2 and one line, never a traceback or a hang.

``make test`` runs the CI profile (at least 1,000 generated inputs, deterministic);
``make fuzz`` the long campaign (``HETSCHED_FUZZ_SCALE``, >= 5,000 inputs, random),
and prints the counts of each outcome at the end.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fuzz_runner  # noqa: E402


def pytest_sessionfinish(session, exitstatus):
    fuzz_runner.stop_server()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    stats = fuzz_runner.STATS
    if not stats:
        return
    total = sum(stats.values())
    bad = {k: v for k, v in stats.items() if k in ("hang", "traceback", "internal-error", "messy-refusal")
           or k.startswith("exit-") or k.startswith("load:uncaught")}
    tr = terminalreporter
    tr.section("hetsched fuzz campaign")
    tr.write_line(f"generated inputs run: {total:,} (this process; with xdist each worker counts its own)")
    for k in sorted(stats):
        tr.write_line(f"  {k:28s} {stats[k]:7,}")
    tr.write_line(f"uncaught exceptions: {stats.get('traceback', 0) + stats.get('internal-error', 0) + stats.get('load:uncaught', 0)}"
                  f", hangs: {stats.get('hang', 0)}")
    if bad:
        tr.write_line("(counts include the xfail'd commands owned by other helpers)")
