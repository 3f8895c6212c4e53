"""Regenerate the model files of this folder (needs stormpy; run from the repository root).

    .venv/bin/python tests/data/mdp/make_files.py

Storm builds every DRN file from a PRISM program (its own ``export_to_drn``);
the PRISM programs are stormpy's example models (installed with stormpy,
``stormpy/examples/files``), some with a reward structure appended, and three
small Markov automata written here. The PRISM-format explicit twins
(``*.prism.tra`` ...) are written from Storm's model in PRISM's documented explicit
format (https://www.prismmodelchecker.org/manual/Appendices/ExplicitModelFiles).
Storm-format explicit files and the refused DRN files are copied unchanged.
See README.md for sources and licences.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import stormpy
import stormpy.examples as _ex

HERE = Path(__file__).resolve().parent
EX = Path(_ex.__file__).resolve().parent / "files"

#: reward structures appended to stormpy's example programs (the long-run average of a label's states)
APPEND = {
    "consensus2": ("mdp/coin2-2.nm", 'rewards "heads"\n  coin1=1 & coin2=1 : 1;\nendrewards\n'),
    "csma2-2": ("mdp/csma2_2.nm", 'rewards "delivered"\n  s1=4 & s2=4 : 1;\nendrewards\n'
                                  'rewards "collisions"\n  b=2 : 1;\nendrewards\n'),
    "simple-ma": ("ma/simple.ma", 'rewards "r"\n  s=1 : 1;\n  s=3 : 2;\n  [alpha] true : 1;\nendrewards\n'),
    "zeno-ma": ("ma/hybrid_states.ma", 'rewards "r"\n  s=1 : 3;\n  s=4 : 1;\n  [] s=3 : 0.5;\nendrewards\n'),
}
#: hybrid_states.ma without its instantaneous self-loops (which allow Zeno behaviour): states with a rate and
#: instantaneous choices (maximal progress) remain
HYBRID_FIX = (("[] (s=3) -> 1 : true;", "[] (s=3) -> 1 : (s'=1);"), ("[] (s=4) -> 1 : true;", "[] (s=4) -> 1 : (s'=2);"))

#: a server that, when it becomes free, chooses which of two finite queues to serve (instantaneous choice)
POLLING_MA = """ma
const int C = 3;
module server
  q1 : [0..C] init 0;
  q2 : [0..C] init 0;
  b : [0..2] init 0; // 0 idle, 1 or 2 serving that queue
  <> b>0 | (q1=0 & q2=0) -> (q1<C ? 1.0 : 0) : (q1'=min(q1+1,C)) + (q2<C ? 1.5 : 0) : (q2'=min(q2+1,C))
                            + (b=1 ? 2.0 : 0) : (b'=0) + (b=2 ? 3.0 : 0) : (b'=0);
  [serve1] b=0 & q1>0 -> (b'=1) & (q1'=q1-1);
  [serve2] b=0 & q2>0 -> (b'=2) & (q2'=q2-1);
endmodule
rewards "holding"
  true : q1 + 2*q2 + (b=1 ? 1 : 0) + (b=2 ? 2 : 0);
  [serve2] true : 0.25;
endrewards
"""


def build(text: str, ctmc: bool = False):
    with tempfile.NamedTemporaryFile("w", suffix=".prism", delete=False) as fh:
        fh.write(text)
    prog = stormpy.parse_prism_program(fh.name, prism_compatibility=ctmc)
    return stormpy.build_model(prog, options=stormpy.BuilderOptions(build_full=True))


def rows(model):
    tm = model.transition_matrix
    for s in range(model.nr_states):
        for c, r in enumerate(range(tm.get_row_group_start(s), tm.get_row_group_end(s))):
            yield s, c, r, [(e.column, float(e.value)) for e in tm.get_row(r)]


def prism_explicit(model, stem: Path, kind: str) -> None:
    """PRISM's explicit files of a Storm model: NAME.tra (header 'S T' or 'S C T'), .lab, .sta, .R.srew."""
    S = model.nr_states
    body = []
    for s, c, r, row in rows(model):
        for t, v in row:
            body.append(f"{s} {c} {t} {v!r}" if kind == "mdp" else f"{s} {t} {v!r}")
    head = f"{S} {model.nr_choices} {len(body)}" if kind == "mdp" else f"{S} {len(body)}"
    Path(f"{stem}.tra").write_text(head + "\n" + "\n".join(body) + "\n")
    names = ["init", "deadlock"] + sorted(lab for lab in model.labeling.get_labels() if lab not in ("init", "deadlock"))
    lab = [" ".join(f'{i}="{n}"' for i, n in enumerate(names))]
    for s in range(S):
        have = model.labeling.get_labels_of_state(s)
        ls = [i for i, n in enumerate(names) if n in have]
        if ls:
            lab.append(f"{s}: " + " ".join(map(str, ls)))
    Path(f"{stem}.lab").write_text("\n".join(lab) + "\n")
    if model.has_state_valuations():
        import json

        sv = model.state_valuations
        vals = [json.loads(str(sv.to_json(s))) for s in range(S)]
        keys = list(vals[0])
        Path(f"{stem}.sta").write_text("(" + ",".join(keys) + ")\n" + "".join(
            f"{s}:(" + ",".join(str(int(v[k]) if isinstance(v[k], bool) else v[k]) for k in keys) + ")\n"
            for s, v in enumerate(vals)))
    for name, rm in model.reward_models.items():
        if rm.has_state_rewards:
            sr = list(rm.state_rewards)
            nz = [(s, v) for s, v in enumerate(sr) if v != 0]
            Path(f"{stem}.{name}.srew").write_text(f"# Reward structure \"{name}\"\n# State rewards\n"
                                                   f"{S} {len(nz)}\n" + "".join(f"{s} {float(v)!r}\n" for s, v in nz))


