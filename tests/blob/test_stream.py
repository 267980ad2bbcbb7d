"""Streaming blob writer and reader: the container's format, checked as strictly as the in-memory reader."""

from __future__ import annotations

import os

import pytest

from p2pd.blob import container
from p2pd.blob.stream import BlobWriter, iter_raw
from p2pd.errors import ChecksumMismatchError, InvalidInputError, TooLargeError


@pytest.mark.parametrize("codec", ["zstd", "lz4"])
def test_written_in_pieces_reads_back(tmp_path, codec):
    data = os.urandom(3000) * 1000 + b'{"a": 1}' * 100_000
    path = tmp_path / "b.p2pd"
    with BlobWriter(path, codec) as w:
        for i in range(0, len(data), 77_777):
            w.write(data[i:i + 77_777])
    assert w.header is not None and w.header.raw_size == len(data)
    assert container.read(path) == data
    assert b"".join(iter_raw(path)) == data


def test_an_error_while_writing_leaves_nothing(tmp_path):
    path = tmp_path / "b.p2pd"
    with pytest.raises(RuntimeError), BlobWriter(path) as w:
        w.write(b"x" * 1000)
        raise RuntimeError("stop")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("codec", ["zstd", "lz4"])
def test_corrupted_or_cut_blobs_are_refused(tmp_path, codec):
    path = tmp_path / "b.p2pd"
    with BlobWriter(path, codec) as w:
        w.write(b"hello world " * 10_000)
    blob = bytearray(path.read_bytes())
    blob[-5] ^= 0xFF
    path.write_bytes(bytes(blob))
    with pytest.raises(ChecksumMismatchError):
        list(iter_raw(path))
    path.write_bytes(bytes(blob[:-10]))
    with pytest.raises(InvalidInputError, match="truncated"):
        list(iter_raw(path))


def test_a_payload_that_expands_past_its_header_is_refused(tmp_path):
    import hashlib

    payload = container.encode(b"a" * 100_000, "zstd")[container.HEADER_SIZE:]
    lying = container.BlobHeader(codec="zstd", raw_size=1000, compressed_size=len(payload),
                                 sha256=hashlib.sha256(payload).digest())
    path = tmp_path / "b.p2pd"
    path.write_bytes(lying.pack() + payload)
    with pytest.raises(TooLargeError, match="expands past"):
        list(iter_raw(path))
