"""Loaded first by a ``p2pd`` process under test whose PYTHONPATH starts with this folder: with
``P2PD_TEST_DEAF_AT=FRAME:SECONDS`` (``DONE:3``), every peer connection it makes loses the packet bringing the
peer's first FRAME and every packet for SECONDS after it (tests/transfer/lossy.py says how). Without the variable,
nothing is changed."""

from __future__ import annotations

import os
import sys
from typing import Any

_FRAME, _, _SECONDS = os.environ.get("P2PD_TEST_DEAF_AT", "").partition(":")


def _install(frame: str, seconds: float) -> None:
    from aiortc.rtcsctptransport import RTCSctpTransport

    from tests.transfer.lossy import Deafness, loss_simulated

    deafness = Deafness(frame, seconds, on_start=lambda: print(f"[test] {loss_simulated(frame, seconds)}",
                                                                file=sys.stderr, flush=True))
    init = RTCSctpTransport.__init__

    def lossy_init(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        deafness.install(self)

    RTCSctpTransport.__init__ = lossy_init  # type: ignore[method-assign]


if _FRAME and _SECONDS:
    _install(_FRAME, float(_SECONDS))
