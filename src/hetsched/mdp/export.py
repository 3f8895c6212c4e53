"""The co-allocation MDP as pymdptoolbox arrays in one ``.npz`` file, and back.

The file holds the uniformized discounted problem of
:func:`hetsched.mdp.ctmdp.to_mdptoolbox` (pymdptoolbox *maximizes* reward, so
``R = -c / (nu + beta)`` and ``V = -J``; inadmissible actions carry a penalty
that keeps them out of every optimal policy):

``P_data``, ``P_indices``, ``P_indptr``, ``P_shape``
    the ``A`` transition matrices stacked as one CSR matrix of shape ``(A S, S)``;
    rows ``a S .. (a+1) S - 1`` are ``P[a]``;
``R`` (``S x A``), ``discount``, ``admissible`` (``S x A`` bool),
``states`` (``S x 6``: ``q1, q2, g, x1, x2, x11``), ``params`` (JSON text).

Read it with :func:`load_mdptoolbox` or with NumPy and SciPy alone::

    z = np.load("coalloc.npz")
    M = scipy.sparse.csr_matrix((z["P_data"], z["P_indices"], z["P_indptr"]), shape=tuple(z["P_shape"]))
    S = M.shape[1]
    P = [M[a * S:(a + 1) * S] for a in range(M.shape[0] // S)]
    mdptoolbox.mdp.PolicyIteration(P, z["R"], float(z["discount"])).run()
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ..errors import ModelError

__all__ = ["save_mdptoolbox", "load_mdptoolbox", "check_export_path"]


def check_export_path(path: str | Path, force: bool = False) -> Path:
    """The ``.npz`` target, checked before any work: name, no directory, no silent overwrite."""
    path = Path(path)
    if path.suffix != ".npz":
        raise ModelError(f"--export: the file name must end in .npz (NumPy appends it otherwise), got {str(path)!r}")
    if path.is_dir():
        raise ModelError(f"--export: {path} is a directory")
    if path.exists() and not path.is_symlink() and not force:
        raise ModelError(f"--export: {path} exists (use --force to overwrite)")
    if not path.parent.is_dir():
        raise ModelError(f"--export: directory {path.parent} does not exist")
    from ..safeio import check_output

    return check_output(path, force=force, what="--export")  # links and non-regular files refused


def save_mdptoolbox(model, path: str | Path, *, force: bool = False) -> Path:
    """Write the :class:`~hetsched.mdp.coalloc.CoallocModel` ``model`` to ``path`` (``.npz``).

    Refuses to overwrite an existing file unless ``force``; written atomically (:mod:`hetsched.safeio`).
    """
    from .ctmdp import to_mdptoolbox

    path = check_export_path(path, force)
    prm = model.params
    P, R, disc = to_mdptoolbox(model.ctmdp, prm.beta, prm.nu_used)
    M = sp.vstack(P, format="csr")
    from ..safeio import atomic_output

    with atomic_output(path, force=force, what="--export") as tmp:
        with open(tmp, "wb") as fh:
            np.savez_compressed(fh, P_data=M.data, P_indices=M.indices, P_indptr=M.indptr,
                                P_shape=np.array(M.shape), R=R, discount=np.float64(disc),
                                admissible=model.ctmdp.admissible(), states=model.states,
                                params=np.array(json.dumps(prm.as_dict())))
    return path


def load_mdptoolbox(path: str | Path) -> tuple[list[sp.csr_matrix], np.ndarray, float]:
    """``(P, R, discount)`` from a file of :func:`save_mdptoolbox`, ready for ``mdptoolbox.mdp``."""
    z = np.load(path)
    M = sp.csr_matrix((z["P_data"], z["P_indices"], z["P_indptr"]), shape=tuple(int(v) for v in z["P_shape"]))
    S = M.shape[1]
    return [M[a * S:(a + 1) * S] for a in range(M.shape[0] // S)], np.asarray(z["R"]), float(z["discount"])
