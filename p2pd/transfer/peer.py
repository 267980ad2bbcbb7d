"""Making the WebRTC peer connection: one pre-negotiated, reliable, ordered data channel, set up through a
caller-supplied (sealed) signaling exchange.

aiortc gathers all ICE candidates before ``setLocalDescription`` returns (no trickle), so the offer and the
answer each travel as one message with their candidates inside; both are sealed by the pairing layer, so the
signaling server can neither read them nor swap in its own DTLS fingerprint.

ICE servers come from configuration (:mod:`p2pd.config`: ``P2PD_ICE_SERVERS`` or ``ice_servers`` in the
config file) merged with what the signaling server handed out (``server_ice``); there are none by default and
never a public one silently. :mod:`p2pd.transfer.ice` probes the TURN URLs, describes the path taken
(``PeerLink.path``) and explains a failure. ``P2PD_ICE_HOST_ADDRESSES`` (comma
separated) restricts the host candidates, e.g. ``127.0.0.1`` to keep both peers on loopback — aioice leaves
127.0.0.1 out of its host candidates otherwise.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from p2pd.transfer import lazydns, nomedia  # noqa: F401  (first: aiortc comes without PyAV, dnspython deferred)

# isort: split
from aiortc import RTCDataChannel, RTCIceServer, RTCPeerConnection, RTCSessionDescription

from p2pd.errors import ConnectionFailedError, ProtocolError
from p2pd.transfer import ice as icepath
from p2pd.transfer.datapath import tune
from p2pd.transfer.directfirst import prefer_direct
from p2pd.transfer.quickice import hasten
from p2pd.transfer.sockets import widen_buffers
from p2pd.transfer.tap import attach

CHANNEL_LABEL = "p2pd"
CHANNEL_ID = 0
_MMS = re.compile(r"^a=max-message-size:(\d+)", re.MULTILINE)

SendSignal = Callable[[dict[str, Any]], Awaitable[None]]
RecvSignal = Callable[[], Awaitable[dict[str, Any]]]


def restrict_host_addresses() -> None:
    """Apply ``P2PD_ICE_HOST_ADDRESSES`` to aioice's host-candidate gathering (process-wide)."""
    wanted = [a.strip() for a in os.environ.get("P2PD_ICE_HOST_ADDRESSES", "").split(",") if a.strip()]
    if not wanted:
        return
    import aioice.ice

    def host_addresses(use_ipv4: bool, use_ipv6: bool) -> list[str]:
        return [a for a in wanted if (":" in a and use_ipv6) or (":" not in a and use_ipv4)]

    aioice.ice.get_host_addresses = host_addresses


@dataclass
class PeerLink:
    pc: RTCPeerConnection
    channel: RTCDataChannel
    remote_max_message_size: int | None
    path: icepath.IcePath | None = None

    async def close(self) -> None:
        await self.pc.close()


def _remote_mms(sdp: str) -> int | None:
    m = _MMS.search(sdp)
    return int(m.group(1)) if m else None


