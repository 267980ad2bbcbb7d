"""The daemon's SQLite connections: one per operation (threads never share one), a busy timeout so writers wait
for each other, and write transactions that take the write lock at once (``BEGIN IMMEDIATE``: no upgrade
deadlocks). Every table in ``state.sqlite3`` (:mod:`p2pd.daemon.store`, :mod:`p2pd.daemon.session_tables`) goes
through these."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

BUSY_TIMEOUT_MS = 30_000


@contextlib.contextmanager
def connect(path: Path) -> Iterator[sqlite3.Connection]:
    """A connection in autocommit mode (transactions are explicit), rows by name, foreign keys on."""
    db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    try:
        db.row_factory = sqlite3.Row
        db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        db.execute("PRAGMA foreign_keys=ON")
        db.execute("PRAGMA synchronous=NORMAL")
        yield db
    finally:
        db.close()


@contextlib.contextmanager
def write(path: Path) -> Iterator[sqlite3.Connection]:
    """A write transaction: committed when the block ends, rolled back when it raises."""
    with connect(path) as db:
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
