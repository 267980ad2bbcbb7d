"""What the sans-I/O state machines ask their adapter to do, and how a transfer ends.

The machines (``sender.py``, ``receiver.py``) are fed frames and local events and return lists of these
actions; the adapter performs them in order. Nothing here does I/O.
"""

from __future__ import annotations

import msgspec

from p2pd.errors import (
    BusyError,
    Cause,
    DeclinedError,
    InvalidInputError,
    P2pdError,
    Party,
    PeerGoneError,
    PeerTimeoutError,
    ProtocolError,
    StorageError,
    TooLargeError,
    TransferCancelledError,
    TransferFailedError,
)
from p2pd.transfer.frames import Code, Offer, code_name, printable


class Failure(msgspec.Struct, frozen=True):
    """Why a transfer stopped. ``by_peer`` tells who decided it: the peer's frame, or this side. When
    ``by_peer``, ``reason`` is the peer's text: it is only ever shown (escaped), never compared."""

    code: int
    reason: str
    by_peer: bool

    def message(self, peer: str = "receiver") -> str:
        """What happened, in words (never a code's internal name). The peer's own text is not part of it: it is
        kept in the error's ``peer_text``, which the CLI shows as what the peer said. ``peer``: the other side's
        role, ``"receiver"`` (this side sends) or ``"sender"`` — the words for a peer's frame name who sent it."""
        if self.by_peer and peer == "sender" and self.code in _FROM_SENDER:
            return _FROM_SENDER[self.code]
        by_peer, local = _WORDS.get(self.code, (f"the peer stopped the transfer (reason {self.code})",
                                                "the transfer failed: {reason}"))
        if self._receivers_code_from_sender(peer):
            return ("the sender broke the transfer protocol: it stopped the transfer with a reason only a receiver "
                    "gives; update p2pd on both sides")  # (the words above are a sender's to read)
        return by_peer if self.by_peer else local.replace("{reason}", printable(self.reason))

    def exception(self, peer: str = "receiver") -> P2pdError:
        """The error a caller raises for this failure: its class and ``cause`` follow the code, ``party`` is
        PEER when the peer's frame ended the transfer, and the peer's text is in ``peer_text``; ``peer`` as in
        :meth:`message`."""
        cls, cause, local_party = _ERRORS.get(self.code, _OTHER)
        if self._receivers_code_from_sender(peer):  # (a sender that declines, finds a checksum wrong…: broken)
            cls, cause = ProtocolError, Cause.PROTOCOL
        elif self.code == Code.TOO_LARGE and self.by_peer:
            cls, cause = DeclinedError, Cause.DECLINED  # the peer refused a size: a refusal, not our input
        elif self.code == Code.IO and self.by_peer:
            cls, cause = TransferFailedError, Cause.PEER_STORAGE  # the peer's disk: nothing this side's is at fault
        party = Party.PEER if self.by_peer else local_party
        return cls(self.message(peer), cause=cause, party=party,
                   peer_text=self.reason if self.by_peer else None, details={"code": code_name(self.code)})

    def _receivers_code_from_sender(self, peer: str) -> bool:
        """Whether a sender's frame (``peer == "sender"``) ended the transfer with a code only a receiver has
        reason to send: no p2pd sender does (its own failures travel as IO, INTERNAL or CANCELLED)."""
        return self.by_peer and peer == "sender" and self.code in _RECEIVERS_CODES


_REFUSALS = (Code.DECLINED, Code.TOO_LARGE, Code.UNSUPPORTED_CODEC, Code.BUSY, Code.NOT_ALLOWED, Code.RATE_LIMITED)
# code -> (the words when the peer's frame ended the transfer, the words when this side did: "{reason}" is this
# side's own reason). Each says what happened and, where something can be done, what.
_AGAIN = "run the command again to resume"
_WORDS: dict[int, tuple[str, str]] = {
    Code.DECLINED: ("the receiver declined the offer; nothing was sent", "the offer was declined"),
    Code.TOO_LARGE: ("the receiver refused the offer: the conversation is over its size limit",
                     "the offer is over this side's size limit: {reason}"),
    Code.UNSUPPORTED_CODEC: ("the receiver cannot decompress what was offered; update p2pd on one side",
                             "the offer uses a compression this side cannot read; update p2pd"),
    Code.BUSY: ("the receiver is still receiving this conversation in another transfer; try again in a moment",
                "this conversation is still being received by another transfer; try again in a moment"),
    Code.CANCELLED: ("the transfer was cancelled by the peer", "the transfer was cancelled: {reason}"),
    Code.PROTOCOL: ("the peer stopped the transfer on a protocol error; update p2pd on both sides",
                    "the peer broke the transfer protocol: {reason}"),
    Code.CHECKSUM: ("the receiver got a damaged copy (SHA-256 mismatch); send it again",
                    "the conversation arrived damaged (SHA-256 mismatch); have it sent again"),
    Code.TIMEOUT: (f"the peer stopped waiting for this side; {_AGAIN}", f"{{reason}}; {_AGAIN}"),
    Code.IO: ("the receiver could not store the conversation (is its disk full?)",
              "could not store the conversation: {reason}"),
    Code.INTERNAL: ("the peer stopped the transfer on an internal error", "internal error: {reason}"),
    Code.INVALID: ("the receiver could not read the conversation it got; nothing was kept",
                   "the received conversation is not one p2pd can read; nothing was kept: {reason}"),
    Code.PEER_GONE: (f"the peer went away; {_AGAIN}", f"the peer went away ({{reason}}); {_AGAIN}"),
    Code.NOT_ALLOWED: ("the receiving daemon does not accept transfers from this device (its accept policy)",
                       "this device is not allowed to send here: {reason}"),
    Code.RATE_LIMITED: ("the receiving daemon has taken as much from this device as it accepts per hour; "
                        "try again later", "over this side's hourly limit: {reason}"),
}

