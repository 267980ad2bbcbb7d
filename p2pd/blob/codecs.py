"""Compression codecs for conversation blobs.

``lz4`` (the LZ4 *frame* format) is the default and the one every peer must speak; ``zstd`` is optional and is
only used when both sides name it. Decompression is bounded: it never produces more than the caller's limit,
so a blob that lies about its size cannot exhaust memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import lz4.frame

from p2pd.errors import CodecError, TooLargeError

DEFAULT_CODEC = "lz4"
_STEP = 1 << 20


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
    level: int = 3

    def compress(self, data: bytes) -> bytes:
        import zstandard

        return bytes(zstandard.ZstdCompressor(level=self.level, write_checksum=True,
                                              write_content_size=True).compress(data))

    def decompress(self, data: bytes, max_size: int) -> bytes:
        import zstandard

        try:
            claimed = zstandard.frame_content_size(data)
            if claimed > max_size:
                raise TooLargeError(f"zstd data claims {claimed} bytes, over the {max_size}-byte limit")
            dctx = zstandard.ZstdDecompressor()
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
