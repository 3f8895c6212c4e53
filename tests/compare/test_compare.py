"""``hs.compare`` and ``hetsched compare``: paired comparisons on common random numbers, on every model.

Truths checked: each policy's numbers equal ``hs.simulate``'s for the same
seed (a comparison is the same runs, paired); the paired interval equals the
one computed by hand (numpy) from the per-replication values; identical
policies differ by exactly 0 and share a rank; the common random numbers make
the policies' replications correlated, so the paired interval is narrower
than the unpaired one; an unstable policy is ranked last without a number;
names given to classes and machines appear in every output.

One comparison with a user policy is computed once per module (compiling a
user policy into the kernel costs seconds) and read by several tests; the
command-line tests run in-process, so the policy file's policy (loaded once per
process) is not compiled again.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as st
from typer.testing import CliRunner

import hetsched as hs
from hetsched.cli import app
from hetsched.compare import load_policy
from hetsched.errors import ModelError
from helpers import REPO_ROOT

ROOT = REPO_ROOT
POLICY_FILE = ROOT / "examples" / "my_policy.py"
CLASSES = ["web", "batch", "gpu"]
MACHINES = ["cpu-a", "cpu-b", "gpu-1", "gpu-2", "mixed"]
RUN = dict(reps=6, horizon=600.0, seed=11, workers=1)


def my_system():
    return hs.System.from_arrays(alpha=[4.0, 3.0, 2.5], mu=[[4, 2, 1, 1, 3], [1, 3, 2, 1, 1], [0, 1, 6, 4, 1]],
                                 class_names=CLASSES, machine_names=MACHINES, id="my-cluster")


@pytest.fixture(scope="module")
def my_rule():
    return load_policy(f"{POLICY_FILE}:my_rule")


@pytest.fixture(scope="module")
def res(my_rule):
    return hs.compare(my_system(), ["mct", "lpas", "lpas-2k", my_rule], **RUN)


def _cli(*args):
    return CliRunner().invoke(app, list(args))


# --------------------------------------------------------------------------- the numbers
def test_each_policy_is_what_simulate_gives(res, my_rule):
    for pol in ("lpas", my_rule):
        sim = hs.simulate(my_system(), pol, **RUN)
        out = res.policy(pol if isinstance(pol, str) else pol.name)
        assert out.mean == sim.mean and tuple(out.ci) == tuple(sim.ci)
        assert out.values == [r["Q"] for r in sim.replications]


def test_paired_interval_by_hand_and_ranking(res):
    for d in res.differences:
        a, b = res.policy(d.policy).values, res.policy(d.versus).values
        diff = np.asarray(a) - np.asarray(b)
        hw = st.t.ppf(0.975, diff.size - 1) * diff.std(ddof=1) / math.sqrt(diff.size)
        assert (d.diff.mean, d.diff.low, d.diff.high) == pytest.approx(
            (diff.mean(), diff.mean() - hw, diff.mean() + hw), rel=1e-10)
    # the ranks follow the rule: 1 + the number of policies significantly better
    for p in res.policies:
        n_better = sum(1 for q in res.policies if q is not p and res.difference(q.policy, p.policy).diff.high < 0)
        assert p.rank == 1 + n_better
    assert [p.rank for p in res.policies] == sorted(p.rank for p in res.policies)
    assert res.success and res.status == 0


def test_common_random_numbers_make_the_paired_interval_narrower(res):
    d = res.difference("lpas", "lpas-2k")
    a, b = res.policy("lpas").values, res.policy("lpas-2k").values
    assert np.corrcoef(a, b)[0, 1] > 0.5  # the same arrivals and sizes in each replication
    assert d.diff.half_width < d.diff.unpaired_half_width
    assert all(x.diff.half_width <= x.diff.unpaired_half_width * 1.0001 for x in res.differences)


def test_identical_policies_differ_by_exactly_zero_and_tie():
    r = hs.compare(my_system(), {"mct (a)": "mct", "mct (b)": "mct", "met": "met"}, **RUN)
    d = r.difference("mct (a)", "mct (b)")
    assert d.diff.mean == 0.0 and d.diff.low == 0.0 and d.diff.high == 0.0 and not d.significant
    assert r.policy("mct (a)").rank == r.policy("mct (b)").rank
    assert ["mct (a)", "mct (b)"] in r.ranking or any({"mct (a)", "mct (b)"} <= set(g) for g in r.ranking)


def test_unstable_policy_is_ranked_last_without_a_number():
    # MET sends every task to the fastest machine (load 1.2 there); MCT uses both (load 0.63)
    s = hs.System.from_arrays(alpha=[1.2], mu=[[1.0, 0.9]])
    r = hs.compare(s, ["met", "mct"], reps=4, horizon=3000, seed=1, workers=1)
    met = r.policy("met")
    assert r.status == 1 and not r.success and "met" in r.message
    assert not met.stable and met.rank == 2 and r.policies[-1] is met
    assert math.isnan(met.mean) and math.isfinite(met.mean_untrusted) and met.mean_untrusted > 5
    d = r.as_dict()
    pm = next(p for p in d["policies"] if p["policy"] == "met")
    assert pm["mean"] is None and pm["ci"] == [None, None] and "values" not in pm
    diff = r.difference("mct", "met")
    assert diff.diff is None and "unstable" in diff.note
    assert "UNSTABLE" in str(r) and f"{met.mean_untrusted:.4g}" in str(r)
    df = r.to_frame()
    row = df[(df.policy == "met") & (df.measure == "Q") & df["class"].isna()]
    assert row["value"].isna().all() and row["value_untrusted"].notna().all()
    json.dumps(d, allow_nan=False)


# --------------------------------------------------------------------------- names
def test_names_appear_in_every_output(res):
    df = res.to_frame()
    per_class = df[(df.measure == "Q") & df["class"].notna()]
    assert set(per_class["class_name"]) == set(CLASSES) and (per_class["class"] >= 1).all()
    share = df[df.measure == "share"]
    assert set(share["machine_name"]) == set(MACHINES) and share["machine"].min() == 1
    # the gpu class cannot run on cpu-a (rate 0): it never goes there
    assert share[(share.class_name == "gpu") & (share.machine_name == "cpu-a")]["value"].max() == 0
    text = str(res)
    for name in CLASSES:
        assert f"({name})" in text
    d = res.as_dict()
    assert d["class_names"] == CLASSES and d["machine_names"] == MACHINES
    assert [e["class_name"] for e in d["policies"][0]["per_class"]] == CLASSES
    fig = res.plot_classes()
    ticks = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert ticks == [f"{k + 1} ({c})" for k, c in enumerate(CLASSES)]
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert set(legend) == {p.policy for p in res.policies}
    fig2 = res.plot_means()
    labels = [t.get_text() for t in fig2.axes[0].get_yticklabels()]
    assert labels == [f"{p.rank}. {p.policy}" for p in res.policies]
    h = res._repr_html_()
    assert "data:image/png;base64," in h and "<script" not in h


def test_protocol_and_repr(res):
    assert len(repr(res).splitlines()) <= 6 and "my-cluster" in repr(res)
    d = json.loads(json.dumps(res.as_dict(), allow_nan=False))
    assert d["status"] == 0 and d["seconds"] >= 0 and d["ranking"][0]["rank"] == 1
    assert {p["policy"] for p in d["policies"]} == {"mct", "lpas", "lpas-2k", "my_rule"}
    assert len(d["differences"]) == 6


# --------------------------------------------------------------------------- the command
def test_cli_prints_the_same_numbers_and_writes_the_files(res, tmp_path):
    out = tmp_path / "cmp"
    args = ["compare", "my.toml", "--policy", "mct", "--policy", "lpas", "--policy", "lpas-2k",
            "--policy-file", f"{POLICY_FILE}:my_rule", "--reps", "6", "--horizon", "600", "--seed", "11",
            "--workers", "1"]
    toml = tmp_path / "my.toml"
    toml.write_text('id = "my-cluster"\nalpha = [4.0, 3.0, 2.5]\nclass_names = ["web", "batch", "gpu"]\n'
                    'mu = [[4, 2, 1, 1, 3], [1, 3, 2, 1, 1], [0, 1, 6, 4, 1]]\n'
                    'machine_names = ["cpu-a", "cpu-b", "gpu-1", "gpu-2", "mixed"]\n')
    args[1] = str(toml)
    r = _cli(*args, "--json", "--outdir", str(out))
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    for p in d["policies"]:
        assert p["mean"] == res.policy(p["policy"]).mean
    for name in ("results.csv", "results.parquet", "results.json", "table.txt", "compare-means.png",
                 "compare-differences.png", "compare-classes.png", "report.html"):
        assert (out / name).is_file() and (out / name).stat().st_size > 0, name
    doc = json.loads((out / "results.json").read_text())
    assert doc["kind"] == "compare" and doc["provenance"]["seed"] == 11 and doc["status"] == 0
    assert doc["class_names"] == CLASSES and len(doc["rows"]) == len(res.to_frame())
    page = (out / "report.html").read_text()
    assert "Comparisons on my-cluster" in page and "gpu-1" in page and "1 (web)" in page
    again = _cli(*args, "--outdir", str(out))
    assert again.exit_code == 2 and "already holds results" in again.output
    text = _cli(*args)
    assert text.exit_code == 0 and "paired differences of Q" in text.output and "rank" in text.output
    assert f"{res.policies[0].mean:.4g}" in text.output


@pytest.mark.parametrize("args, match", [
    (["2.B", "--policy", "mct"], "at least two policies"),
    (["2.B", "--policy", "mct", "--policy", "nope"], "unknown policy 'nope'"),
    (["3.A", "--policy", "mct", "--policy", "lpas-dg"], "one comparison runs policies of one model"),
    (["2.B", "--policy", "mct", "--policy", "mct"], "given twice"),
    (["2.B", "--policy", "mct", "--policy", "lpas", "--metric", "messages"], "'messages' is not measured"),
    (["2.B", "--policy", "mct", "--policy", "lpas", "--load", "0.8"], "trace replay only"),
    (["3.A", "--policy", "fcfs", "--policy", "gcmu", "--trace", "x.swf"], "only the mapping model replays"),
    (["coalloc", "--policy", "local", "--policy", "mct"], "not a co-allocation policy"),
    (["2.B", "--policy", "mct", "--policy", "lpas", "--set", "rho=1"], "--set applies to SYSTEM coalloc"),
    (["2.B", "--policy-file", "missing.py:f", "--policy", "mct"], "no such file"),
])
def test_bad_input_is_one_line(args, match, tmp_path):
    (tmp_path / "x.swf").write_text("1 0 0 10 1 -1 -1 1 -1 -1 1 1 1 -1 1 -1 -1 -1\n")
    args = [str(tmp_path / a) if a == "x.swf" else a for a in args]
    r = _cli("compare", *args)
    assert r.exit_code == 2, r.output
    assert match in r.output and r.output.count("\n") == 1 and "Traceback" not in r.output


def test_policy_file_errors_name_the_file_and_the_name(tmp_path):
    bad = tmp_path / "pols.py"
    bad.write_text("import hetsched as hs\n\n@hs.mapping_policy\ndef good(i, mu, n, work, u):\n    return 0\n\n"
                   "def plain(i, mu, n, work, u):\n    return 0\n\nNUMBER = 3\n")
    with pytest.raises(ModelError, match=r"pols.py: no name 'nope'; policies in the file: good"):
        load_policy(f"{bad}:nope")
    with pytest.raises(ModelError, match=r"'plain' is a plain function, not a policy"):
        load_policy(f"{bad}:plain")
    with pytest.raises(ModelError, match=r"'NUMBER' is a int, not a policy"):
        load_policy(f"{bad}:NUMBER")
    assert load_policy(f"{bad}:good") is load_policy(f"{bad}:good")  # loaded once
    syn = tmp_path / "syn.py"
    syn.write_text("def f(:\n")
    with pytest.raises(ModelError, match=r"syn.py: syntax error at line 1"):
        load_policy(f"{syn}:f")
    boom = tmp_path / "boom.py"
    boom.write_text("x = 1\nraise RuntimeError('no')\n")
    with pytest.raises(ModelError, match=r"boom.py: raised RuntimeError at line 2 while loading: no"):
        load_policy(f"{boom}:x")
    txt = tmp_path / "p.txt"
    txt.write_text("x = 1\n")
    with pytest.raises(ModelError, match=r"expected a Python file named \*.py"):
        load_policy(f"{txt}:x")
    with pytest.raises(ModelError, match=r"is a folder, not a file"):
        load_policy(f"{tmp_path}:x")
    with pytest.raises(ModelError, match=r"expected FILE.py:NAME"):
        load_policy(str(bad))
    big = tmp_path / "big.py"
    big.write_text("#" * 1_000_001)
    with pytest.raises(ModelError, match=r"over the limit"):
        load_policy(f"{big}:x")


# --------------------------------------------------------------------------- the other models and traces
def test_desktop_and_decentralized_grids():
    d = hs.compare("3.A", ["fcfs", "gcmu", "lpas-dg"], reps=3, horizon=300, seed=2, workers=1)
    assert d.model == "desktop-grid" and d.metric == "W" and d.success
    for p in d.policies:
        assert p.mean == hs.simulate("3.A", p.policy, reps=3, horizon=300, seed=2, workers=1).mean
    g = hs.compare("4.A", ["mct", "lpas-dec"], reps=3, horizon=800, seed=2, workers=1, metrics=["W", "messages"])
    assert g.model == "decentral" and g.metrics == ["W", "messages"]
    m = g.difference("lpas-dec", "mct", "messages")
    assert m.diff.high < 0  # LPAS_dec contacts fewer machines than MCT (every machine) per arrival
    vals = [r["messages"] for r in g.policy("mct").sim.replications]
    assert g.policy("mct").metrics["messages"]["mean"] == pytest.approx(np.mean(vals))


def test_coallocation_policies():
    prm = hs.CoallocParams.from_loads(rho=0.6, delta=10)
    r = hs.compare(prm, ["local", "heuristic", "always"], reps=3, horizon=1500, seed=3, workers=1)
    assert r.model == "coalloc" and r.metric == "cost" and len(r.policies) == 3
    vals = r.policy("local").values
    assert r.policy("local").mean == pytest.approx(np.mean(vals))


def _swf(path: Path, n: int = 1500, seed: int = 5) -> Path:
    """A small SWF log of one's own: 18 fields per job, Poisson-ish submits, log-normal run times."""
    rng = np.random.default_rng(seed)
    sub = np.cumsum(rng.exponential(60.0, n)).astype(int)
    run = (rng.lognormal(5, 1.0, n)).astype(int) + 1
    lines = ["; Version: 2.2", "; Computer: my own cluster", f"; MaxJobs: {n}"]
    for k in range(n):
        lines.append(" ".join(map(str, [k + 1, sub[k], 0, run[k], 1, -1, -1, 1, -1, -1, 1, 1 + k % 5, 1, -1, 1,
                                        -1, -1, -1])))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_trace_of_ones_own_every_policy_replays_the_same_windows(tmp_path):
    log = _swf(tmp_path / "mine.swf")
    r = hs.compare(my_system(), ["mct", "lpas"], trace=log, load=0.8, reps=5, seed=1, workers=1)
    assert r.trace == str(log) and r.jobs == 1500 and r.load == pytest.approx(0.8) and r.reps == 5
    for p in r.policies:
        assert len(p.values) == 5
        assert p.values == list(p.sim.extra["W_windows"])
        one = hs.simulate(my_system(), p.policy, trace=log, load=0.8, reps=5, seed=1, workers=1)
        assert p.mean == one.mean
    d = r.difference("lpas", "mct")
    diff = np.subtract(r.policy("lpas").values, r.policy("mct").values)
    assert d.diff.mean == pytest.approx(diff.mean(), rel=1e-12) and d.diff.n == 5
    out = _cli("compare", "2.C1", "--policy", "mct", "--policy", "lpas", "--trace", str(log), "--load", "0.8",
               "--reps", "5", "--workers", "1")
    assert out.exit_code == 0, out.output
    assert "1,500 jobs of 1,500 (none dropped) at load 0.8, at most 5 windows" in out.output
    assert "paired differences of W" in out.output and "too few" in out.output  # 5 windows: no interval


