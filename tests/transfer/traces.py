"""Behaviour vectors of the sans-I/O machines: traces of inputs and the actions each must return, written to
``tests/vectors/transfer_traces.json`` so the browser's machines (web/src/transfer.js) are held to the same
behaviour as the reference (SPEC.md §11). Regenerate (only when the spec changes) with
``python -m tests.transfer.traces``; ``test_traces.py`` replays the file against the Python machines and
``web/tests/traces.test.mjs`` against the JS ones.

A trace: ``machine`` (sender/receiver), ``config`` (constructor arguments; byte i of every payload is
``payload_byte(i)``), ``steps`` (``call`` plus its arguments, then ``actions`` and the
``state`` after it; ``next_chunk`` steps give ``result``; a ``receive`` step gives the message as ``hex``, or a
CHUNK of the payload as ``chunk``: transfer id, index, and the payload span it carries), and ``end`` — the
outcome each scenario was written to reach, checked by the generator before it writes anything.

Action encoding: ``send`` frames as ``hex`` (CHUNK frames as ``index``, ``length`` and the frame's ``sha256``),
``failed`` as code, code name, ``by_peer`` and reason, ``write`` as index, offset, length and the data's
``sha256``, ``offer`` as the OFFER's hex.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from p2pd.transfer.events import (
    Action,
    Completed,
    Failed,
    FinalizeBlob,
    OfferReceived,
    Progress,
    SendFrame,
    VerifyPayload,
    WriteChunk,
)
from p2pd.transfer.frames import (
    ZERO_ID,
    Accept,
    Ack,
    Cancel,
    Chunk,
    Code,
    Done,
    End,
    Error,
    Frame,
    FrameType,
    Hello,
    Offer,
    OfferInfo,
    Reject,
    Role,
    code_name,
    decode,
    encode,
    encode_chunk,
)
from p2pd.transfer.receiver import Receiver, ReceiverState
from p2pd.transfer.sender import Sender, SenderState

PATH = Path(__file__).resolve().parents[1] / "vectors" / "transfer_traces.json"
TID = bytes.fromhex("5a5a0102030405060708090a0b0c0d0e")
INFO = OfferInfo(title="Trace — a conversation", platform="claude-code", session_id="trace-1", message_count=12)
Machine = Sender | Receiver


def payload_byte(i: int) -> int:
    """Byte ``i`` of every trace payload (both replayers compute it)."""
    return (i * 131 + 7) % 251


def payload(size: int) -> bytes:
    return bytes(payload_byte(i) for i in range(size))


# --- configurations --------------------------------------------------------------------------------------

SENDER_SIZE = 100_000  # 7 chunks of 16 358 bytes (the last 1 852) once the receiver says 16 KiB
RECEIVER_SIZE = 2_500  # 3 chunks of 1 024 bytes (the last 452) in the OFFER the traces send
RECEIVER_CHUNK = 1024


def sender_config(size: int = SENDER_SIZE) -> dict[str, Any]:
    return {"transfer_id": TID.hex(), "codec": "lz4", "codecs": ["lz4"], "raw_size": size * 4,
            "compressed_size": size, "sha256": hashlib.sha256(payload(size)).hexdigest(),
            "info": {"title": INFO.title, "platform": INFO.platform, "session_id": INFO.session_id,
                     "message_count": INFO.message_count},
            "max_message_size": 16384, "transport_limit": None, "window": 8 << 20}


def receiver_config() -> dict[str, Any]:
    return {"max_message_size": 16384, "max_raw_size": 1 << 20, "codecs": ["lz4"], "window": 64 * 1024}


def new_machine(machine: str, config: dict[str, Any]) -> Machine:
    if machine == "sender":
        info = config["info"]
        return Sender(transfer_id=bytes.fromhex(config["transfer_id"]), codec=config["codec"],
                      raw_size=config["raw_size"], compressed_size=config["compressed_size"],
                      sha256=bytes.fromhex(config["sha256"]),
                      info=OfferInfo(info["title"], info["platform"], info["session_id"], info["message_count"]),
                      max_message_size=config["max_message_size"], transport_limit=config["transport_limit"],
                      window=config["window"], codecs=config["codecs"], deferred=config.get("deferred", False))
    return Receiver(max_message_size=config["max_message_size"], max_raw_size=config["max_raw_size"],
                    codecs=config["codecs"], window=config["window"], streams=config.get("streams", False))


# --- applying a step and describing what came out ---------------------------------------------------------


def apply(m: Machine, step: dict[str, Any], data: bytes) -> Any:
    """Run one step's call on ``m`` (``data``: the sender's payload); the actions, or next_chunk's result."""
    call = step["call"]
    if call == "start":
        return m.start()
    if call == "receive":
        return m.receive(frame_bytes(step))
    if call == "cancel":
        return m.cancel(step["reason"])
    if call == "fail":
        return m.fail(Code(step["code"]), step["reason"])
    if call == "timeout":
        return m.timeout(step["seconds"])
    if call == "connection_lost":
        return m.connection_lost(step["reason"])
    if isinstance(m, Sender):
        if call == "cancel_unanswered":
            return m.cancel_unanswered()
        if call == "next_chunk":
            nxt = m.next_chunk()
            return None if nxt is None else list(nxt)
        if call == "send_chunk":
            offset, length = step["offset"], step["length"]
            return m.send_chunk(step["index"], data[offset:offset + length])
        if call == "offer_blob":
            info = OfferInfo(**step["info"])
            return m.offer_blob(step["codec"], step["raw_size"], step["compressed_size"],
                                bytes.fromhex(step["sha256"]), info)
        if call == "offer_stream":
            return m.offer_stream(step["codec"], step["raw_estimate"], step["compressed_estimate"],
                                  OfferInfo(**step["info"]))
        if call == "send_stream_chunk":
            offset, length = step["offset"], step["length"]
            return m.send_stream_chunk(data[offset:offset + length])
        if call == "end_stream":
            return m.end_stream(step["raw_size"], bytes.fromhex(step["sha256"]))
    else:
        if call == "accept":
            return m.accept([tuple(r) for r in step["have"]])
        if call == "reject":
            return m.reject(step["reason"], Code(step["code"]))
        if call == "chunks_durable":
            return m.chunks_durable(step["count"])
        if call == "verified":
            return m.verified(bytes.fromhex(step["digest"]))
        if call == "finalized":
            return m.finalized()
    raise ValueError(f"unknown call {call!r} for a {type(m).__name__}")


