"""The event tap: a channel's events become one ordered queue, from the moment it is attached."""

from __future__ import annotations

import gc
import weakref

from p2pd.transfer.jobs import JobDone, JobKind
from p2pd.transfer.tap import TAP_LIMIT, Closed, Message, Overflow, attach
from tests.transfer.memchannel import Emitter, MemChannel, mem_pair


class Transport(Emitter):
    def __init__(self, inner: Transport | None = None) -> None:
        super().__init__()
        self.state = "connected"
        self.transport = inner


class Sctp:
    def __init__(self, dtls: Transport) -> None:
        self.transport = dtls


async def test_messages_close_and_jobs_are_queued_in_arrival_order() -> None:
    a, _ = mem_pair()
    tap = attach(a)
    a.emit("message", b"one")
    tap.post(JobDone(JobKind.READ, b"data"))
    a.emit("message", b"two")
    a.emit("close")
    assert tap.wake.is_set()
    events = [tap.pop() for _ in range(5)]
    assert events == [Message(b"one"), JobDone(JobKind.READ, b"data"), Message(b"two"),
                      Closed("the data channel was closed"), None]


async def test_attach_is_idempotent_and_detach_stops_listening() -> None:
    a, _ = mem_pair()
    tap = attach(a)
    assert attach(a) is tap and a.listeners() == 4
    tap.detach()
    assert a.listeners() == 0
    a.emit("message", b"late")
    assert tap.pop() is None
    assert attach(a) is not tap  # a later transfer gets a fresh tap


async def test_a_channel_closed_before_attaching_is_reported() -> None:
    a = MemChannel()
    a.readyState = "closed"
    assert attach(a).pop() == Closed("the data channel is closed")


async def test_more_than_the_limit_unread_is_an_overflow_and_later_messages_are_dropped() -> None:
    a, _ = mem_pair()
    tap = attach(a)
    piece = b"x" * 65536
    sent = 0
    while sent <= TAP_LIMIT:
        a.emit("message", piece)
        sent += len(piece)
    a.emit("message", b"after")
    events = []
    while (event := tap.pop()) is not None:
        events.append(event)
    assert events[-1] == Overflow() and all(isinstance(e, Message) for e in events[:-1])
    assert sum(len(e.data) for e in events[:-1]) <= TAP_LIMIT


async def test_dtls_or_ice_failing_closes_the_transfer_with_its_name() -> None:
    ice = Transport()
    dtls = Transport(ice)
    a = MemChannel()
    a.transport = Sctp(dtls)  # type: ignore[attr-defined]
    a.readyState = "open"
    tap = attach(a)
    ice.state = "checking"
    ice.emit("statechange")
    assert tap.pop() is None  # not a failure
    ice.state = "failed"
    ice.emit("statechange")
    dtls.state = "closed"
    dtls.emit("statechange")
    assert [tap.pop(), tap.pop()] == [Closed("the connection to the peer failed (ICE)"),
                                      Closed("the connection to the peer closed (DTLS)")]
    tap.detach()
    assert ice.listeners() == dtls.listeners() == 0


async def test_the_tap_does_not_keep_its_channel_alive() -> None:
    a = MemChannel()
    attach(a)
    ref = weakref.ref(a)
    del a
    gc.collect()
    assert ref() is None
