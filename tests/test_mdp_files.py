"""`hetsched.mdp.read` / `solve` and `hetsched mdp solve` on third-party files, against Storm.

Truths: Storm's own parse of the same file (structure), Storm's exact long-run
average engine and its sound discounted engine (values, 1e-6 relative; multichain
models included), Storm's CTMC read back and solved by a direct LU (continuous-time
discounting), and exhaustive enumeration of every policy where Storm has no
reference (a CTMDP; discounted Markov automata; the polling automaton, on which
Storm's exact engine fails). Files: ``tests/data/mdp`` (README there).
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import hetsched as hs
from hetsched.errors import HetschedError, ModelError

D = Path(__file__).parent / "data" / "mdp"
stormpy = pytest.importorskip("stormpy")
from hetsched.mdp.storm import storm_model, storm_values  # noqa: E402

#: (file, reward, Storm-side files) — every file Storm reads, each of its reward structures that matter
STORM_CASES = [
    ("consensus2.drn", "heads", {}),
    ("consensus2.drn", "steps", {}),
    ("csma2-2.drn", "delivered", {}),
    ("csma2-2.drn", "time", {}),
    ("two_dice.tra", "flip", {"state_rewards": D / "two_dice.flip.state.rew",
                              "transition_rewards": D / "two_dice.flip.trans.rew"}),
    ("die.tra", "coin_flips", {"transition_rewards": D / "die.coin_flips.trans.rew"}),
    ("tandem5.drn", "customers", {}),
    ("polling2.drn", "served", {}),
    ("simple-ma.drn", "r", {}),
    ("hybrid-ma.drn", "r", {}),
    ("erlang10-10-ma.drn", "notgoal", {}),  # QComp's erlang (K = R = 10): multichain, instantaneous choices
]


def _rel(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.max(np.abs(a - b) / np.maximum(1.0, np.abs(b))))


@pytest.fixture(scope="module")
def models():
    return {f: hs.mdp.read(D / f) for f in {c[0] for c in STORM_CASES}}


@pytest.mark.parametrize("name", sorted({c[0] for c in STORM_CASES}))
def test_structure_equals_storms_parse(name, models):
    m = models[name]
    files = next(c[2] for c in STORM_CASES if c[0] == name)
    sm = storm_model(D / name, **files)
    tm = sm.transition_matrix
    keep = []
    for s in range(sm.nr_states):
        lo, hi = tm.get_row_group_start(s), tm.get_row_group_end(s)
        # a state with a rate and instantaneous choices: hetsched drops the delay (maximal progress)
        hybrid = m.kind == "ma" and sm.exit_rates[s] > 0 and hi - lo > 1
        keep += list(range(lo + 1 if hybrid else lo, hi))
    assert (m.n_states, m.n_choices) == (sm.nr_states, len(keep))
    rows, cols, vals = [], [], []
    for i, r in enumerate(keep):
        for e in tm.get_row(r):
            rows.append(i), cols.append(e.column), vals.append(float(e.value))
    S = sp.csr_matrix((vals, (rows, cols)), shape=(len(keep), tm.nr_columns)).toarray()
    mine = m.matrix.toarray()
    if m.kind == "ma":  # Storm stores a Markovian state's probabilities; hetsched its rates
        exit_rate = np.asarray(sm.exit_rates)
        mk = np.repeat(m.markovian, np.diff(m.state_ptr))
        mine[mk] /= exit_rate[m.choice_state[mk]][:, None]
    assert np.allclose(mine, S, atol=1e-12)
    assert sorted(m.initial.tolist()) == sorted(sm.initial_states)
    for lab in sm.labeling.get_labels():
        if lab in m.labels:
            assert sorted(m.labels[lab].tolist()) == sorted(sm.labeling.get_states(lab))


@pytest.mark.parametrize("name,reward,files", STORM_CASES, ids=[f"{c[0]}:{c[1]}" for c in STORM_CASES])
def test_values_agree_with_storm(name, reward, files, models):
    m = models[name]
    storm_reward = None if name.endswith(".tra") else reward
    crits = [("average", None)]
    if m.kind != "ma" and m.kind != "ctmdp":
        crits.append(("discounted", 0.5 if m.continuous_time else 0.9))
    for crit, disc in crits:
        for mx in ((False, True) if m.kind in ("mdp", "ma") else (False,)):
            ours = hs.mdp.solve(m, crit, discount=disc, maximise=mx, reward=reward)
            ref = storm_values(D / name, crit, disc, mx, storm_reward, **files)
            assert ours.success, ours.message
            assert _rel(ours.values, ref["values"]) <= 1e-6, (crit, mx, ref["setting"])


def test_multichain_consensus_gains_differ_and_match_storm(models):
    m = models["consensus2.drn"]
    res = hs.mdp.solve(m, "average", reward="heads")
    assert res.multichain and res.success
    assert res.values.min() == pytest.approx(0.0) and res.values.max() == pytest.approx(1.0)
    assert res.value == pytest.approx(49 / 128, abs=1e-12)  # Storm's exact answer is 49/128
    assert res.solver.gain is None and "multichain" in res.message
    # the lowest-action policy, where the unichain solver used to start, is itself multichain
    k0 = hs.mdp.recurrent_classes(m.matrix[m.state_ptr[:-1]])
    assert k0.max() >= 1


@pytest.mark.parametrize("stem,twin,reward,kind", [
    ("consensus2.prism", "consensus2.drn", "heads", "mdp"),
    ("tandem5.prism", "tandem5.drn", "customers", "ctmc"),
])
def test_prism_explicit_twin_gives_storms_values(stem, twin, reward, kind):
    m = hs.mdp.read(D / f"{stem}.tra")
    assert m.kind == kind and m.format == "prism-explicit" and reward in m.rewards
    assert m.valuations is not None and m.labels["init"].tolist() == [0]
    for crit, disc in (("average", None), ("discounted", 0.9 if kind == "mdp" else 0.5)):
        ours = hs.mdp.solve(m, crit, discount=disc, reward=reward)
        ref = storm_values(D / twin, crit, disc, False, reward)
        assert _rel(ours.values, ref["values"]) <= 1e-6


def _policies(m):
    nch = np.diff(m.state_ptr)
    dec = np.flatnonzero(nch > 1)
    for combo in itertools.product(*[range(int(nch[s])) for s in dec]):
        sigma = m.state_ptr[:-1].copy()
        sigma[dec] += np.array(combo, dtype=np.int64)
        yield sigma


def test_polling_automaton_against_all_policies_and_storm_sound():
    from hetsched.mdp.automata import eliminate
    from hetsched.mdp.average import stationary_distribution

    m = hs.mdp.read(D / "polling-ma.drn")
    r = m.rewards["holding"]
    best = np.inf
    for sigma in _policies(m):  # 512 policies; each an irreducible CTMC on the Markovian states
        e = eliminate(m, r, sigma)
        Q = e["R"] - sp.diags(np.asarray(e["R"].sum(axis=1)).ravel())
        best = min(best, float(stationary_distribution(Q) @ e["cost"]))
    ours = hs.mdp.solve(m, "average", reward="holding")
    assert ours.value == pytest.approx(best, rel=1e-12)
    ref = storm_values(D / "polling-ma.drn", "average", None, False, "holding", exact=False)
    assert _rel(ours.values, ref["values"]) <= 1e-6


def _ma_discounted_by_enumeration(m, reward, beta):
    """Full linear system over all states per policy (no elimination); min over the policies, per state."""
    r = m.rewards[reward]
    cs = m.choice_state
    best = np.full(m.n_states, np.inf)
    for sigma in _policies(m):
        A = m.matrix[sigma].toarray()
        imp = np.zeros(m.n_states)
        if r.action is not None:
            imp += r.action[sigma]
        rate = A.sum(axis=1)
        L = np.zeros((m.n_states, m.n_states))
        b = np.zeros(m.n_states)
        for s in range(m.n_states):
            if m.markovian[s]:  # (beta + E) J - sum q J = state reward + E x action reward
                L[s] = -A[s]
                L[s, s] += beta + rate[s]
                b[s] = (r.state[s] if r.state is not None else 0.0) + rate[s] * imp[s]
            else:  # J = impulse + sum P J
                L[s] = -A[s]
                L[s, s] += 1.0
                b[s] = imp[s]
        best = np.minimum(best, np.linalg.solve(L, b))
    del cs
    return best


@pytest.mark.parametrize("name", ["simple-ma.drn", "hybrid-ma.drn"])
def test_discounted_markov_automaton_against_all_policies(name):
    m = hs.mdp.read(D / name)
    ours = hs.mdp.solve(m, "discounted", discount=0.3, reward="r")
    assert ours.success
    assert np.allclose(ours.values, _ma_discounted_by_enumeration(m, "r", 0.3), rtol=1e-10, atol=1e-12)


def test_ctmdp_against_all_policies():
    m = hs.mdp.read(D / "ctmdp.tra", state_rewards=D / "ctmdp.cost.state.rew")
    assert m.kind == "ctmdp" and m.n_choices == 16
    c = m.rewards[""].state
    best_d, best_g = np.full(m.n_states, np.inf), np.full(m.n_states, np.inf)
    for sigma in _policies(m):
        R = m.matrix[sigma].toarray()
        np.fill_diagonal(R, 0.0)
        Q = R - np.diag(R.sum(axis=1))
        best_d = np.minimum(best_d, np.linalg.solve(0.5 * np.eye(m.n_states) - Q, c))
        # gain by the Abelian limit beta J_beta (beta -> 0), an independent route to the multichain gain
        b = 1e-9
        best_g = np.minimum(best_g, b * np.linalg.solve(b * np.eye(m.n_states) - Q, c))
    d = hs.mdp.solve(m, "discounted", discount=0.5)
    g = hs.mdp.solve(m, "average")
    assert np.allclose(d.values, best_d, rtol=1e-10)
    assert np.allclose(g.values, best_g, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name,words", [
    ("refused-pomdp-maze.drn", "POMDP"),
    ("refused-parametric-die.drn", "parametric"),
    ("refused-interval-tiny.drn", "interval"),
    ("zeno-ma.drn", "Zeno"),
])
def test_refused_by_name(name, words):
    with pytest.raises(ModelError, match=words):
        hs.mdp.solve(D / name, "average", reward="r" if name == "zeno-ma.drn" else None)


def test_bad_files_one_clear_error(tmp_path):
    bad = tmp_path / "a.tra"
    bad.write_text("mdp\n0 0 1 0.5\n0 0 2 0.4\n1 0 1 1\n2 0 2 1\n")
    with pytest.raises(ModelError, match=r"state 0, choice 0 sum to 0\.9"):
        hs.mdp.read(bad)
    bad.write_text("dtmc\n0 1 x\n")
    with pytest.raises(ModelError, match="'x' is not a number"):
        hs.mdp.read(bad)
    bad.write_text("0 1 1\n1 1 1\n")
    with pytest.raises(ModelError, match="neither a model type"):
        hs.mdp.read(bad)
    drn = tmp_path / "a.drn"
    drn.write_text("@type: MDP\n@parameters\n\n@reward_models\nr\n@nr_states\n1\n@nr_choices\n1\n@model\n"
                   "state 0 [1] init\n\taction 0 [0]\n\t\t3 : 1\n")
    with pytest.raises(ModelError, match="transition to state 3"):
        hs.mdp.read(drn)
    with pytest.raises(HetschedError, match="model file .*missing.drn.*no such file"):
        hs.mdp.read(tmp_path / "missing.drn")
    with pytest.raises(HetschedError, match="not a regular file|folder"):
        hs.mdp.read(tmp_path)
    m = hs.mdp.read(D / "consensus2.drn")
    with pytest.raises(ModelError, match="choose one with --reward"):
        hs.mdp.solve(m, "average")
    with pytest.raises(ModelError, match="discount factor in \\(0, 1\\)"):
        hs.mdp.solve(m, "discounted", discount=1.0, reward="heads")


def _cli(*args):
    from typer.testing import CliRunner

    from hetsched.cli import app

    return CliRunner().invoke(app, ["mdp", "solve", *map(str, args)])


def test_cli_json_contract_and_errors():
    r = _cli(D / "consensus2.drn", "--reward", "heads", "--maximise", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    for key in ("status", "success", "message", "seconds", "kind", "criterion", "value", "values", "policy",
                "multichain", "mapping"):
        assert key in d
    assert d["value"] == pytest.approx(5 / 9) and d["multichain"] is True and len(d["values"]) == 272
    r = _cli(D / "tandem5.prism.tra", "--criterion", "discounted", "--discount", "0.5")
    assert r.exit_code == 0 and "CTMC" in r.stdout and "(initial)" in r.stdout
    for args, msg in [((D / "consensus2.drn",), "--reward"),
                      ((D / "die.tra", "--criterion", "discounted"), "--discount"),
                      ((D / "die.tra", "--criterion", "bias"), "--criterion"),
                      ((D / "refused-pomdp-maze.drn",), "POMDP")]:
        r = _cli(*args)
        assert r.exit_code == 2 and "error:" in r.output and msg in r.output, r.output
        assert "Traceback" not in r.output


def test_cli_process_exit_code():
    """One real process: the error line on stderr, exit code 2."""
    p = subprocess.run([sys.executable, "-m", "hetsched.cli", "mdp", "solve", str(D / "zeno-ma.drn"), "--reward", "r"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and p.stderr.startswith("error:") and "Zeno" in p.stderr


@pytest.mark.parametrize("cyclic", [False, True])
def test_elimination_of_instantaneous_states_equals_a_dense_inverse(cyclic):
    from hetsched.mdp.automata import _absorb

    rng = np.random.default_rng(7)
    nI, nM = 30, 12
    P = np.triu(rng.random((nI, nI)) * (rng.random((nI, nI)) < 0.2), 1)  # acyclic: strictly upper triangular
    if cyclic:
        P[5, 2] = P[7, 7] = 0.3  # a cycle and a self-loop
    out = rng.random((nI, nM)) * (rng.random((nI, nM)) < 0.3)
    out[:, 0] += 0.1  # every state can reach a Markovian state
    tot = P.sum(axis=1) + out.sum(axis=1)
    P, out = P / tot[:, None], out / tot[:, None]
    r = rng.random(nI)
    B, u = _absorb(sp.csr_matrix(P), sp.csr_matrix(out), r)
    inv = np.linalg.inv(np.eye(nI) - P)
    assert np.allclose(B.toarray(), inv @ out, atol=1e-13) and np.allclose(u, inv @ r, atol=1e-13)
    assert np.allclose(B.toarray().sum(axis=1), 1.0)  # every instantaneous path ends in a Markovian state