def span(offset: int, length: int) -> bytes:
    return bytes(payload_byte(i) for i in range(offset, offset + length))


def frame_bytes(step: dict[str, Any]) -> bytes:
    """The message a ``receive`` step delivers: its ``hex``, or a CHUNK of the trace payload (``chunk``)."""
    if "chunk" in step:
        c = step["chunk"]
        return encode_chunk(bytes.fromhex(c["transfer_id"]), c["index"], span(c["offset"], c["length"]))
    return bytes.fromhex(step["hex"])


def describe(action: Action) -> dict[str, Any]:
    if isinstance(action, SendFrame):
        frame = decode(action.data, max_size=1 << 16)
        if isinstance(frame, Chunk):
            return {"kind": "send", "type": "CHUNK", "index": frame.index, "length": len(frame.payload),
                    "sha256": hashlib.sha256(action.data).hexdigest()}
        return {"kind": "send", "type": frame.type.name, "hex": action.data.hex()}
    if isinstance(action, Progress):
        return {"kind": "progress", "done": action.done, "total": action.total}
    if isinstance(action, Failed):
        f = action.failure
        return {"kind": "failed", "code": f.code, "code_name": code_name(f.code), "by_peer": f.by_peer,
                "reason": f.reason}
    if isinstance(action, Completed):
        return {"kind": "completed"}
    if isinstance(action, OfferReceived):
        return {"kind": "offer", "hex": encode(action.offer).hex()}
    if isinstance(action, WriteChunk):
        return {"kind": "write", "index": action.index, "offset": action.offset, "length": len(action.data),
                "sha256": hashlib.sha256(action.data).hexdigest()}
    if isinstance(action, VerifyPayload):
        return {"kind": "verify"}
    if isinstance(action, FinalizeBlob):
        return {"kind": "finalize"}
    raise TypeError(action)


