"""A receiving daemon whose disk refuses the filing of a conversation it already committed (its sender was told
DONE): the row stays ``verified``, the blob stays, and the filing is tried again until it works — at once, after a
restart, or when the sender sends it again. Two real daemons; the receiver's inbox folder is a real full disk
(tests/full_disk.py: ENOSPC from the kernel; root, as CI has, else skipped with the reason)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from p2pd.daemon.outbox import Source, pack_outbox
from p2pd.daemon.store import Store
from p2pd.transfer.partial import final_name
from tests.daemon.conftest import (
    SESSION_ID,
    Daemon,
    PairMaker,
    corpus_session,
    device_id,
    sent_again_after_a_kill,
    wait_for,
)
from tests.daemon.test_mcp import call, mcp_client
from tests.full_disk import FullDisk

pytestmark = pytest.mark.slow


@pytest.fixture
def full_inbox(paired: PairMaker) -> Iterator[tuple[Daemon, Daemon, FullDisk]]:
    """Paired daemons ``desk`` and ``laptop``; the laptop's inbox folder is full."""
    a, b = paired(names=("desk", "laptop"), wait_online=True)
    disk = FullDisk(b.home / "inbox")
    try:
        yield a, b, disk
    finally:
        a.kill()
        b.kill()
        disk.unmount()


def _send(a: Daemon) -> str:
    with a.client() as c:
        tid: str = c.post("/send", json={"session": SESSION_ID, "to": {"device": "laptop"}}).json()["id"]
        row = wait_for(lambda: (r := c.get(f"/transfers/{tid}").json())["state"] in ("done", "failed") and r,
                       timeout=90, what="sent")
    assert row["state"] == "done", row  # the laptop committed it: for the desk it is done
    return tid


def _refused(b: Daemon) -> dict[str, object]:
    """The laptop's one incoming row, once its filing was refused."""
    with b.client() as c:
        row: dict[str, object] = wait_for(
            lambda: (r := c.get("/transfers").json()) and (r[0]["state"] in ("done", "failed")
                                                           or r[0]["detail"].get("filing_attempts")) and r[0],
            timeout=30, what="the filing refused")
        assert (row["state"], row["cause"]) == ("verified", "storage"), row  # not failed: the sender has it done
        assert c.get("/inbox").json() == []
    return row


async def _mcp_inbox(d: Daemon) -> dict[str, Any]:
    async with mcp_client(d.url, d.token) as client:
        return await call(client, "list_inbox")


def test_a_full_disk_keeps_the_committed_conversation_and_files_it_once_there_is_room(
        full_inbox: tuple[Daemon, Daemon, FullDisk]) -> None:
    a, b, disk = full_inbox
    _send(a)
    row = _refused(b)
    assert "tried again" in str(row["error"])
    assert isinstance(row["detail"], dict) and "elapsed" in row["detail"]  # the transfer's own figures are kept
    blob = b.home / "partial" / final_name(bytes.fromhex(str(row["sha256"])))
    assert blob.is_file()
    # housekeeping would remove a received blob left over an hour; not this one: a verified transfer owns it
    old = time.time() - 3 * 3600
    os.utime(blob, (old, old))
    with b.client() as c:
        report = c.post("/gc", json={}).json()  # (everything nothing needs)
        assert str(blob) not in [i["path"] for i in report["items"]], report
        assert blob.is_file()
        shown = b.p2pd("transfers", str(row["id"]))
        assert shown.returncode == 0 and "filing it waits" in shown.stdout, shown
        listed = b.p2pd("transfers")
        assert listed.returncode == 0 and "verified, filing waits" in listed.stdout, listed
        inbox = b.p2pd("inbox")  # where a person looks for what was sent to them
        assert inbox.returncode == 0 and "Received, not filed yet" in inbox.stderr and row["id"] in inbox.stdout, inbox
        listed_for_agent = asyncio.run(_mcp_inbox(b))  # and where an agent looks
        assert listed_for_agent["inbox"] == [] and [t["id"] for t in listed_for_agent["not_filed_yet"]] == [row["id"]]
        disk.free()
        done = wait_for(lambda: (r := c.get(f"/transfers/{row['id']}").json())["state"] != "verified" and r,
                        timeout=60, what="filed after the disk was freed")
        assert (done["state"], done["error"], done["cause"]) == ("done", None, None), done
        inbox = c.get("/inbox").json()
        assert [(e["transfer_id"], e["sha256"], e["from_peer"]) for e in inbox] == [
            (row["id"], row["sha256"], device_id(a))]
    assert not blob.exists()
    assert any(p.name.endswith(".a2a.json") for p in disk.folder.iterdir())


