"""Real aiortc peers on loopback for tests and benchmarks: in one process, or across processes via pipes.

aioice leaves 127.0.0.1 out of its host candidates; :func:`force_loopback` makes it offer only that address,
so the peers never touch another interface. No STUN/TURN servers are configured (``iceServers=[]``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import aioice.ice
from aiortc import RTCConfiguration, RTCDataChannel, RTCPeerConnection, RTCSessionDescription

CHANNEL_LABEL = "p2pd-transfer"


def force_loopback() -> None:
    aioice.ice.get_host_addresses = lambda use_ipv4, use_ipv6: ["127.0.0.1"]  # type: ignore[assignment]


def new_peer() -> RTCPeerConnection:
    force_loopback()
    return RTCPeerConnection(RTCConfiguration(iceServers=[]))


def channel(pc: RTCPeerConnection, channel_id: int = 0) -> RTCDataChannel:
    """A pre-negotiated, reliable, ordered channel (both peers create it with the same id)."""
    return pc.createDataChannel(f"{CHANNEL_LABEL}-{channel_id}", negotiated=True, id=channel_id, ordered=True)


def description_to_json(desc: RTCSessionDescription) -> str:
    return json.dumps({"type": desc.type, "sdp": desc.sdp})


def description_from_json(text: str) -> RTCSessionDescription:
    obj = json.loads(text)
    return RTCSessionDescription(sdp=obj["sdp"], type=obj["type"])


async def make_offer(pc: RTCPeerConnection) -> str:
    await pc.setLocalDescription(await pc.createOffer())
    return description_to_json(pc.localDescription)


async def make_answer(pc: RTCPeerConnection, offer_json: str) -> str:
    await pc.setRemoteDescription(description_from_json(offer_json))
    await pc.setLocalDescription(await pc.createAnswer())
    return description_to_json(pc.localDescription)


async def wait_open(ch: RTCDataChannel, timeout: float = 10.0) -> None:
    import asyncio

    async with asyncio.timeout(timeout):
        while ch.readyState != "open":
            await asyncio.sleep(0.01)


@contextlib.asynccontextmanager
async def connected_pair(*, widen: bool = True) -> AsyncIterator[tuple[RTCPeerConnection, RTCPeerConnection]]:
    """Two connected peers in this process. Create channels with :func:`channel` on both (same id).

    Their UDP buffers are widened as ``p2pd.transfer.peer.connect`` widens them (``widen=False`` keeps the kernel's
    default ones): with the defaults a starved process drops datagrams, and SCTP's retransmission (1 s at the
    least) silences the channel long enough to fire a short idle timeout."""
    from p2pd.transfer.sockets import widen_buffers

    a, b = new_peer(), new_peer()
    try:
        channel(a, 0), channel(b, 0)  # an SCTP m-line in the SDP needs a channel before the offer
        answer = await make_answer(b, await make_offer(a))
        await a.setRemoteDescription(description_from_json(answer))
        if widen:
            widen_buffers(a), widen_buffers(b)
        yield a, b
    finally:
        await a.close()
        await b.close()


def channel_pair(a: RTCPeerConnection, b: RTCPeerConnection, channel_id: int) -> tuple[Any, Any]:
    return channel(a, channel_id), channel(b, channel_id)


async def open_channels(a: RTCPeerConnection, b: RTCPeerConnection, channel_id: int = 2) -> tuple[Any, Any]:
    """Both ends of one negotiated channel, attached to p2pd's channel adapter and open."""
    from p2pd.transfer.channel import attach

    ca, cb = channel_pair(a, b, channel_id)
    attach(ca), attach(cb)
    await wait_open(ca)
    await wait_open(cb)
    return ca, cb


async def accept_all(offer: Any) -> bool:
    """A receiver's answer to every offer: yes."""
    return True


@contextlib.asynccontextmanager
async def ice_pair(adapt: Callable[[aioice.Connection], object] = lambda conn: None) \
        -> AsyncIterator[tuple[aioice.Connection, aioice.Connection]]:
    """Two real aioice connections on loopback, controlling and controlled, each told the other's candidates and
    credentials and passed to ``adapt`` (p2pd's per-connection adaptations), before either connects; closed after."""
    force_loopback()
    a, b = aioice.Connection(ice_controlling=True), aioice.Connection(ice_controlling=False)
    await asyncio.gather(a.gather_candidates(), b.gather_candidates())
    for me, peer in ((a, b), (b, a)):
        for candidate in peer.local_candidates:
            await me.add_remote_candidate(candidate)
        await me.add_remote_candidate(None)
        me.remote_username, me.remote_password = peer.local_username, peer.local_password
        adapt(me)
    try:
        yield a, b
    finally:
        await asyncio.gather(a.close(), b.close())


@contextlib.asynccontextmanager
async def p2pd_links() -> AsyncIterator[tuple[Any, Any]]:
    """Two of p2pd's own peer connections (:func:`p2pd.transfer.peer.connect`, with every per-connection adaptation),
    the offer and the answer carried over in-memory queues; closed after. (Set ``P2PD_ICE_HOST_ADDRESSES`` to
    127.0.0.1 first.)"""
    from p2pd.transfer.peer import connect

    a_to_b: asyncio.Queue[Any] = asyncio.Queue()
    b_to_a: asyncio.Queue[Any] = asyncio.Queue()
    a, b = await asyncio.gather(connect("offer", a_to_b.put, b_to_a.get, timeout=20),
                                connect("answer", b_to_a.put, a_to_b.get, timeout=20))
    try:
        yield a, b
    finally:
        await a.close()
        await b.close()
