"""A ``p2pd send`` process that loses the receiver's DONE for a moment (tests/transfer/deaf/sitecustomize.py does
the dropping, inside the process): the environment to run it with, and the line it prints when the loss happened."""

from __future__ import annotations

import os
from pathlib import Path

from tests.signal_process import ROOT

DEAF = Path(__file__).parent / "deaf"
DEAF_SECONDS = 3.0  # longer than a receiver's 2 s linger after DONE; SCTP retransmits DONE 1, 3, 7 s after it
LOSS_SIMULATED = f"DONE arrived; dropping it and every packet for {DEAF_SECONDS} s"


def deaf_at_done(seconds: float = DEAF_SECONDS) -> dict[str, str]:
    """What to add to a ``p2pd send``'s environment so that it drops DONE and every packet for ``seconds``."""
    return {"PYTHONPATH": f"{DEAF}{os.pathsep}{ROOT}", "P2PD_TEST_DEAF_AT_DONE": str(seconds)}
