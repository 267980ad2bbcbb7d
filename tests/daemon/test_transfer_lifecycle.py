"""The transfer lifecycle (pure): the transition table, and what each failure means for a device transfer —
decided on the error's cause and class, whatever its text says."""

from __future__ import annotations

import itertools

import pytest

from p2pd.daemon.transfers import (
    FINAL,
    RETRYABLE,
    TRANSITIONS,
    TransferState,
    allowed,
    check_transition,
    incoming_ending,
    outgoing_ending,
)
from p2pd.errors import (
    Cause,
    ConflictError,
    ConnectionFailedError,
    DeclinedError,
    DeviceOfflineError,
    InvalidInputError,
    NoPeerError,
    P2pdError,
    PeerGoneError,
    PeerTimeoutError,
    ProtocolError,
    SignalingError,
    TransferCancelledError,
    TransferFailedError,
)

S = TransferState


def test_the_table_is_closed_and_final_states_are_never_left() -> None:
    assert set(TRANSITIONS) == set(TransferState)
    for state in FINAL:
        assert TRANSITIONS[state] == frozenset()
    for a, b in itertools.product(TransferState, repeat=2):
        assert allowed(a, b) == (a is b or b in TRANSITIONS[a])
        if a in FINAL and a is not b:
            with pytest.raises(ConflictError, match=f"already {a}"):
                check_transition(a, b)
    # every state is reachable from queued, and every non-final state can still end
    reach, todo = {S.QUEUED}, [S.QUEUED]
    while todo:
        for nxt in TRANSITIONS[todo.pop()] - reach:
            reach.add(nxt)
            todo.append(nxt)
    assert reach == set(TransferState)
    assert all(TRANSITIONS[s] & FINAL for s in TransferState if s not in FINAL)
    assert not allowed("queued", "done") and allowed("interrupted", "running") and not allowed("done", "running")
    with pytest.raises(InvalidInputError):
        allowed("queued", "paused")


# The same text for every error: the decision must come from the class and cause alone.
TEXT = "connection went away: being received by another transfer; no peer joined"


def test_one_commit_point_a_verified_row_is_never_cancelled_and_a_cancel_asked_waits_for_the_answer() -> None:
    assert TRANSITIONS[S.VERIFIED] == {S.DONE, S.FAILED}  # filed, or the disk failed it: never cancelled
    with pytest.raises(ConflictError):
        check_transition("verified", "cancelled")
    assert TRANSITIONS[S.CANCELLING] == {S.CANCELLED, S.DONE}  # the receiver's answer, nothing else
    for state in (S.QUEUED, S.RUNNING, S.INTERRUPTED):
        assert allowed(state, "cancelling")
    assert not allowed("cancelling", "running") and not allowed("cancelling", "failed")
    assert not allowed("cancelled", "verified") and allowed("running", "verified")


@pytest.mark.parametrize("error", [PeerGoneError("the data channel was closed"), PeerTimeoutError("silence"),
                                   ConnectionFailedError("ICE failed"), DeviceOfflineError("not connected"),
                                   SignalingError("lost", cause=Cause.SIGNALING_LOST), NoPeerError("nobody")])
def test_a_device_that_went_away_leaves_the_transfer_interrupted(error: P2pdError) -> None:
    ending = outgoing_ending(error, cancelled=None, device_online=True, device_name="b")
    assert (ending.state, ending.cause, ending.handoff, ending.backoff) == (S.INTERRUPTED, error.cause, None, 1)


def test_decisions_never_depend_on_the_text() -> None:
    for cls in (PeerGoneError, TransferFailedError, ProtocolError):
        ending = outgoing_ending(cls(TEXT), cancelled=None, device_online=True, device_name="b")
        assert ending.state == (S.INTERRUPTED if cls is PeerGoneError else S.FAILED), cls
    # the old phrases no longer decide anything: a protocol error that says "connection" still fails
    assert outgoing_ending(ProtocolError("bad connection frame"), cancelled=None, device_online=True,
                           device_name="b").state is S.FAILED


