"""The blocking work of a transfer, run in worker threads one job at a time, and how its results come back.

A side starts a job with :meth:`~p2pd.transfer.runloop.Runner.start_job`; when the thread is done the run loop
receives a :class:`JobDone` through the channel's event queue, in order with the frames, and hands it to the
side. The functions here are plain blocking I/O on a blob file or a :class:`~p2pd.transfer.partial.PartialBlob`.
"""

from __future__ import annotations

import os
from enum import Enum
from pathlib import Path

import msgspec

from p2pd.blob.container import HEADER_SIZE, BlobHeader
from p2pd.errors import InvalidInputError, NotFoundError
from p2pd.transfer.partial import PartialBlob
from p2pd.transfer.streamstore import StreamStore


class JobKind(Enum):
    """What a worker job did; the side that started it interprets the result."""

    READ = "read"  # sender: a span of the blob's payload (bytes)
    DECISION = "decision"  # receiver: the user's answer to the OFFER (bool); runs on the loop, not a thread
    OPEN = "open"  # receiver: the partial store for the OFFER (PartialBlob)
    WRITE = "write"  # receiver: queued chunks written and committed (None)
    DIGEST = "digest"  # receiver: SHA-256 of the stored payload (bytes)
    FINALIZE = "finalize"  # receiver: the blob moved into place (Path)
    COMMIT = "commit"  # receiver: the caller's decision to keep the verified blob (bool), before DONE
    SUMMARY = "summary"  # streaming sender: what the offer says of a conversation still being packed
    BLOB = "blob"  # streaming sender: the whole blob files, for a receiver that does not stream


class JobDone(msgspec.Struct, frozen=True):
    """A job finished: ``result`` on success, ``error`` (the exception it raised, or CancelledError) if not."""

    kind: JobKind
    result: object
    error: BaseException | None = None


def open_blob(path: Path) -> tuple[int, BlobHeader]:
    """Open a blob file and check its header against its size; the caller closes the descriptor."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        raise NotFoundError(f"blob file not found: {path}") from None
    except OSError as exc:
        raise InvalidInputError(f"cannot read the blob file {path}: {exc.strerror}") from None
    try:
        try:
            head = os.pread(fd, HEADER_SIZE, 0)
            size = os.fstat(fd).st_size
        except IsADirectoryError:
            raise InvalidInputError(f"is a directory, not a blob: {path}") from None
        header = BlobHeader.unpack(head, max_raw_size=1 << 62)
        if size != HEADER_SIZE + header.compressed_size:
            raise InvalidInputError(f"blob file {path} holds {size - HEADER_SIZE} payload bytes, its header "
                                    f"says {header.compressed_size}")
        if header.compressed_size == 0:
            raise InvalidInputError(f"blob file {path} has an empty payload")
    except BaseException:
        os.close(fd)
        raise
    return fd, header


def read_span(fd: int, offset: int, length: int) -> bytes:
    """``length`` payload bytes at payload ``offset`` of an open blob file."""
    data = os.pread(fd, length, HEADER_SIZE + offset)
    if len(data) != length:
        raise OSError(f"the blob file is shorter than its header says (read {len(data)} of {length} bytes)")
    return data


def write_batch(part: PartialBlob | StreamStore, batch: list[tuple[int, bytes | memoryview]], commit: bool) -> None:
    """Write ``(offset, data)`` pieces into the partial store; with ``commit``, make them durable and record
    them for resume."""
    for offset, data in batch:
        part.write(offset, data)
    if commit:
        part.commit()