async def connect(role: str, send: SendSignal, recv: RecvSignal, *, ice_servers: list[RTCIceServer] | None = None,
                  timeout: float | None = None, server_ice: Sequence[Any] = (), relay_only: bool | None = None,
                  status: icepath.Status | None = None) -> PeerLink:
    """Offer (``role="offer"``) or answer (``role="answer"``) and wait until the data channel is open.

    ``server_ice``: what the signaling server handed out; ``status`` hears what happens (relay checks,
    gathering, checking, the path taken). On failure: :class:`ConnectionFailedError` with the reason in
    ``details["reason"]`` (:class:`p2pd.transfer.ice.Failure`) and in words."""
    from p2pd.config import connect_timeout
    from p2pd.config import ice_servers as local_ice
    from p2pd.config import relay_only as relay_only_default

    restrict_host_addresses()
    timeout = connect_timeout() if timeout is None else timeout
    local = [{"urls": s.urls, "username": s.username, "credential": s.credential} for s in ice_servers] \
        if ice_servers is not None else local_ice()
    plan = await icepath.plan(icepath.merge(local, server_ice), status=status,
                              relay_only=relay_only_default() if relay_only is None else relay_only)
    if plan.relay_only and plan.turn is None:
        reason, why = icepath.explain(plan)
        raise ConnectionFailedError(f"relay-only is set, but no relay can be used: {why}",
                                    details={"reason": reason.value})
    pc = RTCPeerConnection(plan.configuration())
    _watch(pc, status, plan)
    channel = pc.createDataChannel(CHANNEL_LABEL, negotiated=True, id=CHANNEL_ID, ordered=True)
    hasten(pc)  # on to DTLS once ICE's check list is completed, not after aioice's next 20 ms pause (quickice.py)
    prefer_direct(pc)  # a relayed pair is not nominated while a direct path is opening (directfirst.py)
    # Queue what arrives from the first moment: the peer may send its first frame as soon as the channel opens,
    # before our side has started its transfer.
    tap = attach(channel)
    opened = asyncio.get_running_loop().create_future()
    failed = asyncio.get_running_loop().create_future()

    @channel.on("open")
    def _on_open() -> None:
        if not opened.done():
            opened.set_result(True)

    @pc.on("connectionstatechange")
    async def _on_state() -> None:
        if pc.connectionState == "failed" and not failed.done():
            failed.set_result("no peer connection could be made (ICE failed)")

    try:
        async with asyncio.timeout(timeout):
            if role == "offer":
                await pc.setLocalDescription(await pc.createOffer())
                await send({"type": "offer", "sdp": pc.localDescription.sdp})
                answer = await recv()
                if answer.get("type") != "answer" or not isinstance(answer.get("sdp"), str):
                    raise ProtocolError("the peer sent something other than an SDP answer")
                remote_sdp = answer["sdp"]
                await pc.setRemoteDescription(RTCSessionDescription(sdp=remote_sdp, type="answer"))
            else:
                offer = await recv()
                if offer.get("type") != "offer" or not isinstance(offer.get("sdp"), str):
                    raise ProtocolError("the peer sent something other than an SDP offer")
                remote_sdp = offer["sdp"]
                await pc.setRemoteDescription(RTCSessionDescription(sdp=remote_sdp, type="offer"))
                await pc.setLocalDescription(await pc.createAnswer())
                await send({"type": "answer", "sdp": pc.localDescription.sdp})
            done, _ = await asyncio.wait({opened, failed}, return_when=asyncio.FIRST_COMPLETED)
            if failed in done:
                raise ConnectionFailedError(failed.result())
    except TimeoutError:
        await pc.close()
        reason, why = icepath.explain(plan)
        raise ConnectionFailedError(f"no peer connection within {timeout:.0f} s: {why}",
                                    details={"reason": reason.value}) from None
    except ConnectionFailedError:
        await pc.close()
        reason, why = icepath.explain(plan)
        raise ConnectionFailedError(f"no peer connection: {why}", details={"reason": reason.value}) from None
    except BaseException:
        await pc.close()
        raise
    widen_buffers(pc)
    tune(pc)  # delayed SACKs: less CPU per MB on both ends (datapath.py)
    path = icepath.selected_path(pc, plan)
    if status is not None and path is not None:
        status(f"connected: {path.describe()}")
    link = PeerLink(pc, channel, _remote_mms(remote_sdp), path)
    tap.remote_max_message_size = link.remote_max_message_size  # aiortc refuses larger messages in send()
    return link


def _watch(pc: RTCPeerConnection, status: icepath.Status | None, plan: icepath.IcePlan) -> None:
    """Status lines while connecting: gathering, checking."""
    if status is None:
        return
    say = status
    kinds = ([] if plan.relay_only else ["local"]) + (["STUN"] if any(not s.is_turn for s in plan.servers) else []) \
        + ([f"relay over {plan.turn.transport.upper()}"] if plan.turn is not None else [])

    @pc.on("icegatheringstatechange")
    def _gathering() -> None:
        if pc.iceGatheringState == "gathering":
            say(f"gathering addresses ({', '.join(kinds) or 'none'})")

    @pc.on("iceconnectionstatechange")
    def _checking() -> None:
        if pc.iceConnectionState == "checking":
            say("checking paths to the peer")
