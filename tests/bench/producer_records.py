"""The records of a packing process's whole output (``python -m p2pd.exchange.producer``; the format is in its
docstring: tag u8, length u32 big-endian, data), for the benchmarks that run it alone."""

from __future__ import annotations

from collections.abc import Iterator


def records(out: bytes) -> Iterator[tuple[bytes, bytes]]:
    """Each record's (tag, data), in order."""
    at = 0
    while at < len(out):
        tag, size = out[at:at + 1], int.from_bytes(out[at + 1:at + 5], "big")
        yield tag, out[at + 5:at + 5 + size]
        at += 5 + size
