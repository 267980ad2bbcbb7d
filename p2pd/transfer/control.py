"""What callers hold of a transfer: the handle that cancels it and the results of a completed one."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

import msgspec

from p2pd.transfer.frames import Offer

ProgressCallback = Callable[[int, int], None]


class TransferResult(msgspec.Struct, frozen=True):
    """A completed send: the receiver confirmed the SHA-256 of the whole payload."""

    transfer_id: str
    sha256: bytes
    raw_size: int
    compressed_size: int
    chunk_size: int
    chunks_sent: int
    bytes_sent: int
    resumed_bytes: int  # payload bytes the receiver already held (not sent again)
    elapsed: float  # from the channel open to the receiver's DONE, the receiver's decision included
    decision_seconds: float = 0.0  # of ``elapsed``, the time the receiver took to accept the offer
    cancel_too_late: bool = False  # this side cancelled after its last chunk, and the receiver had committed first


class ReceivedBlob(msgspec.Struct, frozen=True):
    """A completed receive: ``path`` is a complete, verified blob file (``p2pd.blob`` format)."""

    path: Path
    offer: Offer
    bytes_received: int
    resumed_bytes: int
    elapsed: float


class TransferControl:
    """Handle to stop a running transfer from outside: ``control.cancel("reason")``; works on either side.

    A running transfer registers a wake-up with :meth:`watching`, so a cancel reaches it at once.
    """

    def __init__(self) -> None:
        self.reason: str | None = None
        self._wakers: list[Callable[[], None]] = []

    def cancel(self, reason: str = "cancelled by the user") -> None:
        if self.reason is None:
            self.reason = reason
            for wake in list(self._wakers):
                wake()

    @property
    def cancelled(self) -> bool:
        return self.reason is not None

    @contextlib.contextmanager
    def watching(self, wake: Callable[[], None]) -> Iterator[None]:
        """Call ``wake()`` on :meth:`cancel` while the block runs."""
        self._wakers.append(wake)
        try:
            yield
        finally:
            self._wakers.remove(wake)
