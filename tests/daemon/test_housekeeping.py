"""Housekeeping of the daemon folder: the plan by age and size on a real store and real files (a locked partial
is never touched, what an open transfer or handoff needs is kept), start-up pruning and `p2pd gc` against a real
daemon process."""

from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path

from p2pd.daemon.housekeeping import MB, Limits, plan, prune
from p2pd.daemon.store import Store
from tests.daemon.conftest import SESSION_ID, Daemon, wait_for

DAY = 24 * 3600.0


def _file(path: Path, size: int, age: float) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    then = time.time() - age
    os.utime(path, (then, then))
    return path


def _partial(root: Path, name: str, size: int, age: float) -> Path:
    entry = root / "partial" / ".p2pd-partial" / name
    for f in ("blob.part", "state.json", "lock"):
        _file(entry / f, size if f == "blob.part" else 1, age)
    then = time.time() - age
    os.utime(entry, (then, then))
    return entry


def test_the_plan_goes_by_age_then_by_size_and_keeps_what_is_needed(tmp_path: Path) -> None:
    store = Store(tmp_path / "state.sqlite3")
    old = _file(tmp_path / "outbox" / "a.a2a.p2pd", 10, 10 * DAY)
    needed = _file(tmp_path / "outbox" / "b.a2a.p2pd", 10, 10 * DAY)
    store.create_transfer("out", "dev", blob_path=str(needed))  # queued: needed
    big1 = _file(tmp_path / "outbox" / "c.a2a.p2pd", 3 * MB, 3600)
    big2 = _file(tmp_path / "outbox" / "d.a2a.p2pd", 3 * MB, 1800)
    fresh = _file(tmp_path / "outbox" / "e.a2a.p2pd", 3 * MB, 1)  # just made: never touched
    stale = _partial(tmp_path, "p1", 10, 10 * DAY)
    locked = _partial(tmp_path, "p2", 10, 10 * DAY)
    limits = Limits(outbox_max_age=7 * DAY, outbox_max_bytes=4 * MB, partial_max_age=7 * DAY,
                    partial_max_bytes=100 * MB)
    chosen = {Path(i.path).name: i.why for i in plan(tmp_path, store, limits)}
    assert chosen == {"a.a2a.p2pd": "older than 168 h", "c.a2a.p2pd": "over 4 MB", "p1": "older than 168 h",
                      "p2": "older than 168 h"}
    fd = os.open(locked / "lock", os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)  # a transfer is writing it
    try:
        report = prune(tmp_path, store, limits)
    finally:
        os.close(fd)
    assert sorted(Path(i["path"]).name for i in report["items"]) == ["a.a2a.p2pd", "c.a2a.p2pd", "p1"]
    assert not old.exists() and not big1.exists() and not stale.exists()
    assert needed.exists() and big2.exists() and fresh.exists() and locked.exists()
    # everything nothing needs (p2pd gc): the rest but the needed, the fresh and the locked
    again = plan(tmp_path, store, limits, everything=True)
    assert sorted(Path(i.path).name for i in again) == ["d.a2a.p2pd", "p2"]


def test_prune_removes_session_messages_read_long_ago_and_keeps_unread_ones(tmp_path: Path) -> None:
    from p2pd.daemon.session_tables import SessionStore

    store = Store(tmp_path / "state.sqlite3")
    tables = SessionStore(store.path)
    for n in range(3):
        tables.add_message(id=f"m{n}", session="s", kind="turn", from_device="dev", from_session=None, ref=None,
                           text="t")
    tables.take_undelivered("s", limit=2)
    assert prune(tmp_path, store, Limits())["delivered_messages_removed"] == 0  # read just now: kept
    assert prune(tmp_path, store, Limits(delivered_max_age=-1.0))["delivered_messages_removed"] == 2  # cut-off 1 s on
    assert [m.id for m in tables.messages("s")] == ["m2"]
    assert prune(tmp_path, store, Limits(delivered_max_age=-1.0), dry_run=True)["delivered_messages_removed"] == 0


def test_start_up_prunes_and_gc_removes_what_nothing_needs(tmp_path: Path) -> None:
    d = Daemon(tmp_path)
    home = d.home
    old = _file(home / "outbox" / "old.a2a.p2pd", 100, 10 * DAY)
    recent = _file(home / "outbox" / "recent.a2a.p2pd", 100, 120)
    stale = _partial(home, "abc", 100, 10 * DAY)
    d.start()
    try:
        wait_for(lambda: not old.exists() and not stale.exists(), timeout=30, what="start-up pruning")
        assert recent.exists()
        with d.client() as c:
            h = c.post("/handoffs", json={"summary": "s", "goal": "g", "session_id": SESSION_ID}).json()
        doc = Path(h["document_path"])
        os.utime(doc, (time.time() - 120, time.time() - 120))
        dry = d.p2pd("gc", "--dry-run")
        assert dry.returncode == 0 and "recent.a2a.p2pd" in dry.stdout and doc.name not in dry.stdout, dry
        assert "Would remove 1 files" in dry.stderr and recent.exists()
        gone = d.p2pd("gc")
        assert gone.returncode == 0 and "Removed 1 files" in gone.stderr, gone.stderr
        assert not recent.exists() and doc.exists()  # the pending handoff still needs its document
    finally:
        d.kill()
    offline = d.p2pd("gc", "--json")  # without a daemon: on the folder directly
    assert offline.returncode == 0, offline.stderr
    assert json.loads(offline.stdout)["items"] == [] and doc.exists()
