"""Frame encoding and decoding: exact layouts, round trips, and strict refusal of malformed frames."""

from __future__ import annotations

import contextlib
import json
import struct
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from p2pd.transfer.frames import (
    BASE_MESSAGE_SIZE,
    CHUNK_OVERHEAD,
    MAX_MESSAGE_SIZE,
    MAX_TEXT_SIZE,
    ZERO_ID,
    Accept,
    Ack,
    Cancel,
    Chunk,
    Code,
    Done,
    End,
    Error,
    FrameError,
    Hello,
    Offer,
    OfferInfo,
    Reject,
    Role,
    decode,
    encode,
    encode_chunk,
    printable,
    reason_text,
)
from tests.transfer.vectors import PATH, fields_of, frame_of

TID = bytes(range(16))
SHA = bytes(range(32))
INFO = OfferInfo("title", "claude-code", "sid", 3)


def test_hello_layout_byte_by_byte() -> None:
    data = encode(Hello(role=Role.RECEIVER, max_message_size=65536, codecs=(1, 2)))
    assert data[:2] == b"\x01\x01"  # version 1, HELLO
    assert data[2:18] == ZERO_ID
    assert data[18:24] == struct.pack(">IBB", 65536, 2, 2)
    assert data[24:26] == b"\x01\x02"
    assert data[26:] == zlib.crc32(data[:26]).to_bytes(4, "big")


def test_chunk_layout_and_fast_path_agree() -> None:
    payload = bytes(range(256)) * 10
    data = encode(Chunk(TID, 7, payload))
    assert data == encode_chunk(TID, 7, payload)
    assert len(data) == len(payload) + CHUNK_OVERHEAD
    assert data[:2] == b"\x01\x05" and data[2:18] == TID and data[18:22] == b"\x00\x00\x00\x07"
    assert data[22:-4] == payload


def test_max_chunk_fits_the_message_limit() -> None:
    payload = bytes(MAX_MESSAGE_SIZE - CHUNK_OVERHEAD)
    assert len(encode_chunk(TID, 0, payload)) == MAX_MESSAGE_SIZE
    assert decode(encode_chunk(TID, 0, payload), max_size=MAX_MESSAGE_SIZE) == Chunk(TID, 0, payload)


FRAMES = [
    Hello(role=Role.SENDER, max_message_size=BASE_MESSAGE_SIZE, codecs=(1,)),
    Offer(TID, 1, 1000, 500, SHA, 16358, INFO),
    Accept(TID, 1 << 20, ((0, 2), (5, 9))),
    Reject(TID, Code.DECLINED, "nope"),
    Chunk(TID, 3, b"abc"),
    Ack(TID, 4),
    End(TID, 9),
    Done(TID, SHA),
    Cancel(TID, Code.CANCELLED, "stop ✋"),
    Error(TID, Code.PROTOCOL, "bad"),
]


@pytest.mark.parametrize("frame", FRAMES, ids=lambda f: type(f).__name__)
def test_round_trip(frame: object) -> None:
    assert decode(encode(frame), max_size=MAX_MESSAGE_SIZE) == frame  # type: ignore[arg-type]


@pytest.mark.parametrize("frame", FRAMES, ids=lambda f: type(f).__name__)
def test_every_truncation_and_every_single_byte_corruption_is_refused(frame: object) -> None:
    data = encode(frame)  # type: ignore[arg-type]
    for cut in range(len(data)):
        with pytest.raises(FrameError):
            decode(data[:cut], max_size=MAX_MESSAGE_SIZE)
    for i in range(len(data)):
        for bit in (0x01, 0x80):
            bad = bytearray(data)
            bad[i] ^= bit
            with pytest.raises(FrameError):
                decode(bytes(bad), max_size=MAX_MESSAGE_SIZE)


def test_text_messages_and_oversized_frames_are_refused() -> None:
    with pytest.raises(FrameError, match="text message"):
        decode("hello")
    big = encode_chunk(TID, 0, bytes(BASE_MESSAGE_SIZE))
    with pytest.raises(FrameError, match="exceeds the 16384-byte message limit"):
        decode(big, max_size=BASE_MESSAGE_SIZE)


def test_encode_refuses_values_out_of_range() -> None:
    with pytest.raises(FrameError):
        encode(Offer(ZERO_ID, 1, 1, 1, SHA, 16358, INFO))
    with pytest.raises(FrameError, match="below the 1024-byte minimum"):
        encode(Offer(TID, 1, 1, 1, SHA, 100, INFO))
    with pytest.raises(FrameError, match="over 65536"):
        encode(Offer(TID, 1, 1, 1, SHA, MAX_MESSAGE_SIZE, INFO))
    with pytest.raises(FrameError, match="window"):
        encode(Accept(TID, 10))
    with pytest.raises(FrameError, match="exceeds 1024 bytes"):
        encode(Cancel(TID, Code.CANCELLED, "x" * (MAX_TEXT_SIZE + 1)))


