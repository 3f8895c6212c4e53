"""Run every benchmark in this folder and print one table (``make bench``).

Each ``bench_*.py`` defines ``main(quick: bool = False) -> list[dict]`` with rows
``benchmark, metric, hetsched, reference, ratio, note`` (and optionally ``size``,
the problem size, and ``command``, the command that reproduces the row). Ratios compare hetsched
with a reference run in the same process (medians of repeats). Pass ``--quick``
for a short run, or names to select (``python benchmarks/run.py lp sim``).
"""

from __future__ import annotations

import importlib.util
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _fmt(x) -> str:
    if isinstance(x, float):
        return f"{x:.4g}"
    return "" if x is None else str(x)


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    names = [a for a in argv if not a.startswith("-")]
    files = sorted(HERE.glob("bench_*.py"))
    if names:
        files = [f for f in files if f.stem.removeprefix("bench_") in names]
    rows, failed = [], []
    for f in files:
        spec = importlib.util.spec_from_file_location(f.stem, f)
        mod = importlib.util.module_from_spec(spec)
        t0 = time.perf_counter()
        try:
            spec.loader.exec_module(mod)
            rows += mod.main(quick=quick)
        except Exception:  # report and go on with the other benchmarks
            traceback.print_exc()
            failed.append(f.stem)
        print(f"[{f.stem}: {time.perf_counter() - t0:.1f} s]", file=sys.stderr)
    cols = ["benchmark", "size", "metric", "hetsched", "reference", "ratio", "command", "note"]
    table = [[_fmt(r.get(c)) for c in cols] for r in rows]
    widths = [max(len(c), *(len(t[k]) for t in table)) if table else len(c) for k, c in enumerate(cols)]
    print("  ".join(c.ljust(w) for c, w in zip(cols, widths)))
    print("  ".join("-" * w for w in widths))
    for t in table:
        print("  ".join(v.ljust(w) for v, w in zip(t, widths)))
    if failed:
        print(f"FAILED: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
