"""The sans-I/O sender and receiver: negotiation, flow control, resume, refusals and protocol errors."""

from __future__ import annotations

import hashlib
import os

import pytest

from p2pd.errors import DeclinedError, Party, TooLargeError, TransferFailedError
from p2pd.transfer.events import (
    Completed,
    Failed,
    OfferReceived,
    Progress,
    SendFrame,
    TransferCancelledError,
    VerifyPayload,
    WriteChunk,
)
from p2pd.transfer.frames import (
    CHUNK_OVERHEAD,
    ZERO_ID,
    Accept,
    Ack,
    Cancel,
    Code,
    Done,
    End,
    Error,
    Hello,
    Offer,
    Reject,
    Role,
    decode,
    encode,
    encode_chunk,
)
from p2pd.transfer.receiver import Receiver, ReceiverState
from p2pd.transfer.sender import Sender, SenderState
from tests.transfer.sim import INFO, TID, simulate

SHA = bytes(32)


def frames_of(actions: list) -> list:  # type: ignore[type-arg]
    return [decode(a.data, max_size=1 << 16) for a in actions if isinstance(a, SendFrame)]


def failure_of(actions: list):  # type: ignore[no-untyped-def,type-arg]
    failed = [a for a in actions if isinstance(a, Failed)]
    assert len(failed) == 1, actions
    return failed[0].failure


def new_sender(size: int = 100_000, mms: int = 16384, **kw: object) -> Sender:
    s = Sender(transfer_id=TID, codec="lz4", raw_size=size * 5, compressed_size=size, sha256=SHA, info=INFO,
               max_message_size=mms, **kw)  # type: ignore[arg-type]
    s.start()
    return s


def hello(role: Role = Role.RECEIVER, mms: int = 65536) -> bytes:
    return encode(Hello(role=role, max_message_size=mms, codecs=(1, 2)))


def sending_sender(size: int = 100_000, window: int = 1 << 20, have: tuple = ()) -> Sender:  # type: ignore[type-arg]
    s = new_sender(size)
    s.receive(hello())
    s.receive(encode(Accept(TID, window, have)))
    assert s.state is SenderState.SENDING
    return s


def offer_frame(size: int = 100_000, chunk: int = 16358, raw: int | None = None, codec: int = 1,
                sha: bytes = SHA) -> bytes:
    return encode(Offer(TID, codec, raw if raw is not None else size * 5, size, sha, chunk, INFO))


def deciding_receiver(**kw: object) -> Receiver:
    r = Receiver(**kw)  # type: ignore[arg-type]
    r.start()
    r.receive(encode(Hello(role=Role.SENDER, max_message_size=16384, codecs=(1, 2))))
    return r


# --- negotiation -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("sender_mms", "receiver_mms", "transport", "chunk"), [
    (16384, 65536, None, 16384 - CHUNK_OVERHEAD),  # sender defaults to the browser-safe size
    (65536, 16384, None, 16384 - CHUNK_OVERHEAD),  # a browser receiver
    (65536, 65536, None, 65536 - CHUNK_OVERHEAD),  # two daemons
    (65536, 262144, None, 65536 - CHUNK_OVERHEAD),  # never over 64 KiB in this version
    (65536, 65536, 32768, 32768 - CHUNK_OVERHEAD),  # the SDP's max-message-size caps it too
])
def test_chunk_size_is_the_smallest_advertised_limit(sender_mms: int, receiver_mms: int,
                                                     transport: int | None, chunk: int) -> None:
    s = Sender(transfer_id=TID, codec="lz4", raw_size=1, compressed_size=10, sha256=SHA, info=INFO,
               max_message_size=sender_mms, transport_limit=transport)
    [hello_out] = frames_of(s.start())
    assert isinstance(hello_out, Hello) and hello_out.role is Role.SENDER
    assert hello_out.max_message_size == sender_mms
    [offer] = frames_of(s.receive(hello(mms=receiver_mms)))
    assert isinstance(offer, Offer) and offer.chunk_size == chunk and offer.info == INFO


def test_two_senders_refuse_each_other() -> None:
    s = new_sender()
    f = failure_of(acts := s.receive(hello(role=Role.SENDER)))
    assert f.code == Code.PROTOCOL and "sender too" in f.reason
    assert isinstance(frames_of(acts)[0], Error)  # the peer is told


def test_offer_before_hello_is_a_protocol_error() -> None:
    r = Receiver()
    r.start()
    f = failure_of(r.receive(offer_frame()))
    assert f.code == Code.PROTOCOL and "unexpected OFFER while await-hello" in f.reason


