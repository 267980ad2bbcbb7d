"""Behaviour vectors of streamed transfers (SPEC.md §12), written by ``python -m tests.transfer.traces`` into
``transfer_traces.json``'s ``streamed_traces`` (the page, which does not stream, does not replay them).

The sender is ``deferred``: it lists STREAMS in HELLO and waits in ``preparing`` for ``offer_stream`` (or
``offer_blob`` for a receiver that does not stream); the receiver has ``streams`` on. Payload bytes are the trace
payload's (``payload_byte``), chunks of any length up to the chunk size.
"""

from __future__ import annotations

import hashlib
from typing import Any

from p2pd.transfer.frames import (
    STREAMS,
    Accept,
    Ack,
    Chunk,
    Code,
    Done,
    End,
    Error,
    Frame,
    FrameType,
    Hello,
    Reject,
    Role,
    StreamEnd,
    StreamOffer,
)
from p2pd.transfer.receiver import ALLOWED as RECEIVER_ALLOWED
from p2pd.transfer.receiver import ReceiverState
from p2pd.transfer.sender import ALLOWED as SENDER_ALLOWED
from p2pd.transfer.sender import SenderState
from tests.transfer.traces import (
    INFO,
    TID,
    Trace,
    payload,
    rchunk,
    receiver_config,
    receiver_hello,
    sender_config,
    sender_hello,
    span,
    trace_offer,
)

SIZE = 40_000  # the streamed sender's payload: chunks of 16 358, 16 358 and 7 284 bytes
LENGTHS = (1024, 700, 376)  # the streamed receiver's chunks (chunk size 1 024)
RAW = 123_456
INFO_JSON = {"title": INFO.title, "platform": INFO.platform, "session_id": INFO.session_id,
             "message_count": INFO.message_count}


def sha(size: int) -> str:
    return hashlib.sha256(payload(size)).hexdigest()


def s_config() -> dict[str, Any]:
    return {**sender_config(SIZE), "deferred": True}


def r_config(streams: bool = True) -> dict[str, Any]:
    return {**receiver_config(), "streams": streams}


def streaming_receiver_hello() -> Hello:
    return Hello(role=Role.RECEIVER, max_message_size=16384, codecs=(1, STREAMS))


def streaming_sender_hello() -> Hello:
    return Hello(role=Role.SENDER, max_message_size=16384, codecs=(1, STREAMS))


def stream_offer() -> StreamOffer:
    return StreamOffer(transfer_id=TID, codec_id=1, raw_size=5000, compressed_size=2000, sha256=bytes(32),
                       chunk_size=1024, info=INFO)


def s_chunk(t: Trace, offset: int, length: int) -> None:
    t.do("send_stream_chunk", offset=offset, length=length)


def sender_to(state: SenderState, name: str, meaning: str) -> Trace:
    t = Trace(name, meaning, "sender", s_config())
    t.do("start")
    if state is SenderState.AWAIT_HELLO:
        return t
    t.recv(streaming_receiver_hello())
    if state is SenderState.PREPARING:
        return t
    t.do("offer_stream", codec="lz4", raw_estimate=RAW, compressed_estimate=30_000, info=INFO_JSON)
    if state is SenderState.AWAIT_DECISION:
        return t
    t.recv(Accept(TID, window=64 * 1024))
    s_chunk(t, 0, 16358)
    if state is SenderState.SENDING:
        return t
    s_chunk(t, 16358, 16358)
    s_chunk(t, 32716, SIZE - 32716)
    t.do("end_stream", raw_size=RAW, sha256=sha(SIZE))
    assert state in (SenderState.AWAIT_DONE, SenderState.CANCELLING)
    if state is SenderState.CANCELLING:
        t.do("cancel", reason="user pressed stop")
    return t


