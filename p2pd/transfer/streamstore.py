"""The receiver's store for a streamed transfer (SPEC.md §12): each chunk is hashed and handed on at once to a
:class:`StreamSink` (the caller's: decompress, check and stage the conversation as it arrives); nothing of the
payload is kept, so there is nothing to resume — a cut transfer starts again from zero.

It has the same face as :class:`~p2pd.transfer.partial.PartialBlob` (``write``/``commit``/``digest``/``finalize``
/``discard``/``close``), so the receiving side runs it through the same worker-thread jobs. A sink that refuses the
content does not stop the hashing: the digest is compared first (a damaged payload is a checksum mismatch), and
only a payload that verified yet could not be read is reported as unreadable. A sink this machine cannot write
(an OSError: a full disk) stops the transfer at once: whatever the payload, it cannot be kept, and the rest of it
would cross the network for nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from p2pd.transfer.frames import Offer
from p2pd.transfer.partial import UnreadableBlob, Validate


class StreamSink(Protocol):
    """Where a streamed payload goes, in order: ``feed`` compressed bytes; ``finish(raw_size)`` once the digest
    matched — check the whole, place nothing yet, return what to report (a staged file); ``abort`` removes what
    was staged. Each may raise: an OSError when this machine cannot store it (a full disk: reported as an I/O
    failure), anything else when the content is not a conversation (reported as invalid); never DONE."""

    def feed(self, data: bytes) -> None: ...

    def finish(self, raw_size: int) -> Path: ...

    def abort(self) -> None: ...


SinkFactory = Callable[[Offer], StreamSink]


class StreamStore:
    """Hashes a streamed payload and feeds it to a sink; blocking (worker threads)."""

    def __init__(self, sink: StreamSink) -> None:
        self.sink = sink
        self.expected_raw = 0  # STREAM_END's raw size, set before finalize
        self._hash = hashlib.sha256()
        self._next = 0
        self._error: Exception | None = None  # what the sink raised; the rest is only hashed
        self._done = False

    @classmethod
    def open(cls, factory: SinkFactory, offer: Offer) -> StreamStore:
        return cls(factory(offer))

    def held_chunks(self) -> list[tuple[int, int]]:
        return []

    def write(self, offset: int, data: bytes | memoryview) -> None:
        if offset != self._next:
            raise ValueError(f"streamed write at {offset}, expected {self._next}")
        self._next += len(data)
        self._hash.update(data)
        if self._error is None:
            try:
                self.sink.feed(bytes(data))  # sinks take bytes; a CHUNK's payload is a view into its message
            except OSError:  # this machine's storage: the transfer stops now (the module docstring)
                self.discard()
                raise
            except Exception as exc:  # kept: reported after the digest (see the module docstring)
                self._error = exc

    def commit(self) -> None:
        pass  # nothing is kept for a resume: an ACK only means "consumed"

    def digest(self) -> bytes:
        return self._hash.digest()

    def finalize(self, validate: Validate | None = None) -> Path:
        """The digest matched: let the sink check the whole; its staged result's path (UnreadableBlob if the
        content is not readable, OSError if this machine could not store it)."""
        try:
            if self._error is not None:
                raise self._error
            path = self.sink.finish(self.expected_raw)
        except OSError:  # this machine's storage, not the content: the receiving side reports an I/O failure
            self.discard()
            raise
        except Exception as exc:
            self.discard()
            raise UnreadableBlob(exc) from exc
        self._done = True
        return path

    def discard(self) -> None:
        self._done = True
        self.sink.abort()

    def close(self) -> None:
        if not self._done:
            self.discard()
