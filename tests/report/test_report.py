"""The HTML report, provenance in results files, and safe output folders.

The report is checked in a real browser (headless Chromium through
Playwright): no console errors, every table and image rendered with a non-zero
size, every link resolving. ``make test`` installs Debian's ``chromium`` when
it is missing; without it the browser test fails under CI and is skipped
elsewhere.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hetsched import experiments
from hetsched.errors import HetschedError
from hetsched.report.html import DIVERGE_REL, build_report, load_results

HETSCHED = [sys.executable, "-m", "hetsched.cli"]


def _cli(*args, cwd=None, timeout=300):
    return subprocess.run(HETSCHED + list(args), capture_output=True, text=True, timeout=timeout, cwd=cwd)


def _synthetic(outdir: Path) -> Path:
    """An experiment folder with a paper column (one value off by 50 %), an unstable row and a plot."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    d = outdir / "synthetic-exp"
    experiments.prepare_outdir(d)
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot([0, 1, 2], [1, 4, 9])
    from hetsched.resultsio import save_figure

    save_figure(fig, d / "curve.png")  # the experiments' way: through the safe writer, in the manifest
    plt.close(fig)
    from hetsched import provenance

    res = experiments.ExperimentResult(
        id="synthetic-exp",
        rows=[{"system": "A", "W": 1.00, "paper_W": 1.02, "unstable": False},
              {"system": "B", "W": 3.00, "paper_W": 2.00, "unstable": False},
              {"system": "C", "W": float("nan"), "paper_W": 5.0, "unstable": True}],
        table="system  W\nA 1.00\nB 3.00\nC unstable",
        figures=[d / "curve.png"],
        notes=["a synthetic experiment"],
    )
    res.provenance = provenance.start(seed=7, reps=3, horizon=100.0, quick=True).finish().as_dict()
    experiments.write_results(res, d)
    return d


# --------------------------------------------------------------------------- provenance and units
def test_results_files_carry_provenance_and_units(tmp_path):
    import pyarrow.parquet as pq

    d = _synthetic(tmp_path)
    doc = json.loads((d / "results.json").read_text())
    prov = doc["provenance"]
    for key in ("command", "started", "seed", "reps", "horizon", "duration_seconds", "host", "versions", "status"):
        assert prov[key] is not None, key
    assert prov["seed"] == 7 and prov["reps"] == 3 and prov["horizon"] == 100.0
    assert {"python", "numpy", "numba", "hetsched"} <= set(prov["versions"])
    assert doc["units"]["W"].startswith("time units")
    meta = json.loads(pq.read_schema(d / "results.parquet").metadata[b"hetsched"])
    assert meta["provenance"] == prov and meta["units"] == doc["units"]
    assert meta["status"] == doc["status"] == 1  # complete, one row unstable


