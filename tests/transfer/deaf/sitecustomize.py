"""Simulated loss for a ``p2pd send`` process under test, in user space (``tc netem`` is not in this kernel).

Put this folder first on the process's PYTHONPATH and set ``P2PD_TEST_DEAF_AT_DONE=SECONDS``: the packet that
brings the receiver's DONE frame is dropped, and so is every packet the connection receives for SECONDS after it,
as on a path that loses packets for a moment. Whatever the receiver sends then is lost with it (a connection it
tears down meanwhile: its ABORT); its SCTP's retransmissions after that get through. The drop is at the SCTP
layer, after DTLS (where DONE can be recognised): a connection's ``_handle_data`` is wrapped on the instance, so
p2pd's own tuning of the class's method (p2pd/transfer/datapath.py) still applies. ICE's consent checks are
untouched, so the connection itself stays up. Without the variable, nothing is changed.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

SECONDS = float(os.environ.get("P2PD_TEST_DEAF_AT_DONE", "0") or 0)
_deaf_until = 0.0


def _brings_done(packet: bytes) -> bool:
    from aiortc.rtcsctptransport import DataChunk, parse_packet

    from p2pd.transfer.frames import FrameType

    try:
        chunks = parse_packet(packet)[3]
    except Exception:
        return False
    return any(isinstance(c, DataChunk) and len(c.user_data) > 1 and c.user_data[1] == FrameType.DONE
               for c in chunks)


def _dropped(packet: bytes) -> bool:
    global _deaf_until
    now = time.monotonic()
    if _deaf_until == 0.0 and _brings_done(packet):
        _deaf_until = now + SECONDS
        print(f"[test] DONE arrived; dropping it and every packet for {SECONDS} s", file=sys.stderr, flush=True)
    return now < _deaf_until


def _install() -> None:
    from aiortc.rtcsctptransport import RTCSctpTransport

    init = RTCSctpTransport.__init__

    def lossy_init(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        handle = self._handle_data

        async def lossy_handle_data(data: bytes) -> None:
            if not _dropped(data):
                await handle(data)

        self._handle_data = lossy_handle_data

    RTCSctpTransport.__init__ = lossy_init  # type: ignore[method-assign]


if SECONDS > 0:
    _install()
