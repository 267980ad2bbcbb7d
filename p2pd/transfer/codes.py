"""The protocol's enumerations (frame types, roles, reason codes) and :class:`FrameError` (spec: ``SPEC.md`` §2)."""

from __future__ import annotations

from enum import IntEnum


class FrameError(ValueError):
    """A frame that breaks the spec; the message says how."""


class FrameType(IntEnum):
    HELLO = 0x01
    OFFER = 0x02
    ACCEPT = 0x03
    REJECT = 0x04
    CHUNK = 0x05
    ACK = 0x06
    END = 0x07
    DONE = 0x08
    CANCEL = 0x09
    ERROR = 0x0A
    STREAM_OFFER = 0x0B  # streamed transfers (SPEC.md §12): sizes and SHA-256 come at the end
    STREAM_END = 0x0C


class Role(IntEnum):
    SENDER = 1
    RECEIVER = 2


class Code(IntEnum):
    """Reason codes of REJECT, CANCEL and ERROR (a receiver keeps unknown codes as plain integers)."""

    DECLINED = 1  # REJECT: the user said no
    TOO_LARGE = 2  # REJECT: a size over the receiver's caps
    UNSUPPORTED_CODEC = 3  # REJECT: the receiver cannot decompress this codec
    BUSY = 4  # REJECT: the same blob is being received by another transfer right now
    NOT_ALLOWED = 5  # REJECT: the receiver's policy takes nothing from this sender
    RATE_LIMITED = 6  # REJECT: the receiver's policy: this sender sent too much lately
    CANCELLED = 10  # CANCEL: a user or the program stopped the transfer
    PROTOCOL = 20  # ERROR: malformed, out-of-order or unexpected frame
    CHECKSUM = 21  # ERROR: the reassembled payload does not hash to the OFFER's SHA-256
    TIMEOUT = 22  # ERROR: no progress from the peer for the idle time
    IO = 23  # ERROR: local storage failure (disk full, permission)
    INTERNAL = 24  # ERROR: a bug
    INVALID = 25  # ERROR: the verified payload is not a conversation the receiver can read (nothing kept)
    PEER_GONE = 30  # local only, never sent: the channel closed, ICE failed


def code_name(code: int) -> str:
    try:
        return Code(code).name.lower()
    except ValueError:
        return f"code {code}"
