"""The dispatcher's state machine driven by fake events: no cluster, no Dask, no clock.

Truths checked: the thesis's worked LP example (§3.3: alpha = [1, 1.5], mu =
[[9, 5], [2, 1]] gives delta*_11 = 0, so machine 1 never takes class 1); FCFS
hands tasks out in arrival order, Gcmu FIFO within each class and by the
``D_i(t) mu_ij`` key across classes (recomputed here by hand); every accepted
task is reported exactly once whatever happens to its attempts (conservation:
submitted = completed + failed + open); a task given back keeps its arrival
order; the prefetch depth follows ``clamp(round(s / e_j), 1, max)``;
``resolve_every`` changes when the LP is re-solved and nothing else; and no
module of the package touches a private Dask attribute.
"""

from __future__ import annotations

import ast
import math
from pathlib import Path

import numpy as np
import pytest

from hetsched.dispatch.dasklayer import MEMBERSHIP, DaskLayer
from hetsched.dispatch.options import DispatchOptions
from hetsched.dispatch.records import DONE, FAILED, QUEUED, RUNNING, Emulation
from hetsched.dispatch.state import DispatchState
from hetsched.dispatch.worker import KIND_CALL, KIND_EMULATE, execute_batch
from hetsched.errors import ModelError, UnstableError
from helpers import REPO_ROOT

SRC = REPO_ROOT / "src" / "hetsched"


def _state(rates, classes=("a", "b"), now=0.0, nthreads=None, **kw) -> DispatchState:
    kw.setdefault("adapt_arrivals", False)
    kw.setdefault("adapt_rates", False)
    st = DispatchState(list(classes), rates, DispatchOptions(**kw), Emulation(rates, {}, 1.0), now)
    st.membership({f"tcp://h:{k}": (name, (nthreads or {}).get(name, 1)) for k, name in enumerate(rates)}, now,
                  initial=True)
    st.solve(now, initial=True)
    return st


def _run(st: DispatchState, batch, t: float, ok: bool = True):
    """The worker ran the batch at time ``t``: every task returns its id (or fails)."""
    vals = [(t, t, ok, ("ok" if ok else "boom")) for _ in batch.items]
    st.settled([(batch.key, "finished", t, vals, t)])


def _accept(st, classes, t0=0.0, dt=0.01):
    return [st.accept(st.class_index(c), KIND_EMULATE, 1.0, t0 + k * dt) for k, c in enumerate(classes)]


def _conserved(st):
    s = st.stats
    assert s["submitted"] == s["completed"] + s["failed"] + st.open
    assert sum(t.state == QUEUED for t in st.tasks.values()) == int(st.qlen.sum())


# --------------------------------------------------------------------- decisions
def test_lpas_dg_support_of_the_thesis_example():
    st = _state({"0": [9.0, 2.0], "1": [5.0, 1.0]}, classes=("1", "2"), policy="lpas-dg", alpha=[1.0, 1.5])
    assert st.lam == pytest.approx(1 / 0.5667, abs=2e-3)  # lambda* = 1.7647 (thesis §3.3)
    assert st.machines["0"].eligible.tolist() == [False, True]  # delta*_11 = 0
    assert st.machines["1"].eligible.tolist() == [True, True]
    _accept(st, ["1"] * 5 + ["2"] * 5)
    ran = {"0": [], "1": []}
    t = 1.0
    while st.open:
        for b in st.decide(t):
            m = b.key.rsplit("-", 1)[1]
            ran[m] += [st.tasks[int(tid)].cls for tid in st.inflight[b.key][0]]
            _run(st, b, t)
        t += 0.1
    assert ran["0"] and 0 not in ran["0"]  # machine 1 never ran class 1
    assert st.stats["completed"] == 10
    _conserved(st)


def test_fcfs_one_machine_serves_in_arrival_order_across_classes():
    st = _state({"0": [2.0, 1.0]}, policy="fcfs")
    rng = np.random.default_rng(3)
    ids = _accept(st, [["a", "b"][int(rng.integers(2))] for _ in range(30)])
    order = []
    t = 1.0
    while st.open:
        (b,) = st.decide(t)
        order += list(st.inflight[b.key][0])
        _run(st, b, t)
        t += 1.0
    assert order == ids