# --- receiver refusals -----------------------------------------------------------------------------------


def test_offer_over_the_size_cap_is_refused_without_asking() -> None:
    r = deciding_receiver(max_raw_size=1000)
    actions = r.receive(offer_frame(raw=1001))
    [reject] = frames_of(actions)
    assert isinstance(reject, Reject) and reject.code == Code.TOO_LARGE
    assert not any(isinstance(a, OfferReceived) for a in actions)
    exc = failure_of(actions).exception()
    assert isinstance(exc, TooLargeError) and "1001 bytes" in str(exc)


def test_compressed_size_that_no_allowed_conversation_has_is_refused() -> None:
    r = deciding_receiver(max_raw_size=100_000)
    [reject] = frames_of(r.receive(offer_frame(size=200_000, raw=50)))
    assert isinstance(reject, Reject) and reject.code == Code.TOO_LARGE


def test_unknown_codec_is_refused() -> None:
    r = deciding_receiver()
    [reject] = frames_of(r.receive(offer_frame(codec=9)))
    assert isinstance(reject, Reject) and reject.code == Code.UNSUPPORTED_CODEC


def test_offer_with_chunks_over_the_advertised_limit_is_a_protocol_error() -> None:
    r = deciding_receiver(max_message_size=16384)
    f = failure_of(r.receive(offer_frame(chunk=20000)))
    assert f.code == Code.PROTOCOL and "16384-byte limit" in f.reason


def test_decline_sends_reject_and_sender_raises_declined() -> None:
    r = deciding_receiver()
    [offered] = [a for a in r.receive(offer_frame()) if isinstance(a, OfferReceived)]
    assert offered.offer.info == INFO
    actions = r.reject("not now")
    [reject] = frames_of(actions)
    s = new_sender()
    s.receive(hello())
    exc = failure_of(s.receive(encode(reject))).exception()
    assert isinstance(exc, DeclinedError) and exc.peer_text == "not now" and "declined" in str(exc)


def test_frames_while_deciding_are_protocol_errors() -> None:
    r = deciding_receiver()
    r.receive(offer_frame())
    f = failure_of(r.receive(encode_chunk(TID, 0, bytes(16358))))
    assert "unexpected CHUNK while deciding" in f.reason


# --- receiving -------------------------------------------------------------------------------------------


def receiving(size: int = 100_000, have: tuple = (), window: int = 1 << 20) -> Receiver:  # type: ignore[type-arg]
    r = deciding_receiver(window=window)
    r.receive(offer_frame(size=size))
    r.accept(have)
    return r


def test_chunks_must_arrive_in_plan_order_with_exact_lengths() -> None:
    r = receiving()
    assert isinstance(r.receive(encode_chunk(TID, 0, bytes(16358)))[0], WriteChunk)
    assert "out of order (expected 1)" in failure_of(r.receive(encode_chunk(TID, 2, bytes(16358)))).reason
    r = receiving()
    f = failure_of(r.receive(encode_chunk(TID, 0, bytes(100))))
    assert "carries 100 bytes, expected 16358" in f.reason
    r = receiving()
    r.receive(encode_chunk(TID, 0, bytes(16358)))
    assert "out of order" in failure_of(r.receive(encode_chunk(TID, 0, bytes(16358)))).reason  # duplicate


def test_last_chunk_is_the_remainder() -> None:
    r = receiving(size=16358 + 10)
    r.receive(encode_chunk(TID, 0, bytes(16358)))
    [w] = r.receive(encode_chunk(TID, 1, bytes(10)))
    assert isinstance(w, WriteChunk) and (w.index, w.offset, len(w.data)) == (1, 16358, 10)
    assert r.receive(encode(End(TID, 2))) == []
    assert r.state is ReceiverState.FINISHING
    actions = r.chunks_durable(2)
    assert isinstance(actions[-1], VerifyPayload)


def test_end_too_early_or_with_a_wrong_count_is_a_protocol_error() -> None:
    r = receiving()
    r.receive(encode_chunk(TID, 0, bytes(16358)))
    assert "END after 1 of 7 chunks" in failure_of(r.receive(encode(End(TID, 7)))).reason
    r = receiving(size=10)
    r.receive(encode_chunk(TID, 0, bytes(10)))
    assert "END says 2 chunks" in failure_of(r.receive(encode(End(TID, 2)))).reason


