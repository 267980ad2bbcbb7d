"""Codec negotiation: the sender offers its zstd blob when the receiver's HELLO lists zstd (CLI ↔ CLI, daemons)
and its lz4 blob otherwise (the page lists only lz4); a real transfer moves the zstd blob end to end."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

import pytest

from p2pd.blob import container as blob
from p2pd.transfer.channel import receive_blob, send_blob
from p2pd.transfer.frames import Hello, Offer, OfferInfo, Role, decode, encode
from p2pd.transfer.sender import Encoding, Sender
from p2pd.transfer.tap import attach
from tests.transfer.memchannel import mem_pair
from tests.transfer.sim import INFO, TID

LZ4_SHA, ZSTD_SHA = hashlib.sha256(b"lz4").digest(), hashlib.sha256(b"zstd").digest()


def offer_for(receiver_codecs: tuple[int, ...]) -> tuple[Offer, Sender]:
    s = Sender(transfer_id=TID, codec="lz4", raw_size=1000, compressed_size=200, sha256=LZ4_SHA, info=INFO,
               alternatives=[Encoding("zstd", 90, ZSTD_SHA)])
    s.start()
    [action] = s.receive(encode(Hello(role=Role.RECEIVER, max_message_size=65536, codecs=receiver_codecs)))
    offer = decode(action.data)  # type: ignore[attr-defined]
    assert isinstance(offer, Offer)
    return offer, s


def test_zstd_offered_when_the_receiver_lists_it() -> None:
    offer, s = offer_for((1, 2))
    assert (offer.codec, offer.compressed_size, offer.sha256, s.choice) == ("zstd", 90, ZSTD_SHA, 0)


@pytest.mark.parametrize("codecs", [(1,), (1, 7)])
def test_lz4_offered_to_a_receiver_without_zstd(codecs: tuple[int, ...]) -> None:
    offer, s = offer_for(codecs)
    assert (offer.codec, offer.compressed_size, offer.sha256, s.choice) == ("lz4", 200, LZ4_SHA, None)


def test_no_alternatives_offers_the_one_blob() -> None:
    s = Sender(transfer_id=TID, codec="lz4", raw_size=1000, compressed_size=200, sha256=LZ4_SHA, info=INFO)
    s.start()
    [action] = s.receive(encode(Hello(role=Role.RECEIVER, max_message_size=65536, codecs=(1, 2))))
    offer = decode(action.data)  # type: ignore[attr-defined]
    assert isinstance(offer, Offer) and offer.codec == "lz4" and s.choice is None


def test_transfer_moves_the_zstd_blob(tmp_path: Path) -> None:
    raw = b"".join(b'{"n":%d,"text":"some conversation text"}\n' % i for i in range(20_000))
    lz4_path, zstd_path = tmp_path / "a.lz4.p2pd", tmp_path / "a.zstd.p2pd"
    lz4_path.write_bytes(blob.encode(raw, "lz4"))
    zstd_path.write_bytes(blob.encode(raw, "zstd"))

    async def main() -> tuple[object, object]:
        a, b = mem_pair()
        attach(a), attach(b)  # as peer.connect does
        info = OfferInfo.normalized("t", "claude-code", "s", 1)

        async def decide(offer: object) -> bool:
            return True

        return await asyncio.gather(send_blob(a, lz4_path, info, alternatives=[zstd_path]),
                                    receive_blob(b, tmp_path / "in", decide=decide, linger=0.2))

    sent, received = asyncio.run(main())
    assert sent.compressed_size == zstd_path.stat().st_size - blob.HEADER_SIZE  # type: ignore[attr-defined]
    got = Path(received.path)  # type: ignore[attr-defined]
    assert got.read_bytes() == zstd_path.read_bytes()
    assert blob.decode(got.read_bytes()) == raw