def test_busy_declined_conflict_cancelled_and_offline() -> None:
    busy = DeclinedError("the receiver declined the offer (busy): " + TEXT, cause=Cause.BUSY)
    ending = outgoing_ending(busy, cancelled=None, device_online=True, device_name="b")
    assert (ending.state, ending.backoff, ending.handoff) == (S.INTERRUPTED, 2, None)
    declined = outgoing_ending(DeclinedError("no thanks"), cancelled=None, device_online=True, device_name="b")
    assert (declined.state, declined.handoff, declined.handoff_reason) == (S.FAILED, "failed", "declined by b")
    assert declined.reason == "declined by b: no thanks"
    left = outgoing_ending(ConflictError("the device left the link"), cancelled=None, device_online=True,
                           device_name="b")
    assert (left.state, left.handoff) == (S.CANCELLED, None)
    mine = outgoing_ending(TransferCancelledError("x"), cancelled="by me", device_online=True, device_name="b")
    assert (mine.state, mine.reason, mine.cause, mine.handoff) == (S.CANCELLED, "by me", Cause.CANCELLED,
                                                                   "cancelled")
    # anything at all while the device's control channel is down: try again when it is back
    away = outgoing_ending(ProtocolError("x"), cancelled=None, device_online=False, device_name="b")
    assert away.state is S.INTERRUPTED
    assert outgoing_ending(OSError("disk"), cancelled=None, device_online=True, device_name="b").state is S.FAILED


def test_the_receiving_side_reports_a_handoff_failed_only_when_no_retry_will_come() -> None:
    for cause in RETRYABLE - {Cause.BUSY}:
        error = P2pdError("x", cause=cause)
        ending = incoming_ending(error, cancelled=False)
        # cut off: interrupted (chaos seed 204), and the sender's next attempt takes the row over
        assert (ending.state, ending.cause, ending.handoff) == (S.INTERRUPTED, cause, None), cause
    superseded = incoming_ending(PeerGoneError("x"), cancelled=True, superseded=True)
    assert (superseded.state, superseded.handoff) == (S.INTERRUPTED, None)  # chaos seed 1
    broken = incoming_ending(ProtocolError("bad frame"), cancelled=False)
    assert (broken.state, broken.handoff) == (S.FAILED, "failed")
    stopped = incoming_ending(PeerGoneError("x"), cancelled=True)  # its handoff: as the sender's handoff-closed says
    assert (stopped.state, stopped.cause, stopped.handoff) == (S.CANCELLED, Cause.CANCELLED, None)
    by_sender = incoming_ending(TransferCancelledError("the transfer was cancelled by the peer"), cancelled=False)
    assert (by_sender.state, by_sender.cause, by_sender.handoff) == (S.CANCELLED, Cause.CANCELLED, None)


def test_a_disk_that_refused_the_transfer_waits_on_both_sides_for_it_to_be_sent_again() -> None:
    from p2pd.errors import StorageError
    from p2pd.transfer.events import Failure
    from p2pd.transfer.frames import Code

    theirs = Failure(Code.IO, TEXT, True).exception()  # the receiver's `io` frame, as the sender reads it
    ending = outgoing_ending(theirs, cancelled=None, device_online=True, device_name="b")
    assert (ending.state, ending.cause, ending.retry_later, ending.handoff) == (
        S.INTERRUPTED, Cause.PEER_STORAGE, True, None)
    cancelled = outgoing_ending(theirs, cancelled="by me", device_online=True, device_name="b")
    assert (cancelled.state, cancelled.retry_later) == (S.CANCELLED, False)  # a cancel still wins
    ours = Failure(Code.IO, TEXT, False).exception()  # the receiver's own side of it
    assert isinstance(ours, StorageError)
    ending = incoming_ending(ours, cancelled=False)
    assert (ending.state, ending.cause, ending.handoff) == (S.INTERRUPTED, Cause.STORAGE, None)
    # not a retry for any other failure of the transfer, whatever it says
    other = outgoing_ending(TransferFailedError(TEXT), cancelled=None, device_online=True, device_name="b")
    assert (other.state, other.retry_later) == (S.FAILED, False)
