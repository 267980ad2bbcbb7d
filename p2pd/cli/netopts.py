"""Network options shared by ``p2pd send`` and ``p2pd receive``: ``--relay-only`` and ``--connect-timeout``.

Both have config-file keys and environment variables too (``relay_only`` / ``P2PD_RELAY_ONLY``,
``connect_timeout`` / ``P2PD_CONNECT_TIMEOUT``, see :mod:`p2pd.config`); the flag wins.
"""

from __future__ import annotations

import argparse
import os


def add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--relay-only", action="store_true", default=None,
                        help="connect only through a relay (TURN), so the peer never learns this machine's "
                             "addresses ($P2PD_RELAY_ONLY, config relay_only)")
    parser.add_argument("--connect-timeout", type=float, default=None, metavar="SECONDS",
                        help="seconds to try for a peer connection before giving up or writing the fallback "
                             "file (default $P2PD_CONNECT_TIMEOUT, config connect_timeout, or 30)")


def apply(args: argparse.Namespace) -> float:
    """Apply the flags for this process; returns the connect timeout to use."""
    from p2pd.config import connect_timeout

    if args.relay_only:
        os.environ["P2PD_RELAY_ONLY"] = "1"
    if args.connect_timeout is not None:
        os.environ["P2PD_CONNECT_TIMEOUT"] = str(args.connect_timeout)
    return connect_timeout()