def outcome(m: Machine, step: dict[str, Any], data: bytes) -> dict[str, Any]:
    """What a step must produce: its actions (or result) and the state after it."""
    out = apply(m, step, data)
    got: dict[str, Any] = {"result": out} if step["call"] == "next_chunk" else {
        "actions": [describe(a) for a in out]}
    got["state"] = m.state.value
    return got


# --- recording scenarios ---------------------------------------------------------------------------------


class Trace:
    def __init__(self, name: str, meaning: str, machine: str, config: dict[str, Any] | None = None) -> None:
        self.name, self.meaning, self.machine = name, meaning, machine
        self.config = config or (sender_config() if machine == "sender" else receiver_config())
        self.m = new_machine(machine, self.config)
        self.data = payload(self.config["compressed_size"]) if machine == "sender" else b""
        self.steps: list[dict[str, Any]] = []

    def do(self, call: str, **args: Any) -> dict[str, Any]:
        step = {"call": call, **args}
        step.update(outcome(self.m, step, self.data))
        self.steps.append(step)
        return step

    def recv(self, frame: Frame | bytes, note: str | None = None, offset: int | None = None) -> dict[str, Any]:
        args: dict[str, Any]
        if isinstance(frame, Chunk):  # CHUNKs of the trace payload travel as their coordinates, not as hex
            offset = frame.index * RECEIVER_CHUNK if offset is None else offset
            assert frame.payload == span(offset, len(frame.payload))
            args = {"chunk": {"transfer_id": frame.transfer_id.hex(), "index": frame.index, "offset": offset,
                              "length": len(frame.payload)}}
        else:
            args = {"hex": (frame if isinstance(frame, bytes) else encode(frame)).hex()}
        if note:
            args["note"] = note
        return self.do("receive", **args)

    def send_next(self) -> None:
        """next_chunk, then send_chunk of the chunk it names."""
        nxt = self.do("next_chunk")["result"]
        assert nxt is not None, "the trace expected a chunk to be allowed"
        index, offset, length = nxt
        self.do("send_chunk", index=index, offset=offset, length=length)

    def end(self, state: str, code: int | None = None, by_peer: bool | None = None) -> dict[str, Any]:
        """Check the scenario reached what it was written for; the trace as JSON."""
        assert self.m.state.value == state, (self.name, self.m.state, self.m.failure)
        end: dict[str, Any] = {"state": state}
        if code is not None:
            assert self.m.failure is not None and (self.m.failure.code, self.m.failure.by_peer) == (code, by_peer), (
                self.name, self.m.failure)
            end.update(code=code, by_peer=by_peer)
        return {"name": self.name, "meaning": self.meaning, "machine": self.machine, "config": self.config,
                "steps": self.steps, "end": end}


def receiver_hello() -> Hello:
    return Hello(role=Role.RECEIVER, max_message_size=16384, codecs=(1,))


def sender_hello() -> Hello:
    return Hello(role=Role.SENDER, max_message_size=16384, codecs=(1,))


def trace_offer(raw_size: int = 5000, codec: int = 1) -> Offer:
    return Offer(transfer_id=TID, codec_id=codec, raw_size=raw_size, compressed_size=RECEIVER_SIZE,
                 sha256=hashlib.sha256(payload(RECEIVER_SIZE)).digest(), chunk_size=RECEIVER_CHUNK, info=INFO)


def rchunk(index: int) -> Chunk:
    offset = index * RECEIVER_CHUNK
    return Chunk(TID, index, payload(RECEIVER_SIZE)[offset:offset + RECEIVER_CHUNK])


