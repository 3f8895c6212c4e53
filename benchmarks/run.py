"""Run every benchmark in this folder and print one table (``make bench``).

Each ``bench_*.py`` defines ``main(quick: bool = False) -> list[dict]`` with rows
``benchmark, size, metric, hetsched, reference, ratio, note`` and optionally
``command`` (the command that reproduces the row), ``target`` (issue 17's target,
as text) and ``target_met`` (bool). Ratios compare hetsched with a reference run
in the same process (medians of repeats; the direction is stated in the row's
note). A row without ``command`` gets ``python benchmarks/run.py NAME`` (with
``--quick`` when the table was made with it).

Usage::

    python benchmarks/run.py [--quick] [--markdown] [NAME ...]

``--quick`` runs the short versions (a few minutes on 2 cores); ``--markdown``
prints the table as Markdown (``docs/performance.md``); names select benchmarks
(``python benchmarks/run.py lp mdp``). The header states the date, the host's
cores and its load average, since the machine may be shared. Notes follow the
table, numbered by row.
"""

from __future__ import annotations

import datetime
import importlib.util
import os
import platform
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
COLS = ["#", "benchmark", "size", "metric", "hetsched", "reference", "ratio", "target", "met", "command"]


def _fmt(x) -> str:
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        return f"{x:.4g}"
    return "" if x is None else str(x)


def _header(quick: bool) -> str:
    try:
        load = "/".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:  # pragma: no cover - not on Linux/macOS
        load = "n/a"
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return (f"hetsched benchmarks ({'--quick' if quick else 'full'}), {now}, {platform.node() or 'host'}: "
            f"{os.cpu_count()} cores, load average {load} (1/5/15 min) at the start")


def _table(rows: list[dict], markdown: bool) -> list[str]:
    table = [[str(k + 1)] + [_fmt(r.get(c)) for c in COLS[1:]] for k, r in enumerate(rows)]
    if markdown:
        esc = [[v.replace("|", "\\|") for v in t] for t in table]
        out = ["| " + " | ".join(COLS) + " |", "|" + "|".join(" --- " for _ in COLS) + "|"]
        return out + ["| " + " | ".join(t) + " |" for t in esc]
    widths = [max(len(c), *(len(t[k]) for t in table)) if table else len(c) for k, c in enumerate(COLS)]
    out = ["  ".join(c.ljust(w) for c, w in zip(COLS, widths)), "  ".join("-" * w for w in widths)]
    return out + ["  ".join(v.ljust(w) for v, w in zip(t, widths)) for t in table]


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    markdown = "--markdown" in argv
    names = [a for a in argv if not a.startswith("-")]
    files = sorted(HERE.glob("bench_*.py"))
    if names:
        files = [f for f in files if f.stem.removeprefix("bench_") in names]
    header = _header(quick)
    rows, failed = [], []
    for f in files:
        spec = importlib.util.spec_from_file_location(f.stem, f)
        mod = importlib.util.module_from_spec(spec)
        t0 = time.perf_counter()
        name = f.stem.removeprefix("bench_")
        try:
            spec.loader.exec_module(mod)
            got = mod.main(quick=quick)
        except Exception:  # report and go on with the other benchmarks
            traceback.print_exc()
            failed.append(f.stem)
            got = []
        for r in got:
            r.setdefault("command", f"python benchmarks/run.py {name}" + (" --quick" if quick else ""))
            if "target_met" in r:
                r["met"] = r["target_met"]
        rows += got
        print(f"[{f.stem}: {time.perf_counter() - t0:.1f} s]", file=sys.stderr)
    print(header)
    print()
    for line in _table(rows, markdown):
        print(line)
    print()
    print("Notes:" if not markdown else "Notes (by row):")
    print()
    for k, r in enumerate(rows):
        print(f"{k + 1}. {r.get('note', '')}")
    if failed:
        print(f"FAILED: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