def test_gcmu_key_recomputed_by_hand():
    # one machine, rates a = 2, b = 1; heads: a arrived at 0.5, b at 0.0. Gcmu: argmax (t - head) mu.
    st = _state({"0": [2.0, 1.0]}, policy="gcmu")
    st.accept(1, KIND_EMULATE, 1.0, 0.0)  # b at 0.0
    st.accept(0, KIND_EMULATE, 1.0, 0.5)  # a at 0.5
    (b,) = st.decide(0.9)  # keys: a (0.4)(2) = 0.8 < b (0.9)(1) = 0.9  -> b
    assert st.tasks[st.inflight[b.key][0][0]].cls == 1
    _run(st, b, 0.95)
    st.accept(1, KIND_EMULATE, 1.0, 0.95)
    (b,) = st.decide(1.0)  # a (0.5)(2) = 1.0 > b (0.05)(1) -> a
    assert st.tasks[st.inflight[b.key][0][0]].cls == 0


def test_prefetch_depth_and_batches():
    # e_j = time_unit / (a mean_i mu_ij) = 0.01 / 2 s; prefetch 0.04 s -> depth 8: two batches of 4 in flight
    st = _state({"0": [4.0, 1.0 / 0.75]}, policy="gcmu", prefetch=0.04, time_unit=0.01, max_prefetch=64)
    m = st.machines["0"]
    e = 0.01 * np.mean(1 / np.array([4.0, 1 / 0.75]))
    assert m.depth == max(1, min(64, round(0.04 / e))) == 8 and m.chunk == 4 and m.low == 4
    ids = _accept(st, ["a"] * 40)
    b1, b2 = st.decide(1.0)
    assert len(b1.items) == len(b2.items) == 4
    assert st.decide(1.0) == []  # depth outstanding: nothing more
    _run(st, b1, 1.1)  # one batch back: room for one more chunk, decided in arrival order (Gcmu, one class)
    (b3,) = st.decide(1.2)
    assert list(st.inflight[b3.key][0]) == ids[8:12]
    big = _state({"0": [1e-3, 1e-3]}, policy="gcmu", prefetch=0.04, time_unit=0.01)
    assert big.machines["0"].depth == 1  # tasks longer than the prefetch window: pure pull


# --------------------------------------------------------------------- faults, exactly once
def test_worker_leaves_tasks_go_back_in_arrival_order_and_are_cancelled():
    st = _state({"0": [1.0, 1.0], "1": [1.0, 1.0]}, policy="fcfs")
    ids = _accept(st, ["a"] * 6)
    bs = st.decide(1.0)
    assert len(bs) == 2
    gone = next(b for b in bs if b.address == "tcp://h:0")
    st.membership({"tcp://h:1": ("1", 1)}, 1.5)  # worker "0" left
    assert st.take_cancels() == [gone.key]
    assert st.stats["resubmitted"] == 1
    assert [t.id for t in st.queues[0]] == sorted(set(ids) - {st.inflight[bs[1].key][0][0]})  # arrival order
    t = 2.0
    seen = []
    st.on_result = lambda tid, c, ok, v: seen.append(tid)
    for b in bs:
        if b is not gone:
            _run(st, b, t)
    st.settled([(gone.key, "finished", t, [(t, t, True, 1)], t)])  # a late answer of a cancelled attempt: ignored
    while st.open:
        t += 1
        for b in st.decide(t):
            _run(st, b, t)
    assert sorted(seen) == ids and len(seen) == len(set(seen))
    _conserved(st)


def test_timeout_resubmits_first_finisher_wins_duplicate_ignored():
    st = _state({"0": [1.0], "1": [1.0]}, classes=("a",), policy="fcfs", timeout_factor=3.0, timeout_min=0.0)
    (tid,) = _accept(st, ["a"])
    (b1,) = st.decide(0.0)
    assert st.wake() == pytest.approx(3.0)
    st.tick(3.5)  # the batch is late: its task goes back, its machine is silent
    assert st.tasks[tid].state == QUEUED and st.machines[b1.key.rsplit("-", 1)[1]].silent
    (b2,) = st.decide(3.6)
    assert b2.address != b1.address
    seen = []
    st.on_result = lambda i, c, ok, v: seen.append(i)
    _run(st, b2, 4.0)
    _run(st, b1, 5.0)  # the slow attempt answers after all
    assert seen == [tid] and st.tasks[tid].state == DONE and st.stats["duplicates_ignored"] == 0
    assert b1.key not in st.inflight  # cancelled when the other attempt won
    assert not any(m.silent for m in st.machines.values())


def test_lost_attempt_goes_back_erred_attempt_fails_its_tasks():
    st = _state({"0": [1.0]}, classes=("a",), policy="fcfs")
    ids = _accept(st, ["a", "a"])
    (b,) = st.decide(1.0)
    st.settled([(b.key, "lost", 1.1, None, 1.1)])
    assert st.tasks[ids[0]].state == QUEUED and st.stats["resubmitted"] == 1
    (b,) = st.decide(1.2)
    st.settled([(b.key, "error", 1.3, "ModuleNotFoundError: No module named 'mine'", 1.3)])
    assert st.tasks[ids[0]].state == FAILED and "could not run on the worker" in st.results[ids[0]]
    (b,) = st.decide(1.4)
    _run(st, b, 1.5, ok=False)  # the user's code failed: failed, not retried
    assert st.tasks[ids[1]].state == FAILED and st.open == 0
    assert st.stats["failed"] == 2 and st.stats["completed"] == 0
    _conserved(st)


