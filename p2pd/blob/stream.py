"""Blobs written and read as streams, in memory bounded by a buffer rather than by the conversation.

The layout is :mod:`p2pd.blob.container`'s (spec ``blob.md``): the header holds the sizes and the SHA-256 of the
compressed bytes, so a writer puts a placeholder header first, streams the compressed bytes after it while
hashing them, and writes the real header over the placeholder at the end — in a staging file that is moved into
place only when complete. A reader checks the header and the SHA-256 of the whole payload first (one pass over
the file), then decompresses it in pieces, never producing more than the header's ``raw_size``.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from p2pd.blob.codecs import zstd_decompressor, zstd_parameters
from p2pd.blob.container import DEFAULT_MAX_RAW_SIZE, HEADER_SIZE, BlobHeader
from p2pd.errors import ChecksumMismatchError, CodecError, InvalidInputError, NotFoundError, TooLargeError
from p2pd.support.atomic import atomic_writer

READ_SIZE = 1 << 20
ZSTD_SLICE = 1024


class _Compressor:
    """One codec's streaming compressor: ``feed`` returns what is ready, ``finish`` the rest."""

    def __init__(self, codec: str) -> None:
        self.codec = codec
        if codec == "zstd":
            import zstandard

            self._z: Any = zstandard.ZstdCompressor(compression_params=zstd_parameters()).compressobj(size=-1)
        elif codec == "lz4":
            import lz4.frame

            self._z = lz4.frame.LZ4FrameCompressor(content_checksum=True)
            self._head: bytes | None = self._z.begin()
        else:
            raise CodecError(f"unknown codec {codec!r}")

    def feed(self, data: bytes) -> bytes:
        if self.codec == "zstd":
            return bytes(self._z.compress(data))
        out = self._z.compress(data)
        if self._head is not None:
            out, self._head = self._head + out, None
        return bytes(out)

    def finish(self) -> bytes:
        if self.codec == "zstd":
            return bytes(self._z.flush())
        tail = self._z.flush()
        if self._head is not None:
            tail, self._head = self._head + tail, None
        return bytes(tail)


class BlobWriter:
    """A blob file written as a stream: ``write(json_bytes)`` any number of times, then ``close()``.

    Used as a context manager; an exception inside leaves nothing at ``path`` (the staging file is removed)."""

    def __init__(self, path: str | os.PathLike[str], codec: str = "zstd", *, overwrite: bool = True) -> None:
        self.path = Path(path)
        self._writer = atomic_writer(self.path, overwrite=overwrite)
        self._fh: IO[bytes] | None = None
        self._comp = _Compressor(codec)
        self._hash = hashlib.sha256()
        self.raw_size = 0
        self.compressed_size = 0
        self.header: BlobHeader | None = None

    def __enter__(self) -> BlobWriter:
        self._fh = self._writer.__enter__()
        self._fh.write(b"\0" * HEADER_SIZE)
        return self

    def write(self, data: bytes) -> None:
        self.raw_size += len(data)
        self._out(self._comp.feed(data))

    def _out(self, chunk: bytes) -> None:
        if chunk:
            assert self._fh is not None
            self._hash.update(chunk)
            self.compressed_size += len(chunk)
            self._fh.write(chunk)

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        assert self._fh is not None
        if exc_type is None:
            self._out(self._comp.finish())
            self.header = BlobHeader(codec=self._comp.codec, raw_size=self.raw_size,
                                     compressed_size=self.compressed_size, sha256=self._hash.digest())
            self._fh.seek(0)
            self._fh.write(self.header.pack())
        self._writer.__exit__(exc_type, exc, tb)


def check_file(path: str | os.PathLike[str], *, max_raw_size: int = DEFAULT_MAX_RAW_SIZE) -> BlobHeader:
    """The header of a complete blob file, after checking its length and the SHA-256 of its payload."""
    p = Path(path)
    try:
        with p.open("rb") as fh:
            header = BlobHeader.unpack(fh.read(HEADER_SIZE), max_raw_size=max_raw_size)
            size = os.fstat(fh.fileno()).st_size - HEADER_SIZE
            if size != header.compressed_size:
                what = "truncated" if size < header.compressed_size else "has trailing bytes"
                raise InvalidInputError(f"blob {what}: header says {header.compressed_size} compressed bytes, "
                                        f"file holds {size}")
            digest = hashlib.sha256()
            while chunk := fh.read(READ_SIZE):
                digest.update(chunk)
    except FileNotFoundError:
        raise NotFoundError(f"file not found: {p}") from None
    except IsADirectoryError:
        raise InvalidInputError(f"is a directory, not a blob: {p}") from None
    if digest.digest() != header.sha256:
        raise ChecksumMismatchError(f"checksum mismatch: blob header says sha256 {header.sha256.hex()[:16]}…, "
                                    f"content hashes to {digest.hexdigest()[:16]}…")
    return header


