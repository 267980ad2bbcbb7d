"""Delayed SACKs on a real aiortc association (p2pd.transfer.datapath): the installed aiortc still has the shape
the rule relies on, the rule itself, fallback to stock aiortc, and transfers that stay intact when datagrams are
lost, duplicated and reordered on the way (seeded; the seed is printed)."""

from __future__ import annotations

import asyncio
import os
import random
import socket
from collections import deque
from pathlib import Path
from typing import Any

import pytest
from aiortc.rtcsctptransport import (
    SCTP_DATA_FIRST_FRAG,
    SCTP_DATA_LAST_FRAG,
    DataChunk,
    InboundStream,
    RTCSctpTransport,
)

from p2pd.blob import container as blob
from p2pd.transfer import datapath, sockets
from p2pd.transfer.channel import receive_blob, send_blob
from p2pd.transfer.datapath import DelayedSack, Demux, InOrder, Reassembly, Transmit, shape_problem, tune
from p2pd.transfer.frames import MAX_MESSAGE_SIZE, OfferInfo
from tests.transfer.rtc import accept_all, connected_pair, open_channels

INFO = OfferInfo("Datapath test", "claude-code", "session-1", 3)
SEED = int(os.environ.get("P2PD_DATAPATH_SEED", random.randrange(2**32)))


async def test_the_installed_aiortc_has_the_shape_the_rule_needs() -> None:
    """Fails when an aiortc upgrade moves what the delayed SACK reaches into: then p2pd would silently fall back
    to a SACK per packet — look at datapath.py again, and add the release to VERIFIED_AIORTC once it is right."""
    async with connected_pair() as (a, b):
        await open_channels(a, b)
        assert shape_problem(a) is None
        rule = tune(a)
        assert rule is not None and a.sctp._send_sack == rule.owed
        nominated = a.sctp.transport.transport._connection._nominated[1].protocol
        assert isinstance(nominated.datagram_received.__self__, Demux)
        assert "_send_sack" not in vars(b.sctp)  # the other connection, and the class, are untouched
        assert RTCSctpTransport._send_sack is not rule.owed


async def test_the_udp_buffers_of_a_connection_grow() -> None:
    """p2pd.transfer.sockets on the event loop's socket objects (uvloop here, as in p2pd)."""
    async with connected_pair(widen=False) as (a, b):
        await open_channels(a, b)
        socks = list(sockets.udp_sockets(a))
        assert socks
        before = [s.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) for s in socks]
        assert sockets.widen_buffers(a, 2 * max(before)) == len(socks)
        after = [s.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) for s in socks]
        assert all(x > y for x, y in zip(after, before, strict=True)), (before, after)


async def test_an_unknown_shape_keeps_aiortcs_behaviour(monkeypatch: pytest.MonkeyPatch) -> None:
    class NoSctp:
        sctp = None

    assert shape_problem(NoSctp()) == "the connection has no SCTP transport"
    assert tune(NoSctp()) is None
    async with connected_pair() as (a, b):
        await open_channels(a, b)
        monkeypatch.setattr("aiortc.__version__", "9.0.0")
        assert shape_problem(a) == "aiortc 9.0.0 is not one of 1.16"
        assert tune(a) is None and "_send_sack" not in vars(a.sctp)


class FakeSctp:
    """The three attributes the rule reads, and aiortc's _send_sack's effect on them."""

    def __init__(self) -> None:
        self._sack_needed = False
        self._sack_misordered: set[int] = set()
        self._sack_duplicates: list[int] = []
        self.sacks = 0

    async def send_sack(self) -> None:
        self.sacks += 1
        self._sack_needed = False
        self._sack_duplicates.clear()


async def test_every_second_packet_at_once_on_gaps_or_duplicates_and_after_the_batch() -> None:
    sctp, queued = FakeSctp(), [5]
    rule = DelayedSack(sctp, sctp.send_sack, lambda: queued[0], quick=0)

    async def packet() -> None:
        sctp._sack_needed = True
        await rule.owed()

    await packet()
    assert sctp.sacks == 0  # one packet: wait
    await packet()
    assert sctp.sacks == 1  # the second packet
    sctp._sack_misordered.add(7)
    await packet()
    assert sctp.sacks == 2  # a gap: at once
    sctp._sack_misordered.clear()
    sctp._sack_duplicates.append(3)
    await packet()
    assert sctp.sacks == 3  # a duplicate: at once
    await packet()
    for _ in range(datapath.MAX_WAITS - 1):  # datagrams still queued: the DTLS loop takes them first
        await asyncio.sleep(0)
        assert sctp.sacks == 3
    queued[0] = 0
    while sctp.sacks == 3:  # nothing queued any more: the SACK owed goes out
        await asyncio.sleep(0)
    assert sctp.sacks == 4 and not sctp._sack_needed
    await packet()
    while sctp.sacks == 4:
        await asyncio.sleep(0)
    assert (rule.sent, rule.gaps, rule.deferred) == (5, 2, 3)


