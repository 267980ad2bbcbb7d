"""The pure session machine (server events → Step) and the pairing state table, in-process: no server, no loop."""

from __future__ import annotations

from typing import Any

import pytest

from p2pd.errors import Cause, Party, PeerGoneError, SignalingError, TransferFailedError, WrongCodeError
from p2pd.pairing.codes import parse_code
from p2pd.pairing.machine import TRANSITIONS, Pairing, Session, State, Step
from signaling.protocol import Error, ErrorCode, PeerJoined, PeerLeft, Relayed, RoomClosed

CODE = parse_code("7-guitar-meadow")
S, R, X = "aa01", "bb02", "cc03"  # the sender's, the receiver's and a third member's peer ids


def joined(peer: str) -> PeerJoined:
    return PeerJoined(room="7", peer_id=peer)


def relayed(sender: str, data: Any) -> Relayed:
    return Relayed(sender=sender, data=data)


def wire(sender: Session, receiver: Session, first: Step) -> tuple[Step, Step]:
    """Relay ``first`` (from the sender) and every answer until both sides are quiet; the last steps."""
    last = {"sender": Step(), "receiver": Step()}
    queue: list[tuple[str, dict[str, Any]]] = [("receiver", data) for data in first.send]
    while queue:
        to, data = queue.pop(0)
        session, origin = (receiver, S) if to == "receiver" else (sender, R)
        step = session.receive(relayed(origin, data))
        last[to] = step
        queue += [("sender" if to == "receiver" else "receiver", out) for out in step.send]
    return last["sender"], last["receiver"]


def pair(sender_code: str = "7-guitar-meadow", receiver_code: str = "7-guitar-meadow") -> tuple[
        Session, Session, Step, Step]:
    sender = Session(parse_code(sender_code), "sender", room="7")
    receiver = Session(parse_code(receiver_code), "receiver", room="7", peers=[S])
    assert sender.begin().send == [] and receiver.begin().send == []  # nobody to talk to yet / receivers wait
    start = sender.receive(joined(R))
    assert start.peer_present and sender.peer == R and len(start.send) == 1
    last_s, last_r = wire(sender, receiver, start)
    return sender, receiver, last_s, last_r


def test_two_sessions_pair_and_exchange_sealed_objects() -> None:
    sender, receiver, last_s, last_r = pair()
    assert last_s.paired and last_r.paired and sender.paired and receiver.paired
    assert sender.pairing.verification == receiver.pairing.verification is not None
    step = receiver.receive(relayed(S, sender.seal({"type": "offer"})))
    assert step.delivered == [{"type": "offer"}] and step.error is None


def test_the_sender_starts_only_once_begun_and_the_peer_is_present() -> None:
    early = Session(CODE, "sender", room="7")
    assert early.receive(joined(R)).send == []  # the peer is there, but nobody waits for the pairing yet
    [pake] = early.begin().send
    assert pake["kind"] == "pake" and pake["role"] == "sender"
    assert early.begin().send == []  # once
    present = Session(CODE, "sender", room="7", peers=[R])
    assert len(present.begin().send) == 1


def test_only_the_first_other_member_is_the_peer() -> None:
    sender = Session(CODE, "sender", room="7")
    sender.begin()
    assert sender.receive(joined(R)).send
    later = sender.receive(joined(X))
    assert later.send == [] and not later.peer_present and sender.peer == R
    assert sender.receive(relayed(X, {"kind": "pake"})) == Step()  # a stranger's data is ignored
    assert sender.receive(PeerLeft(room="7", peer_id=X)) == Step()  # and so is its leaving
    assert sender.failure is None and sender.pairing.state == State.WAITING_SHARE


def test_data_before_the_peer_is_known_is_ignored() -> None:
    sender = Session(CODE, "sender", room="7")
    assert sender.receive(relayed(R, {"kind": "pake"})) == Step() and sender.failure is None


@pytest.mark.parametrize("paired", [False, True])
def test_the_peer_leaving_is_peer_gone(paired: bool) -> None:
    if paired:
        sender, *_ = pair()
    else:
        sender = Session(CODE, "sender", room="7", peers=[R])
        sender.begin()
    step = sender.receive(PeerLeft(room="7", peer_id=R))
    assert isinstance(step.error, PeerGoneError) and step.error.cause is Cause.PEER_GONE
    assert sender.failure is step.error


