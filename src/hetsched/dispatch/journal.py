"""SQLite journal of the dispatcher: accepted tasks and their results.

A task is *accepted* when :meth:`Journal.add_many` has committed it; from then on
a dispatcher restart on the same file finds it again. Results are written in
batches (one transaction per batch of completions); a task whose result was not
yet committed when the dispatcher died is run again after the restart — it is
still reported done exactly once, because reporting reads the journal's single
``done`` row per task.

Schema (one table ``tasks``): ``id`` (the dispatcher's task id), ``cls`` (class
index), ``kind``/``payload`` (cloudpickled task), ``arrival`` (wall-clock
seconds, kept across restarts), ``state`` (``queued`` | ``done`` | ``failed``),
``attempts``, ``worker``, ``finish``, ``result`` (cloudpickled value), ``times``
(JSON of ``t1..t7``). Table ``meta`` stores ``format`` (``hetsched-journal``),
the class names and ``spec``, a hash of the task specification (the task file,
or the demo's parameters) the journal belongs to; all three are checked on
reopen.

Safety rules (what the journal refuses, each with one line naming the file):

* a file that is not an SQLite database, or a database that is not a hetsched
  journal (never writes tables into a user's database);
* a journal of other classes or of another task specification;
* a corrupt journal (``PRAGMA quick_check``);
* a journal in use by another dispatcher (an exclusive ``flock`` held for the
  dispatcher's lifetime; released by the OS if the dispatcher is killed), or
  locked by another program for longer than ``busy_timeout``.

Write errors (disk full, file size limit, I/O error) raise
:class:`JournalWriteError`; the transaction is rolled back, so the journal stays
as it was before the failed write.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable

from ..errors import HetschedError, ModelError

__all__ = ["Journal", "JournalWriteError", "FORMAT"]

FORMAT = "hetsched-journal"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS tasks (
    id INTEGER PRIMARY KEY,
    cls INTEGER NOT NULL,
    kind INTEGER NOT NULL,
    payload BLOB,
    arrival REAL NOT NULL,
    state TEXT NOT NULL DEFAULT 'queued',
    attempts INTEGER NOT NULL DEFAULT 0,
    worker TEXT,
    finish REAL,
    result BLOB,
    times TEXT
);
"""
_OWN_TABLES = {"meta", "tasks"}


class JournalWriteError(HetschedError):
    """A journal write failed (disk full, size limit, I/O error); nothing of it was committed."""


def _dumps(x: Any) -> bytes:
    import cloudpickle

    return cloudpickle.dumps(x)


def _loads(b: bytes | None) -> Any:
    import pickle

    return None if b is None else pickle.loads(b)


