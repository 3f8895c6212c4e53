"""The report of anything (issue 22.5) and an inert report (issue 23.4).

(The browser test of a report holding a comparison, a simulation and
experiments is ``tests/report/test_report.py::test_report_in_a_real_browser``; its
results folders are made by the helpers here.)

* a hostile results folder (script in titles and values, ``</script>`` in
  values, an SVG figure with ``onload`` and ``<script>``, an HTML file named
  ``.png``, a ``table.txt`` that links to a system file) is opened in
  Chromium: nothing it carries runs, nothing outside the folder is embedded;
* malformed ``results.json`` files are each one line in the report and on
  stderr, and the rest of the report is written.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from hetsched.report.html import build_report, csp
from hetsched.report.kit import MAX_COLS, choose_columns
from hetsched.report.load import scan

from helpers import compare_folder as _compare_folder, simulate_folder as _simulate_folder


def _chromium():
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is missing: `make test` installs it (apt-get install -y chromium)")
        pytest.skip("chromium not installed (make test installs it)")
    return browser


def _open(path: Path, fn):
    """Open ``path`` in headless Chromium; ``fn(page, events)`` inspects it. Returns the events seen."""
    playwright = pytest.importorskip("playwright.sync_api")
    browser = _chromium()
    events: dict[str, list] = {"errors": [], "dialogs": [], "requests": []}
    with playwright.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=browser, headless=True, args=["--no-sandbox"])
        try:
            page = b.new_page(viewport={"width": 1280, "height": 900})
            page.on("console", lambda m: events["errors"].append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: events["errors"].append(str(e)))
            page.on("dialog", lambda d: (events["dialogs"].append(d.message), d.dismiss()))
            page.on("request", lambda r: events["requests"].append(r.url))
            page.goto(path.as_uri())
            page.wait_for_load_state("load")
            fn(page, events)
        finally:
            b.close()
    return events


# --------------------------------------------------------------------------- hostile results
_JS = "window.__pwned=(window.__pwned||0)+1;document.title='PWNED'"
_SVG = (f'<svg xmlns="http://www.w3.org/2000/svg" width="80" height="40" onload="{_JS}">'
        f'<script>{_JS}</script><rect width="80" height="40" fill="red"/></svg>')


def _hostile(root: Path) -> Path:
    d = root / "evil"
    d.mkdir(parents=True)
    x = f"<script>{_JS}</script>"
    img = f'<img src=x onerror="{_JS}">'
    doc = {
        "id": f"{x}evil\"'>",
        "status": f"complete{img}",
        "rows": [{"system": f"</script><script>{_JS}</script>", "W": 1.0, f"col{img}": "</td></tr></table>"},
                 {"system": f"<svg onload=\"{_JS}\">", "W": 2.0, f"col{img}": "javascript:alert(1)"}],
        "units": {"W": f"time {x}"},
        "notes": [img, x],
        "figures": ["evil.svg", "fake.png", "outside.png", "../../etc/passwd"],
        "provenance": {"command": f"hetsched {x}", "parameters": {img: x}, "duration_seconds": "<b>1</b>"},
        "meta": {},
    }
    (d / "results.json").write_text(json.dumps(doc))
    (d / "evil.svg").write_text(_SVG)
    (d / "fake.png").write_text(f"<html><body>{x}</body></html>")
    outside = root / "outside.png"
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(2, 2))
    fig.savefig(outside)
    plt.close(fig)
    (d / "outside.png").symlink_to(outside)
    (d / "table.txt").symlink_to("/etc/passwd")
    # a hostile comparison: script in the system, policy and class names
    c = root / "evil-compare"
    c.mkdir()
    comp = {"system": x, "title": img, "model": "mapping", "metric": "Q", "metric_description": x,
            "metrics": ["Q"], "reps": 2, "seed": 1, "confidence": 0.95, "class_names": [x, img],
            "machine_names": [img], "ranking": [{"rank": 1, "policies": [x]}],
            "policies": [{"policy": x, "rank": 1, "stable": True, "mean": 1.0, "ci": [0.5, 1.5],
                          "per_class": [{"class": 1, "mean": 1.0, "ci": [0, 2]}, {"class": 2, "mean": 2.0}],
                          "share": [[1.0], [1.0]]},
                         {"policy": img, "rank": 2, "stable": False, "message": x, "mean": None}],
            "differences": [{"policy": x, "versus": img, "metric": "Q", "diff": None, "note": x}],
            "status": 1, "message": img, "figures": ["evil.svg"]}
    (c / "results.json").write_text(json.dumps({"id": img, "kind": "compare", **comp, "rows": [{"a": x}]}))
    return root


def test_hostile_results_run_nothing_in_a_real_browser(tmp_path):
    _chromium()
    root = _hostile(tmp_path / "results")
    skipped = []
    report = build_report(root, skipped=skipped)
    assert skipped == [] and sorted(r.kind for r in scan([root])[0]) == ["compare", "experiment"]
    text = report.read_text()
    assert text.count("<script>") == 1 and "<svg" not in text  # our sort script; no inline SVG markup
    assert "root:x:0:0" not in text  # table.txt links to /etc/passwd: not embedded
    assert "table.txt left out" in text and "outside.png" in text and "left out" in text
    assert "fake.png" in text and "not a PNG image" in text
    assert "data:image/svg+xml;base64," in text  # the SVG figure, as an image only
    assert "<img src=x" not in text and "onerror=\"window" not in text.replace("&quot;", '"').split("<body>")[0]

    def check(page, events):
        page.wait_for_timeout(300)
        assert page.evaluate("() => window.__pwned") is None
        assert page.title() != "PWNED"
        assert events["dialogs"] == []
        assert events["errors"] == []  # not even an attempt blocked by the CSP: nothing executable is there
        # the only script element is the report's own; the SVG is an <img>
        assert page.evaluate("() => document.scripts.length") == 1
        assert page.evaluate("() => document.querySelectorAll('svg').length") == 0
        page.locator("table.sortable th").first.click()  # our script still works

    events = _open(report, check)
    assert all(u.startswith(("file:", "data:")) for u in events["requests"]), events["requests"]


# --------------------------------------------------------------------------- malformed files
_BAD = {
    "not-json": b"{",
    "a-list": b"[]",
    "no-rows": b"{}",
    "rows-dict": b'{"rows": {}}',
    "rows-ints": b'{"rows": [1, 2]}',
    "id-list": b'{"rows": [], "id": []}',
    "figures-str": b'{"rows": [], "figures": "a.png"}',
    "figures-ints": b'{"rows": [], "figures": [1]}',
    "notes-str": b'{"rows": [], "notes": "a note"}',
    "units-list": b'{"rows": [], "units": ["s"]}',
    "prov-list": b'{"rows": [], "provenance": [1]}',
    "meta-str": b'{"rows": [], "meta": "x"}',
    "status-list": b'{"rows": [], "status": [0]}',
    "message-num": b'{"rows": [], "message": 3}',
    "compare-none": b'{"rows": [], "kind": "compare"}',
    "compare-pols": b'{"rows": [], "kind": "compare", "policies": 1, "differences": []}',
    "compare-share": b'{"rows": [], "kind": "compare", "policies": [{"policy": "a", "share": "x"}], "differences": []}',
    "compare-pcs": b'{"rows": [], "kind": "compare", "policies": [{"policy": "a", "per_class": [1]}], "differences": []}',
    "simulate-pcs": b'{"rows": [], "kind": "simulate", "per_class": "x"}',
    "deep": b"[" * 100_000 + b"]" * 100_000,
    "latin1": '{"rows": [{"a": "caf\u00e9"}]}'.encode("latin-1"),
}
_ODD_BUT_FINE = {
    "nan-inf": b'{"rows": [{"a": NaN, "b": Infinity, "c": 1e400, "d": {"x": [1, {"y": 2}]}, "e": [1, 2, 3]}],'
               b' "provenance": {"duration_seconds": "abc", "versions": 3}}',
    "big-int": b'{"rows": [{"a": 123456789012345678901234567890}], "id": 7, "status": 3}',
}


def test_malformed_results_files_are_one_line_each_and_skipped(tmp_path):
    root = tmp_path / "results"
    for name, data in {**_BAD, **_ODD_BUT_FINE}.items():
        (root / name).mkdir(parents=True)
        (root / name / "results.json").write_bytes(data)
    (root / "a-folder").mkdir()
    (root / "a-folder" / "results.json").mkdir()
    (root / "a-fifo").mkdir()
    os.mkfifo(root / "a-fifo" / "results.json")
    (root / "linked").mkdir()
    (root / "linked" / "results.json").symlink_to(root / "nan-inf" / "results.json")
    from typer.testing import CliRunner

    from hetsched.cli import app

    r = CliRunner().invoke(app, ["report", str(root)])
    assert r.exit_code == 0, r.output
    lines = [x for x in r.output.splitlines() if x.startswith("skipped ")]
    bad = set(_BAD) | {"a-folder", "a-fifo", "linked"}
    assert len(lines) == len(bad)
    for name in bad:
        assert sum(f"/{name}/" in x for x in lines) == 1, name
    text = (root / "report.html").read_text()
    assert text.count("<li><code>") == len(bad) and "Results not shown" in text
    recs, skipped = scan([root])
    assert {rec.folder.name for rec in recs} == set(_ODD_BUT_FINE)
    assert "123456789012345678901234567890" in text and "caf" not in text


# --------------------------------------------------------------------------- layout
def test_index_lists_what_is_present_and_not_run_is_one_line(tmp_path):
    root = tmp_path / "results"
    d = root / "wide"
    d.mkdir(parents=True)
    rows = [{f"c{k}": float(k * i) for k in range(20)} | {"system": "A", "metric": "c5", "value": 1.0,
                                                          "ci_low": 0.5, "ci_high": 1.5, "printed_c5": 2.0}
            for i in range(3)]
    (d / "results.json").write_text(json.dumps({"id": "wide", "rows": rows}))
    text = build_report(root).read_text()
    index = text.split("<h2>Contents</h2>")[1].split("</table>")[0]
    assert index.count("<tr>") == 2  # the header and the one result present
    assert "not run" not in index.lower() and text.count("Not run (") == 1
    # the wide table: chosen columns first, the full table in a details block
    assert "<details><summary>all 26 columns" in text
    cols = choose_columns(list(rows[0]), rows, {"c5": "printed_c5"})
    assert len(cols) == MAX_COLS and {"system", "c5", "printed_c5", "value", "ci_low", "ci_high"} <= set(cols)


def test_several_folders_and_a_run_folder_itself(tmp_path):
    a = _compare_folder(tmp_path / "a")
    b = _simulate_folder(tmp_path / "b")
    out = build_report([a, b], tmp_path / "both.html")
    text = out.read_text()
    assert "Comparisons on two-box" in text and "2.B under lpas" in text
    recs, skipped = scan([a, b])
    assert [r.kind for r in recs] == ["compare", "simulate"] and skipped == []
