"""Specialised kernels and their on-disk cache: hits across processes, distinct keys, and every way the
cache can fail (unwritable, a file in its place, corrupt, stale, full disk) falling back with one warning."""

import errno
import importlib
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from numba import njit

import tiny_kernel
from hetsched.sim.core import kernels as K

HERE = Path(__file__).resolve().parent
X = np.arange(4.0)


@njit(inline="always")
def double(x):
    return 2.0 * x


TRUE = 2.0 * X.sum() * 3.0  # run(X) with _step = double and _SCALE = 3


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fresh cache directory, no memoised kernels, the once-per-process warning re-armed."""
    monkeypatch.setenv("HETSCHED_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.setattr(K, "_MEMO", {})
    monkeypatch.setattr(K, "_WARNED", False)
    return tmp_path / "c"


def _kernel(module=tiny_kernel, key=("double", 3.0)):
    K._MEMO.clear()
    return K.specialise(module, ["run"], {"_step": double, "_SCALE": 3.0}, key=key, label="tiny-double")["run"]


def _run(k):
    """(value, hits, misses, cache warnings) of one call of a fresh kernel."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        v = k(X)
    return (v, sum(k.stats.cache_hits.values()), sum(k.stats.cache_misses.values()),
            [str(x.message) for x in w if issubclass(x.category, K.KernelCacheWarning)])


def test_a_new_process_loads_from_disk(tmp_path):
    env = {**os.environ, "HETSCHED_CACHE_DIR": str(tmp_path), "PYTHONPATH": str(HERE)}
    env.pop("NUMBA_CACHE_DIR", None)
    runs = []
    for _ in range(2):
        out = subprocess.run([sys.executable, "-m", "tiny_kernel"], env=env, capture_output=True, text=True,
                             timeout=300, cwd=HERE)
        assert out.returncode == 0, out.stderr
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    assert [r["value"] for r in runs] == [TRUE, TRUE]
    assert (runs[0]["misses"], runs[1]["hits"], runs[1]["misses"]) == (1, 1, 0)
    stubs = list((tmp_path / "kernels").glob("tiny_double_*.py"))
    assert len(stubs) == 1 and "double" in stubs[0].read_text()


def test_two_bindings_two_entries(cache):
    @njit(inline="always")
    def triple(x):
        return 3.0 * x

    a = K.specialise(tiny_kernel, ["run"], {"_SCALE": 2.0}, key=("plus1", 2.0), label="tiny-a")["run"]
    b = K.specialise(tiny_kernel, ["run"], {"_step": triple}, key=("triple",), label="tiny-b")["run"]
    assert a(X) == 2.0 * (X + 1).sum() and b(X) == 3.0 * X.sum()
    assert K.specialise(tiny_kernel, ["run"], {"_SCALE": 2.0}, key=("plus1", 2.0), label="tiny-a")["run"] is a
    assert len(list((cache / "kernels").glob("tiny_*.py"))) == 2
    assert tiny_kernel.run(X) == (X + 1).sum()  # the module's own kernel is untouched
    assert _run(_kernel())[2] == 1 and _run(_kernel())[1] == 1  # compiled once, then loaded from disk


def test_a_file_where_the_cache_should_be(cache, monkeypatch):
    blocker = cache.parent / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("HETSCHED_CACHE_DIR", str(blocker / "sub"))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        k = _kernel()
    v, _, _, later = _run(k)
    msgs = [str(x.message) for x in w if issubclass(x.category, K.KernelCacheWarning)] + later
    assert v == TRUE and len(msgs) == 1 and "compiling in memory" in msgs[0]


def test_read_only_cache(cache):
    cache.mkdir()
    if os.geteuid() != 0:
        cache.chmod(0o500)
    elif subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(cache)],
                        capture_output=True).returncode != 0:
        pytest.skip("running as root without a read-only mount: cannot make a read-only directory")
    try:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            v, _, _, later = _run(_kernel())
        msgs = [str(x.message) for x in w if issubclass(x.category, K.KernelCacheWarning)] + later
        assert v == TRUE and len(msgs) == 1
    finally:
        if os.geteuid() == 0:
            subprocess.run(["umount", str(cache)], capture_output=True)
        else:
            cache.chmod(0o700)


def test_corrupt_entries_are_rebuilt(cache, monkeypatch):
    assert _run(_kernel())[2] == 1
    for f in (cache / "kernels" / "__pycache__").iterdir():
        f.write_bytes(b"\x80garbage" * 7)  # corrupt index and object code
    v, hits, misses, msgs = _run(_kernel())
    assert v == TRUE and misses == 1 and len(msgs) == 1 and "cannot read" in msgs[0]
    monkeypatch.setattr(K, "_WARNED", False)
    v, hits, misses, msgs = _run(_kernel())  # the bad index was dropped and rebuilt: a clean hit
    assert v == TRUE and hits == 1 and not msgs


def test_stale_entries_are_never_used(cache, tmp_path, monkeypatch):
    """The kernel's source changes (here its loop): a new key, a new compile, never the old object code."""
    mod = tmp_path / "mod"
    mod.mkdir()
    src = (HERE / "tiny_kernel.py").read_text()
    (mod / "tiny_kernel_copy.py").write_text(src)
    monkeypatch.syspath_prepend(str(mod))
    m = importlib.import_module("tiny_kernel_copy")
    assert _run(_kernel(m))[:3] == (TRUE, 0, 1)
    (mod / "tiny_kernel_copy.py").write_text(src.replace("s += _step(a[k]) * _SCALE", "s += _step(a[k]) * _SCALE * 2"))
    monkeypatch.setattr(K, "_VERSIONS", {})
    m = importlib.reload(m)
    v, hits, misses, msgs = _run(_kernel(m))
    assert (v, hits, misses, msgs) == (2 * TRUE, 0, 1, [])
    assert len(list((cache / "kernels").glob("tiny_double_*.py"))) == 2


def test_full_disk_while_saving(cache, monkeypatch):
    """The object code cannot be written (ENOSPC from the final rename): one warning, right answer."""
    real = os.replace

    def full(src, dst, *a, **kw):
        if "__pycache__" in str(dst) and str(cache) in str(dst):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(src, dst, *a, **kw)

    monkeypatch.setattr(os, "replace", full)
    v, _, misses, msgs = _run(_kernel())
    assert v == TRUE and misses == 1 and len(msgs) == 1 and "No space left" in msgs[0]


def test_policy_key_follows_code_constants_globals_and_closures():
    def make(c):
        def f(i, mu, n, work, u):
            return i + c
        return f

    def g1(i, mu, n, work, u):
        return i + 1

    def g2(i, mu, n, work, u):
        return i + 2

    assert K.policy_key(make(1)) == K.policy_key(make(1))
    assert K.policy_key(make(1)) != K.policy_key(make(2))  # closure constant
    assert K.policy_key(g1) != K.policy_key(g2)  # code constant
    ns1 = {"W": np.array([1.0, 2.0])}
    ns2 = {"W": np.array([1.0, 3.0])}
    src = "def h(i, mu, n, work, u):\n    return int(W[0] + W[1])\n"
    exec(src, ns1)
    exec(src, ns2)
    assert K.policy_key(ns1["h"]) != K.policy_key(ns2["h"])  # a global array it reads
    ns3 = {"W": object()}
    exec(src, ns3)
    assert K.policy_key(ns3["h"]) is None  # cannot be keyed: compiled in memory