def test_sender_ignoring_the_window_is_a_protocol_error() -> None:
    r = receiving(size=200_000, window=64 * 1024)
    for i in range(4):
        assert isinstance(r.receive(encode_chunk(TID, i, bytes(16358)))[0], WriteChunk)
    f = failure_of(r.receive(encode_chunk(TID, 4, bytes(16358))))
    assert "window" in f.reason
    r = receiving(size=200_000, window=64 * 1024)  # acknowledged bytes free the window
    for i in range(3):
        r.receive(encode_chunk(TID, i, bytes(16358)))
    [ack] = frames_of(r.chunks_durable(3))
    assert ack == Ack(TID, 3)
    for i in range(3, 6):
        assert isinstance(r.receive(encode_chunk(TID, i, bytes(16358)))[0], WriteChunk)


def test_frames_for_another_transfer_are_refused() -> None:
    r = receiving()
    other = bytes(16)[:-1] + b"\x09"
    assert "another transfer" in failure_of(r.receive(encode_chunk(other, 0, bytes(16358)))).reason


def test_checksum_mismatch_sends_error_and_fails_both() -> None:
    r = receiving(size=10)
    r.receive(encode_chunk(TID, 0, bytes(10)))
    r.chunks_durable(1)
    r.receive(encode(End(TID, 1)))
    actions = r.verified(hashlib.sha256(b"something else").digest())
    [err] = frames_of(actions)
    assert isinstance(err, Error) and err.code == Code.CHECKSUM
    assert failure_of(actions).code == Code.CHECKSUM
    s = sending_sender(size=10)
    s.send_chunk(0, bytes(10))
    exc = failure_of(s.receive(encode(err))).exception()
    assert isinstance(exc, TransferFailedError) and "SHA-256 mismatch" in str(exc)


def test_resume_plan_skips_held_chunks_and_acks_past_them() -> None:
    r = receiving(size=10 * 16358, have=((0, 3), (5, 8)))
    writes = []
    for i in (3, 4, 8, 9):
        [w] = r.receive(encode_chunk(TID, i, bytes(16358)))
        writes.append(w.index)
    assert writes == [3, 4, 8, 9]
    acks = [frames_of(r.chunks_durable(n))[0] for n in (1, 2, 3, 4)]
    assert acks == [Ack(TID, 4), Ack(TID, 8), Ack(TID, 9), Ack(TID, 10)]


# --- sending ---------------------------------------------------------------------------------------------


def test_window_limits_chunks_in_flight_and_acks_reopen_it() -> None:
    s = sending_sender(size=20 * 16358, window=64 * 1024)
    sent = 0
    while (nxt := s.next_chunk()) is not None:
        s.send_chunk(nxt[0], bytes(nxt[2]))
        sent += 1
    assert sent == 4  # 4 × 16358 ≤ 64 KiB < 5 × 16358
    [progress] = s.receive(encode(Ack(TID, 2)))
    assert progress == Progress(2 * 16358, 20 * 16358)
    assert s.next_chunk() is not None


def test_acks_must_advance_and_only_cover_sent_chunks() -> None:
    s = sending_sender()
    for _ in range(3):
        nxt = s.next_chunk()
        assert nxt
        s.send_chunk(nxt[0], bytes(nxt[2]))
    s.receive(encode(Ack(TID, 2)))
    assert "does not advance" in failure_of(s.receive(encode(Ack(TID, 2)))).reason
    s = sending_sender()
    nxt = s.next_chunk()
    assert nxt
    s.send_chunk(nxt[0], bytes(nxt[2]))
    assert "never sent" in failure_of(s.receive(encode(Ack(TID, 2)))).reason


def test_send_chunk_must_match_next_chunk() -> None:
    s = sending_sender()
    with pytest.raises(ValueError, match="does not match"):
        s.send_chunk(1, bytes(16358))
    with pytest.raises(ValueError, match="does not match"):
        s.send_chunk(0, bytes(5))


def test_done_only_after_end_and_only_with_the_offered_digest() -> None:
    s = sending_sender(size=10)
    assert "unexpected DONE while sending" in failure_of(s.receive(encode(Done(TID, SHA)))).reason
    s = sending_sender(size=10)
    actions = s.send_chunk(0, bytes(10))
    assert isinstance(frames_of(actions)[-1], End) and s.state is SenderState.AWAIT_DONE
    assert "different from the one offered" in failure_of(s.receive(encode(Done(TID, b"\x01" * 32)))).reason
    s = sending_sender(size=10)
    s.send_chunk(0, bytes(10))
    actions = s.receive(encode(Done(TID, SHA)))
    assert actions == [Progress(10, 10), Completed()]


