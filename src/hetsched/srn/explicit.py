"""The tangible CTMC in explicit formats: Storm's DRN and explicit files, PRISM's explicit files.

Split from :mod:`hetsched.srn.export` (which re-exports these names); see its
docstring for the formats. Every file goes through the safe writer
(:func:`hetsched.safeio.write_bytes`): an existing file is replaced only with
``overwrite=True``, never through a symbolic link or over a device.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import ModelError
from ..safeio import write_bytes
from .net import Reward
from .reach import CTMC

__all__ = ["to_drn", "to_storm_explicit", "to_prism"]


def _put(path: str | Path, data: str | bytes, overwrite: bool) -> None:
    """One exported file through the safe writer (:func:`hetsched.safeio.write_bytes`; existing: ``overwrite``)."""
    write_bytes(path, data.encode() if isinstance(data, str) else data, force=overwrite, what="export file")


def _rewards(ctmc: CTMC, rewards: dict[str, Reward] | None) -> dict[str, np.ndarray]:
    from .solve import reward_vector

    return {k: reward_vector(ctmc, r) for k, r in (rewards or {}).items()}


def to_drn(ctmc: CTMC, path: str | Path, rewards: dict[str, Reward] | None = None, *,
           overwrite: bool = False) -> Path:
    """Write the CTMC in Storm's DRN format (rates; state rewards in brackets)."""
    path = Path(path)
    R = _rewards(ctmc, rewards)
    names = list(R)
    Q = ctmc.Q.tocsr()
    init = int(np.argmax(ctmc.p0))
    exit_rate = -Q.diagonal()
    lines = ["// exported by hetsched.srn", "@type: CTMC", "@value_type: double", "@parameters", "", "@reward_models",
             " ".join(names), "@nr_states", str(ctmc.n), "@nr_choices", str(ctmc.n), "@model"]
    for s in range(ctmc.n):
        rw = f" [{', '.join(repr(float(R[k][s])) for k in names)}]" if names else ""
        lab = " init" if s == init else ""
        lines.append(f"state {s} !{float(exit_rate[s])!r}{rw}{lab}")
        lines.append("\taction 0")
        for kk in range(Q.indptr[s], Q.indptr[s + 1]):
            j = Q.indices[kk]
            if j != s:
                lines.append(f"\t\t{j} : {float(Q.data[kk])!r}")
    _put(path, "\n".join(lines) + "\n", overwrite)
    return path


def _init_state(ctmc: CTMC) -> int:
    return int(np.argmax(ctmc.p0))


def to_storm_explicit(ctmc: CTMC, prefix: str | Path, rewards: dict[str, Reward] | None = None, *,
                      overwrite: bool = False) -> list[Path]:
    """Write Storm's explicit files: ``prefix.tra``, ``prefix.lab``, ``prefix.<reward>.rew``.

    ``.tra`` starts with the model type ``ctmc`` and lists ``from to rate`` per
    line (sorted, no header of counts); ``.lab`` declares ``init`` and
    ``deadlock``; each reward gets its own state-reward file (Storm's explicit
    parser reads one per model: ``stormpy.build_model_from_explicit(tra, lab,
    state_rewards=rew)``). Rewards must be >= 0 there. A ``prefix.sta`` with the
    markings (PRISM syntax) is written too, for people; Storm ignores it.
    """
    prefix = Path(prefix)
    R = _rewards(ctmc, rewards)
    for k, v in R.items():
        if v.size and v.min() < 0:
            raise ModelError(f"reward {k!r}: Storm's explicit format needs rewards >= 0, "
                             f"got {float(v.min())!r}")
    Q = ctmc.Q.tocoo()
    off = Q.row != Q.col
    order = np.lexsort((Q.col[off], Q.row[off]))
    out = []
    p = Path(f"{prefix}.tra")
    _put(p, "ctmc\n" + "".join(f"{i} {j} {float(v)!r}\n" for i, j, v in
                                zip(Q.row[off][order], Q.col[off][order], Q.data[off][order])), overwrite)
    out.append(p)
    p = Path(f"{prefix}.lab")
    dead = np.flatnonzero(np.diff(ctmc.Q.tocsr().indptr) == 0) if ctmc.n > 1 else np.zeros(0, int)
    labels = {_init_state(ctmc): ["init"]}
    for s in dead:
        labels.setdefault(int(s), []).append("deadlock")
    _put(p, "#DECLARATION\ninit deadlock\n#END\n"
         + "".join(f"{s} {' '.join(v)}\n" for s, v in sorted(labels.items())), overwrite)
    out.append(p)
    for k, v in R.items():
        p = Path(f"{prefix}.{k}.rew")
        nz = np.flatnonzero(v)
        _put(p, "".join(f"{s} {float(v[s])!r}\n" for s in nz), overwrite)
        out.append(p)
    p = Path(f"{prefix}.sta")
    _put(p, _sta_text(ctmc), overwrite)
    out.append(p)
    return out


def _sta_text(ctmc: CTMC) -> str:
    names = ctmc.space.net.place_names
    return "(" + ",".join(names) + ")\n" + "".join(
        f"{s}:(" + ",".join(str(int(v)) for v in ctmc.markings[s]) + ")\n" for s in range(ctmc.n))


def to_prism(ctmc: CTMC, prefix: str | Path, rewards: dict[str, Reward] | None = None, *,
             overwrite: bool = False) -> list[Path]:
    """Write PRISM explicit files ``prefix.tra/.sta/.lab`` and ``prefix.<name>.srew``."""
    prefix = Path(prefix)
    Q = ctmc.Q.tocoo()
    off = Q.row != Q.col
    out = []
    p = prefix.with_suffix(".tra")
    rows = [f"{ctmc.n} {int(off.sum())}"]
    order = np.lexsort((Q.col[off], Q.row[off]))
    for i, j, v in zip(Q.row[off][order], Q.col[off][order], Q.data[off][order]):
        rows.append(f"{i} {j} {float(v)!r}")
    _put(p, "\n".join(rows) + "\n", overwrite)
    out.append(p)
    p = prefix.with_suffix(".sta")
    _put(p, _sta_text(ctmc), overwrite)
    out.append(p)
    p = prefix.with_suffix(".lab")
    _put(p, '0="init" 1="deadlock"\n' + f"{int(np.argmax(ctmc.p0))}: 0\n", overwrite)
    out.append(p)
    for k, v in _rewards(ctmc, rewards).items():
        p = Path(f"{prefix}.{k}.srew")
        nz = np.flatnonzero(v)
        _put(p, f"{ctmc.n} {nz.size}\n" + "".join(f"{s} {float(v[s])!r}\n" for s in nz), overwrite)
        out.append(p)
    return out
