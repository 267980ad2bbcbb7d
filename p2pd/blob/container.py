"""The wire blob: a compressed conversation document behind a small fixed header (spec: ``blob.md``).

Layout (big-endian, 60 bytes of header, then the compressed bytes)::

    magic        8s   b"P2PDBLOB"
    version      B    1
    codec        B    1 = lz4 frame, 2 = zstd
    reserved     H    0
    raw_size     Q    size of the JSON document once decompressed
    comp_size    Q    size of the compressed bytes that follow
    sha256       32s  SHA-256 of the compressed bytes

Reading checks, in this order and before allocating anything large: the magic and version, the codec, the size
claims against the caps (a blob claiming 100 GB is refused from its header alone), that exactly ``comp_size``
bytes follow, the SHA-256, and finally that decompression yields exactly ``raw_size`` bytes.
"""

from __future__ import annotations

import hashlib
import os
import struct
from dataclasses import dataclass
from pathlib import Path

from p2pd.blob.codecs import CODECS_BY_ID, DEFAULT_CODEC, get_codec
from p2pd.errors import ChecksumMismatchError, CodecError, InvalidInputError, NotFoundError, TooLargeError
from p2pd.support.atomic import atomic_write_bytes

MAGIC = b"P2PDBLOB"
VERSION = 1
HEADER = struct.Struct(">8sBBHQQ32s")
HEADER_SIZE = HEADER.size
DEFAULT_MAX_RAW_SIZE = 1 << 30  # 1 GiB of JSON once decompressed
# lz4 never expands incompressible data by more than ~0.4% plus a few bytes; zstd similarly.
_MAX_EXPANSION = 1.01


@dataclass(frozen=True)
class BlobHeader:
    codec: str
    raw_size: int
    compressed_size: int
    sha256: bytes
    version: int = VERSION

    def pack(self) -> bytes:
        return HEADER.pack(MAGIC, self.version, get_codec(self.codec).wire_id, 0, self.raw_size,
                           self.compressed_size, self.sha256)

    @classmethod
    def unpack(cls, data: bytes, *, max_raw_size: int = DEFAULT_MAX_RAW_SIZE) -> BlobHeader:
        if len(data) < HEADER_SIZE:
            raise InvalidInputError(
                f"not a p2pd blob: {len(data)} bytes is shorter than the {HEADER_SIZE}-byte header")
        magic, version, codec_id, _reserved, raw_size, comp_size, digest = HEADER.unpack_from(data)
        if magic != MAGIC:
            raise InvalidInputError("not a p2pd blob: bad magic bytes")
        if version != VERSION:
            raise InvalidInputError(f"unsupported blob version {version} (this p2pd reads version {VERSION})")
        codec = CODECS_BY_ID.get(codec_id)
        if codec is None:
            raise CodecError(f"unknown codec id {codec_id} in blob header")
        if raw_size > max_raw_size:
            raise TooLargeError(
                f"blob claims {raw_size} bytes of conversation, over the {max_raw_size}-byte limit")
        if comp_size > max_raw_size * _MAX_EXPANSION + 1024:
            raise TooLargeError(
                f"blob claims {comp_size} compressed bytes, over the {max_raw_size}-byte limit")
        return cls(codec=codec.name, raw_size=raw_size, compressed_size=comp_size, sha256=digest,
                   version=version)


def encode(document_json: bytes, codec: str = DEFAULT_CODEC) -> bytes:
    """Compress a JSON document into a complete blob (header + payload)."""
    payload = get_codec(codec).compress(document_json)
    header = BlobHeader(codec=codec, raw_size=len(document_json), compressed_size=len(payload),
                        sha256=hashlib.sha256(payload).digest())
    return header.pack() + payload


def split(blob: bytes, *, max_raw_size: int = DEFAULT_MAX_RAW_SIZE) -> tuple[BlobHeader, bytes]:
    """Check a blob's header, length and SHA-256; return the header and the (still compressed) payload."""
    header = BlobHeader.unpack(blob, max_raw_size=max_raw_size)
    payload = blob[HEADER_SIZE:]
    if len(payload) != header.compressed_size:
        what = "truncated" if len(payload) < header.compressed_size else "has trailing bytes"
        raise InvalidInputError(
            f"blob {what}: header says {header.compressed_size} compressed bytes, found {len(payload)}")
    actual = hashlib.sha256(payload).digest()
    if actual != header.sha256:
        raise ChecksumMismatchError(
            f"checksum mismatch: blob header says sha256 {header.sha256.hex()[:16]}…, "
            f"content hashes to {actual.hex()[:16]}…")
    return header, payload


def decode(blob: bytes, *, max_raw_size: int = DEFAULT_MAX_RAW_SIZE) -> bytes:
    """Verify and decompress a blob; returns the JSON document bytes."""
    header, payload = split(blob, max_raw_size=max_raw_size)
    raw = get_codec(header.codec).decompress(payload, min(header.raw_size, max_raw_size))
    if len(raw) != header.raw_size:
        raise CodecError(f"blob decompressed to {len(raw)} bytes, header says {header.raw_size}")
    return raw


def write(path: str | os.PathLike[str], document_json: bytes, codec: str = DEFAULT_CODEC,
          *, overwrite: bool = True) -> BlobHeader:
    blob = encode(document_json, codec)
    atomic_write_bytes(path, blob, overwrite=overwrite)
    return BlobHeader.unpack(blob)


def read(path: str | os.PathLike[str], *, max_raw_size: int = DEFAULT_MAX_RAW_SIZE) -> bytes:
    """Read a blob file: header first (size caps before reading the rest), then verify and decompress."""
    p = Path(path)
    try:
        with p.open("rb") as fh:
            head = fh.read(HEADER_SIZE)
            header = BlobHeader.unpack(head, max_raw_size=max_raw_size)
            size = os.fstat(fh.fileno()).st_size
            if size - HEADER_SIZE != header.compressed_size:
                what = "truncated" if size - HEADER_SIZE < header.compressed_size else "has trailing bytes"
                raise InvalidInputError(f"blob {what}: header says {header.compressed_size} compressed "
                                        f"bytes, file holds {size - HEADER_SIZE}")
            rest = fh.read()
    except FileNotFoundError:
        raise NotFoundError(f"file not found: {p}") from None
    except IsADirectoryError:
        raise InvalidInputError(f"is a directory, not a blob: {p}") from None
    return decode(head + rest, max_raw_size=max_raw_size)


def is_blob(data: bytes) -> bool:
    return data[: len(MAGIC)] == MAGIC