class Journal:
    """Durable queue + results (WAL mode, ``synchronous=NORMAL``).

    Parameters
    ----------
    path : journal file (created if missing).
    class_names : the dispatcher's class labels (checked against the file).
    spec : hash of the task specification; ``None`` skips the check (and does
        not record one).
    lock : hold an exclusive lock for this object's lifetime (a dispatcher);
        ``False`` for a read-only inspection that may run beside a live
        dispatcher (creates nothing; a file without tables reads as empty).
    busy_timeout : seconds to wait for a lock held by another program.
    """

    def __init__(self, path: str | Path, class_names: list[str], *, spec: str | None = None, lock: bool = True,
                 busy_timeout: float = 5.0):
        self.path = str(path)
        self._lockfd = None
        self.db = None
        self._check_file()
        self._writer = bool(lock)
        self._empty = False
        if lock:
            self._lock()
        try:
            self._open(class_names, spec, busy_timeout)
        except BaseException:
            self.close()
            raise

    def _check_file(self):
        """Refuse a symbolic link, a folder, a pipe or a device (:func:`hetsched.safeio.check_output`: the
        journal is written), and a file that is not an SQLite database (its first bytes, read through
        :func:`hetsched.safeio.open_input`: a FIFO never blocks this check)."""
        from ..safeio import InputError, OutputError, check_output, open_input

        try:
            check_output(self.path, force=True, what="journal")
            if not os.path.lexists(self.path):
                return
            with open_input(self.path, what="journal", max_bytes=None) as fh:
                head = fh.read(16)
        except (OutputError, InputError) as exc:
            raise ModelError(str(exc)) from None
        if head and head != b"SQLite format 3\x00":
            raise ModelError(f"journal: {self.path!r} is not a hetsched journal (not an SQLite database); "
                             f"refusing to overwrite it — give a new file")

    def _lock(self):
        import fcntl

        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
        except OSError as exc:
            raise ModelError(f"journal: cannot open {self.path!r}: {exc.strerror or exc}") from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # replaced by a pipe or a device since the check
            os.close(fd)
            raise ModelError(f"journal: {self.path!r} is not a regular file (a pipe or a device?), refused")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise ModelError(f"journal: {self.path!r} is in use by another dispatcher (locked); "
                             f"wait for it to finish or give another file") from None
        self._lockfd = fd

    def _open(self, class_names, spec, busy_timeout):
        try:
            self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False,
                                      timeout=float(busy_timeout))
            tables = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if tables and not tables <= _OWN_TABLES | {"sqlite_sequence"}:
                raise ModelError(f"journal: {self.path!r} is an SQLite database but not a hetsched journal "
                                 f"(tables {sorted(tables)}); refusing to write into it — give a new file")
            if "meta" in tables:
                fmt = self.db.execute("SELECT value FROM meta WHERE key='format'").fetchone()
                cls_row = self.db.execute("SELECT value FROM meta WHERE key='classes'").fetchone()
                if cls_row is None or (fmt is not None and fmt[0] != FORMAT):
                    raise ModelError(f"journal: {self.path!r} is an SQLite database but not a hetsched journal; "
                                     f"refusing to write into it — give a new file")
            elif tables:
                raise ModelError(f"journal: {self.path!r} is an SQLite database but not a hetsched journal "
                                 f"(tables {sorted(tables)}); refusing to write into it — give a new file")
            if not self._writer:  # inspection beside a live dispatcher: read only, create nothing
                self._empty = "tasks" not in tables
                return
            if tables:
                check = self.db.execute("PRAGMA quick_check").fetchone()
                if check is None or check[0] != "ok":
                    raise ModelError(f"journal: {self.path!r} is corrupt ({check[0] if check else 'no answer'}); "
                                     f"move it away and rerun (its finished results may be recovered with sqlite3)")
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(_SCHEMA)
            self.db.execute("BEGIN IMMEDIATE")  # can we write? (another program may hold the lock)
            self.db.execute("ROLLBACK")
            self._check_meta("classes", json.dumps(list(class_names)), "classes")
            self._check_meta("format", FORMAT, "format")
            if spec is not None:
                self._check_meta("spec", str(spec), "spec")
        except ModelError:
            raise
        except sqlite3.OperationalError as exc:
            msg = str(exc)
            if "locked" in msg or "busy" in msg:
                raise ModelError(f"journal: {self.path!r} is locked by another program ({msg}); "
                                 f"close it and rerun") from None
            if "full" in msg or "disk" in msg or "I/O" in msg:
                raise JournalWriteError(f"journal: cannot write {self.path!r} ({msg})") from None
            raise ModelError(f"journal: cannot use {self.path!r} ({msg})") from None
        except sqlite3.DatabaseError as exc:
            raise ModelError(f"journal: {self.path!r} is corrupt or not a journal ({exc}); "
                             f"move it away and rerun") from None

    def _check_meta(self, key, value, what):
        row = self.db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        if row is None:
            self.db.execute("INSERT INTO meta VALUES (?, ?)", (key, value))
            return
        if row[0] == value:
            return
        if what == "classes":
            raise ModelError(f"journal: {self.path!r} was written for classes {json.loads(row[0])}, "
                             f"got {json.loads(value)}")
        if what == "spec":
            raise ModelError(f"journal: {self.path!r} belongs to another task specification "
                             f"(spec {row[0][:12]}, this one {value[:12]}); give a new journal file")
        raise ModelError(f"journal: {self.path!r} has format {row[0]!r}, expected {value!r}")

    @property
    def spec(self) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key='spec'").fetchone()
        return None if row is None else row[0]

    # ---- writes ---------------------------------------------------------------
    @contextmanager
    def _transaction(self):
        """One explicit transaction (autocommit connection: ``with db`` alone would commit row by row)."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
            self.db.execute("COMMIT")
        except BaseException:
            if self.db.in_transaction:
                try:
                    self.db.execute("ROLLBACK")
                except sqlite3.Error:  # pragma: no cover - SQLite rolled back by itself
                    pass
            raise

    def _write(self, sql: str, data: list) -> None:
        try:
            with self._transaction():
                self.db.executemany(sql, data)
        except sqlite3.Error as exc:
            raise JournalWriteError(f"journal: writing {len(data)} row(s) to {self.path!r} failed ({exc}); "
                                    f"nothing of this write was committed") from None
        except OSError as exc:  # pragma: no cover - e.g. EFBIG surfacing outside SQLite
            raise JournalWriteError(f"journal: writing {self.path!r} failed ({exc.strerror or exc})") from None

    def commit(self, adds: list, finishes: list) -> None:
        """Commit accepted tasks and final states together, in one transaction."""
        if not adds and not finishes:
            return
        a = [(tid, cls, kind, _dumps(payload), arrival) for tid, cls, kind, payload, arrival in adds]
        f = [(state, attempts, worker, finish, _dumps(value), json.dumps(times), tid)
             for tid, state, attempts, worker, finish, value, times in finishes]
        try:
            with self._transaction():
                if a:
                    self.db.executemany("INSERT INTO tasks (id, cls, kind, payload, arrival) VALUES (?, ?, ?, ?, ?)", a)
                if f:
                    self.db.executemany("UPDATE tasks SET state=?, attempts=?, worker=?, finish=?, result=?, times=? "
                                        "WHERE id=? AND state='queued'", f)
        except sqlite3.Error as exc:
            raise JournalWriteError(f"journal: writing {len(a) + len(f)} row(s) to {self.path!r} failed ({exc}); "
                                    f"nothing of this write was committed") from None

    def add_many(self, rows: Iterable[tuple[int, int, int, Any, float]]) -> None:
        """Commit accepted tasks ``(id, cls, kind, payload, arrival)`` (one transaction)."""
        data = [(tid, cls, kind, _dumps(payload), arrival) for tid, cls, kind, payload, arrival in rows]
        if data:
            self._write("INSERT INTO tasks (id, cls, kind, payload, arrival) VALUES (?, ?, ?, ?, ?)", data)

    def finish_many(self, rows: Iterable[tuple[int, str, int, str, float, Any, dict]]) -> None:
        """Commit final states ``(id, state, attempts, worker, finish, value, times)`` (one transaction).

        A task that already has a final state keeps it (the first result wins).
        """
        data = [(state, attempts, worker, finish, _dumps(value), json.dumps(times), tid)
                for tid, state, attempts, worker, finish, value, times in rows]
        if data:
            self._write("UPDATE tasks SET state=?, attempts=?, worker=?, finish=?, result=?, times=? "
                        "WHERE id=? AND state='queued'", data)

    # ---- reads ----------------------------------------------------------------
    def max_id(self) -> int:
        if self._empty:
            return -1
        row = self.db.execute("SELECT MAX(id) FROM tasks").fetchone()
        return -1 if row[0] is None else int(row[0])

    def pending(self) -> list[tuple[int, int, int, Any, float]]:
        """Accepted tasks without a final state, in arrival order."""
        if self._empty:
            return []
        cur = self.db.execute("SELECT id, cls, kind, payload, arrival FROM tasks WHERE state='queued' "
                              "ORDER BY arrival, id")
        return [(r[0], r[1], r[2], _loads(r[3]), r[4]) for r in cur]

    def finished(self) -> list[dict]:
        if self._empty:
            return []
        cur = self.db.execute("SELECT id, cls, state, attempts, worker, arrival, finish, result, times FROM tasks "
                              "WHERE state != 'queued' ORDER BY id")
        return [{"id": r[0], "cls": r[1], "state": r[2], "attempts": r[3], "worker": r[4], "arrival": r[5],
                 "finish": r[6], "value": _loads(r[7]), "times": json.loads(r[8]) if r[8] else {}} for r in cur]

    def counts(self) -> dict[str, int]:
        if self._empty:
            return {}
        return {s: n for s, n in self.db.execute("SELECT state, COUNT(*) FROM tasks GROUP BY state")}

    def __del__(self):  # an unclosed journal must not keep its lock
        try:
            self.close()
        except Exception:  # pragma: no cover - interpreter shutdown
            pass

    def close(self) -> None:
        db = getattr(self, "db", None)
        if db is not None:
            db.close()
            self.db = None
        if self._lockfd is not None:  # after SQLite closed its descriptors (POSIX lock caveat)
            os.close(self._lockfd)
            self._lockfd = None
