"""A blob packed before its transfer starts, as the streamed send's source (a daemon's send with a code).

The daemon packs a conversation into its outbox first (:mod:`p2pd.daemon.outbox`, a child process: the transfer's
row gets its size and SHA-256 from it); the exchange (:func:`p2pd.exchange.handover.send_document`) then reads
the finished blob as it would read a payload still being produced — complete from the start, so the offer has
the real sizes. A receiver that does not stream or speak the blob's codec (the page: lz4) gets a blob made from
it in the send's work folder, when asked.

Sends to paired devices go the same way (:func:`opened_for_send`): the outbox holds the zstd blob only, and the
lz4 copy for a receiver without zstd is made after its HELLO, in a work folder beside the outbox that lives as
long as the send (SPEC.md §1 codecs; DAEMON.md "Codecs between daemons").
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

from p2pd.blob.codecs import CODECS
from p2pd.blob.container import HEADER_SIZE, BlobHeader
from p2pd.daemon.outbox import PACKING_PREFIX
from p2pd.support import staging
from p2pd.transfer.frames import OfferInfo

if TYPE_CHECKING:
    from p2pd.transfer.streaming import Summary


class ReadyBlob:
    """A finished blob file and its offer description; :meth:`production` opens it for one send."""

    def __init__(self, path: Path, info: OfferInfo) -> None:
        from p2pd.blob.stream import check_file

        self.path = path
        self.info = info
        self.header: BlobHeader = check_file(path)
        self._fd: int | None = None
        self._work: Path | None = None
        self._other: Path | None = None

    def production(self, work: Path) -> ReadyBlob:
        """Open for a send whose work folder is ``work`` (a blob in another codec goes there)."""
        self._work = work
        self._fd = os.open(self.path, os.O_RDONLY)
        return self

    def summary(self) -> Summary:
        from p2pd.transfer.streaming import Summary

        h = self.header
        return Summary(self.info, h.codec, h.raw_size, max(1, h.compressed_size))

    def read(self, offset: int, max_len: int, min_len: int) -> bytes:
        assert self._fd is not None
        n = min(max_len, self.header.compressed_size - offset)
        return os.pread(self._fd, n, HEADER_SIZE + offset) if n > 0 else b""

    def totals(self) -> tuple[int, int, bytes]:
        return self.header.raw_size, self.header.compressed_size, self.header.sha256

    def wait_complete(self) -> Path:
        return self.path

    def blobs(self, codecs: tuple[int, ...]) -> list[Path]:
        if CODECS[self.header.codec].wire_id in codecs:
            return [self.path]
        if self._other is None:  # lz4, which every peer speaks, made now that it is needed
            from p2pd.blob.stream import BlobWriter, iter_raw

            assert self._work is not None
            other = self._work / "conversation.a2a.p2pd"
            with BlobWriter(other, "lz4") as w:
                for piece in iter_raw(self.path):
                    w.write(piece)
            self._other = other
        return [self._other]

    @property
    def sent_codec(self) -> str:
        """The codec of the blob offered: the file's own, or lz4 once a copy was made for the receiver."""
        return "lz4" if self._other is not None else self.header.codec

    def stop(self) -> None:
        pass  # nothing waits: every byte is there

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


@contextlib.asynccontextmanager
async def opened_for_send(blob_path: Path, info: OfferInfo) -> AsyncIterator[ReadyBlob]:
    """An outbox blob opened for one send to a paired device (:func:`p2pd.transfer.streaming.send_stream`: the
    receiver's HELLO picks the codec), with a work folder in the outbox, held while the send lasts (a killed
    daemon's is swept by age with the packings' folders), for the lz4 copy made when the receiver lacks the
    blob's codec. The copy is made again at every attempt, byte for byte the same, so an interrupted lz4
    transfer resumes by the ranges its receiver holds."""
    ready = await asyncio.to_thread(ReadyBlob, blob_path, info)
    work = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix=PACKING_PREFIX, dir=blob_path.parent))
    held = staging.hold(work)
    try:
        yield ready.production(work)
    finally:
        ready.close()
        os.close(held)
        await asyncio.to_thread(shutil.rmtree, work, True)


__all__ = ["ReadyBlob", "opened_for_send"]
