"""What the transfer adapter uses of a data channel, as typed protocols (aiortc's ``RTCDataChannel`` fits them).

The run loop and both sides see a channel only through :class:`DataChannel`; the tap also watches the DTLS and
ICE transports under it (``channel.transport.transport`` and ``….transport``, all public aiortc properties) so a
failed connection ends a transfer at once. Tests drive the adapter with in-memory channels of the same shape.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

Handler = Callable[..., Any]


class Emitter(Protocol):
    """A pyee-style event emitter."""

    def on(self, event: str, f: Handler) -> Any: ...

    def remove_listener(self, event: str, f: Handler) -> None: ...


class StatefulTransport(Emitter, Protocol):
    """A transport that reports ``statechange`` events (aiortc's ICE transport)."""

    @property
    def state(self) -> str: ...


class DtlsTransport(StatefulTransport, Protocol):
    @property
    def transport(self) -> StatefulTransport: ...


class SctpTransport(Protocol):
    @property
    def transport(self) -> DtlsTransport: ...


class DataChannel(Emitter, Protocol):
    """A reliable, ordered data channel: events ``open``, ``message``, ``close``, ``bufferedamountlow``."""

    @property
    def readyState(self) -> str: ...  # the WebRTC names

    @property
    def bufferedAmount(self) -> int: ...

    @property
    def bufferedAmountLowThreshold(self) -> int: ...

    @bufferedAmountLowThreshold.setter
    def bufferedAmountLowThreshold(self, value: int) -> None: ...

    @property
    def transport(self) -> SctpTransport: ...

    def send(self, data: bytes) -> None: ...

    def close(self) -> None: ...