def test_exact_solvers_plug_in():
    """A registered exact solver (here the M/M/1 closed form) joins the comparison with its exact value."""
    from hetsched.compare.core import EXACT, ExactAnswer, register_exact

    def mm1(system, metric, **_):
        if system.N != 1 or system.M != 1:
            raise ModelError("mm1-exact: only one class on one machine")
        rho = system.alpha[0] / system.mu[0, 0]
        return ExactAnswer(rho / (1 - rho), metric, policy="mct", message="M/M/1 closed form")

    register_exact("mm1-exact", "mapping", mm1)
    try:
        s = hs.System.from_arrays(alpha=[0.5], mu=[[1.0]])
        r = hs.compare(s, ["mct", "mm1-exact"], reps=5, horizon=4000, seed=3, workers=1)
        ex = r.policy("mm1-exact")
        assert ex.exact == 1.0 and ex.simulated
        lo, hi = r.policy("mct").ci
        assert lo <= ex.exact <= hi  # the simulated value's CI covers the exact one
        assert "exact 1" in str(r)
        with pytest.raises(ModelError, match="only one class"):
            hs.compare(my_system(), ["mct", "mm1-exact"], reps=2, horizon=10, workers=1)
        # an exact value alone (nothing to simulate): the difference is the other's interval, shifted
        register_exact("mm1-value", "mapping", lambda system, metric, **_: ExactAnswer(1.0, metric))
        v = hs.compare(s, ["mct", "mm1-value"], reps=5, horizon=4000, seed=3, workers=1, metrics=["Q", "W"])
        assert not v.policy("mm1-value").simulated and v.policy("mm1-value").mean == 1.0
        d = v.difference("mct", "mm1-value")
        lo, hi = v.policy("mct").ci
        assert (d.diff.low, d.diff.high) == pytest.approx((lo - 1.0, hi - 1.0))
        assert v.difference("mct", "mm1-value", "W").diff is None  # no exact value of W
        assert v.policy("mct").rank == v.policy("mm1-value").rank == 1  # the CI covers the exact value
    finally:
        EXACT.pop("mm1-exact", None)
        EXACT.pop("mm1-value", None)


