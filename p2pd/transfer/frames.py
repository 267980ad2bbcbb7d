"""Transfer protocol frames, version 1: constants, typed frames, encode and decode (spec: ``SPEC.md``).

One frame is one binary data-channel message::

    version  u8    1
    type     u8    FrameType
    transfer 16s   transfer id (zero in HELLO, and in CANCEL/ERROR sent before the OFFER is known)
    body     ...   per type
    crc32    u32   CRC-32 (IEEE 802.3, as zlib.crc32) of every byte before it

Integers are big-endian. Decoding is strict: a frame that is too short or too long, has another version, a
bad checksum, an unknown type, a body of the wrong length or a value out of range raises :class:`FrameError`
with a reason fit to show a user. Nothing here does I/O.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from typing import ClassVar

import msgspec

from p2pd.blob.codecs import CODECS, CODECS_BY_ID
from p2pd.support.text import visible
from p2pd.transfer.codes import Code, FrameError, FrameType, Role, code_name
from p2pd.transfer.description import TITLE_MAX_CHARS, OfferInfo

PROTOCOL_VERSION = 1

BASE_MESSAGE_SIZE = 16 * 1024
"""Every peer takes messages this large; the limit for every control frame and for CHUNKs to browsers."""
MAX_MESSAGE_SIZE = 64 * 1024
"""The largest message this version ever sends (aiortc's advertised limit), when both peers advertise it."""

_HEADER = struct.Struct(">BB16s")
HEADER_SIZE = _HEADER.size  # 18
CRC_SIZE = 4
MIN_FRAME_SIZE = HEADER_SIZE + CRC_SIZE  # 22
_CHUNK_INDEX = struct.Struct(">I")
CHUNK_OVERHEAD = HEADER_SIZE + _CHUNK_INDEX.size + CRC_SIZE  # 26 bytes around each payload
MIN_CHUNK_SIZE = 1024
MAX_CHUNKS = 0xFFFF_FFFF
MAX_INFO_SIZE = 4096  # the OFFER's JSON description
MAX_TEXT_SIZE = 1024  # reason text of REJECT / CANCEL / ERROR, in UTF-8 bytes
MAX_RANGES = 1024  # resume ranges in one ACCEPT
MAX_WINDOW = 64 * 1024 * 1024
MIN_WINDOW = 64 * 1024
MAX_CODECS = 16
ZERO_ID = bytes(16)
STREAMS = 0x80
"""Not a codec: listed among a HELLO's codecs, it says this peer speaks streamed transfers (SPEC.md §12)."""


def printable(text: str, limit: int = 300) -> str:
    """A peer-supplied string made safe to show: control, bidi and invisible characters escaped, length capped
    (:func:`p2pd.support.text.visible`)."""
    return visible(text, limit)


class Hello(msgspec.Struct, frozen=True):
    role: Role
    max_message_size: int
    codecs: tuple[int, ...]
    transfer_id: bytes = ZERO_ID
    type: ClassVar[FrameType] = FrameType.HELLO

    def body(self) -> bytes:
        return struct.pack(">IBB", self.max_message_size, self.role, len(self.codecs)) + bytes(self.codecs)


class Offer(msgspec.Struct, frozen=True):
    transfer_id: bytes
    codec_id: int
    raw_size: int
    compressed_size: int
    sha256: bytes
    chunk_size: int
    info: OfferInfo
    type: ClassVar[FrameType] = FrameType.OFFER

    @property
    def codec(self) -> str | None:
        """The codec's name, or None when this peer does not know the id."""
        c = CODECS_BY_ID.get(self.codec_id)
        return c.name if c else None

    @property
    def nchunks(self) -> int:
        return -(-self.compressed_size // self.chunk_size)

    def chunk_span(self, index: int) -> tuple[int, int]:
        """(offset, length) of chunk ``index`` within the payload."""
        offset = index * self.chunk_size
        return offset, min(self.chunk_size, self.compressed_size - offset)

    def body(self) -> bytes:
        info = self.info.to_json()
        return (_OFFER.pack(self.codec_id, self.raw_size, self.compressed_size, self.sha256, self.chunk_size,
                            len(info)) + info)


_OFFER = struct.Struct(">BQQ32sIH")


class StreamOffer(Offer, frozen=True):
    """A streamed OFFER (SPEC.md §12): ``raw_size`` and ``compressed_size`` are the sender's estimates (for caps
    and progress), ``sha256`` is unknown (zero); STREAM_END carries the real ones."""

    type: ClassVar[FrameType] = FrameType.STREAM_OFFER

    def body(self) -> bytes:
        info = self.info.to_json()
        return _SOFFER.pack(self.codec_id, self.raw_size, self.compressed_size, self.chunk_size, len(info)) + info


_SOFFER = struct.Struct(">BQQIH")


class StreamEnd(msgspec.Struct, frozen=True):
    transfer_id: bytes
    nchunks: int
    raw_size: int
    compressed_size: int
    sha256: bytes
    type: ClassVar[FrameType] = FrameType.STREAM_END

    def body(self) -> bytes:
        return _SEND.pack(self.nchunks, self.raw_size, self.compressed_size, self.sha256)


_SEND = struct.Struct(">IQQ32s")


class Accept(msgspec.Struct, frozen=True):
    transfer_id: bytes
    window: int
    have: tuple[tuple[int, int], ...] = ()
    type: ClassVar[FrameType] = FrameType.ACCEPT

    def body(self) -> bytes:
        return struct.pack(">IH", self.window, len(self.have)) + b"".join(
            struct.pack(">II", a, b) for a, b in self.have)


class _Reason(msgspec.Struct, frozen=True):
    transfer_id: bytes
    code: int
    text: str
    type: ClassVar[FrameType]

    def body(self) -> bytes:
        return struct.pack(">H", self.code) + self.text.encode("utf-8")


class Reject(_Reason, frozen=True):
    type: ClassVar[FrameType] = FrameType.REJECT


class Cancel(_Reason, frozen=True):
    type: ClassVar[FrameType] = FrameType.CANCEL


class Error(_Reason, frozen=True):
    type: ClassVar[FrameType] = FrameType.ERROR


class Chunk(msgspec.Struct, frozen=True):
    transfer_id: bytes
    index: int
    payload: bytes | memoryview  # decoded from bytes: a read-only view into the message
    type: ClassVar[FrameType] = FrameType.CHUNK

    def __repr__(self) -> str:  # (never the payload: up to 64 KiB)
        return f"Chunk(transfer_id={self.transfer_id!r}, index={self.index}, payload=<{len(self.payload)} bytes>)"

    def body(self) -> bytes:
        return _CHUNK_INDEX.pack(self.index) + bytes(self.payload)


class Ack(msgspec.Struct, frozen=True):
    transfer_id: bytes
    upto: int
    type: ClassVar[FrameType] = FrameType.ACK

    def body(self) -> bytes:
        return struct.pack(">I", self.upto)


class End(msgspec.Struct, frozen=True):
    transfer_id: bytes
    nchunks: int
    type: ClassVar[FrameType] = FrameType.END

    def body(self) -> bytes:
        return struct.pack(">I", self.nchunks)


class Done(msgspec.Struct, frozen=True):
    transfer_id: bytes
    sha256: bytes
    type: ClassVar[FrameType] = FrameType.DONE

    def body(self) -> bytes:
        return self.sha256


Frame = Hello | Offer | Accept | Reject | Chunk | Ack | End | Done | Cancel | Error | StreamEnd


def encode(frame: Frame) -> bytes:
    """The bytes of one frame. Values out of range raise FrameError (a bug on the sending side)."""
    _check(frame)
    head = _HEADER.pack(PROTOCOL_VERSION, frame.type, frame.transfer_id) + frame.body()
    return head + zlib.crc32(head).to_bytes(4, "big")


def encode_chunk(transfer_id: bytes, index: int, payload: bytes) -> bytes:
    """Fast path for CHUNK frames: one copy of the payload, no validation beyond struct's."""
    head = _HEADER.pack(PROTOCOL_VERSION, FrameType.CHUNK, transfer_id) + _CHUNK_INDEX.pack(index)
    crc = zlib.crc32(payload, zlib.crc32(head))
    return b"".join((head, payload, crc.to_bytes(4, "big")))


def decode(data: bytes | bytearray | memoryview | str, *, max_size: int = BASE_MESSAGE_SIZE) -> Frame:
    """Parse and validate one frame received as one message of at most ``max_size`` bytes."""
    if isinstance(data, str):
        raise FrameError("a text message arrived on the transfer channel (frames are binary)")
    n = len(data)
    if n < MIN_FRAME_SIZE:
        raise FrameError(f"frame of {n} bytes is shorter than the {MIN_FRAME_SIZE}-byte minimum")
    if n > max_size:
        raise FrameError(f"frame of {n} bytes exceeds the {max_size}-byte message limit")
    mv = memoryview(data)
    version, ftype, tid = _HEADER.unpack_from(mv)
    if version != PROTOCOL_VERSION:
        raise FrameError(f"unsupported protocol version {version} (this peer speaks {PROTOCOL_VERSION})")
    if zlib.crc32(mv[: n - CRC_SIZE]) != int.from_bytes(mv[n - CRC_SIZE:], "big"):
        raise FrameError("frame checksum mismatch (a corrupted or truncated frame)")
    body = mv[HEADER_SIZE: n - CRC_SIZE]
    try:
        kind = FrameType(ftype)
    except ValueError:
        raise FrameError(f"unknown frame type 0x{ftype:02x}") from None
    frame = _PARSERS[kind](bytes(tid), body)
    if kind is not FrameType.CHUNK:
        _check(frame)
    return frame


def _exact(body: memoryview, size: int, name: str) -> None:
    if len(body) != size:
        raise FrameError(f"{name} body is {len(body)} bytes, expected {size}")


def _parse_hello(tid: bytes, body: memoryview) -> Frame:
    if len(body) < 6:
        raise FrameError(f"HELLO body is {len(body)} bytes, expected at least 6")
    mms, role, ncodecs = struct.unpack_from(">IBB", body)
    _exact(body, 6 + ncodecs, "HELLO")
    try:
        r = Role(role)
    except ValueError:
        raise FrameError(f"HELLO names unknown role {role}") from None
    return Hello(role=r, max_message_size=mms, codecs=tuple(body[6:]), transfer_id=tid)


def _parse_offer(tid: bytes, body: memoryview) -> Frame:
    if len(body) < _OFFER.size:
        raise FrameError(f"OFFER body is {len(body)} bytes, expected at least {_OFFER.size}")
    codec_id, raw, comp, digest, chunk_size, info_len = _OFFER.unpack_from(body)
    _exact(body, _OFFER.size + info_len, "OFFER")
    if info_len > MAX_INFO_SIZE:
        raise FrameError(f"OFFER description of {info_len} bytes exceeds {MAX_INFO_SIZE}")
    info = OfferInfo.from_json(bytes(body[_OFFER.size:]))
    return Offer(transfer_id=tid, codec_id=codec_id, raw_size=raw, compressed_size=comp, sha256=digest,
                 chunk_size=chunk_size, info=info)


def _parse_stream_offer(tid: bytes, body: memoryview) -> Frame:
    if len(body) < _SOFFER.size:
        raise FrameError(f"STREAM_OFFER body is {len(body)} bytes, expected at least {_SOFFER.size}")
    codec_id, raw, comp, chunk_size, info_len = _SOFFER.unpack_from(body)
    _exact(body, _SOFFER.size + info_len, "STREAM_OFFER")
    if info_len > MAX_INFO_SIZE:
        raise FrameError(f"STREAM_OFFER description of {info_len} bytes exceeds {MAX_INFO_SIZE}")
    info = OfferInfo.from_json(bytes(body[_SOFFER.size:]))
    return StreamOffer(transfer_id=tid, codec_id=codec_id, raw_size=raw, compressed_size=comp, sha256=bytes(32),
                       chunk_size=chunk_size, info=info)


def _parse_stream_end(tid: bytes, body: memoryview) -> Frame:
    _exact(body, _SEND.size, "STREAM_END")
    nchunks, raw, comp, digest = _SEND.unpack_from(body)
    return StreamEnd(tid, nchunks, raw, comp, digest)


def _parse_accept(tid: bytes, body: memoryview) -> Frame:
    if len(body) < 6:
        raise FrameError(f"ACCEPT body is {len(body)} bytes, expected at least 6")
    window, count = struct.unpack_from(">IH", body)
    _exact(body, 6 + 8 * count, "ACCEPT")
    have = tuple(struct.unpack_from(">II", body, 6 + 8 * i) for i in range(count))
    return Accept(transfer_id=tid, window=window, have=have)


def _parse_reason(cls: type[Reject] | type[Cancel] | type[Error]) -> Callable[[bytes, memoryview], Frame]:
    def parse(tid: bytes, body: memoryview) -> Frame:
        name = cls.type.name
        if len(body) < 2:
            raise FrameError(f"{name} body is {len(body)} bytes, expected at least 2")
        (code,) = struct.unpack_from(">H", body)
        try:
            text = bytes(body[2:]).decode("utf-8")
        except UnicodeDecodeError:
            raise FrameError(f"{name} reason is not valid UTF-8") from None
        return cls(transfer_id=tid, code=code, text=text)

    return parse


def _parse_chunk(tid: bytes, body: memoryview) -> Frame:
    if len(body) < 5:
        raise FrameError(f"CHUNK body is {len(body)} bytes, expected an index and at least one payload byte")
    (index,) = _CHUNK_INDEX.unpack_from(body)
    # A view, not a copy, when the message is immutable bytes (it is, from aiortc): the payload is only written
    # and hashed, and the view keeps its message alive meanwhile. Mutable input is copied.
    payload = body[4:] if body.readonly else bytes(body[4:])
    return Chunk(transfer_id=tid, index=index, payload=payload)


def _parse_u32(cls: type[Ack] | type[End]) -> Callable[[bytes, memoryview], Frame]:
    def parse(tid: bytes, body: memoryview) -> Frame:
        _exact(body, 4, cls.type.name)
        (value,) = struct.unpack_from(">I", body)
        return cls(tid, value)

    return parse


def _parse_done(tid: bytes, body: memoryview) -> Frame:
    _exact(body, 32, "DONE")
    return Done(transfer_id=tid, sha256=bytes(body))


_PARSERS = {
    FrameType.HELLO: _parse_hello,
    FrameType.OFFER: _parse_offer,
    FrameType.ACCEPT: _parse_accept,
    FrameType.REJECT: _parse_reason(Reject),
    FrameType.CHUNK: _parse_chunk,
    FrameType.ACK: _parse_u32(Ack),
    FrameType.END: _parse_u32(End),
    FrameType.DONE: _parse_done,
    FrameType.CANCEL: _parse_reason(Cancel),
    FrameType.ERROR: _parse_reason(Error),
    FrameType.STREAM_OFFER: _parse_stream_offer,
    FrameType.STREAM_END: _parse_stream_end,
}


def _check(frame: Frame) -> None:
    """Range checks that do not depend on the conversation's state (both for encoding and decoding)."""
    if len(frame.transfer_id) != 16:
        raise FrameError("transfer id must be 16 bytes")
    if isinstance(frame, Hello):
        if frame.transfer_id != ZERO_ID:
            raise FrameError("HELLO must carry the zero transfer id")
        if not BASE_MESSAGE_SIZE <= frame.max_message_size <= 0xFFFF_FFFF:
            raise FrameError(f"HELLO advertises a {frame.max_message_size}-byte message limit, "
                             f"below the {BASE_MESSAGE_SIZE} every peer must take")
        if not 1 <= len(frame.codecs) <= MAX_CODECS or len(set(frame.codecs)) != len(frame.codecs):
            raise FrameError("HELLO must list between 1 and 16 distinct codecs")
        if CODECS["lz4"].wire_id not in frame.codecs:
            raise FrameError("HELLO must list lz4, the codec every peer speaks")
    elif isinstance(frame, Offer):
        if frame.transfer_id == ZERO_ID:
            raise FrameError("OFFER must carry a non-zero transfer id")
        if len(frame.sha256) != 32:
            raise FrameError("OFFER sha256 must be 32 bytes")
        if frame.chunk_size < MIN_CHUNK_SIZE:
            raise FrameError(f"OFFER chunk size {frame.chunk_size} is below the {MIN_CHUNK_SIZE}-byte "
                             "minimum")
        if frame.chunk_size + CHUNK_OVERHEAD > MAX_MESSAGE_SIZE:
            raise FrameError(f"OFFER chunk size {frame.chunk_size} makes CHUNK frames over "
                             f"{MAX_MESSAGE_SIZE} bytes")
        if frame.compressed_size == 0:
            raise FrameError("OFFER of an empty payload (compressed size 0)")
        if isinstance(frame, StreamOffer):
            pass  # its sizes are estimates: no chunk count follows from them
        elif frame.nchunks > MAX_CHUNKS:
            raise FrameError("OFFER needs more than 2^32-1 chunks")
        if len(frame.info.to_json()) > MAX_INFO_SIZE:
            raise FrameError(f"OFFER description exceeds {MAX_INFO_SIZE} bytes")
    elif isinstance(frame, Accept):
        if not MIN_WINDOW <= frame.window <= MAX_WINDOW:
            raise FrameError(f"ACCEPT window {frame.window} is outside {MIN_WINDOW}..{MAX_WINDOW} bytes")
        if len(frame.have) > MAX_RANGES:
            raise FrameError(f"ACCEPT lists {len(frame.have)} ranges, more than {MAX_RANGES}")
        prev_end = -1
        for start, end in frame.have:
            if not start < end:
                raise FrameError(f"ACCEPT range [{start}, {end}) is empty or reversed")
            if start <= prev_end:
                raise FrameError("ACCEPT ranges must be sorted, disjoint and not touching")
            prev_end = end
    elif isinstance(frame, _Reason):
        if not 0 <= frame.code <= 0xFFFF:
            raise FrameError("reason code out of range")
        if len(frame.text.encode("utf-8")) > MAX_TEXT_SIZE:
            raise FrameError(f"{frame.type.name} reason exceeds {MAX_TEXT_SIZE} bytes")
    elif isinstance(frame, Chunk):
        if not frame.payload:
            raise FrameError("CHUNK with an empty payload")
    elif isinstance(frame, Ack | End):
        v = frame.upto if isinstance(frame, Ack) else frame.nchunks
        if not 0 <= v <= MAX_CHUNKS:
            raise FrameError(f"{frame.type.name} value out of range")
    elif isinstance(frame, Done) and len(frame.sha256) != 32:
        raise FrameError("DONE sha256 must be 32 bytes")
    elif isinstance(frame, StreamEnd) and (len(frame.sha256) != 32 or frame.compressed_size == 0
                                            or not 0 < frame.nchunks <= MAX_CHUNKS):
        raise FrameError("STREAM_END needs a 32-byte sha256, a non-empty payload and 1..2^32-1 chunks")


def reason_text(text: str) -> str:
    """Cut a reason to fit MAX_TEXT_SIZE bytes of UTF-8 without splitting a character."""
    raw = text.encode("utf-8")
    if len(raw) <= MAX_TEXT_SIZE:
        return text
    return raw[: MAX_TEXT_SIZE - 3].decode("utf-8", "ignore") + "…"


__all__ = ["BASE_MESSAGE_SIZE", "CHUNK_OVERHEAD", "CRC_SIZE", "HEADER_SIZE", "MAX_CHUNKS", "MAX_CODECS",
           "MAX_INFO_SIZE", "MAX_MESSAGE_SIZE", "MAX_RANGES", "MAX_TEXT_SIZE", "MAX_WINDOW", "MIN_CHUNK_SIZE",
           "MIN_FRAME_SIZE", "MIN_WINDOW", "PROTOCOL_VERSION", "STREAMS", "TITLE_MAX_CHARS", "ZERO_ID", "Accept",
           "Ack", "Cancel", "Chunk", "Code", "Done", "End", "Error", "Frame", "FrameError", "FrameType", "Hello",
           "Offer", "OfferInfo", "Reject", "Role", "StreamEnd", "StreamOffer", "code_name", "decode", "encode",
           "encode_chunk", "printable", "reason_text"]
