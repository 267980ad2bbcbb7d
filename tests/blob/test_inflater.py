"""p2pd/blob/stream.py's Inflater: pushed pieces of any size decompress to the original, a truncated or trailing
frame is refused, and a crafted frame stops at the cap without the memory it claims."""

from __future__ import annotations

import random

import lz4.frame
import pytest
import zstandard

from p2pd.blob.stream import Inflater
from p2pd.errors import CodecError, TooLargeError


def _compress(codec: str, data: bytes) -> bytes:
    if codec == "zstd":
        return zstandard.ZstdCompressor(level=3, write_checksum=True).compress(data)
    return bytes(lz4.frame.compress(data, content_checksum=True))


@pytest.mark.parametrize("codec", ["zstd", "lz4"])
def test_pieces_of_any_size_give_the_original(codec: str) -> None:
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    rng = random.Random(seed)
    data = b"".join(b'{"n":%d,"text":"%s"}\n' % (i, b"x" * rng.randrange(300)) for i in range(20000))
    blob = _compress(codec, data)
    out: list[bytes] = []
    inflater = Inflater(codec, out.append, max_raw_size=len(data))
    pos = 0
    while pos < len(blob):
        n = rng.randrange(1, 70000)
        inflater.feed(blob[pos:pos + n])
        pos += n
    assert inflater.finish() == len(data)
    assert b"".join(out) == data


@pytest.mark.parametrize("codec", ["zstd", "lz4"])
def test_truncated_and_trailing_frames_are_refused(codec: str) -> None:
    blob = _compress(codec, b"hello " * 1000)
    inflater = Inflater(codec, lambda _: None)
    inflater.feed(blob[:-3])
    with pytest.raises(CodecError):
        inflater.finish()
    inflater = Inflater(codec, lambda _: None)
    with pytest.raises(CodecError):
        inflater.feed(blob + b"junk")
        inflater.finish()


def test_a_bomb_stops_at_the_cap_in_small_pieces() -> None:
    bomb = _compress("zstd", bytes(1 << 30))  # 1 GiB of zeros: a few tens of KiB
    sizes: list[int] = []
    inflater = Inflater("zstd", lambda piece: sizes.append(len(piece)), max_raw_size=64 << 20)
    with pytest.raises(TooLargeError):
        inflater.feed(bomb)
    assert sum(sizes) <= 64 << 20 and max(sizes) <= 1 << 20
