"""What the sans-I/O state machines ask their adapter to do, and how a transfer ends.

The machines (``sender.py``, ``receiver.py``) are fed frames and local events and return lists of these
actions; the adapter performs them in order. Nothing here does I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from p2pd.errors import (
    Cause,
    DeclinedError,
    P2pdError,
    PeerGoneError,
    PeerTimeoutError,
    TooLargeError,
    TransferCancelledError,
    TransferFailedError,
)
from p2pd.transfer.frames import Code, Offer, code_name, printable


@dataclass(frozen=True)
class Failure:
    """Why a transfer stopped. ``by_peer`` tells who decided it: the peer's frame, or this side."""

    code: int
    reason: str
    by_peer: bool

    def message(self) -> str:
        reason = printable(self.reason)
        name = code_name(self.code)
        if self.code == Code.CANCELLED:
            who = " by the peer" if self.by_peer else ""
            return f"transfer cancelled{who}: {reason}"
        if self.code in _REFUSALS:
            if self.by_peer:
                return f"the receiver declined the offer ({name}): {reason}"
            return f"offer refused ({name}): {reason}"
        if self.by_peer:
            return f"the peer stopped the transfer ({name}): {reason}"
        return f"transfer failed ({name}): {reason}"

    def exception(self) -> P2pdError:
        """The error a caller raises for this failure."""
        if self.code == Code.CANCELLED:
            return TransferCancelledError(self.message())
        if self.code == Code.BUSY:  # a refusal worth retrying: the receiver still holds an older attempt
            return DeclinedError(self.message(), cause=Cause.BUSY)
        if self.code == Code.PEER_GONE:
            return PeerGoneError(self.message())
        if self.code == Code.TIMEOUT:
            return PeerTimeoutError(self.message())
        if self.code in _REFUSALS:
            if self.code == Code.TOO_LARGE and not self.by_peer:
                return TooLargeError(self.message())
            return DeclinedError(self.message())
        return TransferFailedError(self.message())


_REFUSALS = (Code.DECLINED, Code.TOO_LARGE, Code.UNSUPPORTED_CODEC, Code.BUSY)


@dataclass(frozen=True)
class SendFrame:
    """Send these bytes as one binary message."""

    data: bytes


@dataclass(frozen=True)
class Progress:
    """Bytes of the payload the receiver holds durably (acknowledged), out of ``total``."""

    done: int
    total: int


@dataclass(frozen=True)
class Failed:
    """Terminal: the transfer stopped. Any SendFrame before it in the same list should still be sent."""

    failure: Failure


@dataclass(frozen=True)
class Completed:
    """Terminal: sender — the receiver confirmed the SHA-256; receiver — the blob is verified and in place."""


@dataclass(frozen=True)
class OfferReceived:
    """Receiver: ask the user; then call ``accept`` or ``reject``."""

    offer: Offer


@dataclass(frozen=True)
class WriteChunk:
    """Receiver: store ``data`` at ``offset`` of the payload; report with ``chunks_durable`` once durable."""

    index: int
    offset: int
    data: bytes


@dataclass(frozen=True)
class VerifyPayload:
    """Receiver: every chunk is durable; hash the whole payload and call ``verified`` with the digest."""


@dataclass(frozen=True)
class FinalizeBlob:
    """Receiver: the digest matched; move the blob into place atomically, then call ``finalized``."""


Action = (SendFrame | Progress | Failed | Completed | OfferReceived | WriteChunk | VerifyPayload
          | FinalizeBlob)
