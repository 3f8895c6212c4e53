"""Run ``hetsched`` commands for the fuzz suite: in-process (forked) and as real processes.

In-process runs go through a small fork server (:func:`serve`, one per test
process) that has imported hetsched once: each example is a fork of that warm,
single-threaded server (milliseconds), runs ``hetsched.cli.main(args)`` with
stdout/stderr redirected at the file-descriptor level, and is killed with its
whole process group when it exceeds the per-example timeout -- so a hang is
counted, never waited for.
A smaller sample runs ``python -m hetsched.cli`` as real processes.

Every run is classified (:func:`classify`) and counted per command in :data:`STATS`; the
fuzz conftest prints the counts at the end of the session (``make fuzz``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

# What the forkserver imports once, so that forked examples start warm.
_PRELOAD = ("hetsched.cli", "hetsched.scenarios", "hetsched.lp", "hetsched.experiments", "hetsched.report.tables",
            "rich.table", "highspy", "numpy", "scipy.sparse", "pandas")

EXAMPLE_TIMEOUT = float(os.environ.get("HETSCHED_FUZZ_TIMEOUT", "30"))
STATS: Counter = Counter()


def _preload() -> None:
    import importlib

    for m in _PRELOAD:
        try:
            importlib.import_module(m)
        except Exception:  # noqa: BLE001 - a missing optional engine must not stop the server
            pass
    try:
        import hetsched.experiments

        hetsched.experiments.registry()  # imports every experiment module once
    except Exception:  # noqa: BLE001
        pass


@dataclass
class Outcome:
    args: list[str]
    code: int | None  # None: killed after the timeout (a hang)
    out: str
    err: str
    seconds: float
    mode: str  # "fork" or "process"

    @property
    def hang(self) -> bool:
        return self.code is None

    @property
    def err_lines(self) -> list[str]:
        return [ln for ln in self.err.splitlines() if ln.strip()]

    def show(self) -> str:
        return (f"{self.mode} hetsched {' '.join(map(repr, self.args))[:400]}\n  exit {self.code} after "
                f"{self.seconds:.1f} s\n  stderr: {self.err[-1500:]!r}\n  stdout: {self.out[-300:]!r}")


def _child(args: list[str], out_path: str, err_path: str, env: dict[str, str]) -> None:
    """In the forked process: run the command with fds 0/1/2 redirected; never returns."""
    code = 1
    try:
        os.setpgrp()  # our own process group: a timeout kills everything we start
        os.environ.update(env)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        for fd, path in ((1, out_path), (2, err_path)):
            f = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(f, fd)
            os.close(f)
        sys.stdin = open(0, encoding="utf-8", closefd=False)
        sys.stdout = open(1, "w", encoding="utf-8", errors="replace", closefd=False)
        sys.stderr = open(2, "w", encoding="utf-8", errors="replace", closefd=False)
        code = 0
        try:
            from hetsched.cli import main

            main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:  # noqa: BLE001 - what the user would see: a traceback
            traceback.print_exc()
            code = 99
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def serve() -> None:
    """The fork server: read one JSON request per line, fork, wait (with the timeout), reply one JSON line."""
    import json

    _preload()
    out = os.fdopen(os.dup(1), "w")
    for line in sys.stdin:
        req = json.loads(line)
        t0 = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            _child(req["args"], req["out"], req["err"], req["env"])
        code = None
        deadline = t0 + float(req["timeout"])
        while True:
            wpid, status = os.waitpid(pid, os.WNOHANG)
            if wpid:
                code = os.waitstatus_to_exitcode(status)
                break
            if time.perf_counter() > deadline:
                _kill_group(pid)
                os.waitpid(pid, 0)
                break
            time.sleep(0.003)
        _kill_group(pid)  # stray grandchildren (e.g. a Dask cluster) die with it
        out.write(json.dumps({"code": code, "seconds": time.perf_counter() - t0}) + "\n")
        out.flush()


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


_SERVER: subprocess.Popen | None = None


def _server() -> subprocess.Popen:
    global _SERVER
    if _SERVER is None or _SERVER.poll() is not None:
        here = os.path.dirname(os.path.abspath(__file__))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([here, os.environ.get("PYTHONPATH", "")])}
        _SERVER = subprocess.Popen([sys.executable, "-c", "import fuzz_runner; fuzz_runner.serve()"],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
                                   start_new_session=True)
    return _SERVER


def stop_server() -> None:
    global _SERVER
    if _SERVER is not None and _SERVER.poll() is None:
        _SERVER.stdin.close()
        try:
            _SERVER.wait(10)
        except subprocess.TimeoutExpired:
            _SERVER.kill()
    _SERVER = None


def run_fork(args: list[str], timeout: float = EXAMPLE_TIMEOUT, env: dict[str, str] | None = None) -> Outcome:
    """``hetsched ARGS`` in a fork of the warm server; killed (with its children) after ``timeout``."""
    import json

    env = {"HETSCHED_DEBUG": "", "COLUMNS": "120", **(env or {})}
    with tempfile.TemporaryDirectory(prefix="hs-fuzz-") as d:
        out_p, err_p = os.path.join(d, "out"), os.path.join(d, "err")
        srv = _server()
        srv.stdin.write(json.dumps({"args": [str(a) for a in args], "out": out_p, "err": err_p, "env": env,
                                    "timeout": timeout}) + "\n")
        srv.stdin.flush()
        reply = json.loads(srv.stdout.readline())
        out = Path(out_p).read_text(errors="replace") if os.path.exists(out_p) else ""
        err = Path(err_p).read_text(errors="replace") if os.path.exists(err_p) else ""
    o = Outcome(list(args), reply["code"], out, err, reply["seconds"], "fork")
    record(o)
    return o


def run_process(args: list[str], timeout: float = 90.0, cwd: str | None = None) -> Outcome:
    """``python -m hetsched.cli ARGS`` as a real process (own session; killed after ``timeout``)."""
    env = {**os.environ, "HETSCHED_DEBUG": "", "COLUMNS": "120"}
    t0 = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-m", "hetsched.cli", *args], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env, cwd=cwd, start_new_session=True, text=True,
                         errors="replace")
    try:
        out, err = p.communicate(timeout=timeout)
        code: int | None = p.returncode
    except subprocess.TimeoutExpired:
        _kill_group(p.pid)
        out, err = p.communicate()
        code = None
    o = Outcome(list(args), code, out, err, time.perf_counter() - t0, "process")
    record(o)
    return o


def command_of(args: list[str]) -> str:
    """``simulate``, ``mdp coalloc``, ... (the command path of an argument list)."""
    if not args or args[0].startswith("-"):
        return "hetsched (no command)"
    groups = {"mdp", "srn", "muscle", "dispatch", "plot", "trace"}
    if args and args[0] in groups and len(args) > 1 and not args[1].startswith("-"):
        return f"{args[0]} {args[1][:20]}"
    return args[0] if args else "-"


def record(o: Outcome) -> None:
    STATS[(command_of(o.args), classify(o))] += 1


def classify(o: Outcome) -> str:
    """``hang``, ``traceback`` (an uncaught exception), ``internal-error`` (guard's bug line),
    ``refused`` (exit 2, one line), ``messy-refusal`` (exit 2, more than one line), ``accepted`` (exit 0),
    or ``exit-N``."""
    if o.hang:
        return "hang"
    if "Traceback (most recent call last)" in o.err or o.code == 99:
        return "traceback"
    if o.code == 70 or "internal error:" in o.err:
        return "internal-error"
    if o.code == 2:
        return "refused" if len(o.err_lines) == 1 and o.err_lines[0].startswith("error: ") else "messy-refusal"
    if o.code == 0:
        return "accepted"
    return f"exit-{o.code}"


def assert_refused(o: Outcome, *names: str) -> None:
    """Exit 2, exactly one line ``error: ...`` on stderr naming one of ``names``, no traceback, no hang."""
    assert not o.hang, f"hang (killed after {o.seconds:.0f} s):\n{o.show()}"
    assert "Traceback" not in o.err, o.show()
    assert o.code == 2, f"expected exit 2:\n{o.show()}"
    assert len(o.err_lines) == 1 and o.err_lines[0].startswith("error: "), f"expected one error line:\n{o.show()}"
    if names:
        line = o.err_lines[0].lower().replace("_", "-")
        assert any(n.lower().replace("_", "-") in line for n in names), f"error names none of {names}:\n{o.show()}"


def assert_clean(o: Outcome, *names: str) -> None:
    """Either accepted (exit 0) or refused as :func:`assert_refused`; never a traceback or a hang."""
    assert not o.hang, f"hang (killed after {o.seconds:.0f} s):\n{o.show()}"
    assert "Traceback" not in o.err and "internal error" not in o.err, o.show()
    if o.code != 0:
        assert_refused(o, *names)
