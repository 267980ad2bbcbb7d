"""Less CPU per megabyte on one peer connection's data path: delayed SACKs (RFC 9260 §6.2) and exact shortcuts
in aiortc's SCTP receive and transmit paths, installed on one connection's objects.

aiortc 1.16 answers every DATA packet with its own SACK (``RTCSctpTransport._handle_data`` ends with
``if self._sack_needed: await self._send_sack()``): for each ~1.2 KB datagram received, a SACK is built,
DTLS-encrypted and sent, and the sender decrypts and processes it. Profiled at 200 MB (18 MB on the wire), that
was ~27 % of the receiving process's samples and ~0.3 s of the sender's. RFC 9260 §6.2 (as RFC 4960) lets a
receiver delay its SACK: at least one for every second packet carrying DATA, within 200 ms, and at once when a
packet arrives out of order (a gap) or twice (a duplicate).

:func:`tune` installs that rule on one connection's ``RTCSctpTransport`` instance (its ``_send_sack`` attribute,
which only ``_handle_data`` calls — no aiortc class is patched):

* a packet that leaves a gap or a duplicate to report gets its SACK at once;
* so does each of the first ``QUICK_PACKETS`` packets, and of the ``QUICK_PACKETS`` after a gap (as TCP's
  quick-ack): that is where a sender is in slow start, growing its window by one packet per SACK — with every
  second packet acknowledged, its window would grow by half instead of doubling each round trip;
* otherwise every second packet sends one;
* a packet left without one looks again one turn of the event loop later: if the loop read more datagrams
  meanwhile (the aioice connection's queue is not empty), the next one sends the SACK; if not, it goes out then
  — microseconds later, not the 200 ms the RFC allows, because an aiortc sender moves at most four new
  packets per SACK or send call and would wait for it.

Looking one turn later, not "is anything queued right now": a receiver that keeps up with its sender finds the
queue empty after almost every packet, and then sent a SACK for each (measured in a real 200 MB handover: as
many SACKs as without the rule).

Every second packet, not once per batch: aiortc as a sender (the other daemon, an older p2pd) sends at most
four new packets per SACK (its max-burst), so a SACK acknowledging more than four packets would shrink its flight;
two keeps it growing. In slow start aiortc grows its window per SACK (by at most one packet's size, RFC 9260
§7.2.1), hence the quick start: measured in one process with 50 ms of delay each way, without it 5 MB took
0.94 s instead of 0.78 s with aiortc's rule.

Two receive-side shortcuts go with it, each exact (the same result as aiortc's code, only cheaper):

* ``_mark_received``: a DATA chunk with the next TSN in order, with no gap or duplicate pending, only moves the
  cumulative TSN (aiortc sorts and rebuilds its gap set and duplicate list for every chunk);
* ``InboundStream.pop_messages``: aiortc rescans a stream's whole reassembly list after every chunk, so a 64 KiB
  message in 57 fragments costs ~1,650 steps; a chunk appended after all others that is not a message's last
  fragment cannot complete a message, so when the last full scan left nothing to deliver, the scan is skipped.

One on the sending side: aiortc's ``_transmit`` (run for every SACK) first walks every chunk in flight looking
for one marked for retransmission — ~900 chunks (a 1 MB window), ~13 µs per walk, a quarter of the sender's CPU.
Chunks are only ever marked by a SACK reporting gaps or by the T3 timer's expiry; while neither has happened
since the last walk found none marked, the walk cannot find anything, and ``_transmit`` runs with an empty
list in its place (the chunks it sends are appended to the real one afterwards; nothing in between can look: no
step of aiortc's send path on aioice 0.13 suspends).

And one on both ends: aioice tries to parse every datagram as STUN before handing it on (a failed parse, an
exception, per packet); a datagram whose first byte says DTLS (20..63, RFC 7983 §7) goes straight to the
connection, anything else takes aioice's path.

Measured (2026-11-26, 2 shared cores, aiortc 1.16, uvloop; CPU seconds user + system, min/median/max; wall
time is noisy here, CPU is the honest figure):

| 50 MB of random bytes, loopback, 5 interleaved runs | stock aiortc | tuned |
|---|---|---|
| bare channel, sender / receiver CPU s | 1.60/1.64/2.10, 1.42/1.45/1.68 | 0.80/0.84/0.95, 0.77/0.82/0.86 |
| protocol (`send_blob`), sender / receiver CPU s | 1.72/1.85/2.00, 1.54/1.60/1.74 | 0.88/0.92/1.01, 0.92/0.94/1.09 |
| bare channel MB/s (best; min/median/max) | 31.1 (13.2/30.5/31.1) | 62.0 (27.6/58.9/62.0) |
| protocol MB/s (best; min/median/max) | 28.0 (13.8/18.0/28.0) | 53.1 (24.3/51.0/53.1) |
| SACKs per DATA packet | 1 | 0.51 (23,388 of 45,776: the first 1,000 one by one) |

A 200 MB handover (`p2pd send` → `p2pd receive`, 18 MB of zstd on the wire, 4 interleaved runs against main
8e518ea): the parent processes alone, sender 1.06/1.11/1.14 → 0.96/1.01/1.05 s, receiver 1.06/1.09/1.17 →
0.91/0.98/1.02 s (with their packing and checking children 3.92 → 3.76 and 2.56 → 2.46 s, medians); the
receiving parent's share of samples in the SCTP/DTLS loop 22.7 % → 12.6 %. Under seeded loss (one process, 2 MB,
time to DONE, 12 seeds at 5 % drop): median 0.1 s both, 3 T3 expiries each (after a gap the quick start acks
each packet, as aiortc does).

The rules reach into private aiortc/aioice attributes, so they are applied only where their shape is the one
they were written for (:func:`shape_problem`, checked against the installed aiortc by
``tests/transfer/test_datapath.py``); anywhere else the connection keeps aiortc's own behaviour.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from p2pd.transfer.sockets import ice_connection, release_problem

SACK_EVERY = 2  # packets with DATA per SACK at most (RFC 9260 §6.2: "at least every second packet")
QUICK_PACKETS = 1000  # packets acknowledged one by one at the start and after a gap (a sender's slow start)
MAX_WAITS = 8  # event-loop turns a SACK owed waits for the DTLS loop to drain what it already read
VERIFIED_AIORTC = ("1.16",)  # aiortc releases whose SCTP transport this was measured against
VERIFIED_AIOICE = ("0.13",)  # aioice releases whose send path never suspends (Transmit relies on it)


def shape_problem(pc: Any) -> str | None:
    """Why :func:`tune` would leave ``pc`` as it is (``None``: it applies): the aiortc release, or the private
    attributes and calls the delayed SACK relies on."""
    import aioice
    import aiortc
    from aiortc.rtcsctptransport import RTCSctpTransport

    for package, verified in ((aiortc, VERIFIED_AIORTC), (aioice, VERIFIED_AIOICE)):
        if (problem := release_problem(package, verified)) is not None:
            return problem
    handle = getattr(RTCSctpTransport, "_handle_data", None)
    names = getattr(getattr(handle, "__code__", None), "co_names", ())
    if not {"_receive_chunk", "_sack_needed", "_send_sack"} <= set(names):
        return "RTCSctpTransport._handle_data no longer ends with its SACK"
    sctp = getattr(pc, "sctp", None)
    if not isinstance(sctp, RTCSctpTransport):
        return "the connection has no SCTP transport"
    receive = getattr(RTCSctpTransport, "_receive_data_chunk", None)
    names = getattr(getattr(receive, "__code__", None), "co_names", ())
    if not {"_mark_received", "_get_inbound_stream", "add_chunk", "pop_messages"} <= set(names):
        return "RTCSctpTransport._receive_data_chunk no longer marks, adds and pops as it did"
    for method, needs in (("_transmit", {"_sent_queue", "_retransmit", "_outbound_queue", "_send_chunk"}),
                          ("_receive_chunk", {"_receive_sack_chunk"}), ("_t3_start", {"_t3_expired"}),
                          ("_t3_restart", {"_t3_expired"}), ("_t3_expired", {"_sent_queue", "_retransmit"})):
        code = getattr(getattr(RTCSctpTransport, method, None), "__code__", None)
        if not needs <= set(getattr(code, "co_names", ())):
            return f"RTCSctpTransport.{method} no longer uses {', '.join(sorted(needs))}"
    for name in ("_send_sack", "_sack_needed", "_sack_duplicates", "_sack_misordered", "_last_received_tsn",
                 "_mark_received", "_get_inbound_stream", "_inbound_streams", "_transmit", "_sent_queue",
                 "_forward_tsn_chunk", "_fast_recovery_transmit", "_t3_handle", "_t3_expired",
                 "_receive_sack_chunk", "_loop"):
        if not hasattr(sctp, name):
            return f"RTCSctpTransport has no {name}"
    from aiortc.rtcsctptransport import InboundStream

    for name in ("add_chunk", "pop_messages", "prune_chunks"):
        if not callable(getattr(InboundStream, name, None)):
            return f"InboundStream has no {name}"
    if _datagram_queue(pc) is None:
        return "the ICE connection's datagram queue is not where it was"
    from aioice.ice import StunProtocol

    names = getattr(getattr(StunProtocol.datagram_received, "__code__", None), "co_names", ())
    if not {"parse_message", "receiver", "data_received", "local_candidate"} <= set(names):
        return "aioice's StunProtocol.datagram_received no longer parses STUN, then hands on the rest"
    return None


def _datagram_queue(pc: Any) -> asyncio.Queue[Any] | None:
    """The aioice connection's queue of received datagrams the DTLS transport reads from."""
    queue = getattr(ice_connection(pc), "_queue", None)
    return queue if isinstance(queue, asyncio.Queue) else None