def test_machine_down_and_up():
    st = _state({"0": [1.0], "1": [1.0]}, classes=("a",), policy="fcfs")
    _accept(st, ["a"] * 4)
    b0, b1 = st.decide(0.0)
    st.set_machine_up("0", False, 0.5)
    assert st.take_cancels() == [b0.key] and st.stats["resubmitted"] == 1
    _run(st, b1, 0.55)
    assert [b.address for b in st.decide(0.6)] == ["tcp://h:1"]  # machine 0 is down: nothing for it
    st.set_machine_up("0", True, 0.7)
    assert [b.address for b in st.decide(0.8)] == ["tcp://h:0"]
    _conserved(st)


# --------------------------------------------------------------------- membership, journal rows, errors
def test_membership_rates_slots_and_errors():
    with pytest.raises(ModelError, match=r"no execution rates for worker\(s\) \['2'\]"):
        _state({"0": [1.0], "1": [1.0]}, classes=("a",), policy="gcmu", nthreads=None) \
            .membership({"x": ("2", 1)}, 0.0, initial=True)
    st = _state({"0": [1.0, 2.0]}, policy="gcmu", nthreads={"0": 3}, availability={"0#1": 0.5})
    assert sorted(st.machines) == ["0#0", "0#1", "0#2"] and st.machines["0#1"].a == 0.5
    st.membership({"tcp://h:0": ("0", 3), "tcp://h:9": ("stranger", 1)}, 1.0)  # joins later without rates
    assert any(e["event"] == "ignored" and e["worker"] == "stranger" for e in st.events)
    with pytest.raises(UnstableError, match="lambda\\* = 0.6"):
        _state({"0": [1.0], "1": [1.0], "2": [1.0]}, classes=("a",), policy="lpas-dg", alpha=[5.0])
    with pytest.raises(ModelError, match="alpha: expected 2 arrival rates"):
        _state({"0": [1.0, 1.0]}, policy="lpas-dg", alpha=[1.0])
    with pytest.raises(ModelError, match=r"rates\['0'\]"):
        DispatchState(["a", "b"], {"0": [1.0]}, DispatchOptions(policy="gcmu"))
    with pytest.raises(ModelError, match="unknown class 'zz'"):
        st.class_index("zz")


def test_journal_rows_and_withdraw():
    st = _state({"0": [1.0]}, classes=("a",), policy="fcfs")
    st.journaling = True
    ids = _accept(st, ["a"] * 3)
    assert [r[0] for r in st.pending_add] == ids
    st.withdraw(ids[1:])
    assert st.open == 1 and [r[0] for r in st.pending_add] == ids[:1] and st.next_id == ids[1]
    (b,) = st.decide(1.0)
    _run(st, b, 2.0)
    assert [r[:2] for r in st.pending_finish] == [(ids[0], "done")]


def test_options_are_validated_by_name():
    for kw, msg in ((dict(policy="sjf"), "policy"), (dict(policy="lpas-dg"), "alpha"),
                    (dict(resolve_every=0), "resolve_every"), (dict(prefetch=-1), "prefetch"),
                    (dict(availability={"0": 1.5}), r"availability\['0'\]"), (dict(max_prefetch=0), "max_prefetch"),
                    (dict(timeout_factor=float("nan")), "timeout_factor"), (dict(slots=0), "slots")):
        kw.setdefault("policy", "gcmu")
        with pytest.raises(ModelError, match=msg):
            DispatchOptions(**kw)
    with pytest.raises(ModelError, match=r"unknown option\(s\) \['poll_interval'\]"):
        DispatchOptions.build(policy="gcmu", poll_interval=0.2)
    o = DispatchOptions(policy="GCMU", prefetch=0.5)
    assert o.policy == "gcmu" and o.replace(prefetch=0.0).prefetch == 0.0 and hash(o)


# --------------------------------------------------------------------- resolve_every (thesis §3.5.2, T_system)
def _availability_script(resolve_every):
    rates = {"0": [4.0, 1.0], "1": [1.0, 4.0], "2": [2.0, 2.0]}
    st = _state(rates, policy="lpas-dg", alpha=[1.2, 1.2], resolve_every=resolve_every)
    events = {0.3: ("1", False), 0.7: ("1", True), 1.6: ("2", False)}
    support = {}
    for k in range(1, 41):
        t = round(0.1 * k, 10)
        if t in events:
            st.set_machine_up(*events[t], t)
        st.tick(t)
        support[t] = {key: m.eligible.tolist() for key, m in st.machines.items()}
    solves = [e["t"] for e in st.events if e["event"] == "lp"]
    return st, solves, support


