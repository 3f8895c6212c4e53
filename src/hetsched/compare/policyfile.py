"""User policies from a Python file: ``--policy-file my_policies.py:NAME``.

The file is an ordinary Python module holding functions decorated with
``@hs.mapping_policy`` (mapping model) or ``@hs.pull_policy`` (desktop grid).
It is checked before it runs: a regular file (not a directory, FIFO or
device; symbolic links are resolved and the target checked the same way), at
most :data:`MAX_BYTES`, UTF-8 text with a ``.py`` name. Then it is executed
once per path (as a module of its own, never on ``sys.path``), and ``NAME``
must be a policy object in it. Every failure is one line naming the file and,
where it applies, the name: a missing file, a syntax error (with its line), an
exception raised while the file runs, a missing name (with the policies the
file does define), or a name that is not a policy.

Running a policy file runs its code, as ``python my_policies.py`` would: load
only files you trust.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path

from ..errors import ModelError

__all__ = ["load_policy", "parse_spec", "MAX_BYTES"]

#: largest policy file accepted (a policy is a few lines; this leaves room for helpers)
MAX_BYTES = 1_000_000

_MODULES: dict[tuple[str, str], object] = {}


def parse_spec(spec: str) -> tuple[str, str]:
    """``"path/to/file.py:NAME"`` -> ``(path, NAME)`` (the last ``:`` splits them)."""
    text = str(spec)
    path, sep, name = text.rpartition(":")
    if not sep or not path or not name:
        raise ModelError(f"--policy-file: expected FILE.py:NAME, got {text[:200]!r}")
    if not name.isidentifier():
        raise ModelError(f"--policy-file {path}: {name[:100]!r} is not a Python name")
    return path, name


def _read_checked(path: str) -> tuple[Path, bytes]:
    """The file's bytes, read through the one safe reader (:func:`hetsched.safeio.read_input`)."""
    from ..safeio import InputError, read_input

    label = f"--policy-file {path}"
    p = Path(path)
    try:
        data = read_input(p, what="--policy-file", max_bytes=MAX_BYTES, encoding=None)
    except InputError as exc:
        raise ModelError(str(exc)) from None
    if p.suffix != ".py":
        raise ModelError(f"{label}: expected a Python file named *.py")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        raise ModelError(f"{label}: not UTF-8 text") from None
    if b"\x00" in data:
        raise ModelError(f"{label}: not a text file (NUL bytes)")
    return p, data


def _module(path: str):
    p, data = _read_checked(path)
    key = (str(p.resolve()), hashlib.sha256(data).hexdigest())
    if key in _MODULES:
        return _MODULES[key]
    label = f"--policy-file {path}"
    try:
        code = compile(data, str(p), "exec")
    except SyntaxError as exc:
        raise ModelError(f"{label}: syntax error at line {exc.lineno}: {exc.msg}") from None
    except ValueError as exc:
        raise ModelError(f"{label}: cannot be compiled: {exc}") from None
    modname = f"hetsched_policy_file_{key[1][:16]}"
    spec = importlib.util.spec_from_loader(modname, loader=None, origin=str(p))
    mod = importlib.util.module_from_spec(spec)
    mod.__file__ = str(p)
    sys.modules[modname] = mod  # dataclasses and pickling look modules up by name
    try:
        exec(code, mod.__dict__)  # noqa: S102 - the user's own policy file, as documented
    except ModelError as exc:
        del sys.modules[modname]
        raise ModelError(f"{label}: {exc}") from None
    except SystemExit:
        del sys.modules[modname]
        raise ModelError(f"{label}: the file called exit() while loading") from None
    except Exception as exc:  # noqa: BLE001 - the user's code failed: one line naming the file
        del sys.modules[modname]
        tb = exc.__traceback__
        line = None
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == str(p):
                line = tb.tb_lineno
            tb = tb.tb_next
        where = f" at line {line}" if line else ""
        raise ModelError(f"{label}: raised {type(exc).__name__}{where} while loading: {exc}") from None
    _MODULES[key] = mod
    return mod


def _policies_in(mod) -> list[str]:
    from ..policies.user import UserPolicy

    return sorted(k for k, v in vars(mod).items() if isinstance(v, UserPolicy) and not k.startswith("_"))


def load_policy(spec: str):
    """The policy object ``NAME`` of ``FILE.py:NAME`` (module docstring)."""
    from ..policies.user import UserPolicy

    path, name = parse_spec(spec)
    mod = _module(path)
    label = f"--policy-file {path}"
    if name not in vars(mod):
        have = _policies_in(mod)
        listed = f"; policies in the file: {', '.join(have)}" if have else "; the file defines no policy"
        raise ModelError(f"{label}: no name {name!r}{listed}")
    obj = vars(mod)[name]
    if not isinstance(obj, UserPolicy):
        what = "a plain function" if callable(obj) else f"a {type(obj).__name__}"
        raise ModelError(f"{label}: {name!r} is {what}, not a policy: decorate it with @hs.mapping_policy "
                         f"(or @hs.pull_policy for a desktop grid)")
    return obj