# code -> the words when the sender's frame ended the transfer, where they differ from a receiver's.
_FROM_SENDER: dict[int, str] = {
    Code.IO: "the sender could not read or pack the conversation it was sending; nothing was kept here",
}
# The codes only a receiver has reason to send: their by-peer words above speak of the receiver, to a sender.
_RECEIVERS_CODES = frozenset({Code.DECLINED, Code.TOO_LARGE, Code.UNSUPPORTED_CODEC, Code.BUSY, Code.CHECKSUM,
                              Code.INVALID, Code.NOT_ALLOWED, Code.RATE_LIMITED})

# code -> (class, cause, party when this side decided it); ``party`` is PEER whenever the peer's frame did.
_ERRORS: dict[int, tuple[type[P2pdError], Cause, Party]] = {
    Code.DECLINED: (DeclinedError, Cause.DECLINED, Party.LOCAL),
    Code.TOO_LARGE: (TooLargeError, Cause.TOO_LARGE, Party.PEER),  # the peer offered over this side's cap
    Code.UNSUPPORTED_CODEC: (DeclinedError, Cause.DECLINED, Party.LOCAL),
    Code.BUSY: (BusyError, Cause.BUSY, Party.LOCAL),
    Code.NOT_ALLOWED: (DeclinedError, Cause.NOT_ALLOWED, Party.LOCAL),  # this side's policy refused the sender
    Code.RATE_LIMITED: (DeclinedError, Cause.RATE_LIMITED, Party.LOCAL),
    Code.CANCELLED: (TransferCancelledError, Cause.CANCELLED, Party.LOCAL),
    Code.PROTOCOL: (ProtocolError, Cause.PROTOCOL, Party.PEER),  # this side saw the peer break the protocol
    Code.CHECKSUM: (TransferFailedError, Cause.CHECKSUM_MISMATCH, Party.PEER),  # what the peer sent is wrong
    Code.TIMEOUT: (PeerTimeoutError, Cause.TIMEOUT, Party.PEER),  # the peer stopped answering
    Code.IO: (StorageError, Cause.STORAGE, Party.LOCAL),  # this side's disk (the peer's: PEER_STORAGE, below)
    Code.INTERNAL: (TransferFailedError, Cause.TRANSFER_FAILED, Party.LOCAL),
    Code.INVALID: (InvalidInputError, Cause.INVALID_INPUT, Party.PEER),  # what the peer sent does not parse
    Code.PEER_GONE: (PeerGoneError, Cause.PEER_GONE, Party.PEER),
}
_OTHER: tuple[type[P2pdError], Cause, Party] = (TransferFailedError, Cause.TRANSFER_FAILED, Party.LOCAL)


class SendFrame(msgspec.Struct, frozen=True):
    """Send these bytes as one binary message."""

    data: bytes


class Progress(msgspec.Struct, frozen=True):
    """Bytes of the payload the receiver holds durably (acknowledged), out of ``total``."""

    done: int
    total: int


class Failed(msgspec.Struct, frozen=True):
    """Terminal: the transfer stopped. Any SendFrame before it in the same list should still be sent."""

    failure: Failure


class Completed(msgspec.Struct, frozen=True):
    """Terminal: sender — the receiver confirmed the SHA-256; receiver — the blob is verified and in place."""


class OfferReceived(msgspec.Struct, frozen=True):
    """Receiver: ask the user; then call ``accept`` or ``reject``."""

    offer: Offer


class WriteChunk(msgspec.Struct, frozen=True):
    """Receiver: store ``data`` at ``offset`` of the payload; report with ``chunks_durable`` once durable."""

    index: int
    offset: int
    data: bytes | memoryview  # a CHUNK's payload: a read-only view into its message (frames.decode)


class VerifyPayload(msgspec.Struct, frozen=True):
    """Receiver: every chunk is durable; hash the whole payload and call ``verified`` with the digest."""


class FinalizeBlob(msgspec.Struct, frozen=True):
    """Receiver: the digest matched; move the blob into place atomically, then call ``finalized``."""


Action = (SendFrame | Progress | Failed | Completed | OfferReceived | WriteChunk | VerifyPayload
          | FinalizeBlob)
