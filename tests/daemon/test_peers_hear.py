"""What paired daemons tell each other survives restarts, because it is re-told from the store on every contact
(``p2pd/daemon/notices.py``), with two real daemons and a real signaling server:

- a rename (``p2pd devices name NEW`` on a running daemon) reaches the peer's device table;
- a handoff completed by the worker while its sender is away — and the worker's daemon killed and restarted
  meanwhile — reaches the sender when it is back (the report is in the store, not in memory);
- a transfer cancelled by its sender while the receiver is down is ``cancelling`` until the receiver, back,
  answers; it ends cancelled on both sides (found by the chaos test, seed 1: the receiver kept its cut-off row
  'interrupted' for ever), and nothing of it is imported."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from p2pd.agents.sources import load_file
from p2pd.conversation.document_io import write_document
from tests.daemon.conftest import (
    SESSION_ID,
    Daemon,
    PairMaker,
    big_session,
    corpus_session,
    device_id,
    frozen_under_way,
    online,
    wait_for,
)

pytestmark = pytest.mark.slow


def _device(d: Daemon, ident: str) -> dict:  # type: ignore[type-arg]
    with d.client() as c:
        return next(x for x in c.get("/devices").json() if x["id"] == ident)  # type: ignore[no-any-return]


def test_a_rename_reaches_the_peer(paired: PairMaker) -> None:
    a, b = paired(names=("desk", "laptop"), wait_online=True)
    a_id = device_id(a)
    assert _device(b, a_id)["name"] == "desk"
    renamed = a.p2pd("devices", "name", "study")
    assert renamed.returncode == 0, renamed.stderr
    wait_for(lambda: _device(b, a_id)["name"] == "study", timeout=30, what="the new name at the laptop")
    listed = b.p2pd("devices")
    assert "study" in listed.stdout, listed.stdout


def test_a_report_made_while_the_sender_is_away_reaches_it_later(paired: PairMaker, tmp_path: Path) -> None:
    a, b = paired(names=("desk", "laptop"), b_env={"P2PD_ACCEPT_HANDOFFS": "false"}, wait_online=True)
    with a.client() as c:
        hid = c.post("/handoffs", json={"summary": "s", "goal": "g", "target": "laptop", "session_id": SESSION_ID,
                                        "cwd": str(tmp_path)}).json()["id"]
    with b.client() as c:
        wait_for(lambda: any(o["id"] == hid for o in c.get("/offers").json()), what="offered at the laptop")
    assert b.p2pd("handoffs", "claim", hid).returncode == 0
    with b.client() as c:
        wait_for(lambda: c.get(f"/offers/{hid}").json().get("inbox_id"), timeout=90, what="received")
    a.stop()  # the sender goes away
    done = b.p2pd("handoffs", "complete", hid, "--result", "all green")
    assert done.returncode == 0, done.stderr
    b.stop(signal.SIGKILL)  # nothing kept in the worker's memory
    b.start()
    a.start()
    with a.client() as c:
        h = wait_for(lambda: (r := c.get(f"/handoffs/{hid}").json())["state"] == "completed" and r, timeout=90,
                     what="completed at the desk")
    assert h["result"] == "all green"


def test_a_send_cancelled_while_the_receiver_is_down_is_cancelled_there_too(paired: PairMaker,
                                                                           tmp_path: Path) -> None:
    a, b = paired(names=("desk", "laptop"), wait_online=True)
    b_id = device_id(b)
    big = big_session(tmp_path / "big.a2a.json")
    with a.client() as c:
        row = c.post("/send", json={"transcript_path": str(big), "to": {"device": "laptop"}}).json()
        tid = row["id"]
        with frozen_under_way(c, tid, row["size"], b):
            b.stop(signal.SIGKILL)
        wait_for(lambda: c.get(f"/transfers/{tid}").json()["state"] == "interrupted", timeout=90,
                 what="interrupted at the desk")
        asked = c.post(f"/transfers/{tid}/cancel").json()
        # the laptop may hold it: it decides when it is back (it never got it whole: cancelled)
        assert asked["state"] == "cancelling" and asked["cause"] == "cancelled", asked
    b.start()
    wait_for(lambda: online(a, b_id), what="the laptop back")
    with a.client() as c:
        wait_for(lambda: c.get(f"/transfers/{tid}").json()["state"] == "cancelled", timeout=60,
                 what="cancelled at the desk once the laptop answered")
    with b.client() as c:
        incoming = wait_for(lambda: (rows := c.get("/transfers").json()) and rows[0]["state"] == "cancelled"
                            and rows, timeout=60, what="cancelled at the laptop")
        assert len(incoming) == 1 and incoming[0]["detail"]["sender_tid"] == tid
        assert c.get("/inbox").json() == []


def test_a_cancel_that_reaches_a_receiver_which_had_the_transfer_ends_done_on_both_sides(paired: PairMaker,
                                                                                        tmp_path: Path) -> None:
    """The receiver's commit point decides (DAEMON.md "One commit point"; chaos seeds 400, 401, 986654361): a sender
    that never heard DONE (its row set back to interrupted while it was stopped: a stop between the receiver's DONE
    and its own record) asks to cancel; the laptop had filed it, so it answers done — asked again at the hello after
    the desk's restart, the answer stored at the laptop — and the desk's row ends done, saying the cancel was late."""
    import sqlite3

    a, b = paired(names=("desk", "laptop"), wait_online=True)
    b_id = device_id(b)
    small = tmp_path / "small.a2a.json"
    write_document(load_file(corpus_session()), small)
    with a.client() as c:
        tid = c.post("/send", json={"transcript_path": str(small), "to": {"device": "laptop"}}).json()["id"]
        wait_for(lambda: c.get(f"/transfers/{tid}").json()["state"] == "done", timeout=90, what="sent")
    with b.client() as c:
        wait_for(lambda: len(c.get("/inbox").json()) == 1, timeout=60, what="filed at the laptop")
    a.stop(signal.SIGKILL)
    with sqlite3.connect(a.home / "state.sqlite3") as db:  # as if the desk had died before it recorded DONE
        db.execute("UPDATE transfers SET state='interrupted' WHERE id=?", (tid,))
    b.stop(signal.SIGKILL)  # away while the desk asks: the desk waits, 'cancelling'
    a.start()
    with a.client() as c:
        asked = c.post(f"/transfers/{tid}/cancel", json={"reason": "changed my mind"})
        assert asked.status_code == 200 and asked.json()["state"] == "cancelling", asked.text
        b.start()
        wait_for(lambda: online(a, b_id), what="the laptop back")
        ended = wait_for(lambda: (r := c.get(f"/transfers/{tid}").json())["state"] != "cancelling" and r,
                         timeout=60, what="the laptop's answer")
    assert ended["state"] == "done" and "already received it" in ended["detail"]["cancel_too_late"], ended
    with b.client() as c:
        assert [(t["state"], t["detail"]["sender_tid"]) for t in c.get("/transfers").json()] == [("done", tid)]
        assert len(c.get("/inbox").json()) == 1  # filed once, kept