async def test_a_sack_owed_does_not_wait_for_ever_behind_a_queue() -> None:
    sctp = FakeSctp()
    rule = DelayedSack(sctp, sctp.send_sack, lambda: 3, quick=0)  # the queue never drains (the DTLS loop is stuck)
    sctp._sack_needed = True
    await rule.owed()
    turns = 0
    while sctp.sacks == 0:
        await asyncio.sleep(0)
        turns += 1
    assert turns <= datapath.MAX_WAITS + 2 and not sctp._sack_needed and rule.sent == 1


async def test_one_sack_per_packet_at_the_start_and_after_a_gap() -> None:
    sctp = FakeSctp()
    rule = DelayedSack(sctp, sctp.send_sack, lambda: 5, quick=3)

    async def packet() -> None:
        sctp._sack_needed = True
        await rule.owed()

    for n in range(1, 4):  # a sender's slow start: each packet acknowledged
        await packet()
        assert sctp.sacks == n
    await packet()
    await packet()
    assert sctp.sacks == 4  # then every second one
    sctp._sack_misordered.add(9)
    await packet()
    sctp._sack_misordered.clear()
    assert sctp.sacks == 5
    for n in range(6, 9):  # after a gap (a loss: the sender may start slowly again), each one again
        await packet()
        assert sctp.sacks == n
    await packet()
    assert sctp.sacks == 8 and rule.deferred == 2


async def test_a_real_association_sends_half_the_sacks_after_its_start(tmp_path: Path) -> None:
    raw = random.Random(f"{SEED}-plain").randbytes(5_000_000)
    path = tmp_path / "x.blob"
    path.write_bytes(blob.encode(raw))
    async with connected_pair() as (a, b):
        ca, cb = await open_channels(a, b)
        tune(a)
        rule = tune(b)
        assert rule is not None
        _, got = await asyncio.gather(send_blob(ca, path, INFO, max_message_size=MAX_MESSAGE_SIZE),
                                      receive_blob(cb, tmp_path / "in", decide=accept_all))
    assert blob.read(got.path) == raw
    packets = rule.sent + rule.deferred
    print(f"receiver: {rule.sent} SACKs for {packets} packets ({rule.gaps} for gaps)")
    assert packets > 4000 and rule.deferred > (packets - datapath.QUICK_PACKETS) // 3


