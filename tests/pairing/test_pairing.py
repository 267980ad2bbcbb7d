"""The sans-I/O pairing state machine: two machines wired back to back, and hostile inputs."""

from __future__ import annotations

from typing import Any

import pytest

from p2pd.errors import TransferFailedError, WrongCodeError
from p2pd.pairing.codes import parse_code
from p2pd.pairing.machine import Pairing, Step
from p2pd.pairing.seal import TamperedError


def run(sender: Pairing, receiver: Pairing) -> tuple[Step, Step]:
    """pake1 → (pake2 + confirm) → confirm; returns the sender's and receiver's last steps."""
    [pake1] = sender.start()
    step_r = receiver.receive(pake1)
    assert step_r.error is None, step_r.error
    [pake2] = step_r.send
    step_s = sender.receive(pake2)
    [confirm] = step_s.send
    return step_s, receiver.receive(confirm)


def test_matching_codes_pair_and_exchange_sealed_objects():
    sender = Pairing(parse_code("7-guitar-meadow"), "sender")
    receiver = Pairing(parse_code("7 Guitar Meadow"), "receiver")
    step_s, step_r = run(sender, receiver)
    assert step_s.paired and step_r.paired and sender.state == receiver.state == "paired"
    assert sender.verification == receiver.verification is not None
    offer = {"type": "offer", "sdp": "v=0\r\na=fingerprint:sha-256 00:11"}
    assert receiver.receive(sender.seal(offer)).delivered == [offer]
    assert sender.receive(receiver.seal({"type": "answer"})).delivered == [{"type": "answer"}]


def test_wrong_code_fails_on_both_sides_before_anything_is_sealed():
    sender = Pairing(parse_code("7-guitar-meadow"), "sender")
    receiver = Pairing(parse_code("7-guitar-meadov"), "receiver")
    step_s, step_r = run(sender, receiver)
    assert isinstance(step_s.error, WrongCodeError) and isinstance(step_r.error, WrongCodeError)
    assert "wrong code" in str(step_s.error) and "wrong code" in str(step_r.error)
    assert step_s.send and step_s.send[0]["kind"] == "confirm"  # sent so the receiver learns it too
    assert sender.state == receiver.state == "failed"
    with pytest.raises(RuntimeError):
        sender.seal({"type": "offer"})
    with pytest.raises(RuntimeError):
        receiver.seal({"type": "answer"})


def test_the_room_is_part_of_the_key():
    sender = Pairing(parse_code("7-guitar-meadow"), "sender", room="7")
    receiver = Pairing(parse_code("7-guitar-meadow"), "receiver", room="8")
    step_s, step_r = run(sender, receiver)
    assert isinstance(step_s.error, WrongCodeError) and isinstance(step_r.error, WrongCodeError)


def _flip(text: str) -> str:
    return ("B" if text[0] == "A" else "A") + text[1:]


@pytest.mark.parametrize("field", ["share", "sid"])
def test_a_modified_first_message_looks_like_a_wrong_code(field: str):
    sender = Pairing(parse_code("7-guitar-meadow"), "sender")
    receiver = Pairing(parse_code("7-guitar-meadow"), "receiver")
    [pake1] = sender.start()
    step_r = receiver.receive({**pake1, field: _flip(pake1[field])})
    [pake2] = step_r.send
    step_s = sender.receive(pake2)
    assert isinstance(step_s.error, WrongCodeError)
    assert isinstance(receiver.receive(step_s.send[0]).error, WrongCodeError)


def test_a_modified_confirmation_fails():
    sender = Pairing(parse_code("7-guitar-meadow"), "sender")
    receiver = Pairing(parse_code("7-guitar-meadow"), "receiver")
    [pake1] = sender.start()
    [pake2] = receiver.receive(pake1).send
    [confirm] = sender.receive(pake2).send
    assert isinstance(receiver.receive({**confirm, "confirm": _flip(confirm["confirm"])}).error, WrongCodeError)


def test_low_order_share_is_tampering():
    receiver = Pairing(parse_code("7-guitar-meadow"), "receiver")
    step = receiver.receive({"kind": "pake", "v": 1, "role": "sender", "sid": "A" * 22 + "==",
                             "share": "A" * 43 + "="})
    assert isinstance(step.error, TamperedError) and "tampered" in str(step.error)


def test_both_senders_is_reported():
    first = Pairing(parse_code("7-guitar-meadow"), "sender")
    second = Pairing(parse_code("7-guitar-meadow"), "sender")
    [pake1] = second.start()
    first.start()
    step = first.receive(pake1)
    assert isinstance(step.error, TransferFailedError) and "both peers" in str(step.error)


@pytest.mark.parametrize(
    "data",
    [
        None,
        "pake",
        [1, 2],
        {},
        {"kind": "confirm", "v": 1, "confirm": "AAAA"},
        {"kind": "sealed", "seq": 0, "box": "AAAA"},
        {"kind": "pake", "v": 2, "role": "sender", "sid": "AAAA", "share": "AAAA"},
        {"kind": "pake", "v": 1, "role": "sender", "sid": "AAAA", "share": "AAAA"},
        {"kind": "pake", "v": 1, "role": "sender", "sid": "A" * 22 + "==", "share": 12},
        {"kind": "pake", "v": 1, "role": "umpire", "sid": "A" * 22 + "==", "share": "A" * 43 + "="},
    ],
)
def test_unexpected_or_malformed_messages_fail_cleanly(data: Any):
    receiver = Pairing(parse_code("7-guitar-meadow"), "receiver")
    step = receiver.receive(data)
    assert isinstance(step.error, TransferFailedError) and not step.send and not step.delivered
    assert receiver.state == "failed"
    assert isinstance(receiver.receive(data).error, TransferFailedError)  # stays failed


def test_sealed_message_before_confirmation_is_refused():
    sender = Pairing(parse_code("7-guitar-meadow"), "sender")
    receiver = Pairing(parse_code("7-guitar-meadow"), "receiver")
    [pake1] = sender.start()
    [pake2] = receiver.receive(pake1).send
    sender.receive(pake2)
    step = receiver.receive(sender.seal({"type": "offer"}))  # the confirm was dropped by the server
    assert isinstance(step.error, TamperedError) and not step.delivered


def test_start_is_for_an_idle_sender_only():
    with pytest.raises(RuntimeError):
        Pairing(parse_code("7-guitar-meadow"), "receiver").start()
    with pytest.raises(ValueError):
        Pairing(parse_code("7-guitar-meadow"), "both")  # type: ignore[arg-type]