def test_accept_ranges_past_the_blob_are_a_protocol_error() -> None:
    s = new_sender(size=10)
    s.receive(hello())
    assert "past the blob's 1 chunks" in failure_of(s.receive(encode(Accept(TID, 1 << 20, ((0, 2),))))).reason


def test_accept_holding_everything_ends_at_once() -> None:
    s = new_sender(size=10)
    s.receive(hello())
    actions = s.receive(encode(Accept(TID, 1 << 20, ((0, 1),))))
    assert isinstance(frames_of(actions)[-1], End) and s.chunks_sent == 0


# --- cancel, errors, timeouts ----------------------------------------------------------------------------


def test_cancel_tells_the_peer_and_nothing_is_processed_afterwards() -> None:
    s = sending_sender()
    actions = s.cancel("user pressed stop")
    [cancel] = frames_of(actions)
    assert cancel == Cancel(TID, Code.CANCELLED, "user pressed stop")
    assert isinstance(failure_of(actions).exception(), TransferCancelledError)
    assert s.receive(encode(Ack(TID, 1))) == [] and s.cancel("again") == [] and s.next_chunk() is None
    r = receiving()
    exc = failure_of(r.receive(encode(cancel))).exception()
    assert isinstance(exc, TransferCancelledError) and str(exc) == "the transfer was cancelled by the peer"
    assert exc.peer_text == "user pressed stop"


def test_receiver_cancel_before_the_offer_uses_the_zero_id() -> None:
    r = Receiver()
    r.start()
    [cancel] = frames_of(r.cancel("shutting down"))
    assert cancel.transfer_id == ZERO_ID
    s = new_sender()
    assert failure_of(s.receive(encode(cancel))).by_peer


def test_peer_error_text_is_neutralized_in_messages() -> None:
    s = new_sender()
    exc = failure_of(s.receive(encode(Error(TID, Code.INTERNAL, "boom\x1b[2J")))).exception()
    assert "boom" not in str(exc)  # the peer's words are not the message
    assert exc.peer_text == "boom\x1b[2J" and exc.party is Party.PEER  # kept verbatim, apart, for display


def test_timeout_and_connection_lost() -> None:
    s = sending_sender()
    actions = s.timeout(7)
    assert isinstance(frames_of(actions)[0], Error) and "7 s" in failure_of(actions).reason
    r = receiving()
    actions = r.connection_lost("the peer closed the data channel")
    assert frames_of(actions) == [] and failure_of(actions).code == Code.PEER_GONE


# --- whole conversations (simulated) ---------------------------------------------------------------------


@pytest.mark.parametrize("size", [1, 16357, 16358, 16359, 3 * 16358, 250_001])
def test_simulated_transfer_delivers_identical_bytes(size: int) -> None:
    payload = os.urandom(size)
    res = simulate(payload)
    assert res.both_completed and bytes(res.storage) == payload
    assert res.progress[-1] == (size, size)
    assert [d for d, _ in res.progress] == sorted(d for d, _ in res.progress)  # progress never goes back


def test_simulated_transfer_with_batched_durability_and_a_browser_receiver() -> None:
    payload = os.urandom(300_000)
    res = simulate(payload, sender_mms=65536, receiver_mms=16384, durable_every=5, window=128 * 1024)
    assert res.both_completed and bytes(res.storage) == payload
    assert max(len(f) for f in res.s2r) <= 16384


def test_simulated_resume_sends_only_missing_chunks() -> None:
    payload = os.urandom(10 * 16358 + 5)
    storage = bytearray(len(payload))
    storage[: 4 * 16358] = payload[: 4 * 16358]
    storage[6 * 16358: 8 * 16358] = payload[6 * 16358: 8 * 16358]
    res = simulate(payload, have=[(0, 4), (6, 8)], storage=storage)
    assert res.both_completed and bytes(res.storage) == payload
    chunks = [decode(f).index for f in res.s2r if f[1] == 5]  # type: ignore[union-attr]
    assert chunks == [4, 5, 8, 9, 10]
    assert res.progress[0] == (6 * 16358, len(payload))  # resumed bytes count as acknowledged from the start


def test_simulated_resume_over_bad_partial_data_fails_the_checksum() -> None:
    payload = os.urandom(5 * 16358)
    storage = bytearray(len(payload))  # claims to hold chunk 0, but holds zeros
    res = simulate(payload, have=[(0, 1)], storage=storage)
    assert not res.both_completed
    assert res.receiver_failure and res.receiver_failure.code == Code.CHECKSUM
    assert res.sender_failure and res.sender_failure.by_peer and res.sender_failure.code == Code.CHECKSUM
