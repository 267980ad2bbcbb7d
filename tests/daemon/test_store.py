"""The daemon's SQLite store: schema, WAL, lifecycle rules, restart, and the double-claim race (threads and
processes on one file)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from p2pd.daemon.handoffs import FINAL, STATES, TRANSITIONS, check_transition
from p2pd.daemon.store import SCHEMA_VERSION, Store
from p2pd.errors import ConflictError, InvalidInputError, NotFoundError

ROOT = Path(__file__).resolve().parents[2]


def _handoff(store: Store, target: str = "any") -> str:
    return store.create_handoff(target=target, package={"summary": "s"}, document_path="/tmp/x.a2a.json",
                                title="t", source={"session_id": "abc"}).id


def test_schema_wal_and_version(tmp_path: Path) -> None:
    store = Store(tmp_path / "state.sqlite3")
    assert store.journal_mode() == "wal"
    assert store.schema_version() == SCHEMA_VERSION
    Store(tmp_path / "state.sqlite3")  # opening again is a no-op


def test_newer_schema_refused(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "state.sqlite3"
    Store(path)
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(InvalidInputError, match="upgrade p2pd"):
        Store(path)


def test_transfers_roundtrip_and_interrupted(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    a = store.create_transfer("out", "code", title="A", size=10, sha256="ab", blob_path=None)
    b = store.create_transfer("in", "dev1", title="B")
    store.update_transfer(a.id, state="running", bytes_done=5, detail={"x": 1})
    store.update_transfer(b.id, state="running")
    store.update_transfer(b.id, state="done", detail={"y": 2})
    got = store.get_transfer(a.id)
    assert (got.state, got.bytes_done, got.detail) == ("running", 5, {"x": 1})
    assert store.update_transfer(a.id, detail={"z": 3}).detail == {"x": 1, "z": 3}
    with pytest.raises(ConflictError):
        store.update_transfer(b.id, state="running")
    with pytest.raises(NotFoundError):
        store.get_transfer("tr_nope")
    # a new daemon on the same file: what was running is now interrupted, the rest unchanged
    again = Store(tmp_path / "s.db")
    assert [t.id for t in again.interrupted_transfers()] == [a.id]
    assert again.get_transfer(a.id).state == "interrupted"
    assert again.get_transfer(b.id).state == "done"
    assert again.transfer_stats()["interrupted"] == 1
    assert [t.id for t in again.list_transfers(state="done")] == [b.id]


def test_a_version_1_store_gains_the_cause_column(tmp_path: Path) -> None:
    import sqlite3

    from p2pd.daemon import rows

    path = tmp_path / "old.sqlite3"
    db = sqlite3.connect(path)
    db.executescript(rows.SCHEMA_V1)  # the version-1 schema, as an old daemon left it
    db.execute("INSERT INTO transfers (id, direction, peer, state, created_at, updated_at) "
               "VALUES ('tr_old', 'out', 'dev', 'running', 'x', 'x')")
    db.execute("PRAGMA user_version=1")
    db.commit()
    db.close()
    store = Store(path)
    assert store.schema_version() == SCHEMA_VERSION == 3
    assert store.get_transfer("tr_old").cause is None
    store.interrupted_transfers()
    assert (store.get_transfer("tr_old").state, store.get_transfer("tr_old").cause) == ("interrupted", "interrupted")


def test_transfer_states_move_only_as_the_lifecycle_allows(tmp_path: Path) -> None:
    from p2pd.errors import Cause

    store = Store(tmp_path / "s.db")
    t = store.create_transfer("out", "dev")
    with pytest.raises(ConflictError, match="queued; it cannot become done"):
        store.update_transfer(t.id, state="done")
    with pytest.raises(InvalidInputError):
        store.update_transfer(t.id, state="finished")
    store.update_transfer(t.id, state="running")
    ended = store.end_transfer(t.id, "interrupted", error="the data channel was closed", cause=Cause.PEER_GONE)
    assert ended is not None and (ended.state, ended.cause, ended.error) == ("interrupted", "peer_gone",
                                                                             "the data channel was closed")
    store.update_transfer(t.id, state="running")
    assert store.end_transfer(t.id, "cancelled", error="by me", cause=Cause.CANCELLED) is not None
    # a final row is never left, and ending it again changes nothing (not even its reason)
    assert store.end_transfer(t.id, "failed", error="late", cause=Cause.TIMEOUT) is None
    row = store.get_transfer(t.id)
    assert (row.state, row.error, row.cause) == ("cancelled", "by me", "cancelled")
    with pytest.raises(ConflictError, match="already cancelled"):
        store.update_transfer(t.id, state="running")


def test_inbox(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    row = store.add_inbox(transfer_id=None, from_peer="code", document_path="/x", title="T", platform="codex",
                          session_id="s", messages=3, sha256="00")
    assert store.list_inbox()[0].id == row.id
    assert store.mark_imported(row.id, {"resume_command": "claude -r x"}).imported["resume_command"] == "claude -r x"
    store.delete_inbox(row.id)
    with pytest.raises(NotFoundError):
        store.get_inbox(row.id)


def test_lifecycle_table_is_closed() -> None:
    for state in STATES:
        assert state in TRANSITIONS
        for new in STATES:
            if new in TRANSITIONS[state]:
                check_transition(state, new)
            else:
                with pytest.raises(ConflictError):
                    check_transition(state, new)
    for final in FINAL:
        assert not TRANSITIONS[final]


def test_handoff_lifecycle(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    hid = _handoff(store, target="dev-b")
    assert store.claim_handoff(hid, "dev-c") is None  # not the target
    claimed = store.claim_handoff(hid, "dev-b")
    assert claimed is not None and claimed.claimed_by == "dev-b" and claimed.claimed_at
    assert store.claim_handoff(hid, "dev-b") is None  # already claimed
    with pytest.raises(ConflictError):
        store.transition_handoff(hid, "completed")  # must be started first
    store.transition_handoff(hid, "started")
    done = store.transition_handoff(hid, "completed", output="claude --resume x")
    assert (done.state, done.output) == ("completed", "claude --resume x") and done.finished_at
    with pytest.raises(ConflictError, match="already completed"):
        store.transition_handoff(hid, "cancelled")
    other = _handoff(store)
    store.transition_handoff(other, "cancelled", reason="changed my mind")
    assert store.get_handoff(other).reason == "changed my mind"
    assert store.claim_handoff(other, "dev-b") is None
    with pytest.raises(NotFoundError):
        store.claim_handoff("ho_missing", "dev-b")
    stats = store.handoff_stats()
    assert stats["completed"] == 1 and stats["cancelled"] == 1 and stats["pending"] == 0
    assert set(stats) == set(STATES)


def test_released_handoff_can_be_claimed_by_another(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    hid = _handoff(store)
    assert store.claim_handoff(hid, "a") is not None
    released = store.transition_handoff(hid, "pending", reason="claimer went away")
    assert released.claimed_by is None
    assert [h.id for h in store.pending_handoffs_for("b")] == [hid]
    assert store.claim_handoff(hid, "b") is not None


def test_pending_survives_reopen(tmp_path: Path) -> None:
    hid = _handoff(Store(tmp_path / "s.db"))
    again = Store(tmp_path / "s.db")
    assert again.get_handoff(hid).state == "pending"
    assert again.handoff_stats()["pending"] == 1


def test_double_claim_race_threads(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    ids = [_handoff(store) for _ in range(10)]
    barrier = threading.Barrier(12)
    wins: list[tuple[str, str]] = []
    lock = threading.Lock()

    def claimer(name: str) -> None:
        mine = Store(tmp_path / "s.db")
        barrier.wait()
        for hid in ids:
            if mine.claim_handoff(hid, name) is not None:
                with lock:
                    wins.append((hid, name))

    threads = [threading.Thread(target=claimer, args=(f"dev{i}",)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(h for h, _ in wins) == sorted(ids)  # every handoff won exactly once
    for hid, name in wins:
        assert store.get_handoff(hid).claimed_by == name


_CLAIMER = """
import sys, time
from p2pd.daemon.store import Store
db, name, start, ids = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4].split(",")
store = Store(db)
while time.time() < start:
    time.sleep(0.001)
for hid in ids:
    if store.claim_handoff(hid, name) is not None:
        print(hid)
"""


def test_double_claim_race_processes(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    store = Store(db)
    ids = [_handoff(store) for _ in range(20)]
    start = time.time() + 2.0  # every process is up and waiting before anyone claims
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", _CLAIMER, str(db), f"proc{i}", str(start), ",".join(ids)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for i in range(5)]
    won: dict[str, str] = {}
    for i, p in enumerate(procs):
        out, errs = p.communicate(timeout=60)
        assert p.returncode == 0, errs
        for hid in out.split():
            assert hid not in won, f"{hid} won twice"
            won[hid] = f"proc{i}"
    assert sorted(won) == sorted(ids)
    for hid, name in won.items():
        assert store.get_handoff(hid).claimed_by == name
