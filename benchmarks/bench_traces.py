"""SWF reader benchmark: the LCG log (188,041 jobs, gzip), ``../shared/traces``.

1. ``hetsched.traces.read_swf`` (18 typed fields, header metadata, checks that
   name a malformed line) against a plain ``pandas.read_csv(sep=r"\\s+",
   comment=";")`` call on the same file -- the best ordinary alternative, which
   checks nothing, keeps no header and types nothing.
2. The same against a plain-Python line loop (split and convert per line, as the
   MUSCLE reader did before it used ``read_swf``).
3. Streaming in chunks of 50,000 jobs against reading the whole log.
4. ``hetsched muscle run --swf LOG --jobs 1000`` on a large log (1,000,000 jobs; 200,000 with ``--quick``):
   peak memory (max RSS of a fresh process) of reading the first 1,000 usable jobs through the chunked
   reader (``workload_from_swf(..., max_jobs=1000)``) against reading the whole log first (what it did
   before); issue 23 measured 4.7 GB for a 10^7-job log.
5. The statistics of a trace replay (:func:`hetsched.sim.mapping.replay.summarize_replay`: the window estimates
   of W, waiting time and bounded slowdown, overall and per class, utilisation, the trend rule) against
   the compiled replay itself, LCG on 2.C1 under LPAS at load 0.8, 30 windows.

Medians of repeats, all in this process (row 4: fresh processes); ratios = reference / hetsched.
"""

from __future__ import annotations

import gzip
import io
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


_CHILD = """
import sys
from pathlib import Path
mode, path = sys.argv[1], Path(sys.argv[2])
from hetsched.muscle import MultiCluster  # the same imports in every mode
from hetsched.muscle.swf import workload_from_swf
from hetsched.traces import read_swf
import pandas, pyarrow  # noqa: F401
def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0
with open("/proc/self/clear_refs", "w") as f:  # reset the peak: what follows is measured alone
    f.write("5")
if mode == "chunked":
    wl = workload_from_swf(path, MultiCluster((20, 16, 12, 10), (1.0, 1.2, 1.4, 1.6)), max_jobs=1000)
    assert len(wl) == 1000
elif mode == "whole":
    assert len(read_swf(path)) > 1000
print(hwm())
"""


def _big_log(path: Path, jobs: int) -> Path:
    """A plain SWF log of ``jobs`` jobs: one block of 10,000 varied lines written ``jobs / 10,000`` times."""
    rng = np.random.default_rng(1)
    n = 10_000
    body = np.full((n, 18), -1.0)
    body[:, 0], body[:, 1], body[:, 3] = np.arange(1, n + 1), np.arange(n) * 30.0, rng.exponential(600.0, n).round(1)
    body[:, 4] = body[:, 7] = rng.integers(1, 21, n)
    buf = io.StringIO()
    np.savetxt(buf, body, fmt=["%d", "%.1f", "%d", "%.1f"] + ["%d"] * 14)
    block = buf.getvalue()
    with open(path, "w") as f:
        f.write("; Version: 2.2\n")
        for _ in range(jobs // n):
            f.write(block)
    return path


def _max_rss_mb(mode: str, path: Path) -> float:
    import subprocess

    out = subprocess.run([sys.executable, "-c", _CHILD, mode, str(path)], capture_output=True, text=True, check=True)
    return int(out.stdout.strip().splitlines()[-1]) / 1024.0  # VmHWM is in KiB


def _memory_rows(quick: bool) -> list[dict]:
    import tempfile

    jobs = 200_000 if quick else 1_000_000
    with tempfile.TemporaryDirectory() as d:
        log = _big_log(Path(d) / "big.swf", jobs)
        _max_rss_mb("chunked", log)  # warm-up: any first-use compilation is not measured
        base = min(_max_rss_mb("imports", log) for _ in range(3))
        chunked = min(_max_rss_mb("chunked", log) for _ in range(3))
        whole = min(_max_rss_mb("whole", log) for _ in range(3))
        t_ch, _ = _median_time(lambda: __import__("subprocess").run(
            [sys.executable, "-c", _CHILD, "chunked", str(log)], capture_output=True, check=True), 3)
        t_wh, _ = _median_time(lambda: __import__("subprocess").run(
            [sys.executable, "-c", _CHILD, "whole", str(log)], capture_output=True, check=True), 3)
    return [
        {"benchmark": "muscle --jobs 1000 on a big log: peak memory", "size": f"{jobs:,} jobs",
         "metric": "peak RSS growth, MB", "hetsched": chunked - base, "reference": whole - base,
         "ratio": (whole - base) / max(chunked - base, 1e-9),
         "note": f"chunked reader stops after the first chunk vs the whole log read first (peak RSS after the "
                 f"imports, reset with /proc/self/clear_refs; doing nothing: {base:.0f} MB; fresh processes, "
                 f"min of 3)"},
        {"benchmark": "muscle --jobs 1000 on a big log: time", "size": f"{jobs:,} jobs",
         "metric": "seconds per process (median of 3)", "hetsched": t_ch, "reference": t_wh, "ratio": t_wh / t_ch,
         "note": "process start and imports included in both"},
    ]


def _stats_row(quick: bool) -> dict:
    import hetsched as hs
    from hetsched.traces import workload
    from hetsched.sim.mapping import replay as R

    c1 = hs.load("2.C1")
    tw = workload(read_swf(LCG), c1, load=0.8)
    calls: list[float] = []
    orig = R.summarize_replay

    def timed(*a, **k):
        t0 = time.perf_counter()
        orig(*a, **k)
        calls.append(time.perf_counter() - t0)

    R.summarize_replay = timed
    try:
        kern = []
        for _ in range(3 if quick else 7):
            res = hs.simulate(c1, "lpas", trace=tw, reps=30, workers=1)
            kern.append(res.kernel_seconds)
    finally:
        R.summarize_replay = orig
    t_s, t_k = statistics.median(calls), statistics.median(kern)
    return {"benchmark": "trace replay statistics vs the replay", "size": f"LCG, {len(tw):,} jobs",
            "metric": "seconds (median)", "hetsched": t_s, "reference": t_k, "ratio": t_k / t_s,
            "note": "summarize_replay (3 metrics x (1 + 3 classes) window estimates, utilisation, trend rule) vs "
                    "the compiled replay of the same log (ratio < 1: the statistics cost more than the kernel)"}


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
        *_memory_rows(quick),
        _stats_row(quick),
    ]


if __name__ == "__main__":
    for row in main(quick="--quick" in sys.argv):
        print(row)
