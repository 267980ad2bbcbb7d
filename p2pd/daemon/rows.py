"""The daemon's tables: their schema (version 1 and the migrations after it) and the rows they hold, as frozen
dataclasses (what the store returns and the API serializes)."""

from __future__ import annotations

import json
import sqlite3
import uuid
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

SCHEMA_V1 = """
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

# Version n → n+1, in order (statements separated by ";"). Version 2: a transfer's failure cause as data (a
# p2pd.errors.Cause value) beside the reason text kept for display. Version 3: the worker's result of a handoff, the
# lease of a claim made over the local API, and the handoffs paired devices offered to this daemon (``offers``).
MIGRATIONS: dict[int, str] = {
    1: "ALTER TABLE transfers ADD COLUMN cause TEXT",
    2: """
ALTER TABLE handoffs ADD COLUMN result TEXT;
ALTER TABLE handoffs ADD COLUMN lease_until REAL;
CREATE TABLE IF NOT EXISTS offers (
    id TEXT NOT NULL,
    from_device TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'offered',
    title TEXT NOT NULL DEFAULT '',
    summary TEXT NOT NULL DEFAULT '',
    messages INTEGER NOT NULL DEFAULT 0,
    mode TEXT,
    package TEXT,
    inbox_id TEXT,
    resume_command TEXT,
    result TEXT,
    reason TEXT,
    offered_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    claimed_at TEXT,
    started_at TEXT,
    finished_at TEXT,
    PRIMARY KEY (id, from_device)
);
CREATE INDEX IF NOT EXISTS offers_state ON offers(state)
""",
}


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
    cause: str | None = None  # why it failed/was cancelled/interrupted, as a p2pd.errors.Cause value


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
    result: str | None = None  # what the worker reported doing (complete_handoff)
    lease_until: float | None = None  # a claim made over the local API returns to pending after this (epoch s)


@dataclass(frozen=True)
class OfferRow(_Row):
    """A handoff a paired device offered to this daemon (the receiving side's view; :mod:`p2pd.daemon.offers`)."""

    id: str
    from_device: str
    state: str
    title: str
    summary: str
    messages: int
    mode: str | None  # 'auto': this daemon claimed and imports it; 'worker': a person or agent claimed it
    package: dict[str, Any] | None  # goal, summary, notes, files, cwd… once the conversation arrived
    inbox_id: str | None
    resume_command: str | None
    result: str | None
    reason: str | None
    offered_at: str
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


def json_col(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def transfer_row(r: sqlite3.Row) -> TransferRow:
    d = dict(r)
    d["detail"] = json_col(d["detail"]) or {}
    return TransferRow(**d)


def inbox_row(r: sqlite3.Row) -> InboxRow:
    d = dict(r)
    d["imported"] = json_col(d["imported"])
    return InboxRow(**d)


def handoff_row(r: sqlite3.Row) -> HandoffRow:
    d = dict(r)
    d["package"] = json_col(d["package"])
    d["source"] = json_col(d["source"]) or {}
    return HandoffRow(**d)


def offer_row(r: sqlite3.Row) -> OfferRow:
    d = dict(r)
    d["package"] = json_col(d["package"])
    return OfferRow(**d)
