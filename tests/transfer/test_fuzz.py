"""Fuzz of the receiver's sans-I/O machine and the frame decoder: a plausible start (HELLO, OFFER, accepted), then
any sequence of valid frames, mutated frames (bits flipped, cut, spliced), raw bytes and text, with the adapter's
local events (durable, verified) mixed in. Only typed outcomes: ``decode`` raises nothing but FrameError, the
machine raises nothing at all, ends at most once with a Failed whose code is a protocol code, sends only
well-formed frames within the message limit; and the chunk bytes it hands out for writing but not yet durable stay
within its window plus one message (bounded buffers). Seeded and time-bounded (tests/fuzzing.py)."""

from __future__ import annotations

import hashlib

from hypothesis import given
from hypothesis import strategies as st

from p2pd.transfer.events import Failed, OfferReceived, SendFrame, WriteChunk
from p2pd.transfer.frames import (
    MAX_MESSAGE_SIZE,
    Chunk,
    Code,
    End,
    FrameError,
    Hello,
    Offer,
    Role,
    decode,
    encode,
)
from p2pd.transfer.receiver import Receiver
from tests.fuzzing import Budget, fuzz
from tests.transfer.sim import INFO, TID
from tests.transfer.test_properties import frames as any_frame

WINDOW = 64 * 1024
CHUNK = 16358
PAYLOAD = 5 * CHUNK + 77


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    frame = bytearray(encode(draw(any_frame)))
    op = draw(st.sampled_from(["flip", "cut", "splice", "grow"]))
    at = draw(st.integers(0, len(frame) - 1))
    if op == "flip":
        frame[at] ^= draw(st.integers(1, 255))
    elif op == "cut":
        del frame[at:]
    elif op == "splice":
        frame[at:at] = draw(st.binary(min_size=1, max_size=40))
    else:
        frame += bytes(draw(st.integers(1, 70_000)))
    return bytes(frame)


def chunk(index: int) -> bytes:
    size = CHUNK if index < PAYLOAD // CHUNK else PAYLOAD % CHUNK
    return encode(Chunk(TID, index, bytes([index % 251]) * max(size, 1)))


steps = st.lists(st.one_of(
    any_frame.map(encode), mutated(), st.binary(max_size=80), st.text(max_size=8),
    st.integers(0, 6).map(chunk), st.just(encode(End(TID, 6))),
    st.sampled_from(["durable", "verified-good", "verified-bad", "finalized"]),
), max_size=40)

_DECODE = Budget()


@fuzz
@given(data=st.one_of(mutated(), st.binary(max_size=200)), limit=st.sampled_from([16384, MAX_MESSAGE_SIZE]))
def test_decode_raises_only_frame_errors(data: bytes, limit: int) -> None:
    if _DECODE.spent():
        return
    try:
        frame = decode(data, max_size=limit)
    except FrameError as exc:
        assert str(exc)
        return
    assert len(encode(frame)) == len(data) <= limit  # what decodes re-encodes to the same size


_RECEIVE = Budget()


@fuzz
@given(seq=steps, max_message=st.sampled_from([16384, MAX_MESSAGE_SIZE]))
def test_the_receiver_takes_any_sequence_with_typed_endings_and_bounded_buffers(seq: list, max_message: int) -> None:  # type: ignore[type-arg]
    if _RECEIVE.spent():
        return
    r = Receiver(max_message_size=max_message, max_raw_size=10**6, window=WINDOW)
    actions = r.start()
    actions += r.receive(encode(Hello(role=Role.SENDER, max_message_size=16384, codecs=(1,))))
    offer = Offer(TID, 1, PAYLOAD, PAYLOAD, hashlib.sha256(b"x").digest(), CHUNK, INFO)
    actions += r.receive(encode(offer))
    assert any(isinstance(a, OfferReceived) for a in actions)
    actions += r.accept()
    ended = 0
    issued = durable = 0  # chunks handed out for writing / reported durable
    unflushed: list[int] = []
    for step in seq:
        was_finished = r.finished
        if step == "durable":
            out = r.chunks_durable(issued) if issued > durable and not r.finished else []
            durable, unflushed = issued, []
        elif step in ("verified-good", "verified-bad"):
            out = r.verified(offer.sha256 if step == "verified-good" else bytes(32)) \
                if r.state.value == "verifying" else []
        elif step == "finalized":
            out = r.finalized() if r.state.value == "finalizing" else []
        else:
            out = r.receive(step)
        if was_finished:
            assert out == []
        for action in out:
            if isinstance(action, WriteChunk):
                issued += 1
                unflushed.append(len(action.data))
            elif isinstance(action, SendFrame):
                assert len(action.data) <= MAX_MESSAGE_SIZE
                decode(action.data, max_size=MAX_MESSAGE_SIZE)
            elif isinstance(action, Failed):
                ended += 1
                assert isinstance(action.failure.code, int) and action.failure.code in {c.value for c in Code}
                assert action.failure.exception().cause  # a typed error for the adapter to raise
        assert ended <= 1
        assert sum(unflushed) <= WINDOW + max_message  # the window bounds what waits to be written
    assert r.bytes_received <= PAYLOAD
