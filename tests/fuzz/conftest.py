"""Fuzz suite: bad input of every kind gets exit 2 and one line, never a traceback or a hang.

``make test`` runs the CI profile (at least 1,000 generated inputs, deterministic);
``make fuzz`` the long campaign (``HETSCHED_FUZZ_SCALE``, >= 5,000 inputs, random),
and prints the counts of each outcome at the end.
"""

from __future__ import annotations

import fuzz_runner  # tests/fuzz/fuzz_runner.py (pytest puts this folder on sys.path before loading this file)


def pytest_sessionfinish(session, exitstatus):
    fuzz_runner.stop_server()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    stats = fuzz_runner.STATS
    if not stats:
        return
    tr = terminalreporter
    tr.section("hetsched fuzz campaign")
    total = sum(stats.values())
    by_outcome: dict[str, int] = {}
    for (_cmd, outcome), n in stats.items():
        by_outcome[outcome] = by_outcome.get(outcome, 0) + n
    tr.write_line(f"generated inputs run: {total:,} (this process; with xdist each worker counts its own)")
    for cmd in sorted({c for c, _ in stats}):
        parts = ", ".join(f"{o} {n:,}" for (c, o), n in sorted(stats.items()) if c == cmd)
        tr.write_line(f"  {cmd:36s} {parts}")
    uncaught = by_outcome.get("traceback", 0) + by_outcome.get("internal-error", 0)
    tr.write_line(f"uncaught exceptions: {uncaught}, hangs: {by_outcome.get('hang', 0)}, "
                  f"messy refusals: {by_outcome.get('messy-refusal', 0)}  "
                  "(including the xfail'd commands of other helpers)")