@pytest.mark.parametrize(("event", "cls", "cause"), [
    (RoomClosed(room="7", reason="expired"), SignalingError, Cause.SIGNALING_LOST),
    (RoomClosed(room="7", reason="closed", by=R), PeerGoneError, Cause.PEER_GONE),
    (RoomClosed(room="7", reason="closed", by=X), SignalingError, Cause.SIGNALING_LOST),
    (RoomClosed(room="7", reason="closed"), SignalingError, Cause.SIGNALING_LOST),
])
def test_a_closed_room(event: RoomClosed, cls: type[Exception], cause: Cause) -> None:
    sender = Session(CODE, "sender", room="7", peers=[R])
    step = sender.receive(event)
    assert type(step.error) is cls and step.error.cause is cause


def test_a_refused_message_keeps_the_servers_words_apart() -> None:
    sender = Session(CODE, "sender", room="7", peers=[R])
    reason = "slow down \x1b[31m (the server's words)"
    step = sender.receive(Error(code=ErrorCode.RATE_LIMITED, reason=reason))
    assert isinstance(step.error, SignalingError) and step.error.cause is Cause.SIGNALING_REFUSED
    assert step.error.party is Party.SERVER and step.error.peer_text == reason
    assert reason not in str(step.error) and step.error.details == {"code": "rate-limited"}


def test_a_failure_is_final() -> None:
    sender, *_ = pair()
    gone = sender.receive(PeerLeft(room="7", peer_id=R)).error
    assert sender.receive(RoomClosed(room="7", reason="expired")) == Step()
    assert sender.receive(Error(code=ErrorCode.BAD_MESSAGE, reason="x")) == Step()
    assert not sender.fail(SignalingError("lost", cause=Cause.SIGNALING_LOST)) and sender.failure is gone
    with pytest.raises(PeerGoneError):
        sender.seal({"type": "offer"})


def test_the_io_layer_reports_its_failures_through_fail() -> None:
    sender = Session(CODE, "sender", room="7", peers=[R])
    lost = SignalingError("lost the connection", cause=Cause.SIGNALING_LOST)
    assert sender.fail(lost) and sender.failure is lost
    assert sender.begin().send == []  # nothing starts after a failure
    with pytest.raises(SignalingError):
        sender.seal({})


def test_a_wrong_code_through_the_session() -> None:
    sender, receiver, last_s, last_r = pair(receiver_code="7-guitar-meadows")
    assert isinstance(sender.failure, WrongCodeError) and isinstance(receiver.failure, WrongCodeError)
    assert last_s.error is sender.failure and last_r.error is receiver.failure
    assert not sender.paired and sender.pairing.verification is None


def test_a_role_clash_through_the_session() -> None:
    first = Session(CODE, "sender", room="7", peers=[R])
    second = Session(CODE, "sender", room="7", peers=[S])
    [pake] = second.begin().send
    step = first.receive(relayed(R, pake))
    assert type(step.error) is TransferFailedError and step.error.cause is Cause.ROLE_CLASH


def test_seal_before_pairing_is_a_programming_error() -> None:
    sender = Session(CODE, "sender", room="7", peers=[R])
    with pytest.raises(RuntimeError):
        sender.seal({})


# ---- the state table ---------------------------------------------------------------------------------------


def test_the_state_table_has_every_state_and_failed_is_final() -> None:
    assert set(TRANSITIONS) == set(State)
    assert TRANSITIONS[State.FAILED] == frozenset()
    assert all(State.FAILED in targets for state, targets in TRANSITIONS.items() if state != State.FAILED)


def test_every_transition_a_pairing_takes_is_in_the_table() -> None:
    seen: set[tuple[State, State]] = set()
    for code in ("7-guitar-meadow", "7-guitar-meadows"):
        sender, receiver = Pairing(CODE, "sender"), Pairing(parse_code(code), "receiver")
        before = sender.state
        [pake1] = sender.start()
        seen.add((before, sender.state))
        before = receiver.state
        [pake2] = receiver.receive(pake1).send
        seen.add((before, receiver.state))
        before = sender.state
        [confirm] = sender.receive(pake2).send
        seen.add((before, sender.state))
        before = receiver.state
        receiver.receive(confirm)
        seen.add((before, receiver.state))
    for before, after in seen:
        assert after in TRANSITIONS[before], (before, after)
    assert (State.WAITING_CONFIRM, State.PAIRED) in seen and (State.WAITING_CONFIRM, State.FAILED) in seen


def test_a_failed_machine_does_not_start() -> None:
    sender = Pairing(CODE, "sender")
    assert sender.receive("garbage").error is not None and sender.state == State.FAILED
    with pytest.raises(RuntimeError):
        sender.start()
