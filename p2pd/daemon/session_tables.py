"""The agent sessions' tables in the daemon's SQLite file: delegations (seed 002), session links (seed 003), the
messages waiting for a session (its inbox, read by its next hook) and the session-link messages waiting for a
paired device.

The tables sit beside :class:`~p2pd.daemon.store.Store`'s in ``state.sqlite3`` and are made with ``CREATE TABLE IF
NOT EXISTS`` when first opened: they are additive, so no schema version of the main store is needed for them. Like
the store, every method opens its own short connection and writes run in ``BEGIN IMMEDIATE``, so the daemon and
a hook process (which writes here when no daemon runs) never interleave. State changes are checked here: a
delegation moves only as :mod:`p2pd.daemon.delegations` allows, a link only as
:func:`p2pd.daemon.session_links.check_change` allows.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from p2pd.daemon import delegations, sqlite_db
from p2pd.daemon.peer_protocol import SessionLinkView
from p2pd.daemon.rows import now
from p2pd.daemon.session_links import check_change, merge
from p2pd.errors import ConflictError, InvalidInputError, NotFoundError

SCHEMA = """
CREATE TABLE IF NOT EXISTS delegations (
    id TEXT PRIMARY KEY,
    parent_session TEXT,
    parent_transcript TEXT,
    session_id TEXT NOT NULL,
    agent TEXT NOT NULL,
    cwd TEXT NOT NULL,
    transcript_path TEXT,
    repo TEXT,
    worktree TEXT,
    branch TEXT,
    prompt TEXT NOT NULL DEFAULT '',
    resume_command TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'created',
    pid INTEGER,
    exit_code INTEGER,
    reason TEXT,
    log_path TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    started_at TEXT,
    ended_at TEXT
);
CREATE INDEX IF NOT EXISTS delegations_session ON delegations(session_id);
CREATE TABLE IF NOT EXISTS session_links (
    id TEXT PRIMARY KEY,
    view TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS session_messages (
    id TEXT PRIMARY KEY,
    session TEXT NOT NULL,
    kind TEXT NOT NULL,
    from_device TEXT NOT NULL,
    from_session TEXT,
    ref TEXT,
    text TEXT NOT NULL,
    created_at TEXT NOT NULL,
    delivered_at TEXT
);
CREATE INDEX IF NOT EXISTS session_messages_session ON session_messages(session, delivered_at);
CREATE TABLE IF NOT EXISTS session_outbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    device TEXT NOT NULL,
    message TEXT NOT NULL,
    created_at TEXT NOT NULL
)
"""
DELEGATION_FIELDS = frozenset({"pid", "exit_code", "reason", "log_path", "started_at", "ended_at"})


@dataclass(frozen=True)
class DelegationRow:
    id: str
    parent_session: str | None
    parent_transcript: str | None
    session_id: str
    agent: str
    cwd: str
    transcript_path: str | None
    repo: str | None
    worktree: str | None
    branch: str | None
    prompt: str
    resume_command: str
    state: str
    pid: int | None
    exit_code: int | None
    reason: str | None
    log_path: str | None
    created_at: str
    updated_at: str
    started_at: str | None
    ended_at: str | None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class SessionMessageRow:
    """A message for a session: ``kind`` ``link`` (a linked session's turn output), ``delegation`` (from the
    parent of a delegated session) or ``message`` (from another local session). ``text`` may be peer text: show
    it through :func:`p2pd.support.text.visible`."""

    id: str
    session: str
    kind: str
    from_device: str
    from_session: str | None
    ref: str | None  # the link or delegation it came through
    text: str
    created_at: str
    delivered_at: str | None  # when a hook put it in the session's context

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class SessionStore:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._write() as db:
            for stmt in SCHEMA.split(";"):
                if stmt.strip():
                    db.execute(stmt)

    def _connect(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        return sqlite_db.connect(self.path)

    def _write(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        return sqlite_db.write(self.path)

    # ------------------------------------------------------------ delegations
    def add_delegation(self, row: DelegationRow) -> DelegationRow:
        fields = row.to_json()
        with self._write() as db:
            db.execute(f"INSERT INTO delegations ({', '.join(fields)}) VALUES ({', '.join('?' for _ in fields)})",
                       tuple(fields.values()))
        return self.get_delegation(row.id)

    def get_delegation(self, id: str) -> DelegationRow:
        with self._connect() as db:
            row = db.execute("SELECT * FROM delegations WHERE id=?", (id,)).fetchone()
        if row is None:
            raise NotFoundError(f"no delegation {id}")
        return DelegationRow(**dict(row))

    def list_delegations(self, parent_session: str | None = None, limit: int = 100) -> list[DelegationRow]:
        with self._connect() as db:
            if parent_session is None:
                rows = db.execute("SELECT * FROM delegations ORDER BY created_at DESC, rowid DESC LIMIT ?", (limit,))
            else:
                rows = db.execute("SELECT * FROM delegations WHERE parent_session=? ORDER BY created_at DESC, "
                                  "rowid DESC LIMIT ?", (parent_session, limit))
            return [DelegationRow(**dict(r)) for r in rows.fetchall()]

    def delegation_of_session(self, session_id: str) -> DelegationRow | None:
        """The delegation whose new session is ``session_id``, if any."""
        with self._connect() as db:
            row = db.execute("SELECT * FROM delegations WHERE session_id=? ORDER BY created_at DESC LIMIT 1",
                             (session_id,)).fetchone()
        return DelegationRow(**dict(row)) if row is not None else None

    def move_delegation(self, id: str, state: str, **fields: Any) -> DelegationRow:
        """Move a delegation as :mod:`p2pd.daemon.delegations` allows (ConflictError otherwise), setting
        ``fields`` (pid, exit_code, reason, log_path) too."""
        unknown = set(fields) - DELEGATION_FIELDS
        if unknown:
            raise InvalidInputError(f"a delegation has no field {sorted(unknown)[0]!r}")
        ts = now()
        with self._write() as db:
            row = db.execute("SELECT state FROM delegations WHERE id=?", (id,)).fetchone()
            if row is None:
                raise NotFoundError(f"no delegation {id}")
            delegations.check_transition(row["state"], state, what=f"delegation {id}")
            sets: dict[str, Any] = {"state": state, "updated_at": ts, **fields}
            if state == "running":
                sets.update(started_at=ts, ended_at=None, exit_code=None, reason=fields.get("reason"))
            elif state in ("exited", "failed"):
                sets.update(ended_at=ts)
            db.execute(f"UPDATE delegations SET {', '.join(f'{k}=?' for k in sets)} WHERE id=? AND state=?",
                       (*sets.values(), id, row["state"]))
        return self.get_delegation(id)

    def running_delegations(self) -> list[DelegationRow]:
        with self._connect() as db:
            rows = db.execute("SELECT * FROM delegations WHERE state='running'").fetchall()
        return [DelegationRow(**dict(r)) for r in rows]

    # ------------------------------------------------------------ session links
    def add_link(self, view: SessionLinkView) -> SessionLinkView:
        ts = now()
        with self._write() as db:
            cur = db.execute("INSERT OR IGNORE INTO session_links (id, view, created_at, updated_at) VALUES "
                             "(?,?,?,?)", (view.id, view.model_dump_json(), ts, ts))
            if cur.rowcount != 1:
                raise ConflictError(f"link {view.id} exists already")
        return view

    def get_link(self, id: str) -> SessionLinkView:
        with self._connect() as db:
            row = db.execute("SELECT view FROM session_links WHERE id=?", (id,)).fetchone()
        if row is None:
            raise NotFoundError(f"no session link {id}")
        return SessionLinkView.model_validate_json(row["view"])

    def find_link(self, id: str) -> SessionLinkView | None:
        try:
            return self.get_link(id)
        except NotFoundError:
            return None

    def list_links(self) -> list[SessionLinkView]:
        with self._connect() as db:
            rows = db.execute("SELECT view FROM session_links ORDER BY created_at DESC, rowid DESC").fetchall()
        return [SessionLinkView.model_validate_json(r["view"]) for r in rows]

    def change_link(self, id: str, change: Callable[[SessionLinkView], SessionLinkView]
                    ) -> tuple[SessionLinkView, SessionLinkView]:
        """Apply ``change`` to the stored link, checked (:func:`check_change`); returns (before, after)."""
        with self._write() as db:
            row = db.execute("SELECT view FROM session_links WHERE id=?", (id,)).fetchone()
            if row is None:
                raise NotFoundError(f"no session link {id}")
            old = SessionLinkView.model_validate_json(row["view"])
            new = change(old)
            check_change(old, new)
            if new != old:
                db.execute("UPDATE session_links SET view=?, updated_at=? WHERE id=?",
                           (new.model_dump_json(), now(), id))
        return old, new

    def merge_link(self, incoming: SessionLinkView, from_device: str, own_device: str
                   ) -> tuple[SessionLinkView | None, SessionLinkView] | None:
        """A paired device's view of a link merged into ours (:func:`p2pd.daemon.session_links.merge`); returns
        (before, after), or None when it is not for us."""
        ts = now()
        with self._write() as db:
            row = db.execute("SELECT view FROM session_links WHERE id=?", (incoming.id,)).fetchone()
            old = SessionLinkView.model_validate_json(row["view"]) if row is not None else None
            new = merge(old, incoming, from_device, own_device)
            if new is None:
                return None
            if old is None:
                db.execute("INSERT INTO session_links (id, view, created_at, updated_at) VALUES (?,?,?,?)",
                           (new.id, new.model_dump_json(), ts, ts))
            elif new != old:
                check_change(old, new)
                db.execute("UPDATE session_links SET view=?, updated_at=? WHERE id=?",
                           (new.model_dump_json(), ts, new.id))
        return old, new

    # ------------------------------------------------------------ messages for sessions
    def add_message(self, *, id: str, session: str, kind: str, from_device: str, from_session: str | None,
                    ref: str | None, text: str) -> bool:
        """File a message for ``session``; False when one with this id is there already (a repeat)."""
        with self._write() as db:
            cur = db.execute("INSERT OR IGNORE INTO session_messages (id, session, kind, from_device, from_session, "
                             "ref, text, created_at) VALUES (?,?,?,?,?,?,?,?)",
                             (id, session, kind, from_device, from_session, ref, text, now()))
            return cur.rowcount == 1

    def messages(self, session: str, *, undelivered: bool = False, limit: int = 100) -> list[SessionMessageRow]:
        with self._connect() as db:
            where = "session=?" + (" AND delivered_at IS NULL" if undelivered else "")
            rows = db.execute(f"SELECT * FROM session_messages WHERE {where} ORDER BY created_at DESC, rowid DESC "
                              "LIMIT ?", (session, limit)).fetchall()
        return [SessionMessageRow(**dict(r)) for r in rows]

    def take_undelivered(self, session: str, limit: int = 50, max_chars: int | None = None) -> list[SessionMessageRow]:
        """The messages no hook has given ``session`` yet, oldest first — at most ``limit`` of them and, past the
        first, no more than ``max_chars`` of text in all — marked delivered (atomically: two hooks never both
        deliver one). The rest wait for the next hook."""
        ts = now()
        with self._write() as db:
            rows = db.execute("SELECT * FROM session_messages WHERE session=? AND delivered_at IS NULL ORDER BY "
                              "created_at, rowid LIMIT ?", (session, limit)).fetchall()
            if max_chars is not None:
                total, kept = 0, list[sqlite3.Row]()
                for r in rows:
                    total += len(r["text"])
                    if kept and total > max_chars:
                        break
                    kept.append(r)
                rows = kept
            db.executemany("UPDATE session_messages SET delivered_at=? WHERE id=?", [(ts, r["id"]) for r in rows])
        return [SessionMessageRow(**{**dict(r), "delivered_at": ts}) for r in rows]

    # ------------------------------------------------------------ what waits for a paired device
    def enqueue(self, device: str, message: dict[str, Any]) -> None:
        with self._write() as db:
            db.execute("INSERT INTO session_outbox (device, message, created_at) VALUES (?,?,?)",
                       (device, json.dumps(message), now()))

    def outgoing(self, device: str, limit: int = 100) -> list[tuple[int, dict[str, Any]]]:
        with self._connect() as db:
            rows = db.execute("SELECT id, message FROM session_outbox WHERE device=? ORDER BY id LIMIT ?",
                              (device, limit)).fetchall()
        return [(int(r["id"]), json.loads(r["message"])) for r in rows]

    def sent(self, id: int) -> None:
        with self._write() as db:
            db.execute("DELETE FROM session_outbox WHERE id=?", (id,))

    def prune_outgoing(self, max_messages: int, max_age: float, now_ts: float | None = None) -> int:
        """What waits for paired devices, bounded: rows older than ``max_age`` seconds, then each device's oldest
        while it has more than ``max_messages``; returns how many were removed."""
        cutoff = _cutoff(max_age, now_ts)
        with self._write() as db:
            gone = db.execute("DELETE FROM session_outbox WHERE created_at < ?", (cutoff,)).rowcount
            gone += db.execute("DELETE FROM session_outbox WHERE id IN (SELECT id FROM (SELECT id, ROW_NUMBER() "
                               "OVER (PARTITION BY device ORDER BY id DESC) AS n FROM session_outbox) WHERE n > ?)",
                               (max_messages,)).rowcount
        return int(gone)

    def prune_delivered(self, max_age: float, now_ts: float | None = None) -> int:
        """Messages a hook gave their session more than ``max_age`` seconds ago (they were read: kept a while for
        ``p2pd session-links messages``, then removed); returns how many were removed."""
        with self._write() as db:
            gone = db.execute("DELETE FROM session_messages WHERE delivered_at IS NOT NULL AND delivered_at < ?",
                              (_cutoff(max_age, now_ts),)).rowcount
        return int(gone)

    def queued(self) -> dict[str, int]:
        """How many messages wait for each paired device."""
        with self._connect() as db:
            rows = db.execute("SELECT device, COUNT(*) FROM session_outbox GROUP BY device").fetchall()
        return {r[0]: int(r[1]) for r in rows}

    # ------------------------------------------------------------ what paired devices push in (bounded)
    def known_session(self, session: str) -> bool:
        """A session this machine knows: one a SessionStart hook recorded, or one a delegation made."""
        with self._connect() as db:
            if db.execute("SELECT 1 FROM delegations WHERE session_id=? LIMIT 1", (session,)).fetchone():
                return True
            try:
                return db.execute("SELECT 1 FROM hook_sessions WHERE session_id=? LIMIT 1",
                                  (session,)).fetchone() is not None
            except sqlite3.OperationalError:  # no store made it yet: no hook ever recorded a session
                return False

    def links_from(self, device: str) -> list[SessionLinkView]:
        """The links ``device`` introduced (it made them), oldest first."""
        with self._connect() as db:
            rows = db.execute("SELECT view FROM session_links WHERE json_extract(view, '$.created_by.device')=? "
                              "ORDER BY created_at, rowid", (device,)).fetchall()
        return [SessionLinkView.model_validate_json(r["view"]) for r in rows]

    def drop_link(self, id: str) -> None:
        with self._write() as db:
            db.execute("DELETE FROM session_links WHERE id=?", (id,))

    def add_remote_message(self, *, per_session: int, per_device: int, **message: Any) -> tuple[bool, int]:
        """File a paired device's message (:meth:`add_message`) and keep that device's undelivered backlog
        within ``per_session`` (for this session) and ``per_device`` (in all) by dropping its oldest undelivered
        ones. Returns (filed, how many were dropped)."""
        device, session = message["from_device"], message["session"]
        with self._write() as db:
            cur = db.execute("INSERT OR IGNORE INTO session_messages (id, session, kind, from_device, from_session, "
                             "ref, text, created_at) VALUES (?,?,?,?,?,?,?,?)",
                             (message["id"], session, message["kind"], device, message["from_session"],
                              message["ref"], message["text"], now()))
            if cur.rowcount != 1:
                return False, 0
            dropped = 0
            for where, args, cap in (("session=? AND from_device=?", (session, device), per_session),
                                     ("from_device=?", (device,), per_device)):
                dropped += db.execute(
                    f"DELETE FROM session_messages WHERE rowid IN (SELECT rowid FROM session_messages WHERE {where} "
                    "AND delivered_at IS NULL ORDER BY created_at DESC, rowid DESC LIMIT -1 OFFSET ?)",
                    (*args, cap)).rowcount
        return True, int(dropped)

    def waiting_devices(self) -> list[str]:
        with self._connect() as db:
            return [r[0] for r in db.execute("SELECT DISTINCT device FROM session_outbox").fetchall()]


def _cutoff(max_age: float, now_ts: float | None) -> str:
    """The stored-time form (:func:`p2pd.daemon.rows.now`) of ``max_age`` seconds before ``now_ts`` (default: now)."""
    import time
    from datetime import UTC, datetime

    cutoff = datetime.fromtimestamp((now_ts or time.time()) - max_age, UTC).isoformat(timespec="milliseconds")
    return cutoff.replace("+00:00", "Z")