# sender scenarios ----------------------------------------------------------------------------------------


def sender_to(state: SenderState, name: str, meaning: str, have: tuple[tuple[int, int], ...] = ()) -> Trace:
    t = Trace(name, meaning, "sender")
    t.do("start")
    if state is SenderState.AWAIT_HELLO:
        return t
    t.recv(receiver_hello())
    if state is SenderState.AWAIT_DECISION:
        return t
    t.recv(Accept(TID, window=64 * 1024, have=have))
    if state is SenderState.SENDING:
        t.send_next()
        return t
    assert state in (SenderState.AWAIT_DONE, SenderState.CANCELLING)
    for _ in range(4):
        t.send_next()
    t.recv(Ack(TID, 4))
    for _ in range(3):
        t.send_next()
    if state is SenderState.CANCELLING:
        t.do("cancel", reason="user pressed stop")
    return t


def sender_traces() -> list[dict[str, Any]]:
    out = []
    sha = bytes.fromhex(sender_config()["sha256"])
    t = sender_to(SenderState.AWAIT_DECISION, "sender-happy-path",
                  "a whole send: HELLOs, OFFER sized to 16 KiB, ACCEPT with a 64 KiB window (four chunks in "
                  "flight, then wait for an ACK), END after the last chunk, DONE")
    t.recv(Accept(TID, window=64 * 1024))
    for _ in range(4):
        t.send_next()
    t.do("next_chunk")  # the window is full: null
    t.recv(Ack(TID, 2))
    for _ in range(2):
        t.send_next()
    t.do("next_chunk")  # full again: chunk 6 would pass 64 KiB in flight
    t.recv(Ack(TID, 4))
    t.send_next()  # the last chunk, then END
    t.recv(Ack(TID, 7))
    t.recv(Done(TID, sha))
    out.append(t.end("completed"))

    t = sender_to(SenderState.AWAIT_DECISION, "sender-resume", "resume: the receiver holds chunks 0-1 and 4; "
                  "only 2, 3, 5 and 6 are sent, progress starts at what it holds")
    t.recv(Accept(TID, window=8 << 20, have=((0, 2), (4, 5))))
    for _ in range(4):
        t.send_next()
    t.recv(Ack(TID, 7))
    t.recv(Done(TID, sha))
    out.append(t.end("completed"))

    t = sender_to(SenderState.AWAIT_DECISION, "sender-resume-all-held",
                  "the receiver holds every chunk: END at once, then DONE")
    t.recv(Accept(TID, window=8 << 20, have=((0, 7),)))
    t.do("next_chunk")
    t.recv(Done(TID, sha))
    out.append(t.end("completed"))

    for name, code, text in (("declined", Code.DECLINED, "the user declined"),
                             ("busy", Code.BUSY, "this blob is being received by another transfer right now"),
                             ("too-large", Code.TOO_LARGE, "over this receiver's limit")):
        t = sender_to(SenderState.AWAIT_DECISION, f"sender-{name}", f"the receiver refuses the offer ({name})")
        t.recv(Reject(TID, code, text))
        t.do("next_chunk")
        out.append(t.end("failed", code, True))

    t = sender_to(SenderState.SENDING, "sender-cancel-local", "this side cancels mid-transfer: CANCEL is sent")
    t.do("cancel", reason="user pressed stop")
    t.recv(Ack(TID, 1), note="ignored: the transfer is over")
    out.append(t.end("failed", Code.CANCELLED, False))

    t = sender_to(SenderState.CANCELLING, "sender-cancel-after-end-crossed-by-done",
                  "this side cancels after END: CANCEL is sent and the transfer waits; the receiver had committed "
                  "first, and its DONE (crossing the CANCEL) completes the transfer")
    t.recv(Ack(TID, 7))
    t.do("cancel", reason="pressed stop again")  # (nothing more: the CANCEL went)
    t.recv(Done(TID, sha))
    assert t.m.cancel_too_late
    out.append(t.end("completed"))

    for name, meaning, step in (
            ("stopped", "the receiver stopped on the CANCEL and says so", ("recv", Cancel(TID, Code.CANCELLED, "ok"))),
            ("closed", "the receiver stopped on the CANCEL and closed the channel",
             ("do", "connection_lost", {"reason": "the data channel was closed"})),
            ("unanswered", "no DONE within the wait: the cancel stands", ("do", "cancel_unanswered", {})),
            ("silent", "the idle timer fires first", ("do", "timeout", {"seconds": 30})),
            ("error", "the receiver answers with an ERROR (its check failed meanwhile)",
             ("recv", Error(TID, Code.CHECKSUM, "sha256 mismatch"))),
            ("wrong-done", "a DONE with another digest is no answer: the cancel stands, nothing more is sent",
             ("recv", Done(TID, bytes(32))))):
        t = sender_to(SenderState.CANCELLING, f"sender-cancel-after-end-{name}",
                      f"this side cancels after END and waits for the answer: {meaning}; it ends cancelled by "
                      "this side")
        if step[0] == "recv":
            t.recv(step[1])
        else:
            t.do(step[1], **step[2])
        t.recv(Done(TID, sha), note="ignored: the transfer is over")
        out.append(t.end("failed", Code.CANCELLED, False))

    t = sender_to(SenderState.SENDING, "sender-cancel-by-peer", "the receiver cancels mid-transfer")
    t.recv(Cancel(TID, Code.CANCELLED, "user pressed stop \u202e with a bidi override"))
    out.append(t.end("failed", Code.CANCELLED, True))

    t = sender_to(SenderState.AWAIT_HELLO, "sender-cancel-by-peer-zero-id",
                  "a receiver cancelling before it saw the OFFER uses the zero transfer id")
    t.recv(Cancel(ZERO_ID, Code.CANCELLED, "shutting down"))
    out.append(t.end("failed", Code.CANCELLED, True))

    t = sender_to(SenderState.AWAIT_DONE, "sender-checksum-mismatch",
                  "the receiver's digest did not match: ERROR(checksum) from the peer")
    t.recv(Error(TID, Code.CHECKSUM, "sha256 mismatch"))
    out.append(t.end("failed", Code.CHECKSUM, True))

    t = sender_to(SenderState.AWAIT_DONE, "sender-done-wrong-digest", "DONE with another digest: protocol error")
    t.recv(Done(TID, bytes(32)))
    out.append(t.end("failed", Code.PROTOCOL, False))

    t = sender_to(SenderState.SENDING, "sender-duplicate-ack", "an ACK that does not advance: protocol error")
    t.recv(Ack(TID, 1))
    t.recv(Ack(TID, 1))
    out.append(t.end("failed", Code.PROTOCOL, False))

    t = sender_to(SenderState.SENDING, "sender-ack-unsent", "an ACK for chunks never sent: protocol error")
    t.recv(Ack(TID, 3))
    out.append(t.end("failed", Code.PROTOCOL, False))

    t = sender_to(SenderState.SENDING, "sender-other-transfer", "a frame for another transfer: protocol error")
    t.recv(Ack(bytes(range(16)), 1))
    out.append(t.end("failed", Code.PROTOCOL, False))

    t = sender_to(SenderState.AWAIT_HELLO, "sender-hello-from-a-sender", "the peer is a sender too")
    t.recv(sender_hello())
    out.append(t.end("failed", Code.PROTOCOL, False))

    t = sender_to(SenderState.SENDING, "sender-timeout", "the peer went silent: ERROR(timeout)")
    t.do("timeout", seconds=30)
    out.append(t.end("failed", Code.TIMEOUT, False))

    t = sender_to(SenderState.SENDING, "sender-connection-lost", "the channel closed: nothing is sent")
    t.do("connection_lost", reason="the data channel was closed")
    out.append(t.end("failed", Code.PEER_GONE, False))

    t = Trace("sender-frame-before-start", "a frame before start() is a protocol error", "sender")
    t.recv(receiver_hello())
    out.append(t.end("failed", Code.PROTOCOL, False))
    return out