def test_reproduce_records_the_command_and_refuses_to_overwrite(tmp_path):
    r = _cli("reproduce", "thesis-2.1-mct", "--quick", "--outdir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "thesis-2.1-mct" / "results.json").read_text())
    prov = doc["provenance"]
    assert "reproduce thesis-2.1-mct --quick" in prov["command"]
    assert prov["quick"] is True and prov["seed"] == 2009 and prov["reps"] and prov["horizon"]
    before = (tmp_path / "thesis-2.1-mct" / "results.json").read_bytes()
    r2 = _cli("reproduce", "thesis-2.1-mct", "--quick", "--outdir", str(tmp_path))
    assert r2.returncode == 2
    assert r2.stderr.count("\n") == 1 and "--force" in r2.stderr and "Traceback" not in r2.stderr
    assert (tmp_path / "thesis-2.1-mct" / "results.json").read_bytes() == before


# --------------------------------------------------------------------------- output safety
def test_outdir_symlink_out_of_results_is_refused(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("keep me")
    root = tmp_path / "results"
    root.mkdir()
    (root / "exp").symlink_to(outside, target_is_directory=True)
    with pytest.raises(HetschedError, match="symbolic link"):
        experiments.prepare_outdir(root / "exp", force=True)
    assert (outside / "precious.txt").read_text() == "keep me"


def test_results_file_symlink_is_not_followed(tmp_path):
    d = tmp_path / "exp"
    experiments.prepare_outdir(d)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    (d / "table.txt").symlink_to(victim)
    res = experiments.ExperimentResult(id="exp", rows=[{"a": 1}], table="t")
    with pytest.raises(HetschedError, match="symbolic link"):
        experiments.write_results(res, d)
    assert victim.read_text() == "keep me"


def test_read_only_outdir_is_refused_before_the_run(tmp_path, monkeypatch):
    """A folder where files cannot be created (EACCES/EROFS; simulated, since root ignores modes)."""
    import errno

    real_open = os.open

    def deny(path, flags, *a, **k):
        if str(path).startswith(str(tmp_path / "ro")) and flags & os.O_CREAT:
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        return real_open(path, flags, *a, **k)

    monkeypatch.setattr(os, "open", deny)
    with pytest.raises(HetschedError, match="not writable: Read-only file system"):
        experiments.prepare_outdir(tmp_path / "ro" / "exp")


def test_outdir_under_a_file_is_refused_before_the_run(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    t0 = time.perf_counter()
    r = _cli("reproduce", "thesis-table-2.1", "--quick", "--outdir", str(f))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "output folder" in r.stderr and r.stderr.count("\n") == 1
    assert time.perf_counter() - t0 < 30  # refused before computing anything
    assert f.read_text() == "x"


def test_force_replaces_only_the_results(tmp_path):
    d = _synthetic(tmp_path)
    (d / "my-notes.txt").write_text("mine")  # a user's file in the folder: --force keeps it
    experiments.prepare_outdir(d, force=True)
    assert sorted(p.name for p in d.iterdir()) == [".hetsched.lock", "my-notes.txt"]


# --------------------------------------------------------------------------- Ctrl-C
def test_ctrl_c_writes_partial_results_and_exits_130(tmp_path):
    """SIGINT to the whole process group (as a terminal sends it): exit 130 within seconds."""
    p = subprocess.Popen(HETSCHED + ["reproduce", "thesis-table-2.1", "--outdir", str(tmp_path), "--workers", "2"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                         # as from a terminal: a test run started in the background of a non-interactive shell
                         # inherits SIGINT ignored, and Python then installs no KeyboardInterrupt handler
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    out_dir = tmp_path / "thesis-table-2.1"
    deadline = time.time() + 120
    while not out_dir.exists() and time.time() < deadline and p.poll() is None:
        time.sleep(0.2)  # the folder is made (and checked) before the first cell starts
    time.sleep(3)
    assert p.poll() is None, p.communicate()
    t0 = time.perf_counter()
    os.killpg(p.pid, signal.SIGINT)
    try:
        out, err = p.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        pytest.fail("reproduce did not stop within 20 s of Ctrl-C")
    took = time.perf_counter() - t0
    assert p.returncode == 130, err
    assert "Traceback" not in err
    doc = json.loads((tmp_path / "thesis-table-2.1" / "results.json").read_text())
    assert doc["status"] == 2 and not doc["success"] and doc["provenance"]["status"] == "interrupted"
    assert took < 10, took


# --------------------------------------------------------------------------- the report
def test_report_marks_divergence_unstable_and_quick(tmp_path):
    _synthetic(tmp_path)
    (rec,) = load_results(tmp_path)
    out = build_report(tmp_path)
    text = out.read_text()
    assert out == tmp_path / "report.html"
    # row B is 50 % away from its printed value (> DIVERGE_REL); row A is 2 % away
    assert abs(3.0 - 2.0) / 2.0 > DIVERGE_REL > abs(1.0 - 1.02) / 1.02
    assert "diverges from the paper: 1 value" in text
    assert text.count('class="div"') == 1
    assert "unstable: 1 row" in text and "quick mode" in text
    assert "data:image/png;base64," in text
    assert "http://" not in text and "https://" not in text  # self-contained


def test_report_never_overwrites_a_foreign_file(tmp_path):
    _synthetic(tmp_path)
    foreign = tmp_path / "mine.html"
    foreign.write_text("<html>my notes</html>")
    with pytest.raises(HetschedError, match="not written by hetsched"):
        build_report(tmp_path, foreign)
    assert foreign.read_text() == "<html>my notes</html>"
    build_report(tmp_path, tmp_path / "r.html")
    build_report(tmp_path, tmp_path / "r.html")  # its own file: replaced


def test_report_cli_errors_are_one_line(tmp_path):
    r = _cli("report", str(tmp_path / "missing"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "does not exist" in r.stderr


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def test_report_in_a_real_browser(tmp_path):
    """A paper experiment, a synthetic one, a comparison (with class and machine names) and a simulation in one
    report, in headless Chromium: no console error, every visible table and every image rendered, every link
    resolving, a click on a header sorting the comparison's paired differences (so the report's own, hashed
    script runs under its Content-Security-Policy), nothing requested from outside, no sideways scrolling."""
    from helpers import compare_folder as _compare_folder, simulate_folder as _simulate_folder

    from hetsched.report.html import csp

    browser = _chromium()
    if browser is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is missing: `make test` installs it (apt-get install -y chromium)")
        pytest.skip("chromium not installed (make test installs it)")
    playwright = pytest.importorskip("playwright.sync_api")
    results = tmp_path / "results"
    r = _cli("reproduce", "thesis-2.1-mct", "--quick", "--outdir", str(results))
    assert r.returncode == 0, r.stderr
    _synthetic(results)
    cmp_dir = _compare_folder(results)
    assert "two-box" in (cmp_dir / "report.html").read_text()  # compare --outdir's own page
    _simulate_folder(results)
    report = build_report(results)
    text = report.read_text()
    assert "Comparisons on two-box" in text and "Simulations" in text and "Experiments" in text
    assert "1 (web)" in text and "2 (batch)" in text and "fast-box" in text and "slow-box" in text
    assert f'content="{csp()}"' in text and text.count("<script>") == 1
    errors: list[str] = []
    requests: list[str] = []
    with playwright.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=browser, headless=True, args=["--no-sandbox"])
        page = b.new_page(viewport={"width": 1280, "height": 900})
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("request", lambda q: requests.append(q.url))
        page.goto(report.as_uri())
        page.wait_for_load_state("load")
        assert errors == []
        tables = [t for t in page.query_selector_all("table") if t.is_visible()]
        assert len(tables) >= 6  # index, the comparison's tables, the simulation's, two experiments' rows
        for t in tables:
            box = t.bounding_box()
            assert box and box["width"] > 0 and box["height"] > 0
        imgs = page.query_selector_all("img")
        assert len(imgs) >= 5  # the real experiment's plot, the synthetic one, the comparison's three
        for im in imgs:
            im.scroll_into_view_if_needed()
            assert page.evaluate("(e) => e.complete && e.naturalWidth > 0 && e.naturalHeight > 0", im)
            box = im.bounding_box()
            assert box and box["width"] > 0 and box["height"] > 0
        hrefs = page.eval_on_selector_all("a[href]", "els => els.map(e => e.getAttribute('href'))")
        assert any(h.startswith("#run-") for h in hrefs)
        for h in hrefs:
            if h.startswith("#"):
                target = h[1:]
                assert page.query_selector(f'[id="{target}"]') is not None, h
            else:
                assert (report.parent / h).resolve().exists(), h
        page.click("a:text('synthetic-exp')")
        assert page.evaluate("() => location.hash").startswith("#run-")
        # the comparison's paired differences sort by a click on a header (ascending, then descending)
        table = page.locator("h4:text('Paired differences of Q') ~ div table").first
        col = "(t) => Array.from(t.tBodies[0].rows).map(r => r.cells[2].getAttribute('data-v'))"
        before = table.evaluate(col)
        table.locator("th", has_text="Q difference").click()
        asc = table.evaluate(col)
        assert [float(x) for x in asc] == sorted(float(x) for x in before)
        table.locator("th", has_text="Q difference").click()
        assert table.evaluate(col) == asc[::-1]
        assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth + 1")
        page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        b.close()
    assert (tmp_path / "report.png").stat().st_size > 10_000
    assert errors == []
    assert all(u.startswith(("file:", "data:")) for u in requests), requests


def test_parquet_is_written_for_mixed_columns(tmp_path):
    """A column holding numbers and 'unstable' (as tables do) still gets its Parquet file, as text."""
    import pyarrow.parquet as pq

    res = experiments.ExperimentResult(id="x", rows=[{"a": 1, "b": "unstable", "c": [1, 2]},
                                                     {"a": 2.5, "b": 3.0, "c": None}], table="t")
    d = experiments.prepare_outdir(tmp_path / "x")
    written = experiments.write_results(res, d)
    assert d / "results.parquet" in written
    df = pq.read_table(d / "results.parquet").to_pandas()
    assert list(df["b"]) == ["unstable", "3.0"] and list(df["a"]) == [1.0, 2.5]
