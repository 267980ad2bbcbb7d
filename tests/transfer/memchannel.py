"""An in-memory data channel pair shaped like aiortc's RTCDataChannel (the adapter's DataChannel protocol): the
run loop, the tap and both sides run against it in one event loop, without ICE, DTLS or SCTP.

Messages are delivered on the next loop iteration, in order. ``bufferedAmount`` stays 0 unless a test sets it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any


class Emitter:
    def __init__(self) -> None:
        self.handlers: dict[str, list[Callable[..., Any]]] = {}

    def on(self, event: str, f: Callable[..., Any]) -> Callable[..., Any]:
        self.handlers.setdefault(event, []).append(f)
        return f

    def remove_listener(self, event: str, f: Callable[..., Any]) -> None:
        self.handlers[event].remove(f)

    def emit(self, event: str, *args: Any) -> None:
        for f in list(self.handlers.get(event, [])):
            f(*args)

    def listeners(self) -> int:
        return sum(len(v) for v in self.handlers.values())


class MemChannel(Emitter):
    def __init__(self) -> None:
        super().__init__()
        self.readyState = "connecting"
        self.bufferedAmount = 0
        self.bufferedAmountLowThreshold = 0
        self.peer: MemChannel | None = None
        self.sent: list[bytes] = []
        self.drop_outgoing = False  # a test can make the peer stop hearing us

    def open(self) -> None:
        self.readyState = "open"
        self.emit("open")

    def send(self, data: bytes) -> None:
        if self.readyState != "open":
            raise ConnectionError("InvalidStateError: the channel is not open")
        self.sent.append(bytes(data))
        peer = self.peer
        if peer is not None and not self.drop_outgoing:
            asyncio.get_running_loop().call_soon(peer.deliver, bytes(data))

    def deliver(self, data: bytes) -> None:
        if self.readyState == "open":
            self.emit("message", data)

    def close(self) -> None:
        """Close this end now and the peer's after what was sent before (ordered, as SCTP delivers it)."""
        if self.readyState == "closed":
            return
        self._closed()
        if self.peer is not None:
            asyncio.get_running_loop().call_soon(self.peer._closed)

    def _closed(self) -> None:
        if self.readyState != "closed":
            self.readyState = "closed"
            self.emit("close")


def mem_pair(opened: bool = True) -> tuple[MemChannel, MemChannel]:
    a, b = MemChannel(), MemChannel()
    a.peer, b.peer = b, a
    if opened:
        a.open()
        b.open()
    return a, b
