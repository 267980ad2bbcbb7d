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


def _wide(window_log: int, data: bytes) -> bytes:
    params = zstandard.ZstdCompressionParameters.from_level(3, window_log=window_log, write_checksum=True)
    z = zstandard.ZstdCompressor(compression_params=params).compressobj(size=-1)  # (a stream: the window is said)
    return z.compress(data) + z.flush()


def _every_zstd_read(frame: bytes, size: int, folder) -> list:
    """Each way a receiver reads a zstd payload: pushed as it arrives, a blob file, a blob in memory."""
    import hashlib

    from p2pd.blob import container
    from p2pd.blob.codecs import get_codec
    from p2pd.blob.stream import iter_raw

    inflater = Inflater("zstd", lambda _: None, max_raw_size=size)
    path = folder / "w.p2pd"
    path.write_bytes(container.BlobHeader(codec="zstd", raw_size=size, compressed_size=len(frame),
                                          sha256=hashlib.sha256(frame).digest()).pack() + frame)

    def pushed() -> int:
        inflater.feed(frame)
        return inflater.finish()

    return [pushed, lambda: b"".join(iter_raw(path)), lambda: get_codec("zstd").decompress(frame, size)]


def test_a_frame_wider_than_the_receivers_window_is_refused_by_every_zstd_reader(tmp_path) -> None:
    """A sender cannot make a receiver hold zstd's default 128 MiB window: a frame asking more than
    ZSTD_MAX_WINDOW_LOG is refused where it is read (the stream, a blob file, a blob in memory)."""
    from p2pd.blob.codecs import ZSTD_MAX_WINDOW_LOG, ZSTD_WINDOW_LOG

    data = b'{"text":"%s"}\n' % (b"y" * 5000)
    for window_log, refused in ((ZSTD_WINDOW_LOG, False), (ZSTD_MAX_WINDOW_LOG, False),
                                (ZSTD_MAX_WINDOW_LOG + 1, True), (27, True)):
        frame = _wide(window_log, data)
        assert zstandard.get_frame_parameters(frame).window_size == 1 << window_log
        for read in _every_zstd_read(frame, len(data), tmp_path):
            if refused:
                with pytest.raises(CodecError):
                    read()
            else:
                read()


def test_p2pd_compresses_with_its_window(tmp_path) -> None:
    from p2pd.blob import container
    from p2pd.blob.codecs import ZSTD_WINDOW_LOG
    from p2pd.blob.stream import BlobWriter

    path = tmp_path / "b.p2pd"
    with BlobWriter(path, "zstd") as w:
        w.write(b"".join(b'{"n":%d,"x":"%s"}\n' % (i, b"z" * 200) for i in range(30000)))
    frame = path.read_bytes()[container.HEADER_SIZE:]
    assert zstandard.get_frame_parameters(frame).window_size == 1 << ZSTD_WINDOW_LOG
