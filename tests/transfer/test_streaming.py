"""p2pd/transfer/streaming.py and the receiver's streamed side over an in-memory channel: a payload produced while
it is sent arrives whole and verified; a receiver without STREAMS gets the whole blob; a receiver waits for a
streaming sender that prepares longer than its idle timeout."""

from __future__ import annotations

import asyncio
import hashlib
import os
import random
import threading
from pathlib import Path

from p2pd.blob.container import HEADER_SIZE, BlobHeader
from p2pd.transfer.channel import receive_blob
from p2pd.transfer.frames import MAX_MESSAGE_SIZE, Offer, OfferInfo, StreamOffer
from p2pd.transfer.streaming import Summary, send_stream
from tests.transfer.test_adapter import accept_all, pair

INFO = OfferInfo(title="streamed", platform="claude-code", session_id="s-1", message_count=3)


class Source:
    """A payload produced in pieces by a thread (``hold``: the summary waits until it is set)."""

    def __init__(self, tmp: Path, data: bytes, hold: threading.Event | None = None) -> None:
        self.data, self.hold = data, hold
        self.produced = 0
        self.cond = threading.Condition()
        self.blob = tmp / "whole.blob"
        self.blob.write_bytes(BlobHeader("zstd", len(data) * 3, len(data), hashlib.sha256(data).digest()).pack()
                              + data)
        threading.Thread(target=self._produce, daemon=True).start()

    def _produce(self) -> None:
        rng = random.Random(len(self.data))
        while self.produced < len(self.data):
            with self.cond:
                self.produced = min(len(self.data), self.produced + rng.randrange(1, 200_000))
                self.cond.notify_all()

    def summary(self) -> Summary:
        if self.hold is not None:
            self.hold.wait()
        return Summary(INFO, "zstd", len(self.data) * 3, len(self.data))

    def read(self, offset: int, max_len: int, min_len: int) -> bytes:
        with self.cond:
            self.cond.wait_for(lambda: self.produced - offset >= min_len or self.produced == len(self.data))
            return self.data[offset:min(self.produced, offset + max_len)]

    def totals(self) -> tuple[int, int, bytes]:
        return len(self.data) * 3, len(self.data), hashlib.sha256(self.data).digest()

    def blobs(self, codecs: tuple[int, ...]) -> list[Path]:
        return [self.blob]

    def stop(self) -> None:
        pass


class Sink:
    def __init__(self, folder: Path) -> None:
        self.path = folder / "staged"
        self.fed = bytearray()

    def feed(self, data: bytes) -> None:
        self.fed += data

    def finish(self, raw_size: int) -> Path:
        self.path.write_bytes(self.fed)
        return self.path

    def abort(self) -> None:
        self.fed.clear()


async def test_a_payload_produced_while_it_is_sent_arrives_whole(tmp_path: Path) -> None:
    data = os.urandom(1_500_000)
    sinks: list[Sink] = []

    def sink(offer: Offer) -> Sink:
        sinks.append(Sink(tmp_path))
        return sinks[-1]

    a, b = pair()
    result, got = await asyncio.gather(
        send_stream(a, Source(tmp_path, data), max_message_size=MAX_MESSAGE_SIZE),
        receive_blob(b, tmp_path / "in", decide=accept_all, linger=0.2, stream_sink=sink))
    assert isinstance(got.offer, StreamOffer) and got.path == sinks[0].path
    assert got.path.read_bytes() == data
    assert result.sha256 == hashlib.sha256(data).digest() and result.compressed_size == len(data)
    assert not (tmp_path / "in" / ".p2pd-partial").exists() or not any((tmp_path / "in" / ".p2pd-partial").iterdir())


async def test_a_receiver_without_streams_gets_the_whole_blob(tmp_path: Path) -> None:
    data = os.urandom(300_000)
    a, b = pair()
    _, got = await asyncio.gather(
        send_stream(a, Source(tmp_path, data), max_message_size=MAX_MESSAGE_SIZE),
        receive_blob(b, tmp_path / "in", decide=accept_all, linger=0.2))
    assert not isinstance(got.offer, StreamOffer)
    assert got.path.read_bytes()[HEADER_SIZE:] == data


async def test_the_receiver_waits_for_a_sender_preparing_past_its_idle_timeout(tmp_path: Path) -> None:
    data = os.urandom(100_000)
    hold = threading.Event()
    a, b = pair()
    sending = asyncio.ensure_future(send_stream(a, Source(tmp_path, data, hold), max_message_size=MAX_MESSAGE_SIZE,
                                                idle_timeout=0.3))
    receiving = asyncio.ensure_future(receive_blob(b, tmp_path / "in", decide=accept_all, linger=0.2,
                                                   idle_timeout=0.3, stream_sink=lambda offer: Sink(tmp_path)))
    try:
        await asyncio.sleep(1.0)  # three idle timeouts while the sender prepares
        assert not receiving.done() and not sending.done()
    finally:
        hold.set()  # (a failed assert must not leave the sender's job waiting forever)
    _, got = await asyncio.gather(sending, receiving)
    assert got.path.read_bytes() == data