def tune(pc: Any) -> DelayedSack | None:
    """Delay the SACKs of ``pc``'s SCTP association (module docstring); returns the rule installed, or ``None``
    when it does not apply (:func:`shape_problem`) and the connection is left exactly as aiortc made it."""
    if shape_problem(pc) is not None:
        return None
    sctp = pc.sctp
    queue = _datagram_queue(pc)
    assert queue is not None
    rule = DelayedSack(sctp, sctp._send_sack, queue.qsize)
    sctp._send_sack = rule.owed
    sctp._mark_received = InOrder(sctp, sctp._mark_received).mark_received
    stock_stream = sctp._get_inbound_stream

    def inbound_stream(stream_id: int) -> Any:
        stream = stock_stream(stream_id)
        if "pop_messages" not in vars(stream):
            Reassembly(stream)
        return stream

    sctp._get_inbound_stream = inbound_stream
    Transmit(sctp)
    for protocol in getattr(ice_connection(pc), "_protocols", ()):
        if hasattr(protocol, "receiver") and hasattr(getattr(protocol, "local_candidate", None), "component"):
            Demux(protocol)
    return rule


class DelayedSack:
    """The delayed-SACK rule for one association: :meth:`owed` stands in for its ``_send_sack``."""

    def __init__(self, sctp: Any, send_now: Callable[[], Any], queued: Callable[[], int],
                 quick: int = QUICK_PACKETS) -> None:
        self._sctp = sctp
        self._send_now = send_now  # aiortc's own _send_sack (bound): builds and sends the SACK, clears the flag
        self._queued = queued
        self._packets = 0  # packets that wanted a SACK since the last one went out
        self._quick_packets = quick
        self._quick = quick  # packets still acknowledged one by one
        self._checking = False  # a look at the queue is scheduled
        self._waits = 0
        self._late: asyncio.Future[None] | None = None  # a SACK sent after the batch, from a task of its own
        self.sent = 0  # SACKs sent, of which for a gap or a duplicate; deferred (tests and benchmarks read them)
        self.gaps = 0
        self.deferred = 0

    async def owed(self) -> None:
        """Called by ``_handle_data`` after each packet that asks for a SACK."""
        sctp = self._sctp
        self._packets += 1
        gap = bool(sctp._sack_misordered or sctp._sack_duplicates)
        if self._packets >= SACK_EVERY or gap or self._quick:
            self._quick = self._quick_packets if gap else max(0, self._quick - 1)
            self._packets = 0
            self.sent += 1
            self.gaps += gap
            await self._send_now()
            return
        self.deferred += 1
        if not self._checking:
            self._checking, self._waits = True, 0
            asyncio.get_running_loop().call_soon(self._check)

    def _check(self) -> None:
        """One turn of the event loop later: datagrams read meanwhile go first (the next one sends the SACK);
        with none queued, the SACK owed goes out now."""
        if not (self._packets and self._sctp._sack_needed):
            self._checking = False
            return
        if self._queued() and self._waits < MAX_WAITS:
            self._waits += 1
            asyncio.get_running_loop().call_soon(self._check)
            return
        self._checking = False
        self._packets = 0
        self.sent += 1
        self._late = asyncio.ensure_future(self._send_quietly())

    async def _send_quietly(self) -> None:
        # The association may have closed meanwhile: then there is nothing to acknowledge any more.
        with contextlib.suppress(ConnectionError):
            if self._sctp._sack_needed:
                await self._send_now()


