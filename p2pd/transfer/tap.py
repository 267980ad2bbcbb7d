"""The event tap: a data channel's events (messages, close, ``bufferedamountlow``, ICE/DTLS failure) turned
into one ordered queue that a transfer's run loop drains.

Attach it as soon as the channel exists (:func:`attach`): aiortc drops messages nobody listens to, and the peer
may send its first frame before this side starts its transfer. The run loop posts its own events (finished
jobs) to the same queue, so everything is handled in arrival order by one task.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections import deque
from collections.abc import Callable

import msgspec

from p2pd.transfer.datachannel import DataChannel, Emitter, Handler, StatefulTransport
from p2pd.transfer.frames import MAX_MESSAGE_SIZE
from p2pd.transfer.jobs import JobDone
from p2pd.transfer.receiver import DEFAULT_WINDOW as RECEIVE_WINDOW

TAP_LIMIT = RECEIVE_WINDOW + 4 * MAX_MESSAGE_SIZE  # bytes a tap holds before the transfer consumes them


class Message(msgspec.Struct, frozen=True):
    """One message from the peer."""

    data: bytes | str


class Closed(msgspec.Struct, frozen=True):
    """The channel or the connection under it is gone; ``reason`` says which (for the failure's message)."""

    reason: str


class Overflow(msgspec.Struct, frozen=True):
    """The peer sent more than the tap holds (:data:`TAP_LIMIT`): later messages were dropped."""


TapEvent = Message | Closed | Overflow | JobDone


class ChannelTap:
    """Listens on a channel from the moment it is attached and queues what happens, in order.

    ``remote_max_message_size`` is the largest message the peer's SDP accepts (``a=max-message-size``), when
    whoever made the connection knows it (:func:`p2pd.transfer.peer.connect` sets it); aiortc refuses to send
    anything larger.
    """

    def __init__(self, channel: DataChannel) -> None:
        # Weak references only: the registry below keeps taps by channel, and must not keep channels alive.
        self._channel = weakref.ref(channel)
        self.events: deque[TapEvent] = deque()
        self.wake = asyncio.Event()
        self.remote_max_message_size: int | None = None
        self._held = 0
        self._overflow = False
        self._handlers: list[tuple[weakref.ref[Emitter], str, Handler]] = []
        self._listen(channel, "message", self._on_message)
        self._listen(channel, "close", self._on_close)
        self._listen(channel, "open", self.notify)
        self._listen(channel, "bufferedamountlow", self.notify)
        for name, transport in _transports(channel):
            self._listen(transport, "statechange", self._state_watcher(name, transport))
        if channel.readyState == "closed":
            self.events.append(Closed("the data channel is closed"))

    def _listen(self, emitter: Emitter, event: str, handler: Handler) -> None:
        emitter.on(event, handler)
        self._handlers.append((weakref.ref(emitter), event, handler))

    def detach(self) -> None:
        """Stop listening (the transfer is over); a later :func:`attach` makes a new tap."""
        for ref, event, handler in self._handlers:
            emitter = ref()
            if emitter is not None:
                with contextlib.suppress(Exception):
                    emitter.remove_listener(event, handler)
        self._handlers.clear()
        channel = self._channel()
        if channel is not None and _TAPS.get(channel) is self:
            del _TAPS[channel]

    def notify(self, *_: object) -> None:
        """Wake the run loop (it re-reads the channel's state and the queue)."""
        self.wake.set()

    def post(self, event: TapEvent) -> None:
        """Queue an event behind what already arrived and wake the run loop."""
        self.events.append(event)
        self.wake.set()

    def _on_message(self, data: bytes | str) -> None:
        if self._overflow:
            return
        self._held += len(data)
        if self._held > TAP_LIMIT:
            self._overflow = True
            self.post(Overflow())
        else:
            self.post(Message(data))

    def _on_close(self) -> None:
        self.post(Closed("the data channel was closed"))

    def _state_watcher(self, name: str, transport: StatefulTransport) -> Callable[[], None]:
        def watch() -> None:
            state = transport.state
            if state in ("failed", "closed"):
                self.post(Closed(f"the connection to the peer {state} ({name})"))
        return watch

    def pop(self) -> TapEvent | None:
        if not self.events:
            return None
        event = self.events.popleft()
        if isinstance(event, Message):
            self._held -= len(event.data)
        return event

    def take_jobs(self) -> list[JobDone]:
        """Remove and return the finished jobs still queued (the transfer ended before it read them)."""
        jobs = [e for e in self.events if isinstance(e, JobDone)]
        kept = [e for e in self.events if not isinstance(e, JobDone)]
        self.events.clear()
        self.events.extend(kept)
        return jobs


def _transports(channel: DataChannel) -> list[tuple[str, StatefulTransport]]:
    """The DTLS and ICE transports under the channel, when it has them."""
    try:
        dtls = channel.transport.transport
        return [("DTLS", dtls), ("ICE", dtls.transport)]
    except AttributeError:  # an in-memory test channel without transports
        return []


# One tap per channel, for as long as the channel lives (the tap must not keep it alive).
_TAPS: weakref.WeakKeyDictionary[DataChannel, ChannelTap] = weakref.WeakKeyDictionary()


def attach(channel: DataChannel) -> ChannelTap:
    """The channel's tap, created on first call: attach early so no frame is lost before a transfer starts."""
    tap = _TAPS.get(channel)
    if tap is None:
        tap = ChannelTap(channel)
        _TAPS[channel] = tap
    return tap