def test_reason_text_is_cut_on_a_character_boundary() -> None:
    text = "é" * 2000
    cut = reason_text(text)
    assert len(cut.encode()) <= MAX_TEXT_SIZE and cut.endswith("…")
    encode(Cancel(TID, Code.CANCELLED, cut))


def test_offer_info_normalized_is_always_encodable() -> None:
    info = OfferInfo.normalized("line one\nline two\t\x1b[31m" + "x" * 5000, "claude\ncode", "s" * 999, -4)
    assert "\n" not in info.title and "\x1b" not in info.title and len(info.title) <= 500
    assert info.message_count == 0 and len(info.session_id) == 256
    assert decode(encode(Offer(TID, 1, 1, 1, SHA, 16358, info))).info == info  # type: ignore[union-attr]


def test_offer_description_type_checks() -> None:
    for bad in ({"title": 1, "platform": "p", "session_id": "s", "message_count": 1},
                {"title": "t", "platform": "p", "session_id": "s", "message_count": True},
                {"title": "t", "platform": "p", "session_id": "s", "message_count": -1},
                {"title": "t", "platform": "p", "session_id": "s"},
                ["not", "an", "object"]):
        with pytest.raises(FrameError, match="OFFER description"):
            OfferInfo.from_json(json.dumps(bad).encode())
    with pytest.raises(FrameError, match="not valid JSON"):
        OfferInfo.from_json(b'{"title": NaN}')
    extra = OfferInfo.from_json(
        b'{"title":"t","platform":"p","session_id":"s","message_count":1,"future":[1]}')
    assert extra == OfferInfo("t", "p", "s", 1)  # unknown keys are ignored (forward compatible)


def test_printable_neutralizes_terminal_escapes() -> None:
    assert printable("a\x1b[2Jb\r\nc") == "a\\x1b[2Jb\\x0d\\x0ac"
    assert printable("left\u202eright") == "left\\u202eright"  # a bidi override cannot reorder the line
    assert len(printable("x" * 1000)) == 300


# --- the shared vectors (tests/vectors/transfer_frames.json) ---------------------------------------------

VECTORS = json.loads(PATH.read_text(encoding="utf-8"))


def test_vectors_cover_every_frame_type() -> None:
    assert {v["fields"]["type"] for v in VECTORS["valid"]} == {
        "HELLO", "OFFER", "ACCEPT", "REJECT", "CHUNK", "ACK", "END", "DONE", "CANCEL", "ERROR"}
    assert {v["fields"]["type"] for v in VECTORS["streamed_valid"]} == {"HELLO", "STREAM_OFFER", "STREAM_END"}


def test_frame_vector_file_is_what_the_generator_writes() -> None:
    from tests.transfer.vectors import build

    assert build() == VECTORS


@pytest.mark.parametrize("vector", VECTORS["valid"] + VECTORS["streamed_valid"], ids=lambda v: v["name"])
def test_valid_vector_decodes_to_its_meaning_and_back(vector: dict) -> None:  # type: ignore[type-arg]
    data = bytes.fromhex(vector["hex"])
    frame = decode(data, max_size=MAX_MESSAGE_SIZE)
    assert fields_of(frame) == vector["fields"]
    assert encode(frame_of(vector["fields"])) == data


@pytest.mark.parametrize("vector", VECTORS["invalid"] + VECTORS["streamed_invalid"], ids=lambda v: v["name"])
def test_invalid_vector_is_refused_with_its_reason(vector: dict) -> None:  # type: ignore[type-arg]
    with pytest.raises(FrameError) as info:
        decode(bytes.fromhex(vector["hex"]), max_size=MAX_MESSAGE_SIZE)
    assert vector["error"] in str(info.value)


# --- fuzz: arbitrary bytes never escape as anything but FrameError ---------------------------------------


@given(st.binary(max_size=200))
def test_arbitrary_bytes_decode_or_raise_frame_error(data: bytes) -> None:
    with contextlib.suppress(FrameError):
        decode(data, max_size=MAX_MESSAGE_SIZE)


@given(st.binary(min_size=20, max_size=200), st.integers(0, 255))
def test_well_checksummed_garbage_never_escapes(body: bytes, ftype: int) -> None:
    head = bytes([1, ftype]) + body
    data = head + zlib.crc32(head).to_bytes(4, "big")
    try:
        frame = decode(data, max_size=MAX_MESSAGE_SIZE)
    except FrameError:
        return
    assert decode(encode(frame), max_size=MAX_MESSAGE_SIZE) == frame  # whatever decodes re-encodes faithfully
