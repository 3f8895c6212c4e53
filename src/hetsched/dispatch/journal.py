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
(JSON of ``t1..t7``). Table ``meta`` stores the class names, checked on reopen.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any, Iterable

from ..errors import ModelError

__all__ = ["Journal"]

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


def _dumps(x: Any) -> bytes:
    import cloudpickle

    return cloudpickle.dumps(x)


def _loads(b: bytes | None) -> Any:
    import pickle

    return None if b is None else pickle.loads(b)


class Journal:
    """Durable queue + results (WAL mode, ``synchronous=NORMAL``)."""

    def __init__(self, path: str | Path, class_names: list[str]):
        self.path = str(path)
        try:
            self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise ModelError(f"journal: cannot open {self.path!r}: {exc}") from exc
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(_SCHEMA)
        row = self.db.execute("SELECT value FROM meta WHERE key='classes'").fetchone()
        if row is None:
            self.db.execute("INSERT INTO meta VALUES ('classes', ?)", (json.dumps(list(class_names)),))
        elif json.loads(row[0]) != list(class_names):
            raise ModelError(f"journal: {self.path!r} was written for classes {json.loads(row[0])}, "
                             f"got {list(class_names)}")

    # ---- writes ---------------------------------------------------------------
    def add_many(self, rows: Iterable[tuple[int, int, int, Any, float]]) -> None:
        """Commit accepted tasks ``(id, cls, kind, payload, arrival)``."""
        data = [(tid, cls, kind, _dumps(payload), arrival) for tid, cls, kind, payload, arrival in rows]
        with self.db:
            self.db.executemany("INSERT INTO tasks (id, cls, kind, payload, arrival) VALUES (?, ?, ?, ?, ?)", data)

    def finish_many(self, rows: Iterable[tuple[int, str, int, str, float, Any, dict]]) -> None:
        """Commit final states ``(id, state, attempts, worker, finish, value, times)``."""
        data = [(state, attempts, worker, finish, _dumps(value), json.dumps(times), tid)
                for tid, state, attempts, worker, finish, value, times in rows]
        if not data:
            return
        with self.db:
            self.db.executemany("UPDATE tasks SET state=?, attempts=?, worker=?, finish=?, result=?, times=? "
                                "WHERE id=? AND state='queued'", data)

    # ---- reads ----------------------------------------------------------------
    def max_id(self) -> int:
        row = self.db.execute("SELECT MAX(id) FROM tasks").fetchone()
        return -1 if row[0] is None else int(row[0])

    def pending(self) -> list[tuple[int, int, int, Any, float]]:
        """Accepted tasks without a final state, in arrival order."""
        cur = self.db.execute("SELECT id, cls, kind, payload, arrival FROM tasks WHERE state='queued' "
                              "ORDER BY arrival, id")
        return [(r[0], r[1], r[2], _loads(r[3]), r[4]) for r in cur]

    def finished(self) -> list[dict]:
        cur = self.db.execute("SELECT id, cls, state, attempts, worker, arrival, finish, result, times FROM tasks "
                              "WHERE state != 'queued' ORDER BY id")
        return [{"id": r[0], "cls": r[1], "state": r[2], "attempts": r[3], "worker": r[4], "arrival": r[5],
                 "finish": r[6], "value": _loads(r[7]), "times": json.loads(r[8]) if r[8] else {}} for r in cur]

    def counts(self) -> dict[str, int]:
        return {s: n for s, n in self.db.execute("SELECT state, COUNT(*) FROM tasks GROUP BY state")}

    def close(self) -> None:
        self.db.close()
