"""Which chunks a transfer moves: the complement of what the receiver already holds, in index order.

Sender and receiver build the same :class:`Plan` from the OFFER and the ACCEPT's ranges, so both know the n-th
chunk to be sent without further messages. Pure arithmetic, no I/O.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from p2pd.transfer.frames import FrameError, Offer


def check_ranges(have: Sequence[tuple[int, int]], nchunks: int) -> None:
    """Raise FrameError unless ``have`` holds sorted, disjoint, non-touching, non-empty in-blob ranges."""
    prev_end = -1
    for start, end in have:
        if not 0 <= start < end:
            raise FrameError(f"range [{start}, {end}) is empty or reversed")
        if start <= prev_end:
            raise FrameError("ranges must be sorted, disjoint and not touching")
        if end > nchunks:
            raise FrameError(f"range [{start}, {end}) goes past the blob's {nchunks} chunks")
        prev_end = end


class Plan:
    """The chunks still to send, as half-open index ranges, with position ↔ index arithmetic."""

    def __init__(self, offer: Offer, have: Sequence[tuple[int, int]]) -> None:
        nchunks = offer.nchunks
        check_ranges(have, nchunks)
        self.offer = offer
        self.have = tuple((int(a), int(b)) for a, b in have)
        missing: list[tuple[int, int]] = []
        cursor = 0
        for start, end in self.have:
            if start > cursor:
                missing.append((cursor, start))
            cursor = end
        if cursor < nchunks:
            missing.append((cursor, nchunks))
        self.missing = tuple(missing)
        self._positions: list[int] = []  # send position of each missing range's first chunk
        total = 0
        for start, end in missing:
            self._positions.append(total)
            total += end - start
        self.total = total
        self.held_bytes = sum(self.span_bytes(a, b) for a, b in self.have)

    def index_at(self, position: int) -> int:
        """The chunk index sent at ``position`` (0-based, < total)."""
        i = bisect.bisect_right(self._positions, position) - 1
        return self.missing[i][0] + position - self._positions[i]

    def upto_after(self, position: int) -> int:
        """The ACK value once the first ``position`` planned chunks are durable (all chunks below it held)."""
        return self.index_at(position) if position < self.total else self.offer.nchunks

    def span_bytes(self, start: int, end: int) -> int:
        """Payload bytes in chunks [start, end)."""
        cs = self.offer.chunk_size
        return min(end * cs, self.offer.compressed_size) - start * cs
