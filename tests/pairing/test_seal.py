"""Key schedule, key confirmation, sealing with replay/reorder protection, and the verification string."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from p2pd.errors import TransferFailedError
from p2pd.pairing import seal

VECTOR = json.loads((Path(__file__).resolve().parents[1] / "vectors" / "cpace_x25519.json").read_text())["p2pd"]


def keys_for(isk: bytes = b"\x01" * 64, room: str = "7") -> seal.SessionKeys:
    return seal.derive_keys(isk, room)


def test_p2pd_key_schedule_vector():
    keys = seal.derive_keys(bytes.fromhex(VECTOR["ISK_IR"]), VECTOR["room"])
    assert keys.confirm["sender"].hex() == VECTOR["confirm_key_sender"]
    assert keys.confirm["receiver"].hex() == VECTOR["confirm_key_receiver"]
    assert keys.seal["sender"].hex() == VECTOR["seal_key_sender"]
    assert keys.seal["receiver"].hex() == VECTOR["seal_key_receiver"]
    assert keys.sas.hex() == VECTOR["sas_key"]
    assert seal.confirmation_tag(keys, "sender").hex() == VECTOR["confirm_tag_sender"]
    assert seal.confirmation_tag(keys, "receiver").hex() == VECTOR["confirm_tag_receiver"]
    assert seal.verification_string(keys.sas) == VECTOR["verification_string"]
    example = VECTOR["sealed_example"]
    plaintext = json.loads(example["plaintext_json"])
    assert seal.Sealer(keys, VECTOR["room"], "sender").seal(plaintext) == example["message"]
    assert seal.Opener(keys, VECTOR["room"], "receiver").open(example["message"]) == plaintext


def test_all_derived_keys_differ_and_depend_on_room_and_isk():
    keys = keys_for()
    values = [*keys.confirm.values(), *keys.seal.values(), keys.sas]
    assert len(set(values)) == 5
    assert keys_for(room="8").seal["sender"] != keys.seal["sender"]
    assert keys_for(isk=b"\x02" * 64).seal["sender"] != keys.seal["sender"]
    assert repr(keys) == "SessionKeys(<hidden>)"


def test_confirmation():
    keys = keys_for()
    tag = seal.confirmation_tag(keys, "sender")
    assert seal.check_confirmation(keys, "sender", tag)
    assert not seal.check_confirmation(keys, "receiver", tag)  # a reflected tag is not the peer's
    assert not seal.check_confirmation(keys_for(isk=b"\x03" * 64), "sender", tag)


def test_verification_string_format():
    text = seal.verification_string(keys_for().sas)
    assert len(text) == 7 and text[3] == " " and text.replace(" ", "").isdigit()
    assert seal.verification_string(keys_for(isk=b"\x04" * 64).sas) != text


def test_seal_round_trip_in_order():
    keys = keys_for()
    sealer, opener = seal.Sealer(keys, "7", "sender"), seal.Opener(keys, "7", "receiver")
    objects = [{"type": "offer", "sdp": "v=0\r\n" * 50}, {"type": "ice", "candidate": "ünïcode"}, [1, None], "s"]
    boxes = [sealer.seal(obj) for obj in objects]
    assert [box["seq"] for box in boxes] == [0, 1, 2, 3]
    assert [opener.open(box) for box in boxes] == objects


def _pair() -> tuple[seal.Sealer, seal.Opener]:
    keys = keys_for()
    return seal.Sealer(keys, "7", "sender"), seal.Opener(keys, "7", "receiver")


def test_modified_box_is_detected():
    sealer, opener = _pair()
    box = sealer.seal({"sdp": "a=fingerprint:sha-256 AA"})
    raw = bytearray(seal.b64decode(box["box"], what="x"))
    raw[3] ^= 1
    with pytest.raises(seal.TamperedError, match="integrity"):
        opener.open({**box, "box": seal.b64encode(bytes(raw))})


def test_replay_reorder_and_drop_are_detected():
    sealer, opener = _pair()
    first, second = sealer.seal(1), sealer.seal(2)
    with pytest.raises(seal.TamperedError, match="out of order"):
        opener.open(second)  # first was dropped
    assert opener.open(first) == 1
    with pytest.raises(seal.TamperedError, match="out of order"):
        opener.open(first)  # replay
    relabelled = {**second, "seq": 0}
    with pytest.raises(seal.TamperedError):
        opener.open(relabelled)


def test_reflection_and_cross_room_are_detected():
    keys = keys_for()
    mine = seal.Sealer(keys, "7", "sender").seal({"x": 1})
    with pytest.raises(seal.TamperedError):
        seal.Opener(keys, "7", "sender").open(mine)  # our own message bounced back to us
    with pytest.raises(seal.TamperedError):
        seal.Opener(keys, "8", "receiver").open(copy.deepcopy(mine))  # same keys, other room


@pytest.mark.parametrize("box", [None, 5, "not base64!", "QUJD" * 10, ""])
def test_malformed_boxes(box: object):
    _, opener = _pair()
    with pytest.raises(seal.TamperedError):
        opener.open({"kind": "sealed", "seq": 0, "box": box})
    with pytest.raises(seal.TamperedError):
        opener.open({"kind": "sealed", "seq": True, "box": "QUJD"})


def test_tampered_error_is_a_transfer_failure():
    assert issubclass(seal.TamperedError, TransferFailedError)
