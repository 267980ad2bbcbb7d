"""Test vectors of the transfer framing: every frame type as hex with its decoded meaning, plus frames every
decoder must refuse. Written to ``tests/vectors/transfer_frames.json`` so the browser client is checked
against the same bytes. Regenerate (only when the spec changes) with ``python -m tests.transfer.vectors``.

The ``fields`` mapping is the meaning: byte strings as lowercase hex, enums by name, ranges as [start, end].
"""

from __future__ import annotations

import hashlib
import json
import struct
import sys
from pathlib import Path
from typing import Any

from p2pd.transfer.frames import (
    STREAMS,
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
    StreamEnd,
    StreamOffer,
    encode,
)

PATH = Path(__file__).resolve().parents[1] / "vectors" / "transfer_frames.json"
TID = bytes.fromhex("0f1e2d3c4b5a69788796a5b4c3d2e1f0")
PAYLOAD = b"\x04\x22\x4d\x18" + b"lz4 frame bytes\x00\xff"
SHA = hashlib.sha256(b"example payload").digest()

_CODEC_NAMES = {1: "lz4", 2: "zstd", STREAMS: "streams"}
_CODEC_IDS = {v: k for k, v in _CODEC_NAMES.items()}


def fields_of(frame: Frame) -> dict[str, Any]:
    """The meaning of a frame as JSON-able fields."""
    f: dict[str, Any] = {"type": frame.type.name, "transfer_id": frame.transfer_id.hex()}
    if isinstance(frame, Hello):
        f.update(role=frame.role.name.lower(), max_message_size=frame.max_message_size,
                 codecs=[_CODEC_NAMES.get(c, c) for c in frame.codecs])
    elif isinstance(frame, Offer):
        f.update(codec=_CODEC_NAMES.get(frame.codec_id, frame.codec_id), raw_size=frame.raw_size,
                 compressed_size=frame.compressed_size, chunk_size=frame.chunk_size)
        if not isinstance(frame, StreamOffer):
            f.update(sha256=frame.sha256.hex())
        f.update(
                 title=frame.info.title, platform=frame.info.platform, session_id=frame.info.session_id,
                 message_count=frame.info.message_count, description_json=frame.info.to_json().decode())
    elif isinstance(frame, Accept):
        f.update(window=frame.window, have=[list(r) for r in frame.have])
    elif isinstance(frame, Reject | Cancel | Error):
        f.update(code=frame.code, code_name=Code(frame.code).name.lower(), text=frame.text)
    elif isinstance(frame, Chunk):
        f.update(index=frame.index, payload=frame.payload.hex())
    elif isinstance(frame, Ack):
        f.update(upto=frame.upto)
    elif isinstance(frame, End):
        f.update(nchunks=frame.nchunks)
    elif isinstance(frame, Done):
        f.update(sha256=frame.sha256.hex())
    elif isinstance(frame, StreamEnd):
        f.update(nchunks=frame.nchunks, raw_size=frame.raw_size, compressed_size=frame.compressed_size,
                 sha256=frame.sha256.hex())
    return f


def frame_of(f: dict[str, Any]) -> Frame:
    """The inverse of :func:`fields_of` (what a client does to build a frame from its meaning)."""
    tid = bytes.fromhex(f["transfer_id"])
    kind = FrameType[f["type"]]
    if kind is FrameType.HELLO:
        return Hello(role=Role[f["role"].upper()], max_message_size=f["max_message_size"],
                     codecs=tuple(_CODEC_IDS[c] for c in f["codecs"]), transfer_id=tid)
    if kind is FrameType.OFFER:
        return Offer(transfer_id=tid, codec_id=_CODEC_IDS[f["codec"]], raw_size=f["raw_size"],
                     compressed_size=f["compressed_size"], sha256=bytes.fromhex(f["sha256"]),
                     chunk_size=f["chunk_size"], info=OfferInfo(f["title"], f["platform"], f["session_id"],
                                                                f["message_count"]))
    if kind is FrameType.STREAM_OFFER:
        return StreamOffer(transfer_id=tid, codec_id=_CODEC_IDS[f["codec"]], raw_size=f["raw_size"],
                           compressed_size=f["compressed_size"], sha256=bytes(32), chunk_size=f["chunk_size"],
                           info=OfferInfo(f["title"], f["platform"], f["session_id"], f["message_count"]))
    if kind is FrameType.STREAM_END:
        return StreamEnd(tid, f["nchunks"], f["raw_size"], f["compressed_size"], bytes.fromhex(f["sha256"]))
    if kind is FrameType.ACCEPT:
        return Accept(transfer_id=tid, window=f["window"], have=tuple((a, b) for a, b in f["have"]))
    if kind in (FrameType.REJECT, FrameType.CANCEL, FrameType.ERROR):
        cls = {FrameType.REJECT: Reject, FrameType.CANCEL: Cancel, FrameType.ERROR: Error}[kind]
        return cls(transfer_id=tid, code=f["code"], text=f["text"])
    if kind is FrameType.CHUNK:
        return Chunk(transfer_id=tid, index=f["index"], payload=bytes.fromhex(f["payload"]))
    if kind is FrameType.ACK:
        return Ack(transfer_id=tid, upto=f["upto"])
    if kind is FrameType.END:
        return End(transfer_id=tid, nchunks=f["nchunks"])
    return Done(transfer_id=tid, sha256=bytes.fromhex(f["sha256"]))