@pytest.mark.slow
def test_done_when_command_on_2c1(tmp_path):
    """Issue 22's command, as printed (10 replications x 20,000 on 2.C1), in a fresh process."""
    import subprocess
    import sys

    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "hetsched.cli", "compare", "2.C1", "--policy", "mct", "--policy",
                        "lpas", "--policy", "lpas-2k", "--policy-file", "examples/my_policy.py:my_rule", "--reps",
                        "10", "--horizon", "20000", "--outdir", str(out)], cwd=ROOT, capture_output=True, text=True,
                       timeout=3600)
    assert r.returncode == 0, r.stderr
    assert "paired differences of Q" in r.stdout and (out / "report.html").is_file()
    api = hs.compare("2.C1", ["mct", "lpas", "lpas-2k", load_policy(f"{POLICY_FILE}:my_rule")], reps=10,
                     horizon=20000)
    doc = json.loads((out / "results.json").read_text())
    for p in doc["policies"]:
        assert p["mean"] == api.policy(p["policy"]).mean


def test_hs_compare_is_the_function_even_after_a_submodule_import():
    import hetsched.compare.stats  # noqa: F401 - binds the package under the public name

    s = hs.System.from_arrays(alpha=[0.5], mu=[[1.0, 1.0]])
    r = hs.compare(s, ["mct", "met"], reps=2, horizon=100, seed=1, workers=1)
    assert isinstance(r, hs.CompareResult) and callable(hs.compare)


