"""Schedule plots (issue 13): the drawn bars and curves match the records."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import PolyCollection
from typer.testing import CliRunner

from hetsched.cli import app
from hetsched.errors import ModelError
from hetsched.plot import gantt, sample_window, step_average, utilisation
from hetsched.traces import write_records
from helpers import fcfs_records


def _records(n=40, machines=3, seed=0):
    """FCFS to the earliest-free machine (valid records, built by hand)."""
    return fcfs_records(n, machines, seed, mean_run=2.5, classes=3)


def _bars(fig):
    """(x0, x1, lane) of every rectangle drawn by broken_barh."""
    out = []
    for coll in fig.axes[0].collections:
        if isinstance(coll, PolyCollection):
            for path in coll.get_paths():
                v = path.vertices
                out.append((v[:, 0].min(), v[:, 0].max(), round(float(v[:, 1].mean()))))
    return sorted(out)


def test_gantt_bars_match_records():
    df = _records()
    fig = gantt(df)
    bars = _bars(fig)
    assert len(bars) == len(df) == fig.hetsched_bars
    want = sorted(zip(df["start"], df["end"], df["machine"]))
    np.testing.assert_allclose(np.array(bars), np.array(want, dtype=float), rtol=1e-12)
    assert len(fig.axes[0].get_yticks()) == df["machine"].nunique()


def test_gantt_window_and_sample_window():
    df = _records(n=3000, machines=4, seed=1)
    fig = gantt(df, max_tasks=200)
    t0, t1 = sample_window(df["start"].to_numpy(), 200)
    overlap = int(((df["start"] < t1) & (df["end"] > t0)).sum())
    assert len(_bars(fig)) == overlap and 200 <= overlap < len(df)
    assert np.sum((df["start"] >= t0) & (df["start"] <= t1)) == 200  # 200 consecutive starts
    bars = _bars(fig)
    assert min(b[0] for b in bars) >= t0 and max(b[1] for b in bars) <= t1  # clipped to the window
    fig2 = gantt(df, window=(100.0, 110.0))
    assert len(_bars(fig2)) == int(((df["start"] < 110) & (df["end"] > 100)).sum())
    with pytest.raises(ModelError, match="window"):
        gantt(df, window=(5.0, 5.0))


def test_step_average_against_fine_sampling():
    times = np.array([0.0, 1.0, 1.5, 4.0, 2.0])
    delta = np.array([1.0, 2.0, -1.0, -2.0, 0.5])
    edges = np.array([0.0, 1.25, 3.0, 5.0])
    got = step_average(times, delta, edges)
    grid = np.linspace(0, 5, 2_000_001)[:-1] + 1.25e-6
    lv = np.zeros_like(grid)
    for t, d in zip(times, delta):
        lv[grid >= t] += d
    want = [lv[(grid >= a) & (grid < b)].mean() for a, b in zip(edges[:-1], edges[1:])]
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_utilisation_curves_integrate_to_the_records():
    df = _records(n=500, machines=3, seed=4)
    fig = utilisation(df, bins=50)
    s = fig.hetsched_series
    T = df["end"].max() - df["arrival"].min()
    # equal bins: the mean of the bin averages is the time average over the run
    assert np.mean(s["busy"]) == pytest.approx(((df.end - df.start).sum()) / (3 * T), rel=1e-9)
    assert np.mean(s["in_system"]) == pytest.approx((df.end - df.arrival).sum() / T, rel=1e-9)
    assert np.mean(s["waiting"]) == pytest.approx((df.start - df.arrival).sum() / T, rel=1e-9)
    assert s["busy"].max() <= 1.0 + 1e-12 and s["waiting"].min() >= -1e-12


def test_cli_writes_both_plots(tmp_path):
    p = write_records(_records(n=300), tmp_path / "run.parquet")
    r = CliRunner().invoke(app, ["plot", "gantt", str(p), "--window", "10", "60"])
    assert r.exit_code == 0, r.output
    out = tmp_path / "run-gantt.png"
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 5000
    r = CliRunner().invoke(app, ["plot", "utilisation", str(p), "-o", str(tmp_path / "u.pdf")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "u.pdf").read_bytes()[:4] == b"%PDF"


@pytest.mark.parametrize("setup, match", [
    (lambda d: ["gantt", str(d / "none.parquet")], "not found"),
    (lambda d: ["gantt", str(d / "junk.parquet")], "not a readable Parquet file"),
    (lambda d: ["gantt", str(d / "muscle.parquet")], "give the sizes"),
    (lambda d: ["gantt", str(d / "muscle.parquet"), "--sizes", "1"], "fewer than 2 free computers"),
    (lambda d: ["utilisation", str(d / "muscle.parquet")], "give --machines"),
    (lambda d: ["gantt", str(d / "ok.parquet"), "-o", str(d / "x.txt")], ".png, .pdf or .svg"),
    (lambda d: ["gantt", str(d / "ok.parquet"), "--window", "3", "1"], "window"),
])
def test_cli_errors_one_line(tmp_path, setup, match):
    (tmp_path / "junk.parquet").write_text("no")
    pd.DataFrame({"job": [0], "cluster": [0], "processors": [2], "arrival": [0.0], "start": [0.0], "end": [1.0]}) \
        .to_parquet(tmp_path / "muscle.parquet")
    write_records(_records(n=10), tmp_path / "ok.parquet")
    r = CliRunner().invoke(app, ["plot", *setup(tmp_path)])
    assert r.exit_code == 2 and match in r.output and "Traceback" not in r.output


def test_muscle_records_on_computer_lanes(tmp_path):
    """A MUSCLE schedule drawn per computer: the reconstructed placement gives every job
    its processors, never two jobs on one computer at once, and the bars match."""
    from hetsched.muscle import GAOptions, MultiCluster, WorkloadParams, generate_workload, simulate
    from hetsched.plot import computer_lanes
    from hetsched.traces import check_records

    sysm = MultiCluster((6, 4), (1.0, 1.5))
    wl = generate_workload(WorkloadParams(n_jobs=120, max_s=4, load=0.9), sysm, seed=3)
    rec = simulate(wl, sysm, "muscle", ga=GAOptions(max_gen=5), seed=1).records(wl)
    lanes = computer_lanes(rec, sysm.sizes)
    assert len(lanes) == rec["processors"].sum()
    assert (lanes.groupby("task").size().sort_index().to_numpy() == rec.sort_values("job")["processors"].to_numpy()).all()
    assert lanes["machine"].max() < sum(sysm.sizes)
    per_computer = lanes.assign(task=np.arange(len(lanes)), arrival=lanes["start"], attempts=1)
    assert check_records(per_computer).ok  # no overlap on any computer
    fig = gantt(rec, sizes=sysm.sizes, max_tasks=10_000)
    assert len(_bars(fig)) == len(lanes)
    p = tmp_path / "m.parquet"
    write_records(rec, p, meta={"sizes": list(sysm.sizes)})
    r = CliRunner().invoke(app, ["plot", "gantt", str(p)])
    assert r.exit_code == 0 and f"{len(lanes)} task bars" in r.output


def test_gantt_numbers_classes_and_machines_from_1_with_names(tmp_path):
    """Records number classes and machines from 0 (data); the chart from 1, with the run's names."""
    df = _records(n=40, machines=3)
    fig = gantt(df)
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert legend == [f"class {c + 1}" for c in sorted(df["class"].unique())]
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["1", "2", "3"]
    p = write_records(df, tmp_path / "named.parquet",
                      meta={"class_names": ["web", "batch", "gpu"], "machine_names": ["a", "b", "c"]})
    fig = gantt(p)
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert legend == [f"class {c + 1} {['web', 'batch', 'gpu'][c]}" for c in sorted(df["class"].unique())]
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["1 a", "2 b", "3 c"]
    with pytest.raises(ModelError, match="machine_names: 2 names for 3"):
        gantt(df, machine_names=["a", "b"])
