"""p2pd/transfer/streamstore.py: a streamed payload is hashed whole even when the sink refuses it early (so a
damaged payload is reported as a checksum mismatch, and only a verified yet unreadable one as unreadable); the
sink is aborted by every way out but success."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from p2pd.transfer.partial import UnreadableBlob
from p2pd.transfer.streamstore import StreamStore


class Sink:
    def __init__(self, refuse_at: int | None = None) -> None:
        self.fed = b""
        self.refuse_at = refuse_at
        self.aborted = False
        self.finished_with: int | None = None

    def feed(self, data: bytes) -> None:
        if self.refuse_at is not None and len(self.fed) + len(data) > self.refuse_at:
            raise ValueError("not a conversation")
        self.fed += data

    def finish(self, raw_size: int) -> Path:
        self.finished_with = raw_size
        return Path("/staged")

    def abort(self) -> None:
        self.aborted = True


def _store(sink: Sink, pieces: list[bytes]) -> StreamStore:
    store = StreamStore(sink)
    offset = 0
    for piece in pieces:
        store.write(offset, piece)
        offset += len(piece)
    store.commit()
    return store


def test_the_digest_covers_every_byte_even_after_the_sink_refused() -> None:
    pieces = [b"a" * 100, b"b" * 100, b"c" * 100]
    sink = Sink(refuse_at=150)
    store = _store(sink, pieces)
    assert store.digest() == hashlib.sha256(b"".join(pieces)).digest()
    assert sink.fed == b"a" * 100  # the sink saw nothing after it refused
    store.expected_raw = 7
    with pytest.raises(UnreadableBlob):
        store.finalize()
    assert sink.aborted and sink.finished_with is None


def test_success_hands_the_raw_size_to_the_sink_and_keeps_its_result() -> None:
    sink = Sink()
    store = _store(sink, [b"x" * 10, b"y"])
    store.expected_raw = 1234
    assert store.finalize() == Path("/staged")
    assert sink.finished_with == 1234 and sink.fed == b"x" * 10 + b"y"
    store.close()
    assert not sink.aborted


def test_close_without_finalize_aborts_and_writes_must_be_in_order() -> None:
    sink = Sink()
    store = _store(sink, [b"x"])
    with pytest.raises(ValueError):
        store.write(5, b"gap")
    assert store.held_chunks() == []  # nothing kept for a resume
    store.close()
    assert sink.aborted


def test_a_sink_this_machine_cannot_write_stops_the_transfer_at_once() -> None:
    """A full disk is no question of the payload: the store raises at the write (the receiver sends `io`, and the
    rest of the stream does not cross the network for nothing), and the sink is aborted."""
    class FullSink(Sink):
        def feed(self, data: bytes) -> None:
            if self.fed:
                raise OSError(28, "No space left on device")
            self.fed += data

    sink = FullSink()
    store = StreamStore(sink)
    store.write(0, b"a" * 100)
    with pytest.raises(OSError, match="No space left"):
        store.write(100, b"b" * 100)
    assert sink.aborted
