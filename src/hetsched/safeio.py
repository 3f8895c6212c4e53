"""Safe file output and input: every file hetsched writes or reads goes through here.

Writing (:func:`atomic_output`, :func:`write_bytes`, :func:`write_text`):

* an existing file is replaced only with ``force=True`` (``--force``);
* the target must not be a symbolic link (dangling or not) or anything but a
  regular file (a device, a FIFO, a folder): refused with one line;
* the data go to a temporary file created **exclusively** (``O_EXCL``, an
  unpredictable name from :func:`tempfile.mkstemp`) in the target's folder, are
  flushed to disk (``fsync``), and the temporary file is renamed over the target
  (``os.replace``: atomic on POSIX; it replaces a link planted meanwhile, never
  the file a link points to). A reader never sees a half-written file;
* on any failure (a full disk, an interrupted writer, an exception in the
  caller's writing code) the temporary file is removed and the error names the
  path and the reason (:class:`OutputError`).

Reading (:func:`read_input`, :func:`open_input`, :func:`check_input`): only
regular files, opened without blocking (a FIFO cannot hang the open), their
size checked against a limit **before** reading.

Containment (:func:`inside`): whether a path, after resolving links, lies inside
a folder (the report embeds nothing from outside its results folder).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from pathlib import Path
from typing import IO, Iterator

from .errors import HetschedError
from .validation import check_file

__all__ = ["OutputError", "InputError", "check_output", "atomic_output", "write_bytes", "write_text",
           "check_input", "open_input", "read_input", "inside", "MAX_INPUT_BYTES"]

#: default size limit of an input file read whole (scenario, task file, policy file, results JSON)
MAX_INPUT_BYTES = 64 * 1024 * 1024


class OutputError(HetschedError):
    """A file cannot be written (exists without ``--force``, a link, not a regular file, disk full…)."""


class InputError(HetschedError):
    """A file cannot be read (missing, not a regular file, over its size limit…)."""


def _reason(exc: OSError) -> str:
    if exc.errno == errno.ENOSPC:
        return "no space left on the device"
    if exc.errno == errno.EDQUOT:
        return "disk quota exceeded"
    return exc.strerror or str(exc)


def _label(what: str, path: Path) -> str:
    return f"{what} {str(path)!r}" if what else repr(str(path))


def check_output(path: str | os.PathLike, *, force: bool = False, what: str = "") -> Path:
    """The target ``path`` if it may be written, else :class:`OutputError` (one line).

    Refuses a symbolic link, an existing non-regular file, an existing file
    without ``force``, and a missing or non-folder parent.
    """
    p = Path(os.fspath(path))
    name = _label(what, p)
    if not p.name or p.name in (".", ".."):
        raise OutputError(f"{name}: not a file name")
    if p.is_symlink():
        raise OutputError(f"{name} is a symbolic link; hetsched does not write through links "
                          f"(remove it or choose another path)")
    try:
        st = p.stat()
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise OutputError(f"{name}: {_reason(exc)}") from None
    if st is not None:
        if not stat.S_ISREG(st.st_mode):
            kind = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file (a device or a pipe?)"
            raise OutputError(f"{name} is {kind}; refusing to replace it")
        if not force:
            raise OutputError(f"{name} exists; pass --force (overwrite=True in the API) to replace it")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise OutputError(f"{name}: folder {str(parent)!r} does not exist")
    return p


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike, *, force: bool = False, what: str = "") -> Iterator[Path]:
    """Context manager yielding a temporary path to write; on success it replaces ``path``.

    The temporary file has the target's suffix (writers that choose a format
    from it, such as matplotlib, still work) and lives in the target's folder::

        with atomic_output("fig.png", force=force) as tmp:
            fig.savefig(tmp)
    """
    p = check_output(path, force=force, what=what)
    parent = p.parent if str(p.parent) else Path(".")
    name = _label(what, p)
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{p.name[:80]}.", suffix=f".tmp{p.suffix}", dir=parent)
    except OSError as exc:
        raise OutputError(f"{name}: cannot create a file in {str(parent)!r}: {_reason(exc)}") from None
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        if not tmp.exists():  # a writer that appended its own suffix, or removed the file
            raise OutputError(f"{name}: the writer did not produce {str(tmp)!r}")
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        if p.is_symlink() or (p.exists() and not force):  # planted while we wrote
            raise OutputError(f"{name} appeared while writing (a link or another run?); not replaced")
        os.replace(tmp, p)
        _fsync_dir(parent)
    except OSError as exc:
        raise OutputError(f"{name}: could not write: {_reason(exc)}") from None
    finally:
        with contextlib.suppress(OSError):
            if tmp.exists() or tmp.is_symlink():
                tmp.unlink()


def write_bytes(path: str | os.PathLike, data: bytes, *, force: bool = False, what: str = "") -> Path:
    """Write ``data`` to ``path`` atomically (see :func:`atomic_output`)."""
    with atomic_output(path, force=force, what=what) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(data)
    return Path(path)


def write_text(path: str | os.PathLike, text: str, *, force: bool = False, what: str = "",
               encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` atomically (see :func:`atomic_output`)."""
    return write_bytes(path, text.encode(encoding), force=force, what=what)


