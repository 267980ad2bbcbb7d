"""The daemon's state in one SQLite file (WAL): transfers, the inbox, handoffs and hook-recorded sessions.

Synchronous on purpose — async code calls it through ``asyncio.to_thread``. Every method opens its own short
connection (cheap for SQLite, and safe from any thread or process); writes run in ``BEGIN IMMEDIATE`` so two
writers never interleave, and ``busy_timeout`` makes a second writer wait rather than fail. The schema version
lives in ``PRAGMA user_version``; a newer version than this code knows is refused rather than guessed at.

Claiming a handoff is one conditional UPDATE (``… WHERE state='pending' AND (target='any' OR target=?)``): of
any number of concurrent claimers — threads, processes, HTTP requests — exactly one sees a changed row.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from p2pd.daemon.handoffs import STATES, check_state, check_transition
from p2pd.errors import ConflictError, InvalidInputError, NotFoundError

SCHEMA_VERSION = 1
BUSY_TIMEOUT_MS = 30_000
TRANSFER_STATES = ("queued", "running", "done", "failed", "cancelled", "interrupted")
TRANSFER_FINAL = frozenset({"done", "failed", "cancelled"})
PROGRESS_EVERY = 0.5  # seconds between progress writes of one transfer
_PROGRESS_WRITES = ThreadPoolExecutor(max_workers=1, thread_name_prefix="p2pd-progress")  # one thread: in order

_SCHEMA = """
CREATE TABLE IF NOT EXISTS transfers (
    id TEXT PRIMARY KEY,
    direction TEXT NOT NULL CHECK (direction IN ('out', 'in')),
    peer TEXT NOT NULL,
    title TEXT NOT NULL DEFAULT '',
    size INTEGER NOT NULL DEFAULT 0,
    sha256 TEXT NOT NULL DEFAULT '',
    blob_path TEXT,
    handoff_id TEXT,
    link_id TEXT,
    code TEXT,
    state TEXT NOT NULL DEFAULT 'queued',
    bytes_done INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    detail TEXT NOT NULL DEFAULT '{}',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS transfers_state ON transfers(state);
CREATE TABLE IF NOT EXISTS inbox (
    id TEXT PRIMARY KEY,
    transfer_id TEXT,
    from_peer TEXT NOT NULL,
    document_path TEXT NOT NULL,
    title TEXT NOT NULL DEFAULT '',
    platform TEXT NOT NULL DEFAULT '',
    session_id TEXT,
    messages INTEGER NOT NULL DEFAULT 0,
    sha256 TEXT NOT NULL DEFAULT '',
    handoff_id TEXT,
    received_at TEXT NOT NULL,
    imported TEXT
);
CREATE TABLE IF NOT EXISTS handoffs (
    id TEXT PRIMARY KEY,
    target TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'pending',
    title TEXT NOT NULL DEFAULT '',
    package TEXT NOT NULL,
    document_path TEXT NOT NULL,
    source TEXT NOT NULL DEFAULT '{}',
    claimed_by TEXT,
    output TEXT,
    reason TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    claimed_at TEXT,
    started_at TEXT,
    finished_at TEXT
);
CREATE INDEX IF NOT EXISTS handoffs_state ON handoffs(state);
CREATE TABLE IF NOT EXISTS hook_sessions (
    session_id TEXT PRIMARY KEY,
    transcript_path TEXT,
    cwd TEXT,
    source TEXT,
    recorded_at TEXT NOT NULL
);
"""


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:16]}"


class _Row:
    def to_json(self) -> dict[str, Any]:
        return asdict(self)  # type: ignore[call-overload]


@dataclass(frozen=True)
class TransferRow(_Row):
    id: str
    direction: str
    peer: str
    title: str
    size: int
    sha256: str
    blob_path: str | None
    handoff_id: str | None
    link_id: str | None
    code: str | None
    state: str
    bytes_done: int
    error: str | None
    detail: dict[str, Any]
    created_at: str
    updated_at: str


@dataclass(frozen=True)
class InboxRow(_Row):
    id: str
    transfer_id: str | None
    from_peer: str
    document_path: str
    title: str
    platform: str
    session_id: str | None
    messages: int
    sha256: str
    handoff_id: str | None
    received_at: str
    imported: dict[str, Any] | None


@dataclass(frozen=True)
class HandoffRow(_Row):
    id: str
    target: str
    state: str
    title: str
    package: dict[str, Any]
    document_path: str
    source: dict[str, Any]
    claimed_by: str | None
    output: str | None
    reason: str | None
    created_at: str
    updated_at: str
    claimed_at: str | None
    started_at: str | None
    finished_at: str | None


@dataclass(frozen=True)
class HookSessionRow(_Row):
    session_id: str
    transcript_path: str | None
    cwd: str | None
    source: str | None
    recorded_at: str


def _json_col(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def _transfer(r: sqlite3.Row) -> TransferRow:
    d = dict(r)
    d["detail"] = _json_col(d["detail"]) or {}
    return TransferRow(**d)


def _inbox(r: sqlite3.Row) -> InboxRow:
    d = dict(r)
    d["imported"] = _json_col(d["imported"])
    return InboxRow(**d)


def _handoff(r: sqlite3.Row) -> HandoffRow:
    d = dict(r)
    d["package"] = _json_col(d["package"])
    d["source"] = _json_col(d["source"]) or {}
    return HandoffRow(**d)


class Store:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            mode = db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise InvalidInputError(f"could not switch {self.path} to WAL mode (got {mode})")
            self._migrate(db)

    # ------------------------------------------------------------ plumbing
    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        try:
            db.row_factory = sqlite3.Row
            db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            db.execute("PRAGMA foreign_keys=ON")
            db.execute("PRAGMA synchronous=NORMAL")
            yield db
        finally:
            db.close()

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction: BEGIN IMMEDIATE takes the write lock at once (no upgrade deadlocks)."""
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    def _migrate(self, db: sqlite3.Connection) -> None:
        db.execute("BEGIN IMMEDIATE")
        try:
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise InvalidInputError(f"{self.path} has schema version {version}; this p2pd knows up to "
                                        f"{SCHEMA_VERSION} — upgrade p2pd")
            if version < 1:
                for stmt in _SCHEMA.split(";"):
                    if stmt.strip():
                        db.execute(stmt)
                db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def schema_version(self) -> int:
        with self._connect() as db:
            return int(db.execute("PRAGMA user_version").fetchone()[0])

    def journal_mode(self) -> str:
        with self._connect() as db:
            return str(db.execute("PRAGMA journal_mode").fetchone()[0])

    # ------------------------------------------------------------ transfers
    def create_transfer(self, direction: Literal["out", "in"], peer: str, *, title: str = "", size: int = 0,
                        sha256: str = "", blob_path: str | None = None, handoff_id: str | None = None,
                        link_id: str | None = None, code: str | None = None, state: str = "queued",
                        detail: dict[str, Any] | None = None) -> TransferRow:
        if direction not in ("out", "in"):
            raise InvalidInputError(f"direction must be 'out' or 'in', not {direction!r}")
        if state not in TRANSFER_STATES:
            raise InvalidInputError(f"unknown transfer state {state!r}")
        tid, ts = new_id("tr"), now()
        with self._write() as db:
            db.execute(
                "INSERT INTO transfers (id, direction, peer, title, size, sha256, blob_path, handoff_id, link_id, "
                "code, state, detail, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (tid, direction, peer, title, size, sha256, blob_path, handoff_id, link_id, code, state,
                 json.dumps(detail or {}), ts, ts))
        return self.get_transfer(tid)

    def update_transfer(self, id: str, *, state: str | None = None, bytes_done: int | None = None,
                        error: str | None = None, size: int | None = None, sha256: str | None = None,
                        code: str | None = None, title: str | None = None,
                        detail: dict[str, Any] | None = None) -> TransferRow:
        """Change some fields; ``detail`` is merged into the stored one. A final state is never left."""
        if state is not None and state not in TRANSFER_STATES:
            raise InvalidInputError(f"unknown transfer state {state!r}")
        with self._write() as db:
            row = db.execute("SELECT * FROM transfers WHERE id=?", (id,)).fetchone()
            if row is None:
                raise NotFoundError(f"no transfer {id}")
            if state is not None and row["state"] in TRANSFER_FINAL and state != row["state"]:
                raise ConflictError(f"transfer {id} is already {row['state']}")
            sets: dict[str, Any] = {"updated_at": now()}
            for key, value in (("state", state), ("bytes_done", bytes_done), ("error", error), ("size", size),
                               ("sha256", sha256), ("code", code), ("title", title)):
                if value is not None:
                    sets[key] = value
            if detail:
                sets["detail"] = json.dumps({**(_json_col(row["detail"]) or {}), **detail})
            db.execute(f"UPDATE transfers SET {', '.join(f'{k}=?' for k in sets)} WHERE id=?",
                       (*sets.values(), id))
        return self.get_transfer(id)

    def get_transfer(self, id: str) -> TransferRow:
        with self._connect() as db:
            row = db.execute("SELECT * FROM transfers WHERE id=?", (id,)).fetchone()
        if row is None:
            raise NotFoundError(f"no transfer {id}")
        return _transfer(row)

    def list_transfers(self, state: str | None = None, limit: int = 100) -> list[TransferRow]:
        with self._connect() as db:
            if state is None:
                rows = db.execute("SELECT * FROM transfers ORDER BY created_at DESC, rowid DESC LIMIT ?", (limit,))
            else:
                rows = db.execute("SELECT * FROM transfers WHERE state=? ORDER BY created_at DESC, rowid DESC "
                                  "LIMIT ?", (state, limit))
            return [_transfer(r) for r in rows.fetchall()]

    def interrupted_transfers(self) -> list[TransferRow]:
        """On start: rows left queued/running by a daemon that stopped become 'interrupted', and are returned."""
        with self._write() as db:
            ids = [r[0] for r in db.execute("SELECT id FROM transfers WHERE state IN ('queued', 'running')")]
            db.execute("UPDATE transfers SET state='interrupted', updated_at=? WHERE state IN ('queued', 'running')",
                       (now(),))
        return [self.get_transfer(i) for i in ids]

    def transfer_stats(self) -> dict[str, int]:
        with self._connect() as db:
            counts = dict(db.execute("SELECT state, COUNT(*) FROM transfers GROUP BY state").fetchall())
        return {s: int(counts.get(s, 0)) for s in TRANSFER_STATES}

    # ------------------------------------------------------------ inbox
    def add_inbox(self, *, transfer_id: str | None, from_peer: str, document_path: str, title: str, platform: str,
                  session_id: str | None, messages: int, sha256: str, handoff_id: str | None = None) -> InboxRow:
        iid = new_id("in")
        with self._write() as db:
            db.execute("INSERT INTO inbox (id, transfer_id, from_peer, document_path, title, platform, session_id, "
                       "messages, sha256, handoff_id, received_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                       (iid, transfer_id, from_peer, document_path, title, platform, session_id, messages, sha256,
                        handoff_id, now()))
        return self.get_inbox(iid)

    def get_inbox(self, id: str) -> InboxRow:
        with self._connect() as db:
            row = db.execute("SELECT * FROM inbox WHERE id=?", (id,)).fetchone()
        if row is None:
            raise NotFoundError(f"no inbox entry {id}")
        return _inbox(row)

    def list_inbox(self, limit: int = 100) -> list[InboxRow]:
        with self._connect() as db:
            rows = db.execute("SELECT * FROM inbox ORDER BY received_at DESC, rowid DESC LIMIT ?", (limit,))
            return [_inbox(r) for r in rows.fetchall()]

    def inbox_count(self) -> int:
        with self._connect() as db:
            return int(db.execute("SELECT COUNT(*) FROM inbox").fetchone()[0])

    def mark_imported(self, id: str, result: dict[str, Any]) -> InboxRow:
        with self._write() as db:
            cur = db.execute("UPDATE inbox SET imported=? WHERE id=?", (json.dumps({**result, "at": now()}), id))
            if cur.rowcount != 1:
                raise NotFoundError(f"no inbox entry {id}")
        return self.get_inbox(id)

    def delete_inbox(self, id: str) -> InboxRow:
        row = self.get_inbox(id)
        with self._write() as db:
            db.execute("DELETE FROM inbox WHERE id=?", (id,))
        return row

    # ------------------------------------------------------------ handoffs
    def create_handoff(self, *, target: str, package: dict[str, Any], document_path: str, title: str,
                       source: dict[str, Any], id: str | None = None) -> HandoffRow:
        if not target:
            raise InvalidInputError("a handoff needs a target: a device id or 'any'")
        hid, ts = id or new_id("ho"), now()
        with self._write() as db:
            db.execute("INSERT INTO handoffs (id, target, state, title, package, document_path, source, created_at, "
                       "updated_at) VALUES (?,?,'pending',?,?,?,?,?,?)",
                       (hid, target, title, json.dumps(package), document_path, json.dumps(source), ts, ts))
        return self.get_handoff(hid)

    def claim_handoff(self, id: str, claimer: str) -> HandoffRow | None:
        """Atomic: the one caller whose UPDATE changed the row gets it; everybody else gets None."""
        if not claimer:
            raise InvalidInputError("a claim needs the claimer's device id")
        ts = now()
        with self._write() as db:
            cur = db.execute("UPDATE handoffs SET state='claimed', claimed_by=?, claimed_at=?, updated_at=? "
                             "WHERE id=? AND state='pending' AND (target='any' OR target=?)",
                             (claimer, ts, ts, id, claimer))
            won = cur.rowcount == 1
        if not won:
            self.get_handoff(id)  # NotFoundError when there is no such handoff
            return None
        return self.get_handoff(id)

    def transition_handoff(self, id: str, state: str, *, output: str | None = None,
                           reason: str | None = None) -> HandoffRow:
        """Move a handoff to ``state`` if the lifecycle allows it (ConflictError otherwise)."""
        check_state(state)
        ts = now()
        with self._write() as db:
            row = db.execute("SELECT state FROM handoffs WHERE id=?", (id,)).fetchone()
            if row is None:
                raise NotFoundError(f"no handoff {id}")
            current = row["state"]
            check_transition(current, state)
            sets: dict[str, Any] = {"state": state, "updated_at": ts}
            if state == "started":
                sets["started_at"] = ts
            if state in ("completed", "failed", "cancelled"):
                sets["finished_at"] = ts
            if state == "pending":  # released: somebody else may claim it
                sets.update(claimed_by=None, claimed_at=None, started_at=None)
            if output is not None:
                sets["output"] = output
            if reason is not None:
                sets["reason"] = reason
            cur = db.execute(f"UPDATE handoffs SET {', '.join(f'{k}=?' for k in sets)} WHERE id=? AND state=?",
                             (*sets.values(), id, current))
            if cur.rowcount != 1:  # cannot happen inside BEGIN IMMEDIATE; kept as a guard
                raise ConflictError(f"handoff {id} changed meanwhile")
        return self.get_handoff(id)

    def get_handoff(self, id: str) -> HandoffRow:
        with self._connect() as db:
            row = db.execute("SELECT * FROM handoffs WHERE id=?", (id,)).fetchone()
        if row is None:
            raise NotFoundError(f"no handoff {id}")
        return _handoff(row)

    def list_handoffs(self, state: str | None = None, limit: int = 100) -> list[HandoffRow]:
        with self._connect() as db:
            if state is None:
                rows = db.execute("SELECT * FROM handoffs ORDER BY created_at DESC, rowid DESC LIMIT ?", (limit,))
            else:
                check_state(state)
                rows = db.execute("SELECT * FROM handoffs WHERE state=? ORDER BY created_at DESC, rowid DESC "
                                  "LIMIT ?", (state, limit))
            return [_handoff(r) for r in rows.fetchall()]

    def pending_handoffs_for(self, device_id: str) -> list[HandoffRow]:
        with self._connect() as db:
            rows = db.execute("SELECT * FROM handoffs WHERE state='pending' AND (target='any' OR target=?) "
                              "ORDER BY created_at, rowid", (device_id,))
            return [_handoff(r) for r in rows.fetchall()]

    def handoff_stats(self) -> dict[str, int]:
        with self._connect() as db:
            counts = dict(db.execute("SELECT state, COUNT(*) FROM handoffs GROUP BY state").fetchall())
        return {s: int(counts.get(s, 0)) for s in STATES}

    # ------------------------------------------------------------ hook sessions
    def record_hook_session(self, *, session_id: str, transcript_path: str | None, cwd: str | None,
                            source: str | None = None) -> HookSessionRow:
        if not session_id:
            raise InvalidInputError("the hook input has no session_id")
        with self._write() as db:
            db.execute("INSERT INTO hook_sessions (session_id, transcript_path, cwd, source, recorded_at) "
                       "VALUES (?,?,?,?,?) ON CONFLICT(session_id) DO UPDATE SET transcript_path=excluded."
                       "transcript_path, cwd=excluded.cwd, source=excluded.source, recorded_at=excluded.recorded_at",
                       (session_id, transcript_path, cwd, source, now()))
        found = self.hook_session(session_id)
        assert found is not None
        return found

    def hook_session(self, session_id: str) -> HookSessionRow | None:
        with self._connect() as db:
            row = db.execute("SELECT * FROM hook_sessions WHERE session_id=?", (session_id,)).fetchone()
        return HookSessionRow(**dict(row)) if row is not None else None

    def latest_hook_session(self, cwd: str | None = None) -> HookSessionRow | None:
        with self._connect() as db:
            if cwd is None:
                row = db.execute("SELECT * FROM hook_sessions ORDER BY recorded_at DESC, rowid DESC LIMIT 1")
            else:
                row = db.execute("SELECT * FROM hook_sessions WHERE cwd=? ORDER BY recorded_at DESC, rowid DESC "
                                 "LIMIT 1", (cwd,))
            found = row.fetchone()
        return HookSessionRow(**dict(found)) if found is not None else None


class ProgressWriter:
    """A transfer's progress callback: records the bytes done at most every PROGRESS_EVERY seconds (and the last
    one always), in a worker thread — progress is reported on the event loop, SQLite writes do not belong there.
    Writes go through one thread, so they land in order."""

    def __init__(self, store: Store, transfer_id: str, *, with_size: bool = False) -> None:
        self.store = store
        self.transfer_id = transfer_id
        self.with_size = with_size
        self._last = 0.0

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - self._last < PROGRESS_EVERY:
            return
        self._last = now
        fields: dict[str, Any] = {"bytes_done": done, **({"size": total} if self.with_size else {})}
        asyncio.get_running_loop().run_in_executor(_PROGRESS_WRITES, self._write, fields) \
            .add_done_callback(_log_failure)

    def _write(self, fields: dict[str, Any]) -> None:
        self.store.update_transfer(self.transfer_id, **fields)


def _log_failure(future: Future[None] | asyncio.Future[None]) -> None:
    if not future.cancelled() and future.exception() is not None:  # progress is best effort; the row stays right
        import logging

        logging.getLogger("p2pd.daemon").debug("progress write failed: %s", future.exception())
