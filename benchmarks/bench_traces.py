"""SWF reader benchmark: the LCG log (188,041 jobs, gzip), ``../shared/traces``.

1. ``hetsched.traces.read_swf`` (18 typed fields, header metadata, checks that
   name a malformed line) against a plain ``pandas.read_csv(sep=r"\\s+",
   comment=";")`` call on the same file -- the best ordinary alternative, which
   checks nothing, keeps no header and types nothing.
2. The same against a plain-Python line loop (split and convert per line, as the
   MUSCLE reader did before it used ``read_swf``).
3. Streaming in chunks of 50,000 jobs against reading the whole log.

Medians of repeats, all in this process; ratios = reference time / hetsched time.
"""

from __future__ import annotations

import gzip
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from hetsched.traces import read_swf

LCG = Path(__file__).resolve().parents[1] / ".." / "shared" / "traces" / "LCG.swf.gz"


def _median_time(fn, repeats):
    ts, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), out


def _plain_pandas(path):
    return pd.read_csv(path, sep=r"\s+", comment=";", header=None)


def _python_loop(path):
    rows = []
    with gzip.open(path, "rt") as f:
        for line in f:
            s = line.strip()
            if not s or s.startswith(";"):
                continue
            rows.append([float(x) for x in s.split()])
    return np.asarray(rows)


def _chunked(path):
    return sum(len(c) for c in read_swf(path, chunksize=50_000))


def main(quick: bool = False) -> list[dict]:
    if not LCG.exists():
        return [{"benchmark": "read_swf LCG", "metric": "skipped", "hetsched": None, "reference": None,
                 "ratio": None, "note": f"the LCG log is not at {LCG} (../shared/traces next to the repository)"}]
    reps = 3 if quick else 7
    t_ours, df = _median_time(lambda: read_swf(LCG), reps)
    t_pd, ref = _median_time(lambda: _plain_pandas(LCG), reps)
    assert ref.shape == df.shape and np.array_equal(ref.to_numpy(dtype=float), df.to_numpy(dtype=float))
    t_py, arr = _median_time(lambda: _python_loop(LCG), 1 if quick else 3)
    assert arr.shape == df.shape
    t_ch, n = _median_time(lambda: _chunked(LCG), reps)
    assert n == len(df)
    return [
        {"benchmark": "read_swf LCG (188,041 jobs, gz)", "metric": "seconds (median)", "hetsched": t_ours,
         "reference": t_pd, "ratio": t_pd / t_ours,
         "note": "vs plain pandas.read_csv(sep=r'\\s+', comment=';'): no checks, no header, no types"},
        {"benchmark": "read_swf LCG vs Python line loop", "metric": "seconds (median)", "hetsched": t_ours,
         "reference": t_py, "ratio": t_py / t_ours, "note": "float() per field per line"},
        {"benchmark": "read_swf LCG chunked (50,000)", "metric": "seconds (median)", "hetsched": t_ch,
         "reference": t_ours, "ratio": t_ours / t_ch, "note": "streaming chunks vs one frame (ratio < 1 = cost)"},
    ]


if __name__ == "__main__":
    for row in main(quick="--quick" in sys.argv):
        print(row)
