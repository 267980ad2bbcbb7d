"""Making the WebRTC peer connection: one pre-negotiated, reliable, ordered data channel, set up through a
caller-supplied (sealed) signaling exchange.

aiortc gathers all ICE candidates before ``setLocalDescription`` returns (no trickle), so the offer and the
answer each travel as one message with their candidates inside; both are sealed by the pairing layer, so the
signaling server can neither read them nor swap in its own DTLS fingerprint.

ICE servers come from configuration only (:mod:`p2pd.config`: ``P2PD_ICE_SERVERS`` or ``ice_servers`` in the
config file); there are none by default and never a public one silently. ``P2PD_ICE_HOST_ADDRESSES`` (comma
separated) restricts the host candidates, e.g. ``127.0.0.1`` to keep both peers on loopback — aioice leaves
127.0.0.1 out of its host candidates otherwise.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiortc import RTCConfiguration, RTCDataChannel, RTCIceServer, RTCPeerConnection, RTCSessionDescription

from p2pd.errors import ConnectionFailedError, TransferFailedError

CHANNEL_LABEL = "p2pd"
CHANNEL_ID = 0
DEFAULT_CONNECT_TIMEOUT = 30.0
_MMS = re.compile(r"^a=max-message-size:(\d+)", re.MULTILINE)

SendSignal = Callable[[dict[str, Any]], Awaitable[None]]
RecvSignal = Callable[[], Awaitable[dict[str, Any]]]


def configured_ice_servers() -> list[RTCIceServer]:
    """ICE servers from the user's configuration (see :mod:`p2pd.config`); none by default."""
    from p2pd.config import ice_servers

    return [RTCIceServer(urls=i["urls"], username=i.get("username"), credential=i.get("credential"))
            for i in ice_servers()]


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

    async def close(self) -> None:
        await self.pc.close()


def _remote_mms(sdp: str) -> int | None:
    m = _MMS.search(sdp)
    return int(m.group(1)) if m else None


async def connect(role: str, send: SendSignal, recv: RecvSignal, *, ice_servers: list[RTCIceServer] | None = None,
                  timeout: float = DEFAULT_CONNECT_TIMEOUT) -> PeerLink:
    """Offer (``role="offer"``) or answer (``role="answer"``) and wait until the data channel is open."""
    restrict_host_addresses()
    servers = ice_servers if ice_servers is not None else configured_ice_servers()
    pc = RTCPeerConnection(RTCConfiguration(iceServers=servers))
    channel = pc.createDataChannel(CHANNEL_LABEL, negotiated=True, id=CHANNEL_ID, ordered=True)
    # Queue what arrives from the first moment: the peer may send its first frame as soon as the channel opens,
    # before our side has started its transfer.
    from p2pd.transfer.channel import attach

    attach(channel)
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
                    raise TransferFailedError("the peer sent something other than an SDP answer")
                remote_sdp = answer["sdp"]
                await pc.setRemoteDescription(RTCSessionDescription(sdp=remote_sdp, type="answer"))
            else:
                offer = await recv()
                if offer.get("type") != "offer" or not isinstance(offer.get("sdp"), str):
                    raise TransferFailedError("the peer sent something other than an SDP offer")
                remote_sdp = offer["sdp"]
                await pc.setRemoteDescription(RTCSessionDescription(sdp=remote_sdp, type="offer"))
                await pc.setLocalDescription(await pc.createAnswer())
                await send({"type": "answer", "sdp": pc.localDescription.sdp})
            done, _ = await asyncio.wait({opened, failed}, return_when=asyncio.FIRST_COMPLETED)
            if failed in done:
                raise ConnectionFailedError(failed.result())
    except TimeoutError:
        await pc.close()
        raise ConnectionFailedError(f"no peer connection within {timeout:.0f} s (ICE did not complete)") from None
    except BaseException:
        await pc.close()
        raise
    return PeerLink(pc, channel, _remote_mms(remote_sdp))
