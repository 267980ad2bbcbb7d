"""The sender's fallback notice: when no peer connection can be made after pairing, the sender writes the
conversation to a file and tells the receiver so (sealed, over the pairing), with the file's name and the
reason; the receiver stops waiting and says which command imports the file once it arrives.

:class:`PeerSignals` is the receiver's single reader of the pairing's sealed messages while connecting: SDP
goes to the peer connection, a fallback notice resolves :attr:`PeerSignals.fallback`.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

from p2pd.errors import ConnectionFailedError, P2pdError, TransferFailedError
from p2pd.support.text import visible

if TYPE_CHECKING:
    from p2pd.transfer.ice import Failure

FALLBACK = "fallback"
GRACE = 3.0  # after our own connect timeout, how long to wait for the sender's notice


def notice(file_name: str, reason: str | None) -> dict[str, Any]:
    return {"type": FALLBACK, "file": file_name, "reason": reason}


async def tell_receiver(rv: Any, file_name: str, reason: str | None) -> None:
    """Best effort: the receiver may be gone already."""
    with contextlib.suppress(P2pdError, RuntimeError, OSError):
        await rv.send_sealed(notice(file_name, reason))


class PeerSignals:
    def __init__(self, rv: Any, timeout: float) -> None:
        self.rv = rv
        self.timeout = timeout
        self.fallback: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._sdp: asyncio.Queue[Any] = asyncio.Queue()
        self._task = asyncio.ensure_future(self._pump())

    async def _pump(self) -> None:
        try:
            while True:
                message = await self.rv.recv_sealed()
                if isinstance(message, dict) and message.get("type") == FALLBACK:
                    if not self.fallback.done():
                        self.fallback.set_result(message)
                    continue
                self._sdp.put_nowait(message)
        except P2pdError as exc:
            self._sdp.put_nowait(exc)

    async def recv(self) -> dict[str, Any]:
        try:
            item = await asyncio.wait_for(self._sdp.get(), self.timeout)
        except TimeoutError:
            raise TransferFailedError(f"no message from the peer within {self.timeout:g} s") from None
        if isinstance(item, P2pdError):
            raise item
        if not isinstance(item, dict):
            raise TransferFailedError("the peer sent a malformed signaling message")
        return item

    async def close(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


def sender_fell_back(message: dict[str, Any], own: P2pdError | None = None) -> ConnectionFailedError:
    """The receiver's error once the sender has written the conversation to a file."""
    raw_name = message.get("file")
    name = visible(raw_name) if isinstance(raw_name, str) and raw_name else "its .a2a.json file"
    from p2pd.transfer.ice import REASONS, Failure  # aiortc: not imported before the code is shown

    try:
        reason: Failure | None = Failure(str(message.get("reason")))
    except ValueError:
        reason = None
    why = REASONS[reason] if reason is not None else (own.message if own is not None else "no peer connection")
    return ConnectionFailedError(
        f"no peer connection ({why}). The sender wrote the conversation to a file instead, {name}: copy it to "
        f"this machine and run: p2pd import {name}",
        details={"reason": reason.value if reason else None, "fallback_file": name},
        peer_text=raw_name if isinstance(raw_name, str) else None)
