"""Housekeeping of the daemon's folder: outgoing blobs (``outbox/``) and cut-off receives (``partial/``) do not
pile up.

- outbox: a blob is needed while a transfer that is not final sends it or a handoff that is not final carries it;
  any other is removed once older than ``outbox_max_age_hours``, and the oldest of them while the outbox is larger
  than ``outbox_max_mb``;
- partial: a cut-off receive waits for its resume; one untouched for ``partial_max_age_hours`` is removed, and the
  oldest while they take more than ``partial_max_mb``; one a transfer is writing (locked) is never touched. A
  received blob left beside them (a crash between receiving and filing it) is removed after an hour — unless a
  ``verified`` transfer owns it: that one waits to be filed (refiling.py) and stays.

- session-link messages waiting for a paired device (``session_outbox``): those older than
  ``[session_links] queue_max_age_hours``, and each device's oldest while more than ``queue_max_messages`` wait
  (what is dropped there is turn output nobody received in time, or a link update a reconnecting device is sent
  again anyway);
- session messages a hook has given their session (``session_messages``, delivered): kept for reading back
  (``p2pd session-links messages``) for ``[session_links] delivered_max_age_hours``, then removed; undelivered
  ones stay (bounded per device on receipt, :mod:`p2pd.daemon.session_limits`).

The daemon prunes at start-up and every hour (:func:`plan` with the limits, then :func:`remove`); ``p2pd gc``
removes everything nothing needs (``everything=True``), or shows it with ``--dry-run``. Blocking I/O: call in a
thread.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from p2pd.daemon.store import Store
from p2pd.transfer.partial import PARTIAL_DIR, final_name, remove_unlocked

STRAY_AGE = 3600.0  # seconds a received blob may sit in partial/ before it counts as left behind
FRESH = 60.0  # seconds: a file younger than this is never removed (it may be in use a moment from now)
MB = 1 << 20


@dataclass(frozen=True)
class Limits:
    outbox_max_age: float = 168 * 3600.0
    outbox_max_bytes: int = 1024 * MB
    partial_max_age: float = 168 * 3600.0
    partial_max_bytes: int = 2048 * MB
    queue_max_messages: int = 1000  # session-link messages waiting for one paired device
    queue_max_age: float = 168 * 3600.0
    delivered_max_age: float = 168 * 3600.0  # session messages a hook gave their session

    @classmethod
    def configured(cls) -> Limits:
        from p2pd.config import daemon_settings
        from p2pd.daemon.session_limits import LinkLimits

        s, links = daemon_settings(), LinkLimits.configured()
        return cls(s.outbox_max_age_hours * 3600, int(s.outbox_max_mb * MB), s.partial_max_age_hours * 3600,
                   int(s.partial_max_mb * MB), links.queue_max_messages, links.queue_max_age_hours * 3600,
                   links.delivered_max_age_hours * 3600)


@dataclass(frozen=True)
class Item:
    path: str
    kind: str  # outbox | partial | stray
    size: int
    mtime: float
    why: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _size(path: Path) -> int:
    if path.is_dir():
        return sum(f.lstat().st_size for f in path.rglob("*") if f.is_file())
    return path.lstat().st_size


def _mtime(path: Path) -> float:
    if path.is_dir():
        return max([path.lstat().st_mtime, *(f.lstat().st_mtime for f in path.iterdir())])
    return path.lstat().st_mtime


def needed_blobs(store: Store) -> set[str]:
    """Outbox blobs an open transfer or handoff still needs."""
    paths = {t.blob_path for t in store.list_transfers(limit=1_000_000)
             if t.direction == "out" and t.state in ("queued", "running", "interrupted") and t.blob_path}
    paths |= {h.document_path for h in store.list_handoffs(limit=1_000_000)
              if h.state in ("pending", "claimed", "started")}
    return {str(Path(p)) for p in paths}


def committed_blobs(store: Store) -> set[str]:
    """Names of the received blobs in ``partial/`` that a committed (``verified``) transfer waits to file
    (refiling.py): never strays, whatever their age."""
    return {final_name(bytes.fromhex(t.sha256)) for t in store.list_transfers("verified", limit=1_000_000)
            if t.direction == "in" and len(t.sha256) == 64}


def _select(found: list[Item], max_age: float, max_bytes: int, kind: str, *, everything: bool,
            now: float) -> list[Item]:
    """Of the removable ``found`` items: all (``everything``), else the old ones and the oldest over the cap."""
    if everything:
        return [Item(i.path, kind, i.size, i.mtime, "not needed") for i in found]
    chosen = [Item(i.path, kind, i.size, i.mtime, f"older than {max_age / 3600:g} h") for i in found
              if now - i.mtime > max_age]
    left = sorted((i for i in found if now - i.mtime <= max_age), key=lambda i: i.mtime)
    total = sum(i.size for i in left)
    for i in left:
        if total <= max_bytes:
            break
        chosen.append(Item(i.path, kind, i.size, i.mtime, f"over {max_bytes / MB:g} MB"))
        total -= i.size
    return chosen


def plan(root: Path, store: Store, limits: Limits, *, everything: bool = False,
         now: float | None = None) -> list[Item]:
    """What to remove from the daemon folder ``root``."""
    now = time.time() if now is None else now
    needed = needed_blobs(store)
    outbox: list[Item] = []
    for blob in sorted((root / "outbox").glob("*.a2a.p2pd")):
        try:
            st = blob.lstat()
        except OSError:
            continue
        if str(blob) not in needed and now - st.st_mtime > FRESH:
            outbox.append(Item(str(blob), "outbox", st.st_size, st.st_mtime, ""))
    partials: list[Item] = []
    for entry in sorted((root / "partial" / PARTIAL_DIR).glob("*")):
        try:
            size, mtime = _size(entry), _mtime(entry)
        except OSError:
            continue
        if now - mtime > FRESH:
            partials.append(Item(str(entry), "partial", size, mtime, ""))
    owned = committed_blobs(store)
    stray = [Item(str(f), "stray", f.lstat().st_size, f.lstat().st_mtime, "received but never filed")
             for f in sorted((root / "partial").glob("*.a2a.p2pd"))
             if f.name not in owned and now - f.lstat().st_mtime > STRAY_AGE]
    return (_select(outbox, limits.outbox_max_age, limits.outbox_max_bytes, "outbox", everything=everything,
                    now=now)
            + _select(partials, limits.partial_max_age, limits.partial_max_bytes, "partial", everything=everything,
                      now=now)
            + stray)


def remove(items: list[Item], store: Store) -> list[Item]:
    """Remove the planned items (checking again that no transfer took up an outbox blob meanwhile, and skipping a
    partial being written); returns those removed."""
    needed, owned = needed_blobs(store), committed_blobs(store)
    removed = []
    for item in items:
        path = Path(item.path)
        try:
            if item.kind == "partial":
                if not remove_unlocked(path):
                    continue
            elif item.kind == "outbox":
                if item.path in needed:
                    continue
                path.unlink()
                offer = path.with_name(path.name.split(".")[0] + ".offer.json")
                offer.unlink(missing_ok=True)
            else:
                if path.name in owned:
                    continue
                path.unlink()
        except FileNotFoundError:
            continue
        except OSError:
            continue
        removed.append(item)
    return removed


def usage(root: Path) -> dict[str, int]:
    """Bytes in the outbox and in partial receives."""
    def total(folder: Path) -> int:
        return sum(f.lstat().st_size for f in folder.rglob("*") if f.is_file()) if folder.is_dir() else 0

    return {"outbox": total(root / "outbox"), "partial": total(root / "partial")}


def prune(root: Path, store: Store, limits: Limits, *, everything: bool = False,
          dry_run: bool = False) -> dict[str, Any]:
    """Plan and (unless ``dry_run``) remove; the report ``p2pd gc`` and ``POST /gc`` show."""
    items = plan(root, store, limits, everything=everything)
    done = items if dry_run else remove(items, store)
    dropped = delivered = 0
    if not dry_run:
        from p2pd.daemon.session_tables import SessionStore

        tables = SessionStore(store.path)
        dropped = tables.prune_outgoing(limits.queue_max_messages, limits.queue_max_age)
        delivered = tables.prune_delivered(limits.delivered_max_age)
    return {"dry_run": dry_run, "items": [i.to_json() for i in done], "freed": sum(i.size for i in done),
            "left": usage(root), "session_messages_dropped": dropped, "delivered_messages_removed": delivered}


__all__ = ["Item", "Limits", "needed_blobs", "plan", "prune", "remove", "usage"]


def sweep_stale_staging() -> int:
    """At start-up: what killed processes left staged — work folders (p2pd/support/workroom.py: sends', spools)
    and imports' staging folders beside Claude Code sessions — once untouched for an hour and held by no live
    process (``p2pd.support.staging``). Partials are the device network's (``partial_max_age_hours``)."""
    from p2pd.agents.claude_code.importer import sweep_stale_imports
    from p2pd.support.workroom import sweep_stale_work

    removed = sweep_stale_work() + sweep_stale_imports()
    if removed:
        logging.getLogger(__name__).info("removed %d stale staging folders", removed)
    return removed
