"""What a daemon re-tells a paired device on each contact, read from the store (``p2pd/daemon/notices.py``)."""

from __future__ import annotations

from pathlib import Path

from p2pd.daemon.notices import granted_unsent, notices_for
from p2pd.daemon.peer_protocol import HandoffClaimResult, HandoffClosed, HandoffState, TransferClosed
from p2pd.daemon.store import Store
from p2pd.errors import Cause

DEV, OTHER = "aaaa000011112222", "bbbb000011112222"


def _handoff(store: Store, target: str) -> str:
    return store.create_handoff(target=target, package={}, document_path="/x", title="t", source={}).id


def test_transfers_cancelled_or_failed_are_told_to_their_receiver(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    cancelled = store.create_transfer("out", DEV, sha256="aa")
    store.end_transfer(cancelled.id, "cancelled", error="no longer wanted", cause=Cause.CANCELLED)
    failed = store.create_transfer("out", DEV, sha256="bb")
    store.end_transfer(failed.id, "failed", error="declined", cause=Cause.DECLINED)
    store.create_transfer("out", DEV, sha256="cc")  # still queued: nothing to tell
    other = store.create_transfer("out", OTHER, sha256="dd")
    store.end_transfer(other.id, "cancelled", cause=Cause.CANCELLED)
    coded = store.create_transfer("out", "code", code="7-apple-bear")
    store.end_transfer(coded.id, "cancelled", cause=Cause.CANCELLED)
    told = [m for m in notices_for(store, DEV) if isinstance(m, TransferClosed)]
    assert sorted((m.tid, m.state, m.reason) for m in told) == sorted(
        [(cancelled.id, "cancelled", "no longer wanted"), (failed.id, "failed", "declined")])


def test_a_grant_the_claimer_may_have_missed_is_told_again(tmp_path: Path) -> None:
    """Chaos seed 102: the claimer went away between its claim and the grant; its offer stayed 'claiming'."""
    store = Store(tmp_path / "s.db")
    mine = _handoff(store, "any")
    assert store.claim_handoff(mine, DEV) is not None
    theirs = _handoff(store, "any")
    assert store.claim_handoff(theirs, OTHER) is not None
    gone = _handoff(store, DEV)
    store.transition_handoff(gone, "cancelled", reason="changed my mind")
    _handoff(store, DEV)  # pending: offered by the greeting itself, not a notice
    told = notices_for(store, DEV)
    assert HandoffClaimResult(hid=mine, granted=True) in told
    assert HandoffClosed(hid=theirs, state="taken", reason="claimed by another device") in told
    assert HandoffClosed(hid=gone, state="cancelled", reason="changed my mind") in told
    assert len(told) == 3


def test_a_worker_reports_again_what_it_did(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    for hid in ("ho_done", "ho_failed", "ho_open"):
        store.offer_received(hid, DEV, title="t", summary="", messages=1)
        store.move_offer(hid, DEV, "claiming", mode="worker")
        store.move_offer(hid, DEV, "claimed")
    store.move_offer("ho_done", DEV, "completed", result="all green", resume_command="claude --resume x")
    store.move_offer("ho_failed", DEV, "failed", reason="no such folder")
    told = notices_for(store, DEV)
    assert HandoffState(hid="ho_failed", state="failed", reason="no such folder") in told
    assert [m for m in told if m.hid == "ho_done"] == [  # type: ignore[union-attr]
        HandoffState(hid="ho_done", state="started"),
        HandoffState(hid="ho_done", state="completed", result="all green", output="claude --resume x")]
    assert notices_for(store, OTHER) == []


def test_a_handoff_being_cancelled_is_asked_again_and_a_grant_never_queued_is_found(tmp_path: Path) -> None:
    """Chaos seed 3996369679: the sender stopped between a grant and queueing its conversation; the handoff stayed
    claimed on both sides with nothing on its way."""
    store = Store(tmp_path / "s.db")
    asking = _handoff(store, DEV)
    assert store.claim_handoff(asking, DEV) is not None
    store.transition_handoff(asking, "cancelling", reason="not needed")
    assert HandoffClosed(hid=asking, state="cancelled", reason="not needed") in notices_for(store, DEV)
    unsent = _handoff(store, DEV)
    assert store.claim_handoff(unsent, DEV) is not None
    sent = _handoff(store, DEV)
    assert store.claim_handoff(sent, DEV) is not None
    store.create_transfer("out", DEV, handoff_id=sent)
    assert [h.id for h in granted_unsent(store, DEV)] == [unsent]
    assert granted_unsent(store, OTHER) == []