# receiver scenarios --------------------------------------------------------------------------------------


def receiver_to(state: ReceiverState, name: str, meaning: str, have: list[list[int]] | None = None) -> Trace:
    t = Trace(name, meaning, "receiver")
    t.do("start")
    if state is ReceiverState.AWAIT_HELLO:
        return t
    t.recv(sender_hello())
    if state is ReceiverState.AWAIT_OFFER:
        return t
    t.recv(trace_offer())
    if state is ReceiverState.DECIDING:
        return t
    t.do("accept", have=have or [])
    if state is ReceiverState.RECEIVING:
        t.recv(rchunk(0))
        return t
    for i in range(3):
        t.recv(rchunk(i))
    t.recv(End(TID, 3))
    if state is ReceiverState.FINISHING:
        return t
    t.do("chunks_durable", count=3)
    if state is ReceiverState.VERIFYING:
        return t
    t.do("verified", digest=trace_offer().sha256.hex())
    assert state is ReceiverState.FINALIZING
    return t


def receiver_traces() -> list[dict[str, Any]]:
    out = []
    sha = trace_offer().sha256.hex()
    t = receiver_to(ReceiverState.DECIDING, "receiver-happy-path",
                    "a whole receive: ACCEPT, chunks written, ACKs once durable, END, verify, finalize, DONE")
    t.do("accept", have=[])
    t.recv(rchunk(0))
    t.recv(rchunk(1))
    t.do("chunks_durable", count=2)
    t.recv(rchunk(2))
    t.recv(End(TID, 3))
    t.do("chunks_durable", count=3)
    t.do("verified", digest=sha)
    t.do("finalized")
    t.recv(Ack(TID, 3), note="ignored: the transfer is over")
    out.append(t.end("completed"))

    t = receiver_to(ReceiverState.DECIDING, "receiver-resume",
                    "resume: chunk 1 is held, so the plan is 0 then 2; ACK jumps over what is held")
    t.do("accept", have=[[1, 2]])
    t.recv(rchunk(0))
    t.do("chunks_durable", count=1)
    t.recv(rchunk(2))
    t.do("chunks_durable", count=2)
    t.recv(End(TID, 3))
    t.do("verified", digest=sha)
    t.do("finalized")
    out.append(t.end("completed"))

    t = receiver_to(ReceiverState.DECIDING, "receiver-resume-wrong-chunk",
                    "resume: a chunk the receiver said it holds is a protocol error")
    t.do("accept", have=[[0, 1]])
    t.recv(rchunk(0))
    out.append(t.end("failed", Code.PROTOCOL, False))

    t = receiver_to(ReceiverState.DECIDING, "receiver-decline", "the user declines: REJECT(declined)")
    t.do("reject", reason="the user declined", code=Code.DECLINED)
    out.append(t.end("failed", Code.DECLINED, False))

    t = receiver_to(ReceiverState.DECIDING, "receiver-busy",
                    "the blob is being received by an older transfer: REJECT(busy)")
    t.do("reject", reason="this blob is being received by another transfer right now", code=Code.BUSY)
    out.append(t.end("failed", Code.BUSY, False))

    t = receiver_to(ReceiverState.AWAIT_OFFER, "receiver-too-large",
                    "an OFFER over the size cap is refused without asking")
    t.recv(trace_offer(raw_size=(1 << 20) + 1))
    out.append(t.end("failed", Code.TOO_LARGE, False))

    t = receiver_to(ReceiverState.AWAIT_OFFER, "receiver-unsupported-codec",
                    "an OFFER in a codec this receiver lacks is refused without asking")
    t.recv(trace_offer(codec=2))
    out.append(t.end("failed", Code.UNSUPPORTED_CODEC, False))

    t = receiver_to(ReceiverState.VERIFYING, "receiver-checksum-mismatch",
                    "the stored payload does not hash to the OFFER's SHA-256: ERROR(checksum)")
    t.do("verified", digest=hashlib.sha256(b"something else").hexdigest())
    out.append(t.end("failed", Code.CHECKSUM, False))

    t = receiver_to(ReceiverState.RECEIVING, "receiver-cancel-local", "this side cancels: CANCEL is sent")
    t.do("cancel", reason="user pressed stop")
    out.append(t.end("failed", Code.CANCELLED, False))

    t = receiver_to(ReceiverState.AWAIT_OFFER, "receiver-cancel-local-before-offer",
                    "cancelling before the OFFER: CANCEL with the zero transfer id")
    t.do("cancel", reason="shutting down")
    out.append(t.end("failed", Code.CANCELLED, False))

    t = receiver_to(ReceiverState.RECEIVING, "receiver-cancel-by-peer", "the sender cancels mid-transfer")
    t.recv(Cancel(TID, Code.CANCELLED, "changed my mind \x1b[2J"))
    out.append(t.end("failed", Code.CANCELLED, True))

    t = receiver_to(ReceiverState.DECIDING, "receiver-cancel-by-peer-while-deciding",
                    "the sender cancels while the user decides; the late decision does nothing")
    t.recv(Cancel(TID, Code.CANCELLED, "changed my mind"))
    t.do("accept", have=[])
    out.append(t.end("failed", Code.CANCELLED, True))

    t = receiver_to(ReceiverState.RECEIVING, "receiver-out-of-order", "CHUNK 2 before CHUNK 1: protocol error")
    t.recv(rchunk(2))
    out.append(t.end("failed", Code.PROTOCOL, False))

    t = receiver_to(ReceiverState.RECEIVING, "receiver-early-end", "END before the last chunk: protocol error")
    t.recv(End(TID, 3))
    out.append(t.end("failed", Code.PROTOCOL, False))

    t = receiver_to(ReceiverState.RECEIVING, "receiver-other-transfer", "a CHUNK for another transfer")
    t.recv(Chunk(bytes(range(16)), 1, rchunk(1).payload))
    out.append(t.end("failed", Code.PROTOCOL, False))

    t = receiver_to(ReceiverState.RECEIVING, "receiver-corrupted-frame",
                    "a frame whose CRC does not match: protocol error with the decoder's reason")
    ack = encode(Ack(TID, 1))
    t.recv(ack[:-1] + bytes([ack[-1] ^ 1]))
    out.append(t.end("failed", Code.PROTOCOL, False))

    t = receiver_to(ReceiverState.RECEIVING, "receiver-oversized-frame",
                    "a message over the 16 KiB this receiver advertised: protocol error")
    t.recv(bytes(16385))
    out.append(t.end("failed", Code.PROTOCOL, False))

    t = receiver_to(ReceiverState.RECEIVING, "receiver-timeout", "the sender went silent: ERROR(timeout)")
    t.do("timeout", seconds=30)
    out.append(t.end("failed", Code.TIMEOUT, False))

    t = receiver_to(ReceiverState.RECEIVING, "receiver-connection-lost", "the channel closed: nothing is sent")
    t.do("connection_lost", reason="the connection to the peer failed (ICE)")
    out.append(t.end("failed", Code.PEER_GONE, False))

    t = receiver_to(ReceiverState.RECEIVING, "receiver-storage-failure", "this side cannot write: ERROR(io)")
    t.do("fail", code=Code.IO, reason="cannot write the received blob: disk full")
    out.append(t.end("failed", Code.IO, False))
    return out


