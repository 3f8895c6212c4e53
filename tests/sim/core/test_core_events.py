"""The event list against a heapq reference with the same (time, priority, sequence) order."""

import heapq

import numpy as np
import pytest

from hetsched.sim.core.events import ev_cancel, ev_new, ev_pop, ev_schedule


def run_both(ops_seed, n_slots=13, n_ops=3000):
    rng = np.random.default_rng(ops_seed)
    ev = ev_new(n_slots)
    ref = {}  # slot -> (t, prio, seq): the pending event of each slot
    seq = 0
    popped, popped_ref = [], []
    for _ in range(n_ops):
        op = rng.random()
        slot = int(rng.integers(n_slots))
        if op < 0.55:
            t = float(rng.integers(0, 20))  # many equal times: the tie order is exercised
            prio = int(rng.integers(0, 3))
            ev_schedule(ev, slot, t, prio)
            ref[slot] = (t, prio, seq)
            seq += 1
        elif op < 0.7:
            ev_cancel(ev, slot)
            ref.pop(slot, None)
        else:
            s = ev_pop(ev)
            if ref:
                best = min(ref, key=lambda k: ref[k])
                popped_ref.append((best, ref.pop(best)[0]))
            else:
                popped_ref.append((-1, None))
            popped.append((int(s), popped_ref[-1][1]))
        assert ev.meta[0] == len(ref)
    return popped, popped_ref


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_reference_order(seed):
    ours, ref = run_both(seed)
    assert [s for s, _ in ours] == [s for s, _ in ref]


def test_drain_is_sorted_by_time_priority_sequence():
    ev = ev_new(50)
    rng = np.random.default_rng(9)
    keys = []
    for slot in range(50):
        t, p = float(rng.integers(0, 5)), int(rng.integers(0, 2))
        ev_schedule(ev, slot, t, p)
        keys.append((t, p, slot))  # sequence = slot here
    out = [ev_pop(ev) for _ in range(50)]
    assert out == [k[2] for k in sorted(keys)]
    assert ev_pop(ev) == -1 and ev.ht[0] == np.inf


def test_reschedule_top_later_and_earlier():
    ev = ev_new(3)
    ev_schedule(ev, 0, 1.0, 0)
    ev_schedule(ev, 1, 2.0, 0)
    ev_schedule(ev, 2, 3.0, 0)
    ev_schedule(ev, 0, 5.0, 0)  # later: moves down
    assert ev.hs[0] == 1
    ev_schedule(ev, 2, 0.5, 0)  # earlier: moves up
    assert [ev_pop(ev) for _ in range(3)] == [2, 1, 0]
