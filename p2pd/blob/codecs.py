"""Compression codecs for conversation blobs.

``lz4`` (the LZ4 *frame* format) is the default and the one every peer must speak; ``zstd`` is optional and is
only used when both sides name it. Decompression is bounded: it never produces more than the caller's limit,
so a blob that lies about its size cannot exhaust memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import lz4.frame

from p2pd.errors import CodecError, TooLargeError

DEFAULT_CODEC = "lz4"
_STEP = 1 << 20

ZSTD_LEVEL = 3  # tests/bench: as fast as lz4 here (~700 MB/s); with the window below, 2.7x smaller on real sessions
# zstd's window: how far back a match may reach. Level 3's own is 2 MiB; a 4 MiB one costs no more time and finds
# what a session repeats further apart (a file read again, a tool result quoted later): the real 3.7 MB document
# of spotter/4d5611e5 compresses to 7.3 % of its bytes instead of 8.4 %. Wider windows gain nothing more on the
# real sessions (the generated benchmark sessions, made by repeating the corpus's lines, would gain: not a reason).
ZSTD_WINDOW_LOG = 22
# The widest window a receiver takes (16 MiB, 4x its own senders'): the decoder holds one window in memory, and
# zstd's default (128 MiB) would let a hostile sender make it hold that much. p2pd's senders never used more
# than level 3's 2 MiB before, and use 4 MiB now.
ZSTD_MAX_WINDOW_LOG = 24


def zstd_parameters(**extra: int) -> Any:
    """p2pd's zstd compression parameters (level, window, a checksum in the frame); ``extra``: more of zstd's
    (threads, job size…)."""
    import zstandard

    return zstandard.ZstdCompressionParameters.from_level(ZSTD_LEVEL, window_log=ZSTD_WINDOW_LOG,
                                                          write_checksum=True, **extra)


def zstd_decompressor() -> Any:
    """A zstd decompressor that refuses a frame whose window is over ZSTD_MAX_WINDOW_LOG (a CodecError where it
    is used)."""
    import zstandard

    return zstandard.ZstdDecompressor(max_window_size=1 << ZSTD_MAX_WINDOW_LOG)


class Codec(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def wire_id(self) -> int: ...

    def compress(self, data: bytes) -> bytes: ...

    def decompress(self, data: bytes, max_size: int) -> bytes: ...


@dataclass(frozen=True)
class Lz4Codec:
    name: str = "lz4"
    wire_id: int = 1
    level: int = 0  # lz4 default (fast) mode; HC levels trade speed for ~30% fewer bytes

    def compress(self, data: bytes) -> bytes:
        return bytes(lz4.frame.compress(data, compression_level=self.level, content_checksum=True,
                                        store_size=True))

    def decompress(self, data: bytes, max_size: int) -> bytes:
        dec = lz4.frame.LZ4FrameDecompressor()
        out = bytearray()
        try:
            chunk = dec.decompress(data, max_length=_STEP)
            while True:
                out += chunk
                if len(out) > max_size:
                    raise TooLargeError(f"lz4 data expands past the {max_size}-byte limit")
                if dec.eof or (not chunk and not dec.needs_input and not dec.unused_data):
                    break
                if dec.needs_input:
                    break
                chunk = dec.decompress(b"", max_length=_STEP)
        except TooLargeError:
            raise
        except RuntimeError as exc:
            raise CodecError(f"lz4 decompression failed: {exc}") from None
        if not dec.eof:
            raise CodecError("lz4 decompression failed: the frame is truncated")
        if dec.unused_data:
            raise CodecError("lz4 decompression failed: trailing bytes after the frame")
        return bytes(out)


@dataclass(frozen=True)
class ZstdCodec:
    name: str = "zstd"
    wire_id: int = 2

    def compress(self, data: bytes) -> bytes:
        import zstandard

        return bytes(zstandard.ZstdCompressor(compression_params=zstd_parameters(write_content_size=True))
                     .compress(data))

    def decompress(self, data: bytes, max_size: int) -> bytes:
        import zstandard

        try:
            claimed = zstandard.frame_content_size(data)
            if claimed > max_size:
                raise TooLargeError(f"zstd data claims {claimed} bytes, over the {max_size}-byte limit")
            dctx = zstd_decompressor()
            out = dctx.decompress(data, max_output_size=max_size + 1)
            if len(out) > max_size:
                raise TooLargeError(f"zstd data expands past the {max_size}-byte limit")
        except zstandard.ZstdError as exc:
            raise CodecError(f"zstd decompression failed: {exc}") from None
        return bytes(out)


_ALL: tuple[Codec, ...] = (Lz4Codec(), ZstdCodec())
CODECS: dict[str, Codec] = {c.name: c for c in _ALL}
CODECS_BY_ID: dict[int, Codec] = {c.wire_id: c for c in CODECS.values()}


def get_codec(name: str) -> Codec:
    try:
        return CODECS[name]
    except KeyError:
        raise CodecError(f"unknown codec {name!r} (known: {', '.join(sorted(CODECS))})") from None
