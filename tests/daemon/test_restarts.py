"""Daemons stopped at the wrong moment, found by the chaos test (``tests/daemon/chaos.py``), each replayed at that
moment with two real daemons:

- seed 211: the receiver verified a conversation (the sender was told DONE) and was killed before filing it in
  its inbox — the next start files it; seed 332: stopped after the entry was stored — the row is finished,
  nothing filed twice; seed 346: the sender, killed before it recorded DONE, sends it again — not filed twice;
- seed 204: a receiver stopped with SIGTERM mid-transfer told its sender the transfer was cancelled, so the
  sender failed it — now it just goes away: the sender resumes it when the receiver is back."""

from __future__ import annotations

import asyncio
import shutil
import signal
from pathlib import Path

import pytest

from p2pd.daemon.outbox import Source, pack_outbox
from p2pd.daemon.store import Store
from p2pd.transfer.partial import final_name
from tests.daemon.conftest import (
    SESSION_ID,
    Daemon,
    PairMaker,
    big_session,
    corpus_session,
    device_id,
    frozen_under_way,
    sent_again_after_a_kill,
    wait_for,
)

pytestmark = pytest.mark.slow


def _verified_and_unfiled(b: Daemon, tmp_path: Path) -> tuple[str, Path]:
    """What a receiver stopped between verifying and filing holds: the packed corpus session moved into place in
    its ``partial/`` folder; (its SHA-256, where it is)."""
    packed = asyncio.run(pack_outbox(Source(str(corpus_session())), tmp_path / "packed"))
    kept = b.home / "partial" / final_name(bytes.fromhex(packed.sha256))
    shutil.move(packed.path, kept)
    return packed.sha256, kept


def test_a_verified_conversation_a_stop_left_unfiled_is_filed_at_the_next_start(paired: PairMaker,
                                                                                 tmp_path: Path) -> None:
    a, b = paired(names=("desk", "laptop"))
    a_id = device_id(a)
    b.stop(signal.SIGKILL)
    sha, _ = _verified_and_unfiled(b, tmp_path)
    row = Store(b.home / "state.sqlite3").create_transfer(
        "in", a_id, title="cut", sha256=sha,
        state="interrupted", detail={"sender_tid": "tr_0123456789abcdef"})
    b.start()
    with b.client() as c:
        inbox = wait_for(lambda: c.get("/inbox").json(), timeout=60, what="filed in the inbox")
        assert [(e["sha256"], e["transfer_id"], e["from_peer"]) for e in inbox] == [(sha, row.id, a_id)]
        assert c.get(f"/transfers/{row.id}").json()["state"] == "done"
    assert not (b.home / "partial" / final_name(bytes.fromhex(sha))).exists()


def test_a_stop_after_the_inbox_entry_was_stored_leaves_only_the_row_to_finish(paired: PairMaker,
                                                                              tmp_path: Path) -> None:
    """Seed 332: SIGTERM while the conversation was being filed; the entry is stored, the row was not done."""
    a, b = paired(names=("desk", "laptop"))
    a_id = device_id(a)
    b.stop(signal.SIGKILL)
    sha, kept = _verified_and_unfiled(b, tmp_path)
    store = Store(b.home / "state.sqlite3")
    row = store.create_transfer("in", a_id, title="cut", sha256=sha, state="interrupted")
    store.add_inbox(transfer_id=row.id, from_peer=a_id, document_path=str(tmp_path / "x.a2a.json"), title="cut",
                    platform="claude-code", session_id=None, messages=1, sha256=sha)
    b.start()
    with b.client() as c:
        wait_for(lambda: c.get(f"/transfers/{row.id}").json()["state"] == "done", timeout=60, what="done")
        assert len(c.get("/inbox").json()) == 1  # not filed twice
    assert not kept.exists()


def test_a_transfer_filed_already_and_sent_again_is_not_filed_twice(paired: PairMaker) -> None:
    """Seed 346: the sender was killed after the receiver filed the conversation but before it recorded DONE;
    it sends the transfer again on restart."""
    a, b = paired(names=("desk", "laptop"), wait_online=True)
    with a.client() as c:
        tid = c.post("/send", json={"session": SESSION_ID, "to": {"device": "laptop"}}).json()["id"]
        wait_for(lambda: c.get(f"/transfers/{tid}").json()["state"] == "done", timeout=90, what="sent")
    with b.client() as c:
        wait_for(lambda: c.get("/transfers").json()[0]["state"] == "done", what="filed at the laptop")
    row = sent_again_after_a_kill(a, tid)
    assert row["state"] == "done", row
    with b.client() as c:
        assert [t["state"] for t in c.get("/transfers").json()] == ["done"]
        assert len(c.get("/inbox").json()) == 1


def test_a_receiver_stopped_mid_transfer_is_resumed_not_failed(paired: PairMaker, tmp_path: Path) -> None:
    a, b = paired(names=("desk", "laptop"), wait_online=True)
    big = big_session(tmp_path / "big.a2a.json")
    with a.client() as c:
        row = c.post("/send", json={"transcript_path": str(big), "to": {"device": "laptop"}}).json()
        tid = row["id"]
        with frozen_under_way(c, tid, row["size"], b):
            assert b.process is not None
            b.process.send_signal(signal.SIGTERM)
        b.process.wait(30)
        cut = wait_for(lambda: (r := c.get(f"/transfers/{tid}").json())["state"] != "running" and r, timeout=90,
                       what="the desk noticed")
        assert cut["state"] == "interrupted", cut
        b.start()
        final = wait_for(lambda: (r := c.get(f"/transfers/{tid}").json())["state"] in ("done", "failed") and r,
                         timeout=120, what="the transfer finished")
    assert final["state"] == "done", final
    assert final["detail"]["resumed_bytes"] > 0
    with b.client() as c:
        rows = wait_for(lambda: (r := c.get("/transfers").json())[0]["state"] not in ("running", "verified") and r,
                        timeout=60, what="filed at the laptop")
        assert [(t["state"], t["detail"]["sender_tid"]) for t in rows] == [("done", tid)]
        assert len(c.get("/inbox").json()) == 1
