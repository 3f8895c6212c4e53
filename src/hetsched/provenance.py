"""Where a result came from: version, commit, command, seed, size, time, host.

Every results file (``results.json``, the Parquet metadata, the HTML report)
carries one provenance record, so that a number can be traced to the exact
code and command that produced it. :func:`start` is called when a run begins
and :meth:`Provenance.finish` when it ends (or is interrupted).

The git commit is read only when the package runs from a checkout (``git`` on
the PATH and a repository around the source); a dirty tree is marked. Nothing
here raises: a field that cannot be read is ``None``.
"""

from __future__ import annotations

import os
import platform
import shlex
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

__all__ = ["Provenance", "start", "git_commit", "command_line", "versions"]

_SRC = Path(__file__).resolve().parent


def command_line() -> str:
    """The command as typed (``hetsched reproduce ...``) or the Python entry point."""
    argv = list(sys.argv)
    if not argv or argv[0] in ("", "-c"):
        return "python (interactive or -c)"
    prog = Path(argv[0]).name
    if prog in ("hetsched", "__main__.py", "cli.py"):
        prog = "hetsched"
    return shlex.join([prog] + argv[1:])


def git_commit() -> dict[str, Any] | None:
    """``{"commit": sha, "dirty": bool}`` when the package runs from a git checkout."""
    try:
        top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=_SRC, capture_output=True,
                             text=True, timeout=2)
        if top.returncode != 0 or not (_SRC.is_relative_to(Path(top.stdout.strip()))):
            return None
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=_SRC, capture_output=True, text=True, timeout=2)
        st = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=_SRC,
                            capture_output=True, text=True, timeout=2)
        if sha.returncode != 0:
            return None
        return {"commit": sha.stdout.strip(), "dirty": bool(st.stdout.strip())}
    except (OSError, subprocess.SubprocessError, ValueError):
        return None


def versions() -> dict[str, str | None]:
    """hetsched, Python and the numeric libraries that decide the numbers."""
    from importlib import metadata

    out: dict[str, str | None] = {"python": platform.python_version()}
    for dist in ("hetsched", "numpy", "numba", "scipy", "highspy", "pandas"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out


@dataclass
class Provenance:
    """One run's provenance; :meth:`as_dict` is what results files carry."""

    command: str
    started: str
    seed: int | None = None
    reps: int | None = None
    horizon: float | None = None
    quick: bool | None = None
    parameters: dict[str, Any] = field(default_factory=dict)
    host: str = ""
    platform: str = ""
    versions: dict[str, str | None] = field(default_factory=dict)
    git: dict[str, Any] | None = None
    duration_seconds: float | None = None
    status: str = "running"
    _t0: float = field(default=0.0, repr=False)

    def elapsed(self) -> float:
        """Seconds since :func:`start`."""
        return time.perf_counter() - self._t0

    def finish(self, status: str = "complete") -> "Provenance":
        """Record the duration and the final status (``complete`` or ``interrupted``)."""
        self.duration_seconds = round(time.perf_counter() - self._t0, 3)
        self.status = status
        return self

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("_t0")
        return d


def start(*, command: str | None = None, seed: int | None = None, reps: int | None = None,
          horizon: float | None = None, quick: bool | None = None, **parameters: Any) -> Provenance:
    """Begin a provenance record now (``command`` defaults to :func:`command_line`)."""
    return Provenance(
        command=command or command_line(),
        started=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        seed=seed, reps=reps, horizon=horizon, quick=quick,
        parameters={k: v for k, v in parameters.items() if v is not None},
        host=socket.gethostname(),
        platform=f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores",
        versions=versions(),
        git=git_commit(),
        _t0=time.perf_counter(),
    )