def iter_raw(path: str | os.PathLike[str], *, max_raw_size: int = DEFAULT_MAX_RAW_SIZE) -> Iterator[bytes]:
    """The decompressed JSON of a verified blob file, in pieces of at most about ``READ_SIZE`` bytes. Raises
    (as it goes) when the payload expands past the header's ``raw_size`` or ends short of it."""
    header = check_file(path, max_raw_size=max_raw_size)
    produced = 0
    with Path(path).open("rb") as fh:
        fh.seek(HEADER_SIZE)
        for piece in _decompressed(fh, header.codec):
            produced += len(piece)
            if produced > header.raw_size:
                raise TooLargeError(f"blob expands past the {header.raw_size} bytes its header says")
            yield piece
    if produced != header.raw_size:
        raise CodecError(f"blob decompressed to {produced} bytes, header says {header.raw_size}")


def _decompressed(fh: IO[bytes], codec: str) -> Iterator[bytes]:
    if codec == "zstd":
        import zstandard

        try:
            reader = zstd_decompressor().stream_reader(fh, read_size=READ_SIZE, read_across_frames=False)
            while piece := reader.read(READ_SIZE):
                yield piece
        except zstandard.ZstdError as exc:
            raise CodecError(f"zstd decompression failed: {exc}") from None
        return
    import lz4.frame

    dec = lz4.frame.LZ4FrameDecompressor()
    try:
        while not dec.eof:
            data = fh.read(READ_SIZE) if dec.needs_input else b""
            if dec.needs_input and not data:
                raise CodecError("lz4 decompression failed: the frame is truncated")
            piece = dec.decompress(data, max_length=READ_SIZE)
            if piece:
                yield piece
    except RuntimeError as exc:
        raise CodecError(f"lz4 decompression failed: {exc}") from None
    if dec.unused_data or fh.read(1):
        raise CodecError("lz4 decompression failed: trailing bytes after the frame")


class Inflater:
    """Push-style decompression of one codec's frame: :meth:`feed` compressed bytes as they arrive, each
    decompressed piece goes to ``out`` at once (never more than about ``READ_SIZE`` held); the total may not pass
    ``max_raw_size`` (TooLargeError). :meth:`finish` checks the frame ended (CodecError if not) and returns the
    raw size."""

    def __init__(self, codec: str, out: Any, *, max_raw_size: int = DEFAULT_MAX_RAW_SIZE) -> None:
        self.codec = codec
        self.raw_size = 0
        self._out = out
        self._max = max_raw_size
        if codec == "zstd":
            import zstandard

            self._zerror: Any = zstandard.ZstdError
            self._z: Any = zstd_decompressor().decompressobj(write_size=READ_SIZE // 4)
        elif codec == "lz4":
            import lz4.frame

            self._z = lz4.frame.LZ4FrameDecompressor()
        else:
            raise CodecError(f"unknown codec {codec!r}")

    def _emit(self, piece: bytes) -> None:
        self.raw_size += len(piece)
        if self.raw_size > self._max:
            raise TooLargeError(f"the conversation expands past {self._max} bytes")
        self._out(piece)

    def feed(self, data: bytes) -> None:
        if self.codec == "zstd":
            try:
                # in slices: zstd expands a block of a few bytes to 128 KiB, so a slice of ZSTD_SLICE bytes
                # never yields more than ~ZSTD_SLICE / 4 × 128 KiB at once (a bomb stops at the cap, not in memory)
                for i in range(0, len(data), ZSTD_SLICE):
                    if self._z.eof:
                        raise CodecError("zstd decompression failed: trailing bytes after the frame")
                    self._emit_all(self._z.decompress(data[i:i + ZSTD_SLICE]))
                    if self._z.eof and self._z.unused_data:
                        raise CodecError("zstd decompression failed: trailing bytes after the frame")
            except self._zerror as exc:
                raise CodecError(f"zstd decompression failed: {exc}") from None
            return
        try:
            while True:
                if self._z.eof:
                    raise CodecError("lz4 decompression failed: trailing bytes after the frame")
                piece = self._z.decompress(data, max_length=READ_SIZE)
                data = b""
                if piece:
                    self._emit(piece)
                if self._z.needs_input or self._z.eof:
                    return
        except RuntimeError as exc:
            raise CodecError(f"lz4 decompression failed: {exc}") from None

    def _emit_all(self, out: bytes) -> None:
        for i in range(0, len(out), READ_SIZE):
            self._emit(out[i:i + READ_SIZE])

    def finish(self) -> int:
        if not self._z.eof:
            raise CodecError(f"{self.codec} decompression failed: the frame is truncated")
        if self.codec == "lz4" and self._z.unused_data:
            raise CodecError("lz4 decompression failed: trailing bytes after the frame")
        return self.raw_size
