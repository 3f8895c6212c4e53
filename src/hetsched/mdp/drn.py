"""Storm's DRN (direct encoding) files: see :mod:`hetsched.mdp.files`."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import ModelError
from .filemodel import MarkovModel, Reward, _finish, _num, _nums

_DRN_TYPES = {"dtmc": "dtmc", "ctmc": "ctmc", "mdp": "mdp", "ma": "ma", "markov automaton": "ma", "ctmdp": "ctmdp"}
_REFUSED_TYPES = {"pomdp": "partially observable MDPs", "smg": "stochastic games", "s2pg": "stochastic games"}


def _read_drn(path: Path, text: str) -> MarkovModel:
    where = str(path)
    lines = text.splitlines()
    header: dict[str, list[str]] = {}
    i, key = 0, None
    while i < len(lines):
        ln = lines[i].strip()
        i += 1
        if ln == "@model":
            break
        if not ln or ln.startswith("//"):
            continue
        if ln.startswith("@"):
            name, _, rest = ln[1:].partition(":")
            key = name.strip().lower()
            header[key] = [rest.strip()] if rest.strip() else []
        elif key is not None:
            header[key].append(ln)
    else:
        raise ModelError(f"{where}: no '@model' section: not a DRN file")
    typ = " ".join(header.get("type", [])).strip().lower()
    if typ in _REFUSED_TYPES:
        raise ModelError(f"{where}: @type {typ.upper()}: {_REFUSED_TYPES[typ]} are not supported (DTMC, CTMC, MDP, "
                         "CTMDP and Markov automata are)")
    if typ not in _DRN_TYPES:
        raise ModelError(f"{where}: @type {typ or '(missing)'!r} is not one of DTMC, CTMC, MDP, MA, CTMDP")
    kind = _DRN_TYPES[typ]
    vt = " ".join(header.get("value_type", [])).strip().lower()
    if vt and vt not in ("double", "rational", "float"):
        raise ModelError(f"{where}: @value_type {vt!r}: only double and rational values are supported")
    params = " ".join(header.get("parameters", [])).strip()
    if params:
        raise ModelError(f"{where}: @parameters {params!r}: parametric models are not supported")
    rnames = " ".join(header.get("reward_models", [])).split()
    # unnamed reward models (an empty line under @reward_models): counted from the first list of values
    n_rew: int | None = len(rnames) if rnames or "reward_models" not in header else None
    try:
        S = int(header["nr_states"][0])
        K = int(header["nr_choices"][0]) if header.get("nr_choices") else None
    except (KeyError, IndexError, ValueError):
        raise ModelError(f"{where}: @nr_states (and @nr_choices) must give integers") from None
    exit_rate = np.zeros(S)
    srew_txt: list[str | None] = []
    arew_txt: list[str | None] = []
    labels: dict[str, list[int]] = {}
    initial: list[int] = []
    acts: list[str] = []
    vals_text: list[str] = []
    starts: list[int] = []  # index in vals_text of each choice's first transition
    valuations: list[str] = [""] * S
    n_ch = np.zeros(S, dtype=np.int64)
    s = -1
    for ln in lines[i:]:
        t = ln.strip()
        if not t:
            continue
        c0 = t[0]
        if c0.isdigit():  # most lines: a transition 'target : value'
            if not starts:
                raise ModelError(f"{where}: transition {t[:40]!r} before the first 'action'")
            vals_text.append(t)
            continue
        if c0 == "/":
            if 0 <= s < S and t.startswith("//["):
                valuations[s] = t[3:].rstrip("]").replace("\t", " ")
            continue
        if t.startswith("state "):
            s += 1
            if s >= S:
                raise ModelError(f"{where}: more states than @nr_states = {S}")
            parts, rew, rest = _split_brackets(t[6:], state=True)
            if not parts or parts[0] != str(s):
                raise ModelError(f"{where}: expected 'state {s}', got {t[:60]!r}")
            if len(parts) > 1 and parts[1].startswith("!"):
                exit_rate[s] = _num(parts[1][1:], f"{where}: state {s} exit rate")
            if n_rew is None:
                n_rew = len(rew.replace(",", " ").split()) if rew is not None else 0
                rnames = [""] * n_rew if n_rew == 1 else [f"reward{j + 1}" for j in range(n_rew)]
            srew_txt.append(rew)
            for lab in rest.split():
                if lab.startswith("{"):
                    raise ModelError(f"{where}: state {s} has an observation: partially observable models are "
                                     "not supported")
                labels.setdefault(lab, []).append(s)
                if lab == "init":
                    initial.append(s)
        elif t.startswith("action "):
            if s < 0:
                raise ModelError(f"{where}: 'action' before the first 'state'")
            n_ch[s] += 1
            starts.append(len(vals_text))
            parts, rew, _ = _split_brackets(t[7:], state=False)
            acts.append(parts[0] if parts else "")
            arew_txt.append(rew)
        else:
            raise ModelError(f"{where}: line {t[:60]!r} is neither a state, an action nor a transition")
    k = len(starts) - 1
    state_ptr = np.concatenate(([0], np.cumsum(n_ch))).astype(np.int64)
    if s + 1 != S:
        raise ModelError(f"{where}: @nr_states says {S} states, the model lists {s + 1}")
    if K is not None and k + 1 != K:
        raise ModelError(f"{where}: @nr_choices says {K} choices, the model lists {k + 1}")
    K = k + 1
    n_rew = n_rew or 0
    sr = _bulk_rewards(srew_txt, n_rew, f"{where}: state rewards")
    ar = _bulk_rewards(arew_txt, n_rew, f"{where}: action rewards")
    rows = np.repeat(np.arange(K, dtype=np.int64), np.diff(np.array(starts + [len(vals_text)], dtype=np.int64)))
    tok = " ".join(vals_text).replace(":", " ").split()
    if len(tok) != 2 * len(vals_text):
        bad = next(v for v in vals_text if len(v.replace(":", " ").split()) != 2)
        raise ModelError(f"{where}: transition line {bad!r} is not 'target : value'")
    try:
        cols = np.array(tok[0::2], dtype=np.int64)
    except ValueError:
        raise ModelError(f"{where}: a transition target is not a state number") from None
    vals = _nums(tok[1::2], f"{where}: transition value")
    rows_a = rows
    notes: list[str] = []
    markovian = None
    if kind == "ma":
        markovian = exit_rate > 0
        n_ch = np.diff(state_ptr)
        hybrid = np.flatnonzero(markovian & (n_ch > 1))
        if hybrid.size:
            # a state with a rate and instantaneous choices (its first choice is the Markovian one): maximal
            # progress, as Storm closes the automaton: the instantaneous choices leave no time for the delay
            keep = np.ones(K, bool)
            keep[state_ptr[hybrid]] = False
            new_index = np.cumsum(keep) - 1
            sel = keep[rows_a]
            rows_a, cols, vals = new_index[rows_a[sel]], cols[sel], vals[sel]
            ar = ar[keep]
            acts = [a for a, k_ in zip(acts, keep) if k_]
            n_ch = n_ch - np.isin(np.arange(S), hybrid)
            state_ptr = np.concatenate(([0], np.cumsum(n_ch))).astype(np.int64)
            K = int(state_ptr[-1])
            markovian[hybrid] = False
            notes.append(f"{hybrid.size} state(s) with a rate and instantaneous choices: the delay is dropped "
                         f"(maximal progress; first: state {int(hybrid[0])})")
        mk_rows = markovian[np.repeat(np.arange(S), n_ch)]
        # the file lists a Markovian state's transitions as probabilities: rates = exit rate x probability
        scale = np.where(mk_rows, exit_rate[np.repeat(np.arange(S), n_ch)], 1.0)
        sums = np.bincount(rows_a, weights=vals, minlength=K)
        off = mk_rows & (np.abs(sums - 1) > 1e-6)
        if off.any():
            kk = int(np.flatnonzero(off)[0])
            raise ModelError(f"{where}: the probabilities of Markovian choice {kk} sum to {sums[kk]:.10g}, not 1")
        vals = vals * scale[rows_a]
    M = _finish(kind, state_ptr, rows_a, cols, vals, where, notes, markovian)
    rewards = {}
    for j in range(n_rew):
        name = rnames[j] if j < len(rnames) else ""
        rewards[name] = Reward(state=sr[:, j] if sr[:, j].any() else None, action=ar[:, j] if ar[:, j].any() else None)
    labels_a = {name: np.array(v, dtype=np.int64) for name, v in labels.items()}
    init = np.array(sorted(set(initial)), dtype=np.int64) if initial else np.zeros(1, dtype=np.int64)
    if not initial:
        notes.append("no state is labelled 'init': state 0 is taken as initial")
    choice_labels = acts if any(a and a != "__NOLABEL__" and not a.isdigit() for a in acts) else None
    return MarkovModel(kind, state_ptr, M, init, labels_a, rewards, markovian, choice_labels,
                       valuations if any(valuations) else None, str(path), "drn", notes)


def _split_brackets(t: str, state: bool) -> tuple[list[str], str | None, str]:
    """``'0 !2 [1, 2] init goal'`` -> ``(['0', '!2'], '1, 2', 'init goal')``; an action line has one head token."""
    a = t.find("[")
    if a >= 0:
        b = t.find("]", a)
        if b < 0:
            raise ModelError(f"unclosed '[' in {t[:60]!r}")
        return t[:a].split(), t[a + 1:b], t[b + 1:]
    toks = t.split()
    n = 1 + (state and len(toks) > 1 and toks[1].startswith("!"))
    return toks[:n], None, " ".join(toks[n:])


def _bulk_rewards(txt: list[str | None], n: int, where: str) -> np.ndarray:
    """``(len(txt), n)`` reward values from the bracket texts (``None``: zeros), parsed at once."""
    out = np.zeros((len(txt), n))
    if not n:
        bad = next((x for x in txt if x is not None and any(_num(v, where) != 0 for v in x.replace(",", " ").split())),
                   None)
        if bad is not None:
            raise ModelError(f"{where}: values [{bad}] but @reward_models names no reward model")
        return out
    have = [j for j, x in enumerate(txt) if x is not None]
    toks = " ".join(txt[j] for j in have).replace(",", " ").split()
    if len(toks) != n * len(have):
        j = next(j for j in have if len(txt[j].replace(",", " ").split()) != n)
        raise ModelError(f"{where}: [{txt[j]}] has {len(txt[j].replace(',', ' ').split())} values for {n} reward "
                         f"model(s)")
    out[have] = _nums(toks, where).reshape(len(have), n)
    return out