# frames a state does not allow ---------------------------------------------------------------------------

SAMPLES: dict[FrameType, Callable[[], Frame]] = {
    FrameType.HELLO: sender_hello,
    FrameType.OFFER: trace_offer,
    FrameType.ACCEPT: lambda: Accept(TID, window=64 * 1024),
    FrameType.REJECT: lambda: Reject(TID, Code.DECLINED, "no"),
    FrameType.CHUNK: lambda: rchunk(0),
    FrameType.ACK: lambda: Ack(TID, 1),
    FrameType.END: lambda: End(TID, 3),
    FrameType.DONE: lambda: Done(TID, trace_offer().sha256),
}


def disallowed_traces() -> list[dict[str, Any]]:
    from p2pd.transfer.receiver import ALLOWED as RECEIVER_ALLOWED
    from p2pd.transfer.sender import ALLOWED as SENDER_ALLOWED

    out = []
    for sstate in (SenderState.AWAIT_HELLO, SenderState.AWAIT_DECISION, SenderState.SENDING,
                   SenderState.AWAIT_DONE, SenderState.CANCELLING):
        for ftype, make in SAMPLES.items():
            if ftype in SENDER_ALLOWED[sstate]:
                continue
            frame = receiver_hello() if ftype is FrameType.HELLO else make()
            cancelling = sstate is SenderState.CANCELLING
            t = sender_to(sstate, f"sender-{sstate.value}-refuses-{ftype.name}",
                          f"{ftype.name} is not allowed while {sstate.value}" +
                          (": the cancel stands, and nothing more is sent (no ERROR after the CANCEL)"
                           if cancelling else ""))
            t.recv(frame)
            out.append(t.end("failed", Code.CANCELLED if cancelling else Code.PROTOCOL, False))
    for rstate in (ReceiverState.AWAIT_HELLO, ReceiverState.AWAIT_OFFER, ReceiverState.DECIDING,
                   ReceiverState.RECEIVING, ReceiverState.FINISHING, ReceiverState.VERIFYING,
                   ReceiverState.FINALIZING):
        for ftype, make in SAMPLES.items():
            if ftype in RECEIVER_ALLOWED[rstate]:
                continue
            t = receiver_to(rstate, f"receiver-{rstate.value}-refuses-{ftype.name}",
                            f"{ftype.name} is not allowed while {rstate.value}")
            t.recv(make())
            out.append(t.end("failed", Code.PROTOCOL, False))
    return out


