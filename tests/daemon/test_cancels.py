"""A cancel of a device transfer is the sender's request and the receiver's decision (``p2pd/daemon/cancels.py``),
on a real store: the receiver's commit (``running → verified``, before DONE) and its answer to a cancel are one
decision each, in either order, so the two sides cannot disagree (chaos seeds 400, 401, 986654361)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from p2pd.daemon.cancels import CancelDesk
from p2pd.daemon.offer_desk import OfferDesk
from p2pd.daemon.peer_protocol import CANCEL_ASK, HandoffClosed, TransferOutcome
from p2pd.daemon.running import RunningTransfers
from p2pd.daemon.store import Store
from p2pd.daemon.transfers import TransferState as S
from p2pd.errors import Cause, ConflictError
from p2pd.transfer.partial import final_name

SENDER = "a1b2c3d4e5f60718"
SHA = "ab" * 32


def _desk(tmp_path: Path) -> tuple[CancelDesk, Store]:
    store = Store(tmp_path / "state.sqlite3")
    transfers = SimpleNamespace(decisions=threading.Lock(), partial=tmp_path / "partial")
    owner: Any = SimpleNamespace(store=store, running=RunningTransfers(), sessions={}, transfers=transfers)
    return CancelDesk(owner), store


def _incoming(store: Store, state: str, sender_tid: str = "tr_sender") -> str:
    row = store.create_transfer("in", SENDER, sha256=SHA, detail={"sender_tid": sender_tid})
    if state != "queued":
        store.update_transfer(row.id, state="running")
    if state not in ("queued", "running"):
        store.update_transfer(row.id, state=state)
    return row.id


def test_a_cancel_before_the_commit_wins_and_the_commit_is_then_refused(tmp_path: Path) -> None:
    desk, store = _desk(tmp_path)
    rid = _incoming(store, "running")
    blob = tmp_path / "partial" / final_name(bytes.fromhex(SHA))  # verified and in place, not committed yet
    blob.parent.mkdir()
    blob.write_bytes(b"x")
    assert desk.decide(SENDER, "tr_sender", "no longer wanted") is S.CANCELLED
    row = store.get_transfer(rid)
    assert (row.state, row.cause, row.detail["cancel_asked"]) == ("cancelled", Cause.CANCELLED.value, True)
    assert not blob.exists()  # never filed, even after a restart
    with pytest.raises(ConflictError):  # the receiver's commit point, after the decision: refused
        store.update_transfer(rid, state="verified")
    assert desk.decide(SENDER, "tr_sender", "again") is S.CANCELLED  # asked again (a lost answer): same answer


@pytest.mark.parametrize("state", ["verified", "done"])
def test_a_cancel_after_the_commit_loses_and_says_done(tmp_path: Path, state: str) -> None:
    desk, store = _desk(tmp_path)
    rid = _incoming(store, "verified")
    if state == "done":
        store.update_transfer(rid, state="done")
    for _ in range(2):  # idempotent: the answer is re-sent from the store whenever it is asked
        assert desk.decide(SENDER, "tr_sender", "too late") is S.DONE
    assert store.get_transfer(rid).state == state


def test_an_ask_that_overtakes_the_offer_leaves_a_row_that_refuses_it(tmp_path: Path) -> None:
    desk, store = _desk(tmp_path)
    assert desk.decide(SENDER, "tr_early", "stop") is S.CANCELLED
    [row] = store.list_transfers()
    assert (row.direction, row.state, row.detail) == ("in", "cancelled", {"sender_tid": "tr_early",
                                                                            "cancel_asked": True})
    assert desk.decide(SENDER, "tr_other", "stop") is S.CANCELLED and len(store.list_transfers()) == 2


def test_the_sender_cancels_alone_only_what_it_never_offered(tmp_path: Path) -> None:
    desk, store = _desk(tmp_path)
    queued = store.create_transfer("out", SENDER, sha256=SHA)
    assert asyncio.run(desk.request(queued, "never mind")).state == "cancelled"
    offered = store.create_transfer("out", SENDER, sha256=SHA)
    store.update_transfer(offered.id, state="running")
    store.update_transfer(offered.id, state="interrupted")
    asked = asyncio.run(desk.request(offered, "never mind"))
    assert (asked.state, asked.error, asked.cause) == ("cancelling", "never mind", Cause.CANCELLED.value)
    with pytest.raises(ConflictError):  # nothing sends it again, nothing ends it but the receiver's answer
        store.update_transfer(offered.id, state="running")


@pytest.mark.parametrize("answer", ["cancelled", "done"])
def test_the_receivers_answer_ends_the_senders_row(tmp_path: Path, answer: str) -> None:
    desk, store = _desk(tmp_path)
    row = store.create_transfer("out", SENDER, sha256=SHA, size=10)
    store.update_transfer(row.id, state="running")
    asyncio.run(desk.request(row, "never mind"))
    session: Any = SimpleNamespace(device=SimpleNamespace(device_id=SENDER, name="laptop"))
    other: Any = SimpleNamespace(device=SimpleNamespace(device_id="ffffffffffffffff", name="other"))
    asyncio.run(desk.outcome(other, TransferOutcome(tid=row.id, state="done")))  # not its device: ignored
    assert store.get_transfer(row.id).state == "cancelling"
    asyncio.run(desk.outcome(session, TransferOutcome(tid=row.id, state=answer)))  # type: ignore[arg-type]
    ended = store.get_transfer(row.id)
    assert ended.state == answer
    if answer == "done":
        assert "laptop had already received it" in ended.detail["cancel_too_late"]
    asyncio.run(desk.outcome(session, TransferOutcome(tid=row.id, state="cancelled")))  # a late repeat: ignored
    assert store.get_transfer(row.id).state == answer


class _Peer:
    """A device session that records the handoff reports sent to it."""

    def __init__(self, device_id: str, features: frozenset[str]) -> None:
        self.device = SimpleNamespace(device_id=device_id, name="desk")
        self.features = features
        self.reports: list[Any] = []

    def report(self, message: Any) -> None:
        self.reports.append(message)


def _claimed_offer(tmp_path: Path) -> tuple[OfferDesk, Store, _Peer]:
    store = Store(tmp_path / "state.sqlite3")
    peer = _Peer(SENDER, frozenset({CANCEL_ASK}))
    owner: Any = SimpleNamespace(store=store, sessions={SENDER: peer})
    store.offer_received("ho_1", SENDER, title="t", summary="", messages=1)
    for state in ("claiming", "claimed"):
        store.move_offer("ho_1", SENDER, state)
    return OfferDesk(owner), store, peer


def test_the_claimer_cancels_a_handoff_it_has_not_begun_importing_and_says_so(tmp_path: Path) -> None:
    desk, store, peer = _claimed_offer(tmp_path)
    asyncio.run(desk.closed(peer, HandoffClosed(hid="ho_1", state="cancelled", reason="never mind")))  # type: ignore
    assert store.get_offer("ho_1").state == "cancelled"
    assert [(r.hid, r.state) for r in peer.reports] == [("ho_1", "cancelled")]
    assert asyncio.run(desk.import_begins("ho_1", SENDER)) is None  # never imported afterwards


def test_a_cancel_during_the_import_waits_for_it_and_the_import_wins(tmp_path: Path) -> None:
    desk, store, peer = _claimed_offer(tmp_path)

    async def scenario() -> None:
        assert await desk.import_begins("ho_1", SENDER) == "ho_1"  # the claimer's commit point
        await desk.closed(peer, HandoffClosed(hid="ho_1", state="cancelled"))  # type: ignore[arg-type]
        assert store.get_offer("ho_1").state == "claimed" and peer.reports == []  # not cancelled under the import
        await desk.complete("ho_1", "imported", output="claude --resume x")
        await desk.import_ended("ho_1")  # the cancel waiting is answered from the offer now

    asyncio.run(scenario())
    assert store.get_offer("ho_1").state == "completed"
    assert [r.state for r in peer.reports] == ["started", "completed", "completed"]


def test_an_older_sender_is_obeyed_and_never_sent_the_new_answer(tmp_path: Path) -> None:
    desk, store, peer = _claimed_offer(tmp_path)
    peer.features = frozenset()
    asyncio.run(desk.closed(peer, HandoffClosed(hid="ho_1", state="cancelled")))  # type: ignore[arg-type]
    assert store.get_offer("ho_1").state == "cancelled" and peer.reports == []