def valid_frames() -> list[tuple[str, str, Frame]]:
    info = OfferInfo(title="Fix the flaky test — étape 2", platform="claude-code",
                     session_id="4d5611e5-241a-462a-8d15-5122611a9569", message_count=42)
    return [
        ("hello-sender", "sender's greeting: takes 16 KiB messages, can produce lz4 and zstd",
         Hello(role=Role.SENDER, max_message_size=16384, codecs=(1, 2))),
        ("hello-receiver", "a daemon receiver's greeting: takes 64 KiB messages, reads lz4 and zstd",
         Hello(role=Role.RECEIVER, max_message_size=65536, codecs=(1, 2))),
        ("hello-browser", "a browser receiver: 16 KiB messages, lz4 only",
         Hello(role=Role.RECEIVER, max_message_size=16384, codecs=(1,))),
        ("offer", "offer of a 1 MiB conversation compressed to 180 000 bytes, in 16 358-byte chunks",
         Offer(transfer_id=TID, codec_id=1, raw_size=1 << 20, compressed_size=180_000, sha256=SHA,
               chunk_size=16358, info=info)),
        ("accept-fresh", "accept, nothing held yet, 8 MiB window", Accept(TID, window=8 << 20)),
        ("accept-resume", "accept, chunks 0-4 and 7 already held (resume)",
         Accept(TID, window=8 << 20, have=((0, 5), (7, 8)))),
        ("reject-declined", "the user declined", Reject(TID, Code.DECLINED, "the user declined")),
        ("reject-too-large", "over the receiver's size cap",
         Reject(TID, Code.TOO_LARGE, "the conversation is 2147483648 bytes, over this receiver's limit")),
        ("chunk-0", "chunk 0 with a short payload", Chunk(TID, 0, PAYLOAD)),
        ("chunk-10", "chunk 10", Chunk(TID, 10, b"\x00\x01\x02\x03")),
        ("ack", "all chunks below 6 are durably held", Ack(TID, 6)),
        ("end", "the sender sent every chunk of an 11-chunk payload", End(TID, 11)),
        ("done", "the receiver verified the SHA-256", Done(TID, SHA)),
        ("cancel-sender", "the sender's user cancelled",
         Cancel(TID, Code.CANCELLED, "cancelled by the user")),
        ("cancel-before-offer", "a receiver cancelling before it saw an OFFER (zero transfer id)",
         Cancel(ZERO_ID, Code.CANCELLED, "shutting down")),
        ("error-protocol", "a protocol error",
         Error(TID, Code.PROTOCOL, "CHUNK 3 out of order (expected 2)")),
        ("error-checksum", "the reassembled payload did not match the SHA-256",
         Error(TID, Code.CHECKSUM, "sha256 mismatch")),
        ("error-timeout", "the peer stopped answering",
         Error(TID, Code.TIMEOUT, "no data from the peer for 30 s")),
    ]


def _raw(version: int, ftype: int, tid: bytes, body: bytes, *, crc: int | None = None) -> bytes:
    import zlib

    head = bytes([version, ftype]) + tid + body
    return head + (zlib.crc32(head) if crc is None else crc).to_bytes(4, "big")


