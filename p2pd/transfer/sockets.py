"""UDP socket buffers of a peer connection, sized so SCTP does not stall on drops.

aioice opens its UDP sockets with the kernel's default buffers (``net.core.rmem_default``, ~208 KiB here). A
data channel moving 64 KiB messages bursts past that, the kernel drops datagrams at the receiving socket, and
aiortc's SCTP waits out its minimum retransmission timeout (1 s) before sending them again: measured, 3 of 10
handovers stalled ~1 s, and a 4.5 MB blob took 1.0 s instead of ~0.2 s. Asking for 4 MiB removes the drops
(the kernel caps the request at ``net.core.rmem_max``/``wmem_max``; nothing fails when it does).

Until 2026-11-26 this found no socket at all (it looked for ``socket.socket`` instances, which the event loops
never hand out), so the buffers stayed at the default; ``tests/transfer/test_datapath.py`` now checks they grow.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from typing import Any

BUFFER_BYTES = 4 << 20


def udp_sockets(pc: Any) -> Iterator[Any]:
    """The UDP sockets under ``pc``'s ICE connections: host/server-reflexive ones, and the socket a TURN
    allocation talks to its server through (aioice keeps it inside the relayed transport). What the event loop
    hands out is a socket-like object (uvloop's ``PseudoSocket``, asyncio's ``TransportSocket``), never a
    ``socket.socket``: anything with a datagram ``type`` and ``setsockopt`` is taken."""
    for protocol in getattr(ice_connection(pc), "_protocols", ()) or ():
        transport = getattr(protocol, "transport", None)
        sock = transport.get_extra_info("socket") if transport is not None else None
        if sock is None and transport is not None:
            inner = getattr(transport, "_TurnTransport__inner_protocol", None)
            inner_transport = getattr(inner, "transport", None)
            sock = inner_transport.get_extra_info("socket") if inner_transport is not None else None
        if callable(getattr(sock, "setsockopt", None)) and getattr(sock, "type", None) == socket.SOCK_DGRAM:
            yield sock


def release_problem(package: Any, verified: tuple[str, ...]) -> str | None:
    """Why ``package``'s installed release is not one an adaptation was written against (``None``: it is one of
    ``verified``, or a patch release of one)."""
    version = getattr(package, "__version__", "?")
    if any(version == v or version.startswith(v + ".") for v in verified):
        return None
    return f"{package.__name__} {version} is not one of {', '.join(verified)}"


def ice_connection(pc: Any) -> Any:
    """The aioice ``Connection`` under ``pc``'s data channel (SCTP → DTLS → ICE transport; there once the channel
    is created), or None. The adaptations of this package (buffers, datapath.py, quickice.py) all start from it."""
    ice = getattr(getattr(getattr(pc, "sctp", None), "transport", None), "transport", None)
    return getattr(ice, "_connection", None)


def widen_buffers(pc: Any, size: int = BUFFER_BYTES) -> int:
    """Ask for ``size``-byte send and receive buffers on every UDP socket of ``pc``; returns how many sockets
    were tuned. Best effort: a socket the kernel refuses keeps its buffers."""
    tuned = 0
    for sock in udp_sockets(pc):
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, size)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, size)
            tuned += 1
    return tuned
