"""Generated bad argument lists for every command, run in-process (forked, with a timeout).

Each generated argument list holds at least one value the command must refuse
(NaN, inf, zero or negative where meaningless, over a stated cap, not a number,
an unknown name, a file that is not what it should be). Truth: exit 2, one line
``error: ...`` naming the option (or file/field), no traceback, no hang.

Commands owned by other helpers are marked ``xfail(strict=False)`` on this
branch, with the owner named; the lead turns them on after merging.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from fuzz_runner import assert_refused, run_fork
from fuzz_strategies import bad_floats, bad_ints, bad_seeds, fuzz_settings, junk_words, shipped_ids
from hypothesis import given
from hypothesis import strategies as st

from hetsched import experiments

pytestmark = pytest.mark.fuzz


# Refusing bad arguments takes well under a second; a command that does not refuse
# runs until this timeout (kept short: a failing example is run twice).
OTHER_TIMEOUT = 8.0


def _known_gap(what: str, gap: str):
    """A command whose fuzz case still finds a gap (issue 15, open): stated here, not hidden."""
    return pytest.mark.xfail(strict=False, reason=f"{what}: {gap}")


@pytest.fixture(scope="module")
def files():
    """Bad files of several kinds (for scenario and SWF arguments)."""
    d = Path(tempfile.mkdtemp(prefix="hs-fuzz-files-"))
    (d / "empty.toml").write_text("")
    (d / "garbage.toml").write_bytes(os.urandom(300))
    (d / "fake.swf.gz").write_bytes(b"not gzip at all\n")
    (d / "garbage.swf").write_bytes(os.urandom(500))
    (d / "empty.swf").write_text("")
    (d / "text.swf").write_text("; a comment\n1 2 3\nnot numbers here\n")
    (d / "notadb.sqlite").write_text("this is not a database\n")
    (d / "adir.toml").mkdir()
    (d / "adir.swf").mkdir()
    os.mkfifo(d / "fifo.toml")
    os.mkfifo(d / "fifo.swf")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _bad_path(d: Path, kind: str) -> st.SearchStrategy[str]:
    names = {"toml": ["empty.toml", "garbage.toml", "adir.toml", "fifo.toml", "missing.toml"],
             "swf": ["fake.swf.gz", "garbage.swf", "empty.swf", "text.swf", "adir.swf", "fifo.swf", "missing.swf"]}
    return st.sampled_from([str(d / n) for n in names[kind]] + ["/dev/zero", "/dev/null", "x" * 5000])


# --------------------------------------------------------------------------- lp, scenarios, reproduce (this branch)

@fuzz_settings(120)
@given(data=st.data())
def test_lp_bad_arguments(files, data):
    sid = data.draw(st.sampled_from(shipped_ids()))
    choice = data.draw(st.sampled_from(["solution", "case", "arrivals", "scenario", "junk"]))
    if choice == "solution":
        args = ["lp", sid, "--solution", data.draw(st.sampled_from(["x", "", "simplex", "VERTEXX", "1"]))]
        names = ("--solution",)
    elif choice == "case":
        args = ["lp", sid, "--case", data.draw(bad_ints() | st.sampled_from(["99", "7"]))]
        names = ("--case", "case")
    elif choice == "arrivals":
        args = ["lp", sid, "--arrivals", data.draw(st.sampled_from(["alpha9", "", "x" * 300, "default", "*"]))]
        names = ("arrivals",)
    elif choice == "scenario":
        p = data.draw(_bad_path(files, "toml") | st.sampled_from(["9.Z", "", " ", "2.A\x00"]))
        args = ["lp", p]
        names = ("scenario", p[:20])
    else:
        args = ["lp", sid, data.draw(junk_words())]
        names = ("option", "argument", "--")
    o = run_fork(args, timeout=60)
    assert_refused(o, *names)


@fuzz_settings(20)
@given(w=junk_words())
def test_scenarios_bad_arguments(w):
    assert_refused(run_fork(["scenarios", w]), "option", "argument", "--")


def _bad_set(data, exp) -> tuple[list[str], tuple[str, ...]]:
    """A --set item that the experiment must refuse."""
    params = list(exp.params)
    how = data.draw(st.sampled_from(["unknown", "noeq", "value"] if params else ["unknown", "noeq"]))
    if how == "unknown":
        key = data.draw(st.sampled_from(["foo", "Reps", "re ps", "x" * 300, "-"]))
        return ["--set", f"{key}=1"], ("--set",)
    if how == "noeq":
        return ["--set", data.draw(st.sampled_from(["reps", "", "=", "=5"]))], ("--set",)
    p = data.draw(st.sampled_from(params))
    if p.kind in ("int", "ints"):
        lo = int(p.lo) if p.lo is not None else 0
        val = data.draw(bad_ints(lo) | st.just(str(int(p.hi) + 1) if p.hi is not None else "abc"))
        if p.kind == "ints":
            val = data.draw(st.sampled_from([val, f"[1, {val!r}]", "[]", "1,,x"]))
    elif p.kind in ("float", "floats"):
        zero_ok = p.lo == 0 and not p.lo_open  # e.g. inaccuracy I = 0: a valid value, not a bad one
        val = data.draw(bad_floats(positive=True, nonneg=zero_ok) | st.just(f"{p.hi * 10:g}" if p.hi else "nan"))
        if p.kind == "floats":
            val = data.draw(st.sampled_from([val, f"[0.1, {val!r}]", "[]"]))
    elif p.kind == "bool":
        val = data.draw(st.sampled_from(["maybe", "2", "", "[true]", "nope"]))
    elif p.choices:
        val = data.draw(st.sampled_from(["nope", "", "9.Z", "x" * 5000]))
    elif p.check is not None:
        val = data.draw(st.sampled_from(["nope", "-1", "x" * 5000]))
    else:  # free text: only a too-long value is bad
        val = "x" * 5000
    return ["--set", f"{p.name}={val}"], ("--set",)


@fuzz_settings(150)
@given(data=st.data())
def test_reproduce_bad_arguments(data):
    reg = experiments.registry()
    exp = reg[data.draw(st.sampled_from(sorted(reg)))]
    choice = data.draw(st.sampled_from(["set", "set", "set", "seed", "workers", "backend", "id", "junk"]))
    names: tuple[str, ...]
    if choice == "set":
        extra, names = _bad_set(data, exp)
    elif choice == "seed":
        extra, names = ["--seed", data.draw(bad_seeds())], ("--seed",)
    elif choice == "workers":
        extra, names = ["--workers", data.draw(bad_ints(1) | st.just("100000"))], ("--workers",)
    elif choice == "backend":
        extra, names = ["--backend", data.draw(st.sampled_from(["spark", "", "LOCALL", "ray"]))], ("--backend",)
    elif choice == "id":
        bad_id = data.draw(st.sampled_from(["nope", "thesis-table-9.9", "", "x" * 5000]))
        o = run_fork(["reproduce", bad_id, "--quick"])
        assert_refused(o, "experiment id")
        return
    else:
        extra, names = [data.draw(junk_words())], ("option", "argument", "--")
    # a valid --set before the bad item must not start the run either
    o = run_fork(["reproduce", exp.id, "--quick", "--outdir", tempfile.gettempdir() + "/hs-fuzz-results", *extra],
                 timeout=60)
    assert_refused(o, *names)


def test_reproduce_event_budget_is_refused_up_front(tmp_path):
    out = ["--outdir", str(tmp_path)]  # a fresh folder: existing results elsewhere must not decide the outcome
    o = run_fork(["reproduce", "thesis-table-2.1", "--quick", "--set", "reps=10000", "--set", "horizon=1e12", *out])
    assert_refused(o, "events estimated")
    o = run_fork(["reproduce", "coalloc-fig5", "--quick", "--set", "reps=10000", "--set", "completions=100000000",
                  *out])
    assert_refused(o, "events estimated")


# --------------------------------------------------------------------------- other helpers' commands

_SIM_CASES = [("2.A", "mct"), ("2.C1", "lpas"), ("2.D", "kpb"), ("2.B", "guided-lpas"), ("3.A", "lpas-dg"),
              ("3.A", "fcfs"), ("3.A", "gcmu"), ("4.A", "lpas-dec"), ("4.A", "mct")]


@fuzz_settings(80)
@given(data=st.data())
def test_simulate_bad_arguments(files, data):
    sid, pol = data.draw(st.sampled_from(_SIM_CASES))
    base = ["simulate", sid, "--policy", pol, "--reps", "2", "--horizon", "20", "--workers", "1", "--no-progress"]
    opt = data.draw(st.sampled_from(["--reps", "--horizon", "--seed", "--workers", "--k", "--tie", "--dist",
                                     "--warmup", "--backend", "--policy", "--case", "--arrivals", "scenario"]))
    if opt == "--reps":
        val = data.draw(bad_ints(1) | st.just("1000000"))
    elif opt == "--horizon":
        val = data.draw(bad_floats())
    elif opt == "--warmup":  # no warm-up (0) is valid
        val = data.draw(bad_floats(nonneg=True))
    elif opt == "--seed":
        val = data.draw(bad_seeds())
    elif opt == "--workers":
        val = data.draw(bad_ints(1) | st.just("100000"))
    elif opt == "--k":
        val = data.draw(bad_ints(1))
    elif opt in ("--tie", "--dist", "--backend", "--policy", "--arrivals"):
        val = data.draw(st.sampled_from(["nope", "", "x" * 300]))
    elif opt == "--case":
        val = data.draw(bad_ints(1))
    else:
        base[1] = data.draw(_bad_path(files, "toml"))
        assert_refused(run_fork(base, timeout=OTHER_TIMEOUT), "scenario", "file", "id")
        return
    assert_refused(run_fork(base + [opt, val], timeout=OTHER_TIMEOUT), opt, opt.lstrip("-"))


@fuzz_settings(60)
@given(data=st.data())
def test_mdp_coalloc_bad_arguments(data):
    opt = data.draw(st.sampled_from(["--rho", "--rho1", "--rho2", "--mu1", "--mu2", "--mu3", "--p", "--c1", "--c2",
                                     "--beta", "--delta", "--nu", "--eps", "--method", "--self-loop", "--boundary"]))
    if opt == "--delta":
        val = data.draw(bad_ints(1) | st.sampled_from(["5000", "100000"]))
    elif opt in ("--rho", "--rho1", "--rho2"):  # a load of 0 (no arrivals) is valid; 1 and more are overload
        val = data.draw(bad_floats(nonneg=True) | st.sampled_from(["1.5", "1", "2"]))
    elif opt == "--p":  # a probability: 0 and 1 are valid
        val = data.draw(bad_floats(nonneg=True) | st.sampled_from(["1.5", "-0.1"]))
    elif opt in ("--c1", "--c2"):  # a cost rate of 0 is valid (that class costs nothing)
        val = data.draw(bad_floats(nonneg=True))
    elif opt in ("--method", "--self-loop", "--boundary"):
        val = data.draw(st.sampled_from(["nope", "", "x" * 300]))
    else:
        val = data.draw(bad_floats())
    assert_refused(run_fork(["mdp", "coalloc", "--delta", "10", opt, val], timeout=OTHER_TIMEOUT), opt, opt.lstrip("-"))


@fuzz_settings(40)
@given(data=st.data())
def test_srn_gang_bad_arguments(data):
    opt = data.draw(st.sampled_from(["--policy", "--arrival-rate", "--local-rate", "--task-rate", "--mu",
                                     "--migration-guard"]))
    val = (data.draw(st.sampled_from(["nope", "", "x" * 300])) if opt in ("--policy", "--migration-guard")
           else data.draw(bad_floats(nonneg=opt == "--local-rate")))
    args = ["srn", "gang", "--policy", "LS", opt, val]
    assert_refused(run_fork(args, timeout=OTHER_TIMEOUT), opt, opt.lstrip("-"))


@fuzz_settings(60)
@given(data=st.data())
def test_muscle_run_bad_arguments(files, data):
    opt = data.draw(st.sampled_from(["--policy", "--jobs", "--level", "--load", "--sizes", "--rates", "--max-s",
                                     "--phi", "--swf", "--trigger", "--tau", "--seed"]))
    if opt == "--swf":
        val = data.draw(_bad_path(files, "swf"))
    elif opt in ("--jobs", "--level", "--max-s"):  # --level 0: no cap per round (valid)
        val = data.draw(bad_ints(0 if opt == "--level" else 1) | st.just("100000000"))
    elif opt in ("--load", "--phi"):
        val = data.draw(bad_floats())
    elif opt == "--tau":  # a backlog threshold of 0 is valid
        val = data.draw(bad_floats(nonneg=True))
    elif opt == "--seed":
        val = data.draw(bad_seeds())
    else:
        val = data.draw(st.sampled_from(["nope", "", "1,,2", "-1,2", "nan", "x" * 300]))
    args = ["muscle", "run", "--jobs", "200", opt, val]
    assert_refused(run_fork(args, timeout=OTHER_TIMEOUT), opt, opt.lstrip("-"), "swf")


def _dispatch_commands() -> list[str]:
    import typer

    from hetsched.cli import app

    grp = typer.main.get_command(app).commands.get("dispatch")
    return [c for c in ("demo", "bench") if grp is not None and c in getattr(grp, "commands", {})] or ["demo"]


@fuzz_settings(40)
@given(data=st.data())
def test_dispatch_bad_arguments(files, data):
    cmd = data.draw(st.sampled_from(_dispatch_commands()))
    if cmd == "demo":
        opt = data.draw(st.sampled_from(["--policy", "--workers", "--tasks", "--kill", "--seed", "--load", "--rate",
                                         "--journal"]))
    else:
        opt = data.draw(st.sampled_from(["--workers", "--tasks"]))
    if opt == "--policy":
        val = data.draw(st.sampled_from(["nope", "", "x" * 300]))
    elif opt in ("--workers", "--tasks", "--kill"):  # 100,000 tasks: over the run-time budget (about 1,000 s)
        val = data.draw(bad_ints(0 if opt == "--kill" else 1) | st.sampled_from(["50000000", "100000"]))
    elif opt == "--seed":
        val = data.draw(bad_seeds())
    elif opt == "--journal":
        val = data.draw(st.sampled_from([str(files / "notadb.sqlite"), str(files / "adir.toml"), "/dev/null"]))
    else:
        val = data.draw(bad_floats())
    base = ["dispatch", cmd] + (["--workers", "2", "--tasks", "10"] if cmd == "bench" else ["--tasks", "10"])
    assert_refused(run_fork(base + [opt, val], timeout=OTHER_TIMEOUT), opt, opt.lstrip("-"), "journal")
