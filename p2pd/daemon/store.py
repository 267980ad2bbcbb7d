"""The daemon's state in one SQLite file (WAL): transfers, the inbox, handoffs and hook-recorded sessions.

Synchronous on purpose — async code calls it through ``asyncio.to_thread``. Every method opens its own short
connection (cheap for SQLite, and safe from any thread or process); writes run in ``BEGIN IMMEDIATE`` so two
writers never interleave, and ``busy_timeout`` makes a second writer wait rather than fail. The schema version
lives in ``PRAGMA user_version``; a newer version than this code knows is refused rather than guessed at.

Claiming a handoff is one conditional UPDATE (``… WHERE state='pending' AND (target='any' OR target=?)``): of
any number of concurrent claimers — threads, processes, HTTP requests — exactly one sees a changed row.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path
from typing import Any, Literal

from p2pd.daemon import offers, sqlite_db, transfers
from p2pd.daemon.handoffs import STATES, check_state, check_transition
from p2pd.daemon.rows import (
    MIGRATIONS,
    SCHEMA_V1,
    HandoffRow,
    HookSessionRow,
    InboxRow,
    OfferRow,
    TransferRow,
    handoff_row,
    inbox_row,
    json_col,
    new_id,
    now,
    offer_row,
    transfer_row,
)
from p2pd.errors import Cause, ConflictError, InvalidInputError, NotFoundError

SCHEMA_VERSION = 3
TRANSFER_STATES = transfers.STATES
TRANSFER_FINAL: frozenset[str] = frozenset(s.value for s in transfers.FINAL)


class _AlreadyFinal(Exception):
    pass


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
    def _connect(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        return sqlite_db.connect(self.path)

    def _write(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        return sqlite_db.write(self.path)

    def _migrate(self, db: sqlite3.Connection) -> None:
        db.execute("BEGIN IMMEDIATE")
        try:
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise InvalidInputError(f"{self.path} has schema version {version}; this p2pd knows up to "
                                        f"{SCHEMA_VERSION} — upgrade p2pd")
            if version < 1:
                for stmt in SCHEMA_V1.split(";"):
                    if stmt.strip():
                        db.execute(stmt)
                version = 1
            while version < SCHEMA_VERSION:
                for stmt in MIGRATIONS[version].split(";"):
                    if stmt.strip():
                        db.execute(stmt)
                version += 1
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
        transfers.check_state(state)
        tid, ts = new_id("tr"), now()
        with self._write() as db:
            db.execute(
                "INSERT INTO transfers (id, direction, peer, title, size, sha256, blob_path, handoff_id, link_id, "
                "code, state, detail, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (tid, direction, peer, title, size, sha256, blob_path, handoff_id, link_id, code, state,
                 json.dumps(detail or {}), ts, ts))
        return self.get_transfer(tid)

    def update_transfer(self, id: str, *, state: str | None = None, bytes_done: int | None = None,
                        error: str | None = None, cause: Cause | None = None, size: int | None = None,
                        sha256: str | None = None, code: str | None = None, title: str | None = None,
                        detail: dict[str, Any] | None = None, unless_final: bool = False,
                        only_from: frozenset[str] | None = None) -> TransferRow:
        """Change some fields; ``detail`` is merged into the stored one. The state moves only as the lifecycle
        allows (:mod:`p2pd.daemon.transfers`; ConflictError otherwise) and, with ``only_from``, only from one of
        those states (ConflictError otherwise: checked and written in one transaction)."""
        if state is not None:
            transfers.check_state(state)
        with self._write() as db:
            row = db.execute("SELECT * FROM transfers WHERE id=?", (id,)).fetchone()
            if row is None:
                raise NotFoundError(f"no transfer {id}")
            if unless_final and transfers.is_final(row["state"]):
                raise _AlreadyFinal
            if state is not None:
                transfers.check_transition(row["state"], state, what=f"transfer {id}")
            if only_from is not None and row["state"] not in only_from:
                raise ConflictError(f"transfer {id} is {row['state']}")
            sets: dict[str, Any] = {"updated_at": now()}
            if state in transfers.CLEARS_ERROR and state != row["state"] and error is None and cause is None:
                sets.update(error=None, cause=None)  # running again, or done: an earlier failure no longer holds
            for key, value in (("state", state), ("bytes_done", bytes_done), ("error", error),
                               ("cause", cause.value if cause is not None else None), ("size", size),
                               ("sha256", sha256), ("code", code), ("title", title)):
                if value is not None:
                    sets[key] = value
            if detail:
                sets["detail"] = json.dumps({**(json_col(row["detail"]) or {}), **detail})
            db.execute(f"UPDATE transfers SET {', '.join(f'{k}=?' for k in sets)} WHERE id=?",
                       (*sets.values(), id))
        return self.get_transfer(id)

    def end_transfer(self, id: str, state: str, *, error: str | None = None, cause: Cause | None = None,
                     detail: dict[str, Any] | None = None) -> TransferRow | None:
        """Move an unfinished transfer to ``state`` (with its reason and cause); None when it had already ended
        (a final state is never left, nor its reason overwritten)."""
        try:
            return self.update_transfer(id, state=state, error=error, cause=cause, detail=detail,
                                        unless_final=True)
        except _AlreadyFinal:
            return None

    def get_transfer(self, id: str) -> TransferRow:
        with self._connect() as db:
            row = db.execute("SELECT * FROM transfers WHERE id=?", (id,)).fetchone()
        if row is None:
            raise NotFoundError(f"no transfer {id}")
        return transfer_row(row)

    def list_transfers(self, state: str | None = None, limit: int = 100) -> list[TransferRow]:
        with self._connect() as db:
            if state is None:
                rows = db.execute("SELECT * FROM transfers ORDER BY created_at DESC, rowid DESC LIMIT ?", (limit,))
            else:
                rows = db.execute("SELECT * FROM transfers WHERE state=? ORDER BY created_at DESC, rowid DESC "
                                  "LIMIT ?", (state, limit))
            return [transfer_row(r) for r in rows.fetchall()]

    def interrupted_transfers(self) -> list[TransferRow]:
        """On start: rows left queued/running by a daemon that stopped become 'interrupted', and are returned."""
        with self._write() as db:
            ids = [r[0] for r in db.execute("SELECT id FROM transfers WHERE state IN ('queued', 'running')")]
            db.execute("UPDATE transfers SET state='interrupted', cause=?, updated_at=? "
                       "WHERE state IN ('queued', 'running')", (Cause.INTERRUPTED.value, now()))
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
        return inbox_row(row)

    def list_inbox(self, limit: int = 100) -> list[InboxRow]:
        with self._connect() as db:
            rows = db.execute("SELECT * FROM inbox ORDER BY received_at DESC, rowid DESC LIMIT ?", (limit,))
            return [inbox_row(r) for r in rows.fetchall()]

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

    def claim_handoff(self, id: str, claimer: str, *, lease_until: float | None = None) -> HandoffRow | None:
        """Atomic: the one caller whose UPDATE changed the row gets it; everybody else gets None. A claim with
        ``lease_until`` (epoch seconds) returns to pending at that time unless it was started
        (:meth:`release_expired_claims`)."""
        if not claimer:
            raise InvalidInputError("a claim needs the claimer's device id")
        ts = now()
        with self._write() as db:
            cur = db.execute("UPDATE handoffs SET state='claimed', claimed_by=?, claimed_at=?, updated_at=?, "
                             "lease_until=? WHERE id=? AND state='pending' AND (target='any' OR target=?)",
                             (claimer, ts, ts, lease_until, id, claimer))
            won = cur.rowcount == 1
        if not won:
            self.get_handoff(id)  # NotFoundError when there is no such handoff
            return None
        return self.get_handoff(id)

    def transition_handoff(self, id: str, state: str, *, output: str | None = None, reason: str | None = None,
                           result: str | None = None) -> HandoffRow:
        """Move a handoff to ``state`` if the lifecycle allows it (ConflictError otherwise)."""
        check_state(state)
        ts = now()
        with self._write() as db:
            row = db.execute("SELECT state FROM handoffs WHERE id=?", (id,)).fetchone()
            if row is None:
                raise NotFoundError(f"no handoff {id}")
            current = row["state"]
            check_transition(current, state)
            sets: dict[str, Any] = {"state": state, "updated_at": ts, "lease_until": None}
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
            if result is not None:
                sets["result"] = result
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
        return handoff_row(row)

    def list_handoffs(self, state: str | None = None, limit: int = 100) -> list[HandoffRow]:
        with self._connect() as db:
            if state is None:
                rows = db.execute("SELECT * FROM handoffs ORDER BY created_at DESC, rowid DESC LIMIT ?", (limit,))
            else:
                check_state(state)
                rows = db.execute("SELECT * FROM handoffs WHERE state=? ORDER BY created_at DESC, rowid DESC "
                                  "LIMIT ?", (state, limit))
            return [handoff_row(r) for r in rows.fetchall()]

    def pending_handoffs_for(self, device_id: str) -> list[HandoffRow]:
        with self._connect() as db:
            rows = db.execute("SELECT * FROM handoffs WHERE state='pending' AND (target='any' OR target=?) "
                              "ORDER BY created_at, rowid", (device_id,))
            return [handoff_row(r) for r in rows.fetchall()]

    def release_expired_claims(self, at: float) -> list[str]:
        """Claims made over the local API and never started whose lease ended by ``at`` go back to pending."""
        with self._write() as db:
            ids = [r[0] for r in db.execute("SELECT id FROM handoffs WHERE state='claimed' AND lease_until IS NOT "
                                            "NULL AND lease_until <= ?", (at,))]
            db.executemany("UPDATE handoffs SET state='pending', claimed_by=NULL, claimed_at=NULL, lease_until=NULL, "
                           "reason='the claim was not started in time', updated_at=? WHERE id=?",
                           [(now(), i) for i in ids])
        return ids

    def handoff_stats(self) -> dict[str, int]:
        with self._connect() as db:
            counts = dict(db.execute("SELECT state, COUNT(*) FROM handoffs GROUP BY state").fetchall())
        return {s: int(counts.get(s, 0)) for s in STATES}

    # ------------------------------------------------------------ handoffs offered to this daemon
    def offer_received(self, id: str, from_device: str, *, title: str, summary: str, messages: int) -> OfferRow:
        """Record an offer (again): a new one is 'offered'; one already known keeps its state."""
        ts = now()
        with self._write() as db:
            db.execute("INSERT INTO offers (id, from_device, state, title, summary, messages, offered_at, updated_at) "
                       "VALUES (?,?,'offered',?,?,?,?,?) ON CONFLICT(id, from_device) DO UPDATE SET "
                       "title=excluded.title, summary=excluded.summary, messages=excluded.messages "
                       "WHERE offers.state='offered'", (id, from_device, title, summary, messages, ts, ts))
        found = self.find_offer(id, from_device)
        assert found is not None
        return found

    def find_offer(self, id: str, from_device: str | None = None) -> OfferRow | None:
        with self._connect() as db:
            if from_device is None:
                row = db.execute("SELECT * FROM offers WHERE id=? ORDER BY offered_at DESC LIMIT 1", (id,))
            else:
                row = db.execute("SELECT * FROM offers WHERE id=? AND from_device=?", (id, from_device))
            found = row.fetchone()
        return offer_row(found) if found is not None else None

    def get_offer(self, id: str) -> OfferRow:
        found = self.find_offer(id)
        if found is None:
            raise NotFoundError(f"no handoff {id} was offered to this device")
        return found

    def list_offers(self, state: str | None = None, limit: int = 100) -> list[OfferRow]:
        with self._connect() as db:
            if state is None:
                rows = db.execute("SELECT * FROM offers ORDER BY offered_at DESC, rowid DESC LIMIT ?", (limit,))
            else:
                offers.check_state(state)
                rows = db.execute("SELECT * FROM offers WHERE state=? ORDER BY offered_at DESC, rowid DESC LIMIT ?",
                                  (state, limit))
            return [offer_row(r) for r in rows.fetchall()]

    def move_offer(self, id: str, from_device: str, state: str, **fields: Any) -> OfferRow:
        """Move an offer as :mod:`p2pd.daemon.offers` allows (ConflictError otherwise), setting ``fields``
        (mode, package, inbox_id, resume_command, result, reason) too."""
        ts = now()
        with self._write() as db:
            row = db.execute("SELECT state FROM offers WHERE id=? AND from_device=?", (id, from_device)).fetchone()
            if row is None:
                raise NotFoundError(f"no handoff {id} was offered to this device")
            if state != row["state"]:
                offers.check_transition(row["state"], state, what=f"handoff {id}")
            sets: dict[str, Any] = {"state": state, "updated_at": ts}
            sets.update({"claimed": {"claimed_at": ts}, "started": {"started_at": ts}}.get(state, {}))
            if state in offers.FINAL:
                sets["finished_at"] = ts
            for key, value in fields.items():
                if key not in ("mode", "package", "inbox_id", "resume_command", "result", "reason"):
                    raise InvalidInputError(f"an offer has no field {key!r}")
                sets[key] = json.dumps(value) if key == "package" else value
            db.execute(f"UPDATE offers SET {', '.join(f'{k}=?' for k in sets)} WHERE id=? AND from_device=?",
                       (*sets.values(), id, from_device))
        found = self.find_offer(id, from_device)
        assert found is not None
        return found

    def offer_of_session(self, session_id: str | None, transcript_path: str | None) -> OfferRow | None:
        """The offered handoff whose conversation was imported as this session (by id or file), if any."""
        with self._connect() as db:
            row = db.execute("SELECT o.* FROM inbox i JOIN offers o ON o.id = i.handoff_id AND o.inbox_id = i.id "
                             "WHERE i.imported IS NOT NULL AND (json_extract(i.imported, '$.session_id') = ? OR "
                             "json_extract(i.imported, '$.path') = ?) ORDER BY i.received_at DESC LIMIT 1",
                             (session_id or "", transcript_path or "")).fetchone()
        return offer_row(row) if row is not None else None

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


__all__ = ["SCHEMA_VERSION", "TRANSFER_FINAL", "TRANSFER_STATES", "HandoffRow", "HookSessionRow", "InboxRow",
           "OfferRow", "Store", "TransferRow", "new_id", "now"]
