from __future__ import annotations

import hashlib
import struct

import pytest

from p2pd.blob import container as blob
from p2pd.errors import ChecksumMismatchError, CodecError, InvalidInputError, NotFoundError, TooLargeError

DOC = b'{"format":"p2pd.conversation","messages":[' + b'{"text":"hello"},' * 5000 + b'{}]}'


@pytest.mark.parametrize("codec", ["lz4", "zstd"])
def test_round_trip(tmp_path, codec):
    path = tmp_path / "c.a2a.p2pd"
    header = blob.write(path, DOC, codec)
    assert header.raw_size == len(DOC)
    assert header.compressed_size < len(DOC) // 5
    data = path.read_bytes()
    assert hashlib.sha256(data[blob.HEADER_SIZE:]).digest() == header.sha256
    assert blob.read(path) == DOC


def test_every_flipped_byte_is_detected():
    data = blob.encode(DOC)
    # flip one bit in every byte position (header and payload); none may decode to a document silently
    for i in range(len(data)):
        bad = bytearray(data)
        bad[i] ^= 0x01
        if 10 <= i < 12:  # the reserved field is ignored by design
            assert blob.decode(bytes(bad)) == DOC
            continue
        with pytest.raises((InvalidInputError, TooLargeError)):
            blob.decode(bytes(bad))


def test_flipped_payload_byte_is_a_checksum_mismatch():
    data = bytearray(blob.encode(DOC))
    data[blob.HEADER_SIZE + 7] ^= 0xFF
    with pytest.raises(ChecksumMismatchError, match="checksum mismatch"):
        blob.decode(bytes(data))


def test_truncated_and_trailing(tmp_path):
    data = blob.encode(DOC)
    p = tmp_path / "t.bin"
    p.write_bytes(data[:-10])
    with pytest.raises(InvalidInputError, match="truncated"):
        blob.read(p)
    p.write_bytes(data + b"x")
    with pytest.raises(InvalidInputError, match="trailing"):
        blob.read(p)
    p.write_bytes(data[:20])
    with pytest.raises(InvalidInputError, match="shorter than"):
        blob.read(p)


def test_hundred_gb_claim_refused_from_header_alone(tmp_path):
    header = struct.pack(">8sBBHQQ32s", b"P2PDBLOB", 1, 1, 0, 100 * 10**9, 10, b"\0" * 32)
    p = tmp_path / "huge.bin"
    p.write_bytes(header + b"0123456789")
    with pytest.raises(TooLargeError, match="100000000000 bytes"):
        blob.read(p)
    # a lower cap applies too
    small = blob.encode(DOC)
    with pytest.raises(TooLargeError):
        blob.decode(small, max_raw_size=1000)


def test_header_that_lies_about_raw_size():
    good = blob.encode(DOC)
    header = blob.BlobHeader.unpack(good)
    payload = good[blob.HEADER_SIZE:]
    liar = blob.BlobHeader(codec="lz4", raw_size=header.raw_size - 1, compressed_size=len(payload),
                           sha256=header.sha256).pack() + payload
    with pytest.raises(TooLargeError):
        blob.decode(liar)
    liar2 = blob.BlobHeader(codec="lz4", raw_size=header.raw_size + 1, compressed_size=len(payload),
                            sha256=header.sha256).pack() + payload
    with pytest.raises(CodecError, match="header says"):
        blob.decode(liar2)


def test_bad_magic_version_codec(tmp_path):
    good = bytearray(blob.encode(b"{}"))
    with pytest.raises(InvalidInputError, match="magic"):
        blob.decode(b"NOTABLOB" + bytes(good[8:]))
    v = bytearray(good)
    v[8] = 9
    with pytest.raises(InvalidInputError, match="version 9"):
        blob.decode(bytes(v))
    c = bytearray(good)
    c[9] = 77
    with pytest.raises(CodecError, match="codec id 77"):
        blob.decode(bytes(c))


def test_missing_file(tmp_path):
    with pytest.raises(NotFoundError):
        blob.read(tmp_path / "nope")


def test_atomic_write_leaves_nothing_on_failure(tmp_path):
    from p2pd.support.atomic import atomic_writer

    target = tmp_path / "out.json"
    with pytest.raises(RuntimeError), atomic_writer(target) as fh:
        fh.write(b"partial")
        raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []
