"""Compiling kernels: one helper that specialises a kernel, and the on-disk cache that keeps it.

A model's kernel is written once, in a module, as compiled functions that
call a few *bound* names (module globals): the selection of a policy family,
a user's compiled policy, a tie rule as a constant. :func:`specialise`
compiles chosen functions of that module again in a copy of its globals where
those names are rebound (numba freezes globals at compile time, so the bound
selection is a direct, inlined call and a bound constant folds away). That is
how a user-written policy runs inside the engine with no Python per event,
and how every built-in policy family gets a kernel of its own instead of a
switch per event.

The on-disk cache
-----------------
numba's own ``cache=True`` keys a function by its source file and bytecode:
two specialisations of one function share both, so numba alone cannot tell
them apart. :func:`specialise` therefore gives each specialisation a *stub
file* of its own in the cache directory -- ``<dir>/kernels/<label>_<key>.py``,
a few comment lines naming what it holds -- and compiles the functions with
that file as their source file (``code.replace(co_filename=stub)``), so
numba's cache applies per specialisation (index and object code in
``<dir>/kernels/__pycache__``, or under ``NUMBA_CACHE_DIR`` if set). The key
hashes everything the compiled code depends on: the caller's ``key`` (policy
family, tie rule, a user policy's :func:`policy_key`), the source of the
kernel's packages (:func:`source_version`: any edit of the simulator makes a
new key, which numba's per-file cache cannot see in a callee), and the numba,
numpy and Python versions.

The directory is ``$HETSCHED_CACHE_DIR``, else ``$XDG_CACHE_HOME/hetsched``,
else ``~/.cache/hetsched`` (:func:`cache_dir`). A cache that cannot be used
-- unwritable (read-only home), full, corrupt, or a file where the directory
should be -- never stops a run: the kernel is compiled in memory as without
a cache, and one :class:`KernelCacheWarning` per process says why. A stale
entry (another version of the simulator, numba or Python) is simply a
different key; old stub files are small and may be deleted at any time
(``hetsched warmup --clear``).
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import types as _pytypes
import warnings
from pathlib import Path

__all__ = ["KernelCacheWarning", "cache_dir", "kernels_dir", "source_version", "policy_key", "specialise",
           "clear_cache", "CACHE_ENV"]

CACHE_ENV = "HETSCHED_CACHE_DIR"


class KernelCacheWarning(UserWarning):
    """The on-disk kernel cache could not be used; the kernel was compiled in memory instead."""


_WARNED = False


def _warn(reason: str) -> None:
    """One warning per process: the cache is unusable, compiling without it."""
    global _WARNED
    if _WARNED:
        return
    _WARNED = True
    warnings.warn(f"hetsched kernel cache not used ({reason}); compiling in memory, which is slower to start",
                  KernelCacheWarning, stacklevel=3)


def cache_dir() -> Path | None:
    """``$HETSCHED_CACHE_DIR``, else ``$XDG_CACHE_HOME/hetsched``, else ``~/.cache/hetsched`` (None: no home)."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "hetsched"
    try:
        return Path.home() / ".cache" / "hetsched"
    except (RuntimeError, KeyError):  # no home directory
        return None


def kernels_dir() -> Path | None:
    d = cache_dir()
    return None if d is None else d / "kernels"


_VERSIONS: dict[tuple, str] = {}


def source_version(*packages: str) -> str:
    """SHA-256 of the ``.py`` sources of the given modules (dotted names; a package: every ``.py`` file of its
    folder), a kernel's own version."""
    key = tuple(sorted(packages))
    v = _VERSIONS.get(key)
    if v is None:
        import importlib

        h = hashlib.sha256()
        for name in key:
            mod = importlib.import_module(name)
            path = Path(mod.__file__)
            for f in sorted(path.parent.glob("*.py")) if hasattr(mod, "__path__") else [path]:
                h.update(f.name.encode())
                h.update(f.read_bytes())
        v = _VERSIONS[key] = h.hexdigest()
    return v


# --------------------------------------------------------------------------- keys of user functions
class _Unkeyable(Exception):
    pass


def _digest_code(code, h, seen) -> None:
    h.update(code.co_code)
    h.update(repr((code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars, code.co_argcount,
                   code.co_kwonlyargcount, code.co_flags)).encode())
    for c in code.co_consts:
        if isinstance(c, _pytypes.CodeType):
            _digest_code(c, h, seen)
        else:
            h.update(repr((type(c).__name__, c)).encode())


def _names(code) -> set[str]:
    out = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, _pytypes.CodeType):
            out |= _names(c)
    return out


def _digest_value(v, h, seen) -> None:
    import numpy as np

    if isinstance(v, _pytypes.ModuleType):
        h.update(f"module:{v.__name__}".encode())
    elif isinstance(v, (bool, int, float, complex, str, bytes, type(None), np.generic)):
        h.update(repr((type(v).__name__, v)).encode())
    elif isinstance(v, np.ndarray):
        h.update(repr((v.dtype.str, v.shape)).encode())
        h.update(np.ascontiguousarray(v).tobytes())
    elif isinstance(v, (tuple, list)):
        h.update(f"{type(v).__name__}:{len(v)}".encode())
        for x in v:
            _digest_value(x, h, seen)
    elif callable(getattr(v, "py_func", None)) or isinstance(v, _pytypes.FunctionType):
        _digest_function(getattr(v, "py_func", v), h, seen)
    elif isinstance(v, type) or isinstance(v, _pytypes.BuiltinFunctionType):
        h.update(f"{getattr(v, '__module__', '')}.{getattr(v, '__qualname__', repr(v))}".encode())
    else:
        raise _Unkeyable(type(v).__name__)


def _digest_function(fn, h, seen) -> None:
    if id(fn) in seen:
        h.update(b"<recursion>")
        return
    seen.add(id(fn))
    code = fn.__code__
    _digest_code(code, h, seen)
    for cell in fn.__closure__ or ():
        _digest_value(cell.cell_contents, h, seen)
    _digest_value(fn.__defaults__, h, seen)
    g = fn.__globals__
    for name in sorted(_names(code)):
        if name in g:
            h.update(name.encode())
            _digest_value(g[name], h, seen)


def policy_key(fn) -> str | None:
    """Content key of a user function: its bytecode and constants, the values of the globals and closure
    cells it reads (recursively through the functions it calls), and the Python version.

    ``None`` when a value it reads cannot be keyed (an arbitrary object): such
    a policy is compiled in memory, once per process.
    """
    h = hashlib.sha256(repr(sys.version_info[:2]).encode())
    try:
        _digest_function(getattr(fn, "py_func", fn), h, set())
    except (_Unkeyable, AttributeError, TypeError, ValueError):
        return None
    return h.hexdigest()


# --------------------------------------------------------------------------- the safe cache wrapper
class _SafeCache:
    """numba's per-function cache, with every failure (corrupt, unreadable, unwritable, full disk) turned into
    one warning and a compile in memory instead of an exception out of the kernel call."""

    def __init__(self, inner):
        self._inner = inner
        self._ok = True

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def load_overload(self, sig, target_context):
        if not self._ok:
            return None
        try:
            return self._inner.load_overload(sig, target_context)
        except Exception as exc:  # corrupt or unreadable entry: warn, drop its index so that the save rebuilds it
            _warn(f"cannot read {self._inner.cache_path}: {type(exc).__name__}: {exc}")
            index = getattr(getattr(self._inner, "_cache_file", None), "_index_path", None)
            try:
                if index:
                    os.unlink(index)
            except OSError:
                self._ok = False
            return None

    def save_overload(self, sig, data):
        if not self._ok:
            return
        try:
            self._inner.save_overload(sig, data)
        except Exception as exc:  # unwritable, full disk
            self._ok = False
            _warn(f"cannot write {self._inner.cache_path}: {type(exc).__name__}: {exc}")


def _write_stub(path: Path, text: str) -> None:
    """Create the stub file atomically (a temporary file in the same folder, then rename)."""
    try:
        if path.read_text() == text:
            return
    except OSError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".stub-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


_MEMO: dict[tuple, dict] = {}


def _versions() -> str:
    import numba
    import numpy

    return f"numba {numba.__version__}, numpy {numpy.__version__}, python {sys.version.split()[0]}"


def specialise(module, names, bindings: dict, *, key, label: str, packages=(), cache: bool = True) -> dict:
    """Compile ``names`` (functions of ``module``, in dependency order) again with ``bindings`` as globals.

    Parameters
    ----------
    module : module
        The kernel's module; its globals are copied and ``bindings`` applied.
    names : sequence of str
        Functions of ``module`` (numba dispatchers or plain functions) to
        compile again; each sees the ones before it (a caller after its callee).
        They keep their numba options (``inline``, ...).
    bindings : dict
        Global name -> value (a compiled function, a constant) in the copy.
    key : str or tuple
        What the bindings mean, deterministically (e.g. ``("lpas", "random")``
        or a user policy's :func:`policy_key`); it names the cache entry.
    label : str
        A short name for the stub file and messages (``"mapping-lpas-random"``).
    packages : sequence of str
        Packages whose sources the kernel depends on (their hash goes into
        the key); ``module``'s own package is always included.
    cache : bool
        False: compile in memory only (e.g. a user function :func:`policy_key`
        cannot key).

    Returns
    -------
    dict
        name -> the new compiled function. Memoised per process: the same
        (module, names, key) returns the same functions.
    """
    from numba import config, njit

    if config.DISABLE_JIT:  # plain Python (NUMBA_DISABLE_JIT=1): nothing to cache
        cache = False
    pkgs = tuple(sorted({module.__name__.rpartition(".")[0] or module.__name__, *packages}))
    full = hashlib.sha256(repr((label, key, tuple(names), source_version(*pkgs), _versions())).encode()).hexdigest()
    memo_key = (module.__name__, tuple(names), full)
    if memo_key in _MEMO:
        return _MEMO[memo_key]
    stub = None
    if cache:
        d = kernels_dir()
        if d is None:
            _warn("no home directory for ~/.cache and no HETSCHED_CACHE_DIR")
        else:
            safe = "".join(ch if ch.isalnum() else "_" for ch in label)[:60]
            stub = d / f"{safe}_{full[:24]}.py"
            text = (f"# hetsched kernel cache entry (generated; safe to delete)\n# {label}: {key!r}\n"
                    f"# functions: {', '.join(names)} of {module.__name__}\n# {_versions()}\n# key {full}\n")
            try:
                _write_stub(stub, text)
            except OSError as exc:
                _warn(f"cannot write {d}: {exc.strerror or exc}")
                stub = None
    g = dict(vars(module))
    g.update(bindings)
    out = {}
    for name in names:
        obj = vars(module)[name]
        py = getattr(obj, "py_func", obj)
        opts = {k: v for k, v in getattr(obj, "targetoptions", {}).items() if k in ("inline", "boundscheck",
                                                                                   "fastmath", "error_model",
                                                                                   "nogil")}
        code = py.__code__ if stub is None else py.__code__.replace(co_filename=str(stub))
        fn = _pytypes.FunctionType(code, g, py.__name__, py.__defaults__, py.__closure__)
        fn.__qualname__ = py.__qualname__
        fn.__doc__ = py.__doc__
        disp = None
        if stub is not None:
            try:
                disp = njit(cache=True, **opts)(fn)
                disp._cache = _SafeCache(disp._cache)  # numba keeps its per-function cache here
            except Exception as exc:  # no usable cache location
                _warn(f"{stub.parent}: {exc}")
                disp = None
        if disp is None:
            fn = _pytypes.FunctionType(py.__code__, g, py.__name__, py.__defaults__, py.__closure__)
            fn.__qualname__ = py.__qualname__
            disp = njit(cache=False, **opts)(fn)
        g[name] = disp
        out[name] = disp
    _MEMO[memo_key] = out
    return out


def clear_cache() -> int:
    """Delete the kernel cache directory's entries; the number of files removed."""
    import shutil

    d = kernels_dir()
    if d is None or not d.is_dir() or d.is_symlink():
        return 0
    n = sum(1 for p in d.rglob("*") if p.is_file())
    shutil.rmtree(d, ignore_errors=True)
    return n
