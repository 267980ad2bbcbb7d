"""A device transfer's codec (p2pd/daemon/ready_blob.py ``opened_for_send`` + ``send_stream``, as
``device_transfers.run_outgoing`` sends): the outbox's zstd blob goes as it is to a receiver that speaks zstd; a
receiver listing only lz4 gets an lz4 copy made at send time, byte for byte the same at every attempt (so an
interrupted lz4 transfer resumes by held ranges), and the copy's work folder is gone after the send."""

from __future__ import annotations

import asyncio
import functools
import json
from pathlib import Path

import pytest

from p2pd.blob import container as blob
from p2pd.blob.stream import check_file
from p2pd.daemon.outbox import PACKING_PREFIX
from p2pd.daemon.ready_blob import ReadyBlob, opened_for_send
from p2pd.transfer import receiving
from p2pd.transfer.channel import receive_blob
from p2pd.transfer.frames import OfferInfo
from p2pd.transfer.receiver import Receiver
from p2pd.transfer.streaming import send_stream
from p2pd.transfer.tap import attach
from tests.transfer.memchannel import mem_pair

INFO = OfferInfo.normalized("t", "claude-code", "s", 1)
RAW = b"".join(json.dumps({"n": i, "text": "some conversation text " * (i % 7)}).encode() + b"\n"
               for i in range(30_000))


def outbox_blob(tmp_path: Path) -> Path:
    outbox = tmp_path / "outbox"
    outbox.mkdir()
    path = outbox / "x.a2a.p2pd"
    path.write_bytes(blob.encode(RAW, "zstd"))
    return path


def send(path: Path, dest: Path) -> tuple[str, int, Path]:
    async def main() -> tuple[str, int, Path]:
        a, b = mem_pair()
        attach(a), attach(b)  # as peer.connect does

        async def decide(offer: object) -> bool:
            return True

        async def sender() -> tuple[str, int]:
            async with opened_for_send(path, INFO) as ready:
                result = await send_stream(a, ready)
            return ready.sent_codec, result.compressed_size

        (codec, size), received = await asyncio.gather(sender(), receive_blob(b, dest, decide=decide, linger=0.2))
        return codec, size, Path(received.path)

    return asyncio.run(main())


def test_a_receiver_speaking_zstd_gets_the_outbox_blob_itself(tmp_path: Path) -> None:
    path = outbox_blob(tmp_path)
    codec, size, got = send(path, tmp_path / "in")
    assert (codec, size) == ("zstd", path.stat().st_size - blob.HEADER_SIZE)
    assert got.read_bytes() == path.read_bytes()
    assert list(path.parent.glob(f"{PACKING_PREFIX}*")) == []


def test_an_lz4_only_receiver_gets_an_lz4_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(receiving, "Receiver", functools.partial(Receiver, codecs=("lz4",)))  # the page, an old peer
    path = outbox_blob(tmp_path)
    codec, size, got = send(path, tmp_path / "in")
    header = check_file(got)
    assert (codec, header.codec, size) == ("lz4", "lz4", header.compressed_size)
    assert size > path.stat().st_size  # lz4 is the bigger one
    assert blob.decode(got.read_bytes()) == RAW
    assert list(path.parent.glob(f"{PACKING_PREFIX}*")) == []  # the copy went with its work folder


def test_the_lz4_copy_is_the_same_at_every_attempt(tmp_path: Path) -> None:
    path = outbox_blob(tmp_path)
    digests = []
    for attempt in range(2):
        work = tmp_path / f"work{attempt}"
        work.mkdir()
        ready = ReadyBlob(path, INFO).production(work)
        try:
            [copy] = ready.blobs((1,))  # a HELLO listing lz4 only
            digests.append(check_file(copy).sha256)
        finally:
            ready.close()
    assert digests[0] == digests[1]