def streamed_traces() -> list[dict[str, Any]]:
    from tests.transfer.stream_traces import build_streamed

    return build_streamed()


def build() -> dict[str, Any]:
    return {
        "description": "p2pd transfer protocol v1: behaviour of the sender and receiver machines "
                       "(p2pd/transfer/SPEC.md §11). Replay each trace on a fresh machine built from 'config'; "
                       "every step must return exactly 'actions' (or 'result') and leave the machine in "
                       "'state'. Payload byte i of the sender is (i * 131 + 7) % 251.",
        "protocol_version": 1,
        "traces": sender_traces() + receiver_traces() + disallowed_traces(),
        # streamed transfers (SPEC.md §12): replayed by the reference; the page, which does not stream, skips them
        "streamed_traces": streamed_traces(),
    }


def dumps(data: dict[str, Any]) -> str:
    """The vector file's text: one trace step per line, so a diff shows which step changed."""
    def one(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))

    def listing(key: str) -> str:
        traces = []
        for t in data[key]:
            head = ",\n  ".join(f"{one(k)}: {one(v)}" for k, v in t.items() if k != "steps")
            steps = ",\n    ".join(one(step) for step in t["steps"])
            traces.append(f"{{\n  {head},\n  \"steps\": [\n    {steps}\n  ]}}")
        return f"{one(key)}: [\n" + ",\n".join(traces) + "\n]"

    lists = [k for k in data if k.endswith("traces")]
    top = ",\n".join(f"{one(k)}: {one(v)}" for k, v in data.items() if k not in lists)
    return f"{{{top},\n" + ",\n".join(listing(k) for k in lists) + "}\n"


if __name__ == "__main__":
    PATH.parent.mkdir(parents=True, exist_ok=True)
    text = dumps(build())
    assert json.loads(text) == json.loads(json.dumps(build()))
    PATH.write_text(text, encoding="utf-8")
    sys.stdout.write(f"wrote {PATH}\n")