# --------------------------------------------------------------------------- input


def check_input(path: str | os.PathLike, *, what: str = "", max_bytes: int | None = MAX_INPUT_BYTES) -> Path:
    """``path`` if it names a readable regular file of at most ``max_bytes``; else :class:`InputError`.

    Checks only (``stat``): nothing is opened, so a FIFO cannot block it. The
    check is :func:`hetsched.validation.check_file` (the project's one
    regular-file check), with the file's label in the message.
    """
    s = os.fspath(path) if isinstance(path, (str, os.PathLike)) else None
    if not s or "\x00" in s or len(s) > 4096:
        raise InputError(f"{what or 'file'}: not a file path: {str(path)[:80]!r}")
    return Path(check_file(s, _label(what, Path(s)), show_path=False, max_bytes=max_bytes, error=InputError))


def open_input(path: str | os.PathLike, *, what: str = "", max_bytes: int | None = MAX_INPUT_BYTES) -> IO[bytes]:
    """Open a regular file for binary reading, checked on the open descriptor (no race with a swap).

    The open never blocks (``O_NONBLOCK``: a FIFO swapped in after
    :func:`check_input` is refused, not waited on).
    """
    p = check_input(path, what=what, max_bytes=max_bytes)
    name = _label(what, p)
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise InputError(f"{name}: {_reason(exc)}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"{name} is not a regular file (a pipe or a device?)")
        if max_bytes is not None and st.st_size > max_bytes:
            raise InputError(f"{name} is {st.st_size:,} bytes, over the limit of {max_bytes:,}")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_input(path: str | os.PathLike, *, what: str = "", max_bytes: int | None = MAX_INPUT_BYTES,
               encoding: str | None = "utf-8") -> str | bytes:
    """The whole content of a regular file (text with ``encoding``, bytes with ``encoding=None``).

    Reads at most ``max_bytes + 1`` bytes whatever the file claims, so a file
    that grows while read is refused, not read without limit. Undecodable text
    is an :class:`InputError` naming the file.
    """
    with open_input(path, what=what, max_bytes=max_bytes) as fh:
        data = fh.read(max_bytes + 1) if max_bytes is not None else fh.read()
    name = _label(what, Path(os.fspath(path)))
    if max_bytes is not None and len(data) > max_bytes:
        raise InputError(f"{name} is over the limit of {max_bytes:,} bytes")
    if encoding is None:
        return data
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise InputError(f"{name}: not {encoding} text (byte {exc.start})") from None


def inside(path: str | os.PathLike, root: str | os.PathLike) -> bool:
    """True if ``path``, with every link resolved, lies inside the folder ``root`` (resolved too)."""
    try:
        Path(path).resolve().relative_to(Path(root).resolve())
        return True
    except (ValueError, OSError, RuntimeError):  # outside, unreadable, or a link loop
        return False