class InOrder:
    """``_mark_received`` of one association, with the in-order case done directly: the next TSN, no gap and no
    duplicate pending — exactly what aiortc's code would conclude (not a duplicate; the cumulative TSN moves
    to it; gap set and duplicate list stay empty)."""

    def __init__(self, sctp: Any, stock: Callable[[int], bool]) -> None:
        self._sctp = sctp
        self._stock = stock

    def mark_received(self, tsn: int) -> bool:
        sctp = self._sctp
        last = sctp._last_received_tsn
        if last is not None and tsn == (last + 1) & 0xFFFFFFFF and not sctp._sack_misordered \
                and not sctp._sack_duplicates:
            sctp._last_received_tsn = tsn
            return False
        return self._stock(tsn)


class Reassembly:
    """An aiortc ``InboundStream`` whose ``pop_messages`` skips the rescan that cannot find anything: after a full
    scan (nothing deliverable was left), a chunk appended after every other one that is not a message's last
    fragment completes no message, and the sequence number has not moved. Anything else (a chunk filling a
    gap, a last fragment, a FORWARD TSN's prune or sequence change) gets aiortc's full scan."""

    LAST_FRAGMENT = 0x01  # SCTP_DATA_LAST_FRAG (RFC 9260 §3.3.1, the E bit)

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._add, self._pop, self._prune = stream.add_chunk, stream.pop_messages, stream.prune_chunks
        self._clean = False  # the last full scan ran to its end: nothing was left to deliver
        self._nothing_new = False  # only a non-last fragment was appended since
        stream.add_chunk, stream.pop_messages, stream.prune_chunks = self.add_chunk, self.pop_messages, self.prune

    def add_chunk(self, chunk: Any) -> None:
        held = self._stream.reassembly
        at_tail = not held or 0 < (chunk.tsn - held[-1].tsn) & 0xFFFFFFFF < 1 << 31  # TSN order, RFC 1982
        self._add(chunk)
        self._nothing_new = self._clean and at_tail and not chunk.flags & self.LAST_FRAGMENT

    def pop_messages(self) -> Iterator[tuple[int, int, bytes]]:
        if self._nothing_new:
            self._nothing_new = False
            return iter(())
        self._clean = False
        return self._scan()

    def _scan(self) -> Iterator[tuple[int, int, bytes]]:
        yield from self._pop()
        self._clean = True

    def prune(self, tsn: int) -> int:
        self._clean = self._nothing_new = False
        result: int = self._prune(tsn)
        return result