@pytest.mark.slow
def test_dask_backend_gives_the_same_numbers():
    """backend='dask' without a scheduler: a local Dask cluster for the call; the same values as the pool."""
    kw = dict(reps=4, horizon=500, seed=3, workers=2)
    a = hs.compare("2.B", ["mct", "lpas"], backend="dask", **kw)
    b = hs.compare("2.B", ["mct", "lpas"], **kw)
    assert [p.values for p in a.policies] == [p.values for p in b.policies]


@pytest.mark.slow
def test_a_pull_policy_of_ones_own_on_a_desktop_grid():
    """A user pull policy (Gcmu by hand) against the built-in: the same numbers, a difference of exactly 0."""

    @hs.pull_policy
    def my_gcmu(t, qlen, head_arrival, rate, eligible, u):
        best, best_key = -1, 0.0
        for i in range(qlen.shape[0]):
            if qlen[i] > 0 and rate[i] > 0.0:
                key = (t - head_arrival[i]) * rate[i]
                if best < 0 or key > best_key:
                    best, best_key = i, key
        return best

    r = hs.compare("3.A", ["gcmu", my_gcmu, "fcfs"], reps=3, horizon=300, seed=2, workers=1, tie="lowest")
    d = r.difference("gcmu", "my_gcmu")
    assert d.diff.mean == 0.0 and d.diff.low == d.diff.high == 0.0
    assert r.policy("gcmu").rank == r.policy("my_gcmu").rank