def test_a_restart_with_the_disk_still_full_keeps_waiting_and_a_resend_keeps_the_blob(
        full_inbox: tuple[Daemon, Daemon, FullDisk]) -> None:
    a, b, disk = full_inbox
    tid = _send(a)
    row = _refused(b)
    blob = b.home / "partial" / final_name(bytes.fromhex(str(row["sha256"])))
    b.stop(signal.SIGTERM)
    b.start()  # start-up files what was committed: refused again, it stays verified (it used to end failed)
    with b.client() as c:
        again = wait_for(lambda: (r := c.get(f"/transfers/{row['id']}").json())["detail"]["filing_attempts"] >= 2
                         and r, timeout=30, what="tried at start")
        assert again["state"] == "verified", again
    assert blob.is_file()
    # the desk, killed before it recorded DONE, sends the same transfer again (chaos seed 346's shape): the
    # laptop answers DONE from its commit and keeps the blob it still has to file
    resent = sent_again_after_a_kill(a, tid)
    assert resent["state"] == "done", resent
    with b.client() as c:
        # the resend made the laptop try again at once (its disk still full): counted, still verified
        tried = wait_for(lambda: (r := c.get(f"/transfers/{row['id']}").json())["detail"]["filing_attempts"] >= 3
                         and r, timeout=30, what="tried again on the resend")
        assert [t["state"] for t in c.get("/transfers").json()] == ["verified"] and tried["state"] == "verified"
        assert blob.is_file()
    # room again; the next try is a minute off (the backoff after three refusals): a restart files it at once
    disk.free()
    b.stop(signal.SIGTERM)
    b.start()
    with b.client() as c:
        wait_for(lambda: c.get(f"/transfers/{row['id']}").json()["state"] == "done", timeout=60,
                 what="filed at the start after the disk was freed")
        assert len(c.get("/inbox").json()) == 1  # filed once
    assert not blob.exists()


def test_a_committed_conversation_that_cannot_be_read_fails_and_is_not_tried_again(paired: PairMaker,
                                                                                    tmp_path: Path) -> None:
    """What never goes away (the blob no longer matches its SHA-256) is no reason to wait: the row fails."""
    a, b = paired(names=("desk", "laptop"))
    b.stop(signal.SIGKILL)
    packed = asyncio.run(pack_outbox(Source(str(corpus_session())), tmp_path / "packed"))
    blob = b.home / "partial" / final_name(bytes.fromhex(packed.sha256))
    data = bytearray(Path(packed.path).read_bytes())
    data[-1] ^= 0xFF  # one bit of the payload flipped on the laptop's disk
    blob.write_bytes(bytes(data))
    row = Store(b.home / "state.sqlite3").create_transfer("in", device_id(a), title="cut", sha256=packed.sha256,
                                                          state="verified")
    b.start()
    with b.client() as c:
        failed = wait_for(lambda: (r := c.get(f"/transfers/{row.id}").json())["state"] != "verified" and r,
                          timeout=60, what="decided at start")
        assert (failed["state"], failed["cause"]) == ("failed", "checksum_mismatch"), failed
        assert "filing_attempts" not in failed["detail"]
        assert c.get("/inbox").json() == []