class Demux:
    """An aioice ``StunProtocol`` that hands a DTLS datagram to its connection without trying it as STUN first
    (RFC 7983 §7: a first byte of 20..63 is DTLS; STUN's is 0..3). Everything else goes through aioice."""

    def __init__(self, protocol: Any) -> None:
        self._protocol = protocol
        self._stock = protocol.datagram_received
        protocol.datagram_received = self.datagram_received

    def datagram_received(self, data: bytes, addr: tuple[Any, ...]) -> None:
        if data and 19 < data[0] < 64:
            protocol = self._protocol
            protocol.receiver.data_received(data, protocol.local_candidate.component)
        else:
            self._stock(data, addr)


class Transmit:
    """``_transmit`` of one association without its walk over the chunks in flight when none can be marked for
    retransmission (module docstring). Marks come only from a SACK with gaps and from T3's expiry: both set
    ``maybe_marked``; a full walk by aiortc's own ``_transmit`` follows, and a check afterwards clears it."""

    def __init__(self, sctp: Any) -> None:
        self._sctp = sctp
        self._stock = sctp._transmit
        self._stock_sack = sctp._receive_sack_chunk
        self._stock_t3 = sctp._t3_expired
        self.maybe_marked = True  # not known yet: the first call takes the full walk
        self.walks_skipped = 0
        sctp._transmit, sctp._receive_sack_chunk, sctp._t3_expired = self.transmit, self.receive_sack, self.t3_expired
        handle = sctp._t3_handle
        if handle is not None:  # scheduled with aiortc's own method: move it onto ours, same deadline
            handle.cancel()
            sctp._t3_handle = sctp._loop.call_at(handle.when(), self.t3_expired)

    async def receive_sack(self, chunk: Any) -> None:
        if chunk.gaps:
            self.maybe_marked = True
        await self._stock_sack(chunk)

    def t3_expired(self) -> None:
        self.maybe_marked = True
        self._stock_t3()

    async def transmit(self) -> None:
        sctp = self._sctp
        if self.maybe_marked or sctp._forward_tsn_chunk is not None or sctp._fast_recovery_transmit:
            await self._stock()
            self.maybe_marked = any(chunk._retransmit for chunk in sctp._sent_queue)
            return
        held = sctp._sent_queue
        sent: deque[Any] = deque()
        sctp._sent_queue = sent
        self.walks_skipped += 1
        try:
            await self._stock()  # nothing marked: its walk has nothing to do; what it sends lands in `sent`
        finally:
            held.extend(sent)
            sctp._sent_queue = held