#: QComp benchmark models (https://github.com/ahartmanns/qcomp, CC-BY 4.0), JANI files copied to qcomp/: (JANI file,
#: constants, the steady-state property whose state formula becomes the reward "goal_free"/"reach" indicator)
QCOMP = {"erlang10-10-ma": ("qcomp/erlang.jani", {"K": 10, "R": 10, "TIME_BOUND": 5}, "SmaxNotReach", "notgoal")}


def with_state_reward(drn: str, name: str, reward: list[float]) -> str:
    """Storm's DRN text without reward models, with one state-reward structure ``name`` added (actions earn 0)."""
    assert "@reward_models\n\n" in drn, "expected a DRN without reward models"
    out = []
    for line in drn.replace("@reward_models\n\n", f"@reward_models\n{name}\n", 1).splitlines():
        if line.startswith("state "):
            head = line.split()
            k = 3 if len(head) > 2 and head[2].startswith("!") else 2  # after the exit rate of a Markov automaton
            head.insert(k, f"[{reward[int(head[1])]!r}]")
            line = " ".join(head)
        elif line.startswith("\taction "):
            line += " [0]"
        out.append(line)
    return "\n".join(out) + "\n"


def qcomp(name: str) -> None:
    """Build a QComp JANI model with Storm; the reward is the indicator of the steady-state property's states."""
    jani, consts, prop_name, reward = QCOMP[name]
    jm, props = stormpy.parse_jani_model(str(HERE / jani))
    em = jm.expression_manager
    values = {}
    for k, v in consts.items():
        c = jm.get_constant(k)
        values[c.expression_variable] = em.integer(v) if str(c.type) == "int" else em.rational(stormpy.Rational(v))
    jm = jm.define_undefined_constants(values)
    prop = next(p for p in props if p.get_name() == prop_name).substitute(values)
    model = stormpy.build_model(jm, [prop])
    truth = stormpy.model_checking(model, prop.get_raw_formula().subformula).get_truth_values_vector()
    ind = [0.0] * model.nr_states
    for s in truth:  # a BitVector iterates over its set bits
        ind[s] = 1.0
    with tempfile.TemporaryDirectory() as tmp:
        stormpy.io.export_to_drn(model, str(Path(tmp) / "m.drn"))
        text = (Path(tmp) / "m.drn").read_text()
    (HERE / f"{name}.drn").write_text(with_state_reward(text, reward, ind))


def main() -> None:
    for name in QCOMP:
        qcomp(name)
    for name, (src, extra) in APPEND.items():
        m = build((EX / src).read_text() + "\n" + extra)
        stormpy.io.export_to_drn(m, str(HERE / f"{name}.drn"))
    stormpy.io.export_to_drn(build(POLLING_MA), str(HERE / "polling-ma.drn"))
    hybrid = (EX / "ma/hybrid_states.ma").read_text()
    for a, b in HYBRID_FIX:
        assert a in hybrid, a
        hybrid = hybrid.replace(a, b)
    stormpy.io.export_to_drn(build(hybrid + "\n" + APPEND["zeno-ma"][1]), str(HERE / "hybrid-ma.drn"))
    tandem = build((EX / "ctmc/tandem5.sm").read_text(), ctmc=True)
    stormpy.io.export_to_drn(tandem, str(HERE / "tandem5.drn"))
    prism_explicit(tandem, HERE / "tandem5.prism", "ctmc")
    stormpy.io.export_to_drn(build((EX / "ctmc/polling2.sm").read_text(), ctmc=True), str(HERE / "polling2.drn"))
    cons = build((EX / "mdp/coin2-2.nm").read_text() + "\n" + APPEND["consensus2"][1])
    prism_explicit(cons, HERE / "consensus2.prism", "mdp")
    for src, dst in [("mdp/two_dice.tra", "two_dice.tra"), ("mdp/two_dice.lab", "two_dice.lab"),
                     ("rew/two_dice.flip.state.rew", "two_dice.flip.state.rew"),
                     ("rew/two_dice.flip.trans.rew", "two_dice.flip.trans.rew"),
                     ("dtmc/die.tra", "die.tra"), ("dtmc/die.lab", "die.lab"),
                     ("rew/die.coin_flips.trans.rew", "die.coin_flips.trans.rew"),
                     ("tra/ctmdp.tra", "ctmdp.tra"),
                     ("pomdp/maze.drn", "refused-pomdp-maze.drn"), ("pdtmc/die.drn", "refused-parametric-die.drn"),
                     ("imdp/tiny-01.drn", "refused-interval-tiny.drn")]:
        shutil.copyfile(EX / src, HERE / dst)
    # a cost per state for the CTMDP (written here: Storm's ctmdp type has no reward file in stormpy's examples)
    (HERE / "ctmdp.cost.state.rew").write_text("".join(f"{s} {c}\n" for s, c in enumerate(
        (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)) if c))
    print("wrote", len(list(HERE.glob("*"))) - 2, "files in", HERE, file=sys.stderr)


if __name__ == "__main__":
    main()
