"""Simulated loss of one frame from the peer, and of everything for a moment after it, in user space (``tc netem``
is not in this kernel): :class:`Deafness` on one connection in this process, or :func:`deaf_at` for a ``p2pd``
process (tests/transfer/deaf/sitecustomize.py installs it there) and the line it prints when the loss happened.

The drop is at the SCTP layer, after DTLS (where a frame can be recognised): the packet that brings the peer's
first such frame is dropped, and so is every packet the connection receives for a few seconds after it, as on a
path that loses packets for a moment. Whatever the peer sends then is lost with it (a connection it tears down
meanwhile: its ABORT); its SCTP's retransmissions after that get through. A connection's ``_handle_data`` is
wrapped on the instance, so p2pd's own tuning of the class's method (p2pd/transfer/datapath.py) still applies.
ICE's consent checks are untouched, so the connection itself stays up."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.signal_process import ROOT

DEAF = Path(__file__).parent / "deaf"
# Longer than a receiver's 2 s linger after DONE, and than the page's former 0.3 s wait after CANCEL; aiortc
# retransmits the lost frame 1, 3 and 7 s after it was first sent, Chromium 0.6, 1.7 and 4.0 s after.
DEAF_SECONDS = 3.0


class Deafness:
    """Drops the packet bringing the peer's first ``frame`` (a frame type of p2pd/transfer/frames.py: ``"DONE"``,
    ``"CANCEL"``) and every packet for ``seconds`` after it, on the connections it is :meth:`installed <install>`
    on. ``on_start`` hears when that begins."""

    def __init__(self, frame: str, seconds: float = DEAF_SECONDS, on_start: Callable[[], object] = lambda: None):
        from p2pd.transfer.frames import FrameType

        self.frame = FrameType[frame]
        self.seconds = seconds
        self.on_start = on_start
        self.until = 0.0  # 0: not begun

    def brings_frame(self, packet: bytes) -> bool:
        """Whether an SCTP packet carries the start of a message that is the frame (a message's first fragment
        starts with the frame's version and type; a later fragment's bytes are anything)."""
        from aiortc.rtcsctptransport import SCTP_DATA_FIRST_FRAG, DataChunk, parse_packet

        from p2pd.transfer.frames import PROTOCOL_VERSION

        try:
            chunks = parse_packet(packet)[3]
        except Exception:
            return False
        return any(isinstance(c, DataChunk) and c.flags & SCTP_DATA_FIRST_FRAG
                   and c.user_data[:2] == bytes((PROTOCOL_VERSION, self.frame)) for c in chunks)

    def dropped(self, packet: bytes) -> bool:
        now = time.monotonic()
        if self.until == 0.0 and self.brings_frame(packet):
            self.until = now + self.seconds
            self.on_start()
        return now < self.until

    def install(self, sctp: Any) -> None:
        """Drop on this SCTP transport (an aiortc ``RTCSctpTransport``, as ``RTCPeerConnection.sctp``)."""
        handle = sctp._handle_data

        async def lossy_handle_data(data: bytes) -> None:
            if not self.dropped(data):
                await handle(data)

        sctp._handle_data = lossy_handle_data


def deaf_at(frame: str, seconds: float = DEAF_SECONDS) -> dict[str, str]:
    """What to add to a ``p2pd`` process's environment so that it drops the packet bringing the peer's ``frame``
    and every packet for ``seconds`` after it."""
    return {"PYTHONPATH": f"{DEAF}{os.pathsep}{ROOT}", "P2PD_TEST_DEAF_AT": f"{frame}:{seconds}"}


def loss_simulated(frame: str, seconds: float = DEAF_SECONDS) -> str:
    """The line such a process prints once it dropped ``frame``."""
    return f"{frame} arrived; dropping it and every packet for {seconds} s"