def test_a_receiver_whose_disk_refuses_the_transfer_gets_it_again_once_there_is_room(paired: PairMaker) -> None:
    """Before the commit: the laptop's partial folder (where a transfer is received) is full. Both rows wait —
    interrupted, the cause on each side its own (``storage`` here, ``peer_storage`` on the desk) — and nothing is
    filed; the desk sends it again after a delay (10 s first), and once there is room it arrives once. It used
    to end failed on both sides, to be sent again by hand."""
    a, b = paired(names=("desk", "laptop"), wait_online=True)
    disk = FullDisk(b.home / "partial")
    try:
        with a.client() as c:
            tid = c.post("/send", json={"session": SESSION_ID, "to": {"device": "laptop"}}).json()["id"]
            sent = wait_for(lambda: (r := c.get(f"/transfers/{tid}").json())["state"] not in ("queued", "running")
                            and r, timeout=90, what="the first attempt ended")
            assert (sent["state"], sent["cause"]) == ("interrupted", "peer_storage"), sent
            assert "could not store" in sent["error"] and "sent again in 10 s" in sent["error"], sent
            assert sent["detail"]["storage_refusals"] == 1
            shown = a.p2pd("transfers", tid)
            assert shown.returncode == 0 and "sent again in 10 s" in shown.stdout, shown
            assert "The daemon sends it again by itself" in shown.stdout, shown
            listed = a.p2pd("transfers")
            assert listed.returncode == 0 and "interrupted, no room there" in listed.stdout, listed
        with b.client() as c:
            rows = c.get("/transfers").json()
            assert [(r["state"], r["cause"]) for r in rows] == [("interrupted", "storage")], rows
            listed = b.p2pd("transfers")
            assert listed.returncode == 0 and "interrupted, no room here" in listed.stdout, listed
            shown = b.p2pd("transfers", rows[0]["id"])
            assert shown.returncode == 0 and "make room and it arrives" in shown.stdout, shown
            # refused before a byte was sent: the laptop measured its room against the offer
            assert "not enough room in" in rows[0]["error"] and "needed" in rows[0]["error"], rows
            assert c.get("/inbox").json() == []
        assert disk.files() == []  # nothing half-written left in the full folder
        disk.free()
        with a.client() as c:
            done = wait_for(lambda: (r := c.get(f"/transfers/{tid}").json())["state"] not in ("interrupted", "queued",
                                                                                                "running") and r,
                            timeout=60, what="sent again after the room was made")
            assert (done["state"], done["error"], done["cause"]) == ("done", None, None), done
        with b.client() as c:  # (it files after its DONE went out: a moment after the desk heard it)
            rows = wait_for(lambda: (r := c.get("/transfers").json()) and r[0]["state"] != "verified" and r,
                            timeout=30, what="filed")
            assert [r["state"] for r in rows] == ["done"], rows  # the same row, taken over by the new attempt
            assert [e["transfer_id"] for e in c.get("/inbox").json()] == [rows[0]["id"]]
    finally:
        a.kill()
        b.kill()
        disk.unmount()


@pytest.mark.alone  # (timed: sent on request, before the automatic try 10 s later)
def test_a_transfer_that_waits_for_room_goes_at_once_when_asked(paired: PairMaker) -> None:
    """Its wait (10 s after the first refusal, minutes later on) ends when the user says the device has room:
    `p2pd transfers ID --retry` (POST /transfers/{id}/retry). Anything else is refused with 409."""
    from datetime import datetime

    a, b = paired(names=("desk", "laptop"), wait_online=True)
    disk = FullDisk(b.home / "partial")
    try:
        with a.client() as c:
            tid = c.post("/send", json={"session": SESSION_ID, "to": {"device": "laptop"}}).json()["id"]
            seen: list[dict[str, Any]] = []

            def refused_for_room() -> dict[str, Any] | None:
                row: dict[str, Any] = c.get(f"/transfers/{tid}").json()
                if row["state"] == "interrupted" and (not seen or seen[-1] != row):
                    seen.append(row)
                return row if row["state"] == "interrupted" and row["cause"] == "peer_storage" else None

            # Under a loaded CI machine the link itself may be cut first (another cause, retried by itself); every
            # interruption seen is printed, and the one this test is about must come.
            refused = wait_for(refused_for_room, timeout=90, what="refused for room")
            print("interruptions seen:", [(r["cause"], r.get("detail")) for r in seen])
            assert refused["detail"].get("retry_in") == 10, seen
            disk.free()
            asked = a.p2pd("transfers", tid, "--retry")
            assert asked.returncode == 0 and "again now" in asked.stderr, asked
            done = wait_for(lambda: (r := c.get(f"/transfers/{tid}").json())["state"] == "done" and r,
                            timeout=30, what="sent on request")
            took = (datetime.fromisoformat(done["updated_at"])
                    - datetime.fromisoformat(refused["updated_at"])).total_seconds()
            assert took < 8, took  # not the automatic try, 10 s after the refusal
            again = c.post(f"/transfers/{tid}/retry")
            assert again.status_code == 409 and "only an interrupted or queued one" in again.json()["error"], again
        with b.client() as c:
            incoming = c.get("/transfers").json()[0]["id"]
            assert c.post(f"/transfers/{incoming}/retry").status_code == 409
        usage = a.p2pd("transfers", "--retry")
        assert usage.returncode == 2 and "needs a transfer id" in usage.stderr, usage
    finally:
        a.kill()
        b.kill()
        disk.unmount()