def test_resolve_every_changes_when_the_lp_is_solved_and_nothing_else():
    st0, solves0, sup0 = _availability_script(None)
    st1, solves1, sup1 = _availability_script(1.0)
    assert solves0 == [0.0, 0.3, 0.7, 1.6]  # default: at every availability event
    assert solves1 == [0.0, 1.0, 2.0]  # periodic: at t0 + k T, only when something changed
    # between an event and the next period the old support stands ...
    assert sup1[0.5] == sup1[0.1] and sup0[0.5] != sup0[0.1]
    # ... and once both have solved the same machine set, everything is the same
    for t in (1.0, 1.5, 2.0, 3.0, 4.0):
        if t >= 2.0 or t < 1.6:
            assert sup0[t] == sup1[t], t
    assert st0.lam == st1.lam
    for st in (st0, st1):
        st.set_machine_up("2", True, 4.1)
    st1.tick(4.1)
    assert st1.wake() == pytest.approx(5.0)  # a change is pending until the next period
    st0.tick(4.1)
    st1.tick(5.0)
    assert {k: m.eligible.tolist() for k, m in st0.machines.items()} == \
        {k: m.eligible.tolist() for k, m in st1.machines.items()}
    # the same tasks then get the same decisions
    picks = []
    for st in (st0, st1):
        _accept(st, ["a", "b"] * 6, t0=5.0)
        picks.append([(b.address, b.items) for b in st.decide(5.5)])
    assert picks[0] == picks[1]


# --------------------------------------------------------------------- the Dask layer's bookkeeping
class _Inbox(list):
    put = list.append


def test_membership_events_latest_snapshot_wins():
    layer = DaskLayer(client=None, options=DispatchOptions(policy="fcfs"), inbox=_Inbox())
    layer._on_event((1.0, {"seq": 2, "workers": {"a": ["0", 1], "b": ["1", 2]}}))
    layer._on_event((1.1, {"seq": 1, "workers": {"a": ["0", 1]}}))  # late, older: ignored
    layer._on_event((1.2, {"hello": "someone else"}))
    assert layer.workers == {"a": ("0", 1), "b": ("1", 2)}
    assert len(layer.inbox) == 1 and layer.inbox[0][0] is MEMBERSHIP


def test_execute_batch_reports_user_errors_as_data():
    out = execute_batch([(KIND_CALL, (math.sqrt, (4.0,), {}), 0.0), (KIND_CALL, (math.sqrt, (-1.0,), {}), 0.0),
                         (KIND_EMULATE, 1.0, 0.0)])
    assert out[0][2] is True and out[0][3] == 2.0
    assert out[1][2] is False and "ValueError" in out[1][3]
    assert out[2][2] is True and all(o[0] <= o[1] for o in out)


# --------------------------------------------------------------------- no private Dask attribute
def _offences(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            base = node.value
            if isinstance(base, ast.Name) and (base.id in ("self", "cls") or
                                               (base.id == "sys" and node.attr == "_current_frames")):
                continue  # own attributes; os._exit; the stdlib's sampler of thread stacks
            bad.append(f"{path.name}:{node.lineno}: .{node.attr}")
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("getattr", "setattr", "hasattr"):
            if len(node.args) > 1 and isinstance(node.args[1], ast.Constant) and \
                    str(node.args[1].value).startswith("_") and not str(node.args[1].value).startswith("__"):
                bad.append(f"{path.name}:{node.lineno}: getattr {node.args[1].value}")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for mod in mods:
                if mod.split(".")[0] in ("distributed", "dask", "tornado") and any(
                        p.startswith("_") for p in mod.split(".")):
                    bad.append(f"{path.name}:{node.lineno}: import {mod}")
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("distributed", "dask"):
                bad += [f"{path.name}:{node.lineno}: import {a.name}" for a in node.names if a.name.startswith("_")]
    return bad


def test_no_private_dask_attribute_anywhere(tmp_path):
    files = sorted((SRC / "dispatch").glob("*.py")) + [SRC / "experiments" / "mgst.py"]
    assert len(files) >= 10
    bad = [o for f in files for o in _offences(f)]
    assert bad == [], bad
    # the check is not vacuous: it finds what the dispatcher used to do
    probe = tmp_path / "probe.py"
    probe.write_text("async def f(fut, client):\n    await fut._state.wait()\n    client._gather([fut])\n"
                     "from distributed.utils import _maybe_complex\n")
    assert len(_offences(probe)) == 3