def invalid_frames() -> list[tuple[str, str, bytes, str]]:
    ack = encode(Ack(TID, 6))
    bad_crc = ack[:-1] + bytes([ack[-1] ^ 0x01])
    flipped = bytearray(ack)
    flipped[20] ^= 0x80
    big_info = OfferInfo("x" * 5000, "claude-code", "s", 1).to_json()

    def offer_body(description: bytes) -> bytes:
        return struct.pack(">BQQ32sIH", 1, 10, 10, SHA, 16358, len(description)) + description
    return [
        ("too-short", "21 bytes cannot hold a header and a checksum", ack[:21], "shorter than"),
        ("truncated", "an ACK missing its last byte", ack[:-1], "checksum mismatch"),
        ("bad-crc", "the checksum's last bit flipped", bad_crc, "checksum mismatch"),
        ("corrupted-body", "one body bit flipped", bytes(flipped), "checksum mismatch"),
        ("version-2", "a future protocol version", _raw(2, 6, TID, b"\x00\x00\x00\x06"),
         "unsupported protocol version"),
        ("unknown-type", "frame type 0x7f", _raw(1, 0x7F, TID, b""), "unknown frame type"),
        ("ack-long-body", "an ACK with 5 body bytes", _raw(1, 6, TID, b"\x00\x00\x00\x00\x06"), "expected 4"),
        ("hello-small-limit", "a HELLO advertising 8 KiB",
         _raw(1, 1, ZERO_ID, b"\x00\x00\x20\x00\x01\x01\x01"),
         "below the 16384"),
        ("hello-no-lz4", "a HELLO without lz4", _raw(1, 1, ZERO_ID, b"\x00\x00\x40\x00\x02\x01\x02"),
         "must list lz4"),
        ("hello-with-id", "a HELLO carrying a transfer id", _raw(1, 1, TID, b"\x00\x00\x40\x00\x01\x01\x01"),
         "zero transfer id"),
        ("offer-bad-json", "an OFFER whose description is not JSON", _raw(1, 2, TID, offer_body(b"{no")),
         "not valid JSON"),
        ("offer-huge-description", "an OFFER description over 4096 bytes",
         _raw(1, 2, TID, offer_body(big_info)), "exceeds 4096"),
        ("offer-control-chars", "an OFFER title with an escape sequence",
         _raw(1, 2, TID, offer_body(b'{"title":"\\u001b[31mred","platform":"p","session_id":"s",'
                                    b'"message_count":1}')),
         "control characters"),
        ("chunk-empty", "a CHUNK without payload", _raw(1, 5, TID, b"\x00\x00\x00\x01"),
         "at least one payload byte"),
        ("accept-unsorted", "ACCEPT ranges out of order",
         _raw(1, 3, TID, (8 << 20).to_bytes(4, "big") + b"\x00\x02" + b"\x00\x00\x00\x05\x00\x00\x00\x06"
              + b"\x00\x00\x00\x01\x00\x00\x00\x02"), "sorted"),
        ("reason-bad-utf8", "a CANCEL reason that is not UTF-8", _raw(1, 9, TID, b"\x00\x0a\xff\xfe"),
         "UTF-8"),
    ]


def streamed_frames() -> list[tuple[str, str, Frame]]:
    """Frames of streamed transfers (SPEC.md §12): in their own list, which the page (it does not stream) skips."""
    info = OfferInfo(title="A session still being packed", platform="claude-code", session_id="4d5611e5",
                     message_count=6377)
    return [
        ("hello-receiver-streams", "a daemon receiver that takes streamed transfers (STREAMS, 0x80, among its codecs)",
         Hello(role=Role.RECEIVER, max_message_size=65536, codecs=(1, 2, STREAMS))),
        ("stream-offer", "a streamed offer: a 50 MB transcript, ~5 MB on the wire (estimates), zstd, 64 KiB frames",
         StreamOffer(transfer_id=TID, codec_id=2, raw_size=50_000_000, compressed_size=5_000_000, sha256=bytes(32),
                     chunk_size=65510, info=info)),
        ("stream-end", "the streamed payload is complete: 69 chunks, 4 512 351 bytes of 53 096 084, and its SHA-256",
         StreamEnd(TID, 69, 53_096_084, 4_512_351, SHA)),
    ]


def streamed_invalid() -> list[tuple[str, str, bytes, str]]:
    body = struct.pack(">IQQ32s", 0, 10, 10, SHA)
    return [
        ("stream-end-no-chunks", "STREAM_END of zero chunks", _raw(1, 0x0C, TID, body),
         "STREAM_END needs a 32-byte sha256"),
        ("stream-end-short", "STREAM_END body one byte short", _raw(1, 0x0C, TID, body[:-1]),
         "STREAM_END body is 51 bytes, expected 52"),
    ]


def build() -> dict[str, Any]:
    return {
        "description": "p2pd transfer protocol v1 frames (p2pd/transfer/SPEC.md). Each valid frame decodes "
                       "to 'fields' and encoding 'fields' gives 'hex' exactly. Each invalid frame must be "
                       "refused ('error' is a substring of the reference decoder's reason).",
        "protocol_version": 1,
        "valid": [{"name": name, "meaning": meaning, "hex": encode(frame).hex(), "fields": fields_of(frame)}
                  for name, meaning, frame in valid_frames()],
        "invalid": [{"name": name, "meaning": meaning, "hex": data.hex(), "error": error}
                    for name, meaning, data, error in invalid_frames()],
        "streamed_valid": [{"name": name, "meaning": meaning, "hex": encode(frame).hex(), "fields": fields_of(frame)}
                           for name, meaning, frame in streamed_frames()],
        "streamed_invalid": [{"name": name, "meaning": meaning, "hex": data.hex(), "error": error}
                             for name, meaning, data, error in streamed_invalid()],
    }


if __name__ == "__main__":
    PATH.parent.mkdir(parents=True, exist_ok=True)
    PATH.write_text(json.dumps(build(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    sys.stdout.write(f"wrote {PATH}\n")
