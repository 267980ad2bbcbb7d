"""The receiver's partial-blob store: durable ranges, resume across chunk sizes, locking, atomic finish."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from p2pd.blob import container as blob
from p2pd.errors import BusyError
from p2pd.transfer.frames import Offer, OfferInfo
from p2pd.transfer.partial import PARTIAL_DIR, PartialBlob, bytes_to_chunks, final_name, merge

TID = bytes(range(1, 17))


def make_offer(payload: bytes, chunk: int = 1024, raw_size: int = 12345) -> Offer:
    return Offer(TID, 1, raw_size, len(payload), hashlib.sha256(payload).digest(), chunk,
                 OfferInfo("t", "claude-code", "s", 1))


def test_merge_and_chunk_rounding() -> None:
    assert merge([(5, 7), (0, 2), (2, 3), (6, 9), (4, 4)]) == [(0, 3), (5, 9)]
    # chunk size 10, payload 35 bytes (4 chunks, the last one 5 bytes)
    assert bytes_to_chunks([(0, 20)], 10, 35) == [(0, 2)]
    assert bytes_to_chunks([(5, 25)], 10, 35) == [(1, 2)]  # partly held chunks are sent again
    assert bytes_to_chunks([(30, 35)], 10, 35) == [(3, 4)]  # the short last chunk counts when complete
    assert bytes_to_chunks([(0, 9)], 10, 35) == []


def test_committed_ranges_survive_and_resume_in_another_chunk_size(tmp_path: Path) -> None:
    payload = os.urandom(10_000)
    offer = make_offer(payload)
    part = PartialBlob.open(tmp_path, offer)
    assert part.held_chunks() == [] and part.resumed_bytes == 0
    part.write(0, payload[:3072])
    part.write(5120, payload[5120:6144])
    part.commit()
    part.write(3072, payload[3072:4096])  # written but never committed: not claimed
    part.close()
    state = json.loads((tmp_path / PARTIAL_DIR / offer.sha256.hex() / "state.json").read_text())
    assert state["have"] == [[0, 3072], [5120, 6144]]
    again = PartialBlob.open(tmp_path, offer)
    assert again.held_chunks() == [(0, 3), (5, 6)] and again.resumed_bytes == 4096
    again.close()
    bigger = PartialBlob.open(tmp_path, make_offer(payload, chunk=2048))
    assert bigger.held_chunks() == [(0, 1)]  # 2048-byte chunks wholly inside the held bytes
    bigger.close()


def test_a_record_claiming_more_than_the_file_holds_is_dropped(tmp_path: Path) -> None:
    payload = os.urandom(4096)
    offer = make_offer(payload)
    part = PartialBlob.open(tmp_path, offer)
    part.write(0, payload)
    part.commit()
    part.close()
    os.truncate(part.part_path, 100)  # the data vanished (say, a restored backup)
    again = PartialBlob.open(tmp_path, offer)
    assert again.held_chunks() == []
    again.close()


@pytest.mark.parametrize("content", [b"not json", b'{"version": 99}',
                                     b'{"version": 1, "sha256": "00", "have": []}', b'[1, 2]'])
def test_a_broken_record_starts_over(tmp_path: Path, content: bytes) -> None:
    payload = os.urandom(4096)
    offer = make_offer(payload)
    PartialBlob.open(tmp_path, offer).close()
    (tmp_path / PARTIAL_DIR / offer.sha256.hex() / "state.json").write_bytes(content)
    part = PartialBlob.open(tmp_path, offer)
    assert part.held_chunks() == []
    part.close()


def test_a_second_transfer_of_the_same_blob_is_refused_while_the_first_writes(tmp_path: Path) -> None:
    offer = make_offer(b"x" * 100)
    first = PartialBlob.open(tmp_path, offer)
    with pytest.raises(BusyError):
        PartialBlob.open(tmp_path, offer)
    first.close()
    PartialBlob.open(tmp_path, offer).close()


def test_finalize_writes_a_complete_blob_atomically_and_cleans_up(tmp_path: Path) -> None:
    document = b'{"conversation": "' + b"hello " * 2000 + b'"}'
    data = blob.encode(document)
    header, payload = blob.split(data)
    offer = Offer(TID, 1, header.raw_size, header.compressed_size, header.sha256, 1024,
                  OfferInfo("t", "claude-code", "s", 1))
    part = PartialBlob.open(tmp_path, offer)
    for off in range(0, len(payload), 1024):
        part.write(off, payload[off:off + 1024])
    part.commit()
    assert part.digest() == header.sha256
    path = part.finalize()
    assert path == tmp_path / final_name(header.sha256) and path.read_bytes() == data
    assert blob.read(path) == document
    assert not (tmp_path / PARTIAL_DIR).exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]  # nothing half-written left behind


def test_discard_forgets_bad_bytes(tmp_path: Path) -> None:
    payload = os.urandom(2048)
    offer = make_offer(payload)
    part = PartialBlob.open(tmp_path, offer)
    part.write(0, bytes(2048))
    part.commit()
    assert part.digest() != offer.sha256
    part.discard()
    assert not (tmp_path / PARTIAL_DIR).exists()


@pytest.mark.parametrize("order", ["in order", "reversed", "resumed", "gap first"])
def test_the_digest_covers_every_byte_whatever_order_they_came_in(tmp_path: Path, order: str) -> None:
    """Bytes written in order from the start are hashed as they come; whatever else is read back."""
    payload = os.urandom(10 * 1024 + 17)
    offer = make_offer(payload)
    pieces = [(off, payload[off:off + 1024]) for off in range(0, len(payload), 1024)]
    if order == "reversed":
        pieces.reverse()
    elif order == "gap first":
        pieces = pieces[3:] + pieces[:3]
    elif order == "resumed":  # an earlier transfer left the first half; this one writes the rest
        first = PartialBlob.open(tmp_path, offer)
        for off, data in pieces[:5]:
            first.write(off, data)
        first.commit()
        first.close()
        pieces = pieces[5:]
    part = PartialBlob.open(tmp_path, offer)
    for off, data in pieces:
        part.write(off, data)
    part.commit()
    assert part.digest() == offer.sha256
    assert part.digest() == offer.sha256  # asking twice gives the same answer
    part.close()


def test_a_folder_without_room_for_what_is_missing_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    """A real full file system (tests/full_disk.py): the payload still missing must fit, or the open refuses with
    ENOSPC (the receiver's `io`, before ACCEPT: the sender learns it before sending a byte) and leaves nothing;
    a partial that already holds most of it needs only the rest."""
    import errno

    from p2pd.transfer.partial import NoRoomError
    from tests.full_disk import FullDisk

    disk = FullDisk(tmp_path / "full")
    try:
        payload = os.urandom(48_000)
        offer = make_offer(payload)
        with pytest.raises(NoRoomError) as refused:
            PartialBlob.open(disk.folder, offer)
        assert refused.value.errno == errno.ENOSPC and refused.value.need >= 48_000 and refused.value.free < 4096
        assert "not enough room in" in str(refused.value) and str(disk.folder) in str(refused.value)
        assert disk.files() == []  # not even an empty partial folder
        disk.free()  # 64 KiB
        part = PartialBlob.open(disk.folder, offer)
        part.write(0, payload[:40_960])
        part.commit()
        part.close()
        # what is left (~20 KiB) holds the 7 KB still missing, not another whole 48 KB payload
        other = os.urandom(48_000)
        with pytest.raises(NoRoomError):
            PartialBlob.open(disk.folder, make_offer(other))
        held = PartialBlob.open(disk.folder, offer)
        assert held.resumed_bytes == 40_960
        held.write(40_960, payload[40_960:])
        held.commit()
        assert held.digest() == hashlib.sha256(payload).digest()
        held.close()
    finally:
        disk.unmount()


def test_a_file_system_that_keeps_no_count_is_not_taken_for_a_full_one(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Some FUSE and virtual file systems answer statvfs with zeros: no size, no room. Refusing there would refuse
    every transfer for good; their room is unknown, and the writes say when they fail."""
    from p2pd.transfer import partial

    real = os.statvfs(tmp_path)
    zeros = os.statvfs_result((real.f_bsize, real.f_frsize, 0, 0, 0, 0, 0, 0, real.f_flag, real.f_namemax))
    monkeypatch.setattr(partial.os, "statvfs", lambda _path: zeros)
    assert partial.free_space(tmp_path) is None
    part = PartialBlob.open(tmp_path, make_offer(os.urandom(10_000)))  # not refused
    part.close()