def sender_traces() -> list[dict[str, Any]]:
    out = []
    t = sender_to(SenderState.AWAIT_DONE, "stream-sender-happy-path",
                  "a streamed send: STREAM_OFFER once the summary is known, chunks as produced, STREAM_END, DONE")
    t.recv(Ack(TID, 2))
    t.recv(Ack(TID, 3))
    t.recv(Done(TID, bytes.fromhex(sha(SIZE))))
    out.append(t.end("completed"))

    t = Trace("stream-sender-classic-receiver", "a receiver without STREAMS: the whole blob, a version-1 OFFER",
              "sender", s_config())
    t.do("start")
    t.recv(receiver_hello())
    t.do("offer_blob", codec="lz4", raw_size=RAW, compressed_size=SIZE, sha256=sha(SIZE), info=INFO_JSON)
    t.recv(Accept(TID, window=64 * 1024))
    t.send_next()
    out.append(t.end("sending"))

    t = sender_to(SenderState.PREPARING, "stream-sender-cancel-preparing", "cancelled while packing")
    t.do("cancel", reason="stopped")
    out.append(t.end("failed", Code.CANCELLED, False))

    t = sender_to(SenderState.AWAIT_DECISION, "stream-sender-accept-with-ranges",
                  "a streamed transfer restarts from zero: ACCEPT may not list held ranges")
    t.recv(Accept(TID, window=64 * 1024, have=((0, 1),)))
    out.append(t.end("failed", Code.PROTOCOL, False))

    t = sender_to(SenderState.SENDING, "stream-sender-window", "the window holds the next chunk back until an ACK")
    t.recv(Ack(TID, 1))
    out.append(t.end("sending"))

    t = sender_to(SenderState.CANCELLING, "stream-sender-cancel-after-end-crossed-by-done",
                  "cancelled after STREAM_END: the receiver's DONE crossing the CANCEL completes the transfer")
    t.recv(Done(TID, bytes.fromhex(sha(SIZE))))
    out.append(t.end("completed"))

    t = sender_to(SenderState.CANCELLING, "stream-sender-cancel-after-end-stands",
                  "cancelled after STREAM_END, and the receiver stopped on it: the transfer ends cancelled")
    t.do("connection_lost", reason="the data channel was closed")
    out.append(t.end("failed", Code.CANCELLED, False))

    t = sender_to(SenderState.AWAIT_DONE, "stream-sender-checksum", "the receiver's digest did not match")
    t.recv(Error(TID, Code.CHECKSUM, "sha256 mismatch"))
    out.append(t.end("failed", Code.CHECKSUM, True))

    t = sender_to(SenderState.AWAIT_DONE, "stream-sender-done-wrong-digest", "DONE must carry STREAM_END's digest")
    t.recv(Done(TID, bytes(32)))
    out.append(t.end("failed", Code.PROTOCOL, False))
    return out


def receiver_to(state: ReceiverState, name: str, meaning: str) -> Trace:
    t = Trace(name, meaning, "receiver", r_config())
    t.do("start")
    if state is ReceiverState.AWAIT_HELLO:
        return t
    t.recv(streaming_sender_hello())
    if state is ReceiverState.AWAIT_OFFER:
        return t
    t.recv(stream_offer())
    if state is ReceiverState.DECIDING:
        return t
    t.do("accept", have=[])
    offset = 0
    for i, length in enumerate(LENGTHS):
        t.recv(Chunk(TID, i, span(offset, length)), offset=offset)
        offset += length
        if state is ReceiverState.RECEIVING:
            return t
    t.recv(stream_end())
    if state is ReceiverState.FINISHING:
        return t
    t.do("chunks_durable", count=3)
    if state is ReceiverState.VERIFYING:
        return t
    t.do("verified", digest=sha(sum(LENGTHS)))
    assert state is ReceiverState.FINALIZING
    return t


def stream_end(**change: Any) -> StreamEnd:
    fields = {"nchunks": 3, "raw_size": 5000, "compressed_size": sum(LENGTHS),
              "sha256": bytes.fromhex(sha(sum(LENGTHS))), **change}
    return StreamEnd(TID, fields["nchunks"], fields["raw_size"], fields["compressed_size"], fields["sha256"])


def receiver_traces() -> list[dict[str, Any]]:
    out = []
    t = receiver_to(ReceiverState.FINALIZING, "stream-receiver-happy-path",
                    "a streamed receive: chunks of any length written in order, STREAM_END, digest, DONE")
    t.do("finalized")
    out.append(t.end("completed"))

    t = receiver_to(ReceiverState.VERIFYING, "stream-receiver-checksum", "the payload does not hash to STREAM_END's")
    t.do("verified", digest="00" * 32)
    out.append(t.end("failed", Code.CHECKSUM, False))

    t = Trace("stream-receiver-without-streams", "a receiver that did not list STREAMS refuses STREAM_OFFER",
              "receiver", r_config(False))
    t.do("start")
    t.recv(streaming_sender_hello())
    t.recv(stream_offer())
    out.append(t.end("failed", Code.PROTOCOL, False))

    t = Trace("stream-receiver-classic-offer", "a streaming receiver still takes a version-1 OFFER", "receiver",
              r_config())
    t.do("start")
    t.recv(sender_hello())
    t.recv(trace_offer())
    t.do("accept", have=[])
    t.recv(rchunk(0))
    out.append(t.end("receiving"))

    for name, meaning, end in [
        ("stream-receiver-end-short", "STREAM_END counts bytes that never came", stream_end(compressed_size=2101)),
        ("stream-receiver-end-count", "STREAM_END counts chunks that never came", stream_end(nchunks=4)),
    ]:
        t = receiver_to(ReceiverState.RECEIVING, name, meaning)
        t.recv(Chunk(TID, 1, span(1024, 700)), offset=1024)
        t.recv(Chunk(TID, 2, span(1724, 376)), offset=1724)
        t.recv(end)
        out.append(t.end("failed", Code.PROTOCOL, False))

    t = receiver_to(ReceiverState.RECEIVING, "stream-receiver-over-cap", "STREAM_END's raw size over the cap")
    t.recv(Chunk(TID, 1, span(1024, 700)), offset=1024)
    t.recv(Chunk(TID, 2, span(1724, 376)), offset=1724)
    t.recv(stream_end(raw_size=(1 << 20) + 1))
    out.append(t.end("failed", Code.INVALID, False))

    t = receiver_to(ReceiverState.RECEIVING, "stream-receiver-chunk-too-long", "a chunk over the chunk size")
    t.recv(Chunk(TID, 1, span(1024, 1025)), offset=1024)
    out.append(t.end("failed", Code.PROTOCOL, False))

    t = receiver_to(ReceiverState.RECEIVING, "stream-receiver-end-classic", "END in a streamed transfer")
    t.recv(End(TID, 1))
    out.append(t.end("failed", Code.PROTOCOL, False))

    t = receiver_to(ReceiverState.RECEIVING, "stream-receiver-cancel", "the receiver cancels mid-stream")
    t.do("cancel", reason="stopped")
    out.append(t.end("failed", Code.CANCELLED, False))
    return out


SAMPLES: dict[FrameType, Frame] = {
    FrameType.HELLO: sender_hello(),
    FrameType.OFFER: trace_offer(),
    FrameType.ACCEPT: Accept(TID, window=64 * 1024),
    FrameType.REJECT: Reject(TID, Code.DECLINED, "no"),
    FrameType.CHUNK: rchunk(0),
    FrameType.ACK: Ack(TID, 1),
    FrameType.END: End(TID, 3),
    FrameType.DONE: Done(TID, bytes(32)),
    FrameType.STREAM_OFFER: stream_offer(),
    FrameType.STREAM_END: stream_end(),
}
NEW = {FrameType.STREAM_OFFER, FrameType.STREAM_END}


def disallowed() -> list[dict[str, Any]]:
    """Every frame a state refuses that the version-1 traces do not already show: any frame in the sender's
    ``preparing``, and the streamed frames in every other state."""
    out = []
    for sstate in (SenderState.AWAIT_HELLO, SenderState.PREPARING, SenderState.AWAIT_DECISION,
                   SenderState.SENDING, SenderState.AWAIT_DONE, SenderState.CANCELLING):
        for ftype, frame in SAMPLES.items():
            if ftype in SENDER_ALLOWED[sstate] or (sstate is not SenderState.PREPARING and ftype not in NEW):
                continue
            t = sender_to(sstate, f"sender-{sstate.value}-refuses-{ftype.name}",
                          f"{ftype.name} is not allowed while {sstate.value}")
            t.recv(streaming_receiver_hello() if ftype is FrameType.HELLO else frame)
            cancelling = sstate is SenderState.CANCELLING  # (the cancel stands; no ERROR after the CANCEL)
            out.append(t.end("failed", Code.CANCELLED if cancelling else Code.PROTOCOL, False))
    for rstate in (ReceiverState.AWAIT_HELLO, ReceiverState.AWAIT_OFFER, ReceiverState.DECIDING,
                   ReceiverState.RECEIVING, ReceiverState.FINISHING, ReceiverState.VERIFYING,
                   ReceiverState.FINALIZING):
        for ftype in NEW:
            if ftype in RECEIVER_ALLOWED[rstate]:
                continue
            t = receiver_to(rstate, f"receiver-{rstate.value}-refuses-{ftype.name}",
                            f"{ftype.name} is not allowed while {rstate.value}")
            t.recv(SAMPLES[ftype])
            out.append(t.end("failed", Code.PROTOCOL, False))
    return out


def build_streamed() -> list[dict[str, Any]]:
    return sender_traces() + receiver_traces() + disallowed()