def arrivals(rng: random.Random, count: int) -> list[int]:
    """TSN positions 0..count-1 in a near order: some swapped, some repeated later (duplicates)."""
    order = list(range(count))
    for _ in range(count // 10):
        i = rng.randrange(count - 3)
        j = i + rng.randrange(1, 4)
        order[i], order[j] = order[j], order[i]
    for _ in range(count // 20):
        at = rng.randrange(1, count)
        order.insert(at, order[rng.randrange(at)])
    return order


def test_in_order_marking_concludes_what_aiortc_does() -> None:
    print(f"datapath seed {SEED} (P2PD_DATAPATH_SEED)")
    rng = random.Random(f"{SEED}-mark")
    start = 2**32 - 500  # across the TSN wrap
    stock = type("State", (), {})()
    fast = type("State", (), {})()
    for state in (stock, fast):
        state._last_received_tsn = (start - 1) % 2**32
        state._sack_misordered, state._sack_duplicates = set(), []
    mark = InOrder(fast, lambda tsn: RTCSctpTransport._mark_received(fast, tsn)).mark_received
    for n, position in enumerate(arrivals(rng, 2000)):
        tsn = (start + position) % 2**32
        assert mark(tsn) == RTCSctpTransport._mark_received(stock, tsn), n
        assert (fast._last_received_tsn, fast._sack_misordered, fast._sack_duplicates) == \
            (stock._last_received_tsn, stock._sack_misordered, stock._sack_duplicates), n
        if rng.random() < 0.3:  # a SACK went out
            stock._sack_duplicates.clear(), fast._sack_duplicates.clear()


def test_reassembly_delivers_what_aiortc_delivers() -> None:
    print(f"datapath seed {SEED} (P2PD_DATAPATH_SEED)")
    rng = random.Random(f"{SEED}-reassembly")
    start = 2**32 - 300
    chunks: list[tuple[int, int, int]] = []  # (flags, stream_seq, message byte) by TSN position
    for seq in range(120):
        fragments = rng.choice([1, 1, 2, 5, 57])
        for k in range(fragments):
            flags = (SCTP_DATA_FIRST_FRAG if k == 0 else 0) | (SCTP_DATA_LAST_FRAG if k == fragments - 1 else 0)
            chunks.append((flags, seq, seq % 256))
    stock, fast = InboundStream(), InboundStream()
    Reassembly(fast)
    seen: set[int] = set()
    delivered = 0
    for n, position in enumerate(arrivals(rng, len(chunks))):
        if position in seen:  # _mark_received keeps duplicates from the streams
            continue
        seen.add(position)
        flags, seq, byte = chunks[position]
        for stream in (stock, fast):
            chunk = DataChunk(flags)
            chunk.tsn, chunk.stream_id, chunk.stream_seq, chunk.protocol = (start + position) % 2**32, 1, seq, 53
            chunk.user_data = bytes([byte, position % 256])
            stream.add_chunk(chunk)
        expected = list(stock.pop_messages())
        assert list(fast.pop_messages()) == expected, n
        delivered += len(expected)
        assert [c.tsn for c in fast.reassembly] == [c.tsn for c in stock.reassembly]
    assert delivered == 120 and not fast.reassembly


class Chunk:
    def __init__(self, tsn: int) -> None:
        self.tsn, self._retransmit = tsn, False


class FakeSender:
    """What Transmit touches of an association; ``_transmit`` records the list it walked and sends one chunk."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._sent_queue = deque(Chunk(n) for n in range(5))
        self._forward_tsn_chunk = None
        self._fast_recovery_transmit = False
        self._loop = loop
        self.walked: list[list[int]] = []
        self.expired = 0
        self.next_tsn = 5
        self._t3_handle: asyncio.TimerHandle | None = loop.call_later(30, self._t3_expired)

    async def _transmit(self) -> None:
        self.walked.append([c.tsn for c in self._sent_queue])
        for c in self._sent_queue:
            c._retransmit = False
        self._sent_queue.append(Chunk(self.next_tsn))
        self.next_tsn += 1

    async def _receive_sack_chunk(self, chunk: Any) -> None:
        for c in self._sent_queue:
            c._retransmit = bool(chunk.gaps) and c.tsn == 2

    def _t3_expired(self) -> None:
        self.expired += 1
        for c in self._sent_queue:
            c._retransmit = True


async def test_the_walk_over_chunks_in_flight_is_skipped_only_while_nothing_can_be_marked() -> None:
    sender = FakeSender(asyncio.get_running_loop())
    deadline = sender._t3_handle.when() if sender._t3_handle else None
    rule = Transmit(sender)
    assert sender._t3_handle is not None and sender._t3_handle.when() == deadline  # moved onto the rule
    await sender._transmit()
    assert sender.walked[-1] == [0, 1, 2, 3, 4]  # not known at first: the full walk
    await sender._transmit()
    assert sender.walked[-1] == [] and [c.tsn for c in sender._sent_queue] == [0, 1, 2, 3, 4, 5, 6]
    assert rule.walks_skipped == 1

    class Sack:
        gaps = ((2, 2),)

    await sender._receive_sack_chunk(Sack())  # a SACK with gaps may mark chunks
    await sender._transmit()
    assert sender.walked[-1] == [0, 1, 2, 3, 4, 5, 6]
    await sender._transmit()
    assert sender.walked[-1] == []
    sender._t3_expired()  # T3 marks them all
    assert sender.expired == 1
    await sender._transmit()
    assert len(sender.walked[-1]) == 9
    sender._fast_recovery_transmit = True
    await sender._transmit()
    assert len(sender.walked[-1]) == 10
    assert [c.tsn for c in sender._sent_queue] == list(range(11))
    assert sender._t3_handle is not None
    sender._t3_handle.cancel()


def test_dtls_datagrams_skip_the_stun_parse_and_the_rest_does_not() -> None:
    heard: list[tuple[str, bytes]] = []

    class Protocol:
        class receiver:  # the connection
            @staticmethod
            def data_received(data: bytes, component: int) -> None:
                heard.append(("data", data))

        class local_candidate:
            component = 1

        def datagram_received(self, data: bytes, addr: tuple[Any, ...]) -> None:
            heard.append(("aioice", data))

    protocol = Protocol()
    Demux(protocol)
    for first in (0, 1, 19, 20, 23, 63, 64, 128):
        protocol.datagram_received(bytes([first, 0xFE]), ("127.0.0.1", 9))
    protocol.datagram_received(b"", ("127.0.0.1", 9))
    assert [(who, data[:1]) for who, data in heard] == [
        ("aioice", b"\x00"), ("aioice", b"\x01"), ("aioice", b"\x13"), ("data", b"\x14"), ("data", b"\x17"),
        ("data", b"\x3f"), ("aioice", b"\x40"), ("aioice", b"\x80"), ("aioice", b"")]


class Lossy:
    """Drops, duplicates and reorders the datagrams one aioice connection hands to its DTLS transport (an
    instance attribute over ``Connection.data_received``), seeded."""

    def __init__(self, pc: Any, rng: random.Random, drop: float, duplicate: float, reorder: float) -> None:
        self.connection = pc.sctp.transport.transport._connection
        self.deliver = self.connection.data_received
        self.rng, self.drop, self.duplicate, self.reorder = rng, drop, duplicate, reorder
        self.held: tuple[bytes, int] | None = None
        self.counts = {"dropped": 0, "duplicated": 0, "reordered": 0, "passed": 0}
        self.connection.data_received = self.data_received

    def data_received(self, data: bytes, component: int) -> None:
        roll = self.rng.random()
        if roll < self.drop:
            self.counts["dropped"] += 1
            return
        if roll < self.drop + self.reorder and self.held is None:
            self.counts["reordered"] += 1
            self.held = (data, component)
            return
        self.counts["passed"] += 1
        self.deliver(data, component)
        if roll > 1 - self.duplicate:
            self.counts["duplicated"] += 1
            self.deliver(data, component)
        if self.held is not None:
            self.deliver(*self.held)
            self.held = None


@pytest.mark.parametrize("tuned", ["both", "receiver", "sender"])
async def test_transfers_stay_intact_through_loss_duplicates_and_reordering(tmp_path: Path, tuned: str) -> None:
    print(f"datapath seed {SEED} (P2PD_DATAPATH_SEED)")
    rng = random.Random(f"{SEED}-{tuned}")
    raw = rng.randbytes(3_000_000)
    path = tmp_path / "x.blob"
    path.write_bytes(blob.encode(raw))
    async with connected_pair() as (a, b):
        ca, cb = await open_channels(a, b)
        rules = {side: tune(pc) for side, pc in (("sender", a), ("receiver", b)) if tuned in (side, "both")}
        lossy = [Lossy(pc, rng, drop=0.02, duplicate=0.01, reorder=0.02) for pc in (a, b)]
        result, got = await asyncio.wait_for(asyncio.gather(
            send_blob(ca, path, INFO, max_message_size=MAX_MESSAGE_SIZE),
            receive_blob(cb, tmp_path / "in", decide=accept_all)), 120)
    assert blob.read(got.path) == raw
    assert result.bytes_sent == path.stat().st_size - 60
    print("sender side", lossy[0].counts, "receiver side", lossy[1].counts)
    assert lossy[1].counts["dropped"] and lossy[1].counts["duplicated"] and lossy[1].counts["reordered"]
    sender_rule = rules.get("sender")
    if sender_rule is not None:
        walks = a.sctp._transmit.__self__.walks_skipped
        print(f"sender: {walks} walks over the chunks in flight skipped")
        assert walks > 0
    receiver_rule = rules.get("receiver")
    if receiver_rule is not None:
        print(f"receiver: {receiver_rule.sent} SACKs sent ({receiver_rule.gaps} for gaps), "
              f"{receiver_rule.deferred} deferred")
        assert receiver_rule.gaps > 0
