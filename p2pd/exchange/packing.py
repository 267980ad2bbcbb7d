"""The conversation on its way in and out of a transfer, as streams: document → blobs, blob → ``.a2a.json``.

Sending is the packing process's (:mod:`p2pd.exchange.producer`, read by :mod:`p2pd.exchange.producing`); what is
here is the rest of the way in and out of files: the fallback file made from a blob, and the staging files.

Receiving: the verified blob is decompressed in pieces into a staging file beside the output while
:class:`~p2pd.conversation.stream_reader.DocumentReader` checks each element as it goes by, whatever the layout
(the line layout, the page's, another tool's), within its limits; the document that arrives is written as it
came (it is valid: every element and the rest were checked). Nothing is ever parsed whole.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from p2pd.blob.container import DEFAULT_MAX_RAW_SIZE
from p2pd.blob.stream import iter_raw
from p2pd.conversation.model import Counts, Origin
from p2pd.conversation.stream_reader import DocumentReader
from p2pd.errors import CodecError, ConflictError
from p2pd.support.atomic import atomic_writer
from p2pd.support.gcpause import bulk_work


@dataclass
class Unpacked:
    """What the receiver checked of the document it wrote (the messages were checked and let go)."""

    context_id: str
    title: str
    counts: Counts
    staged: Path
    origin: Origin


def unpack(blob_path: Path, folder: Path, *, source: str = "the received conversation",
           max_raw_size: int = DEFAULT_MAX_RAW_SIZE) -> Unpacked:
    """Check the verified blob at ``blob_path`` and write its document to a staging file in ``folder`` (hidden;
    :func:`place` gives it its name). Raises InvalidInputError (and its kin) when it is not a valid
    conversation document; then nothing is left behind."""
    staged = folder / f".{blob_path.name}.a2a.json.part"
    try:
        with bulk_work():
            reader = DocumentReader(source=source)
            with staged.open("wb") as out:
                for piece in iter_raw(blob_path, max_raw_size=max_raw_size):
                    out.write(piece)
                    reader.feed(piece)
            summary = reader.finish()
            return Unpacked(summary.context_id, summary.title, summary.counts, staged, summary.document.origin)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            staged.unlink()
        raise


def place(staged: Path, folder: Path, base: str) -> Path:
    """Move a staged document to ``<base>.a2a.json`` in ``folder`` (``<base>-N.a2a.json`` when taken), never
    over an existing file."""
    for i in range(1000):
        path = folder / (f"{base}.a2a.json" if i == 0 else f"{base}-{i}.a2a.json")
        try:
            os.link(staged, path)
        except FileExistsError:
            continue
        staged.unlink()
        return path
    raise ConflictError(f"could not find a free file name for {base}.a2a.json in {folder}")


def indent_staged(staged: Path, folder: Path) -> Path:
    """The staged (checked) document rewritten indented as a stream into a new staging file in ``folder``, which
    is returned; ``staged`` is removed (``receive --pretty``: the document is never whole in memory)."""
    from p2pd.conversation.indented import write_indented

    out = staging_file(folder)
    try:
        with _open_made(out) as fh:
            write_indented(staged, fh.write)
    except BaseException:
        out.unlink(missing_ok=True)
        raise
    staged.unlink()
    return out


def blob_to_file(blob_path: Path, folder: Path, base: str) -> Path:
    """The document inside a blob written as ``<base>.a2a.json`` in ``folder`` (the sender's fallback file)."""
    folder.mkdir(parents=True, exist_ok=True)
    with atomic_writer(folder / f".{base}.fallback") as out:
        for piece in iter_raw(blob_path):
            out.write(piece)
    return place(folder / f".{base}.fallback", folder, base)


STAGING_PREFIX = ".p2pd-receiving-"  # a streamed receive's staging file; a killed one's is swept by age


def staging_file(folder: Path) -> Path:
    """A new, empty, hidden staging file for a received document in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=STAGING_PREFIX, suffix=".a2a.json.part", dir=folder)
    try:
        os.fchmod(fd, 0o644)  # the mode atomic_writer gives every document written (mkstemp's is 0600)
    finally:
        os.close(fd)
    return Path(name)


def _open_made(path: Path) -> BinaryIO:
    """The new, empty file ``path`` (:func:`staging_file`) opened to write, without truncating it: on ext4 a file
    truncated and then written is flushed when closed (``auto_da_alloc``), 60-90 ms at 200 MB on the way out."""
    return path.open("r+b")


class StreamUnpacker:
    """The receiver's :class:`~p2pd.transfer.streamstore.StreamSink`: a streamed payload decompressed as it
    arrives into a staging file beside the output, each element checked by the DocumentReader on the way.
    Blocking (worker threads)."""

    def __init__(self, codec: str, folder: Path, *, max_raw_size: int = DEFAULT_MAX_RAW_SIZE,
                 source: str = "the received conversation", staged: Path | None = None) -> None:
        """``staged``: the staging file to write (made by the caller); a new hidden one in ``folder`` if None."""
        from p2pd.blob.stream import Inflater

        self.staged = staged or staging_file(folder)
        self._out = _open_made(self.staged)
        self._source = source
        self._max = max_raw_size
        self._reader = DocumentReader(source=source)
        self._inflater = Inflater(codec, self._piece, max_raw_size=max_raw_size)
        self.unpacked: Unpacked | None = None
        self._gc: Any = bulk_work()
        self._gc.__enter__()

    def _piece(self, piece: bytes) -> None:
        self._out.write(piece)
        self._reader.feed(piece)

    def feed(self, data: bytes) -> None:
        self._inflater.feed(data)

    def finish(self, raw_size: int) -> Path:
        try:
            got = self._inflater.finish()
            if got != raw_size:
                raise CodecError(f"the conversation decompressed to {got} bytes, the sender said {raw_size}")
            self._out.close()
            s = self._reader.finish()
            self.unpacked = Unpacked(s.context_id, s.title, s.counts, self.staged, s.document.origin)
            return self.staged
        finally:
            self._end_gc()

    def abort(self) -> None:
        self._end_gc()
        with contextlib.suppress(OSError):
            self._out.close()
        with contextlib.suppress(FileNotFoundError):
            self.staged.unlink()

    def _end_gc(self) -> None:
        if self._gc is not None:
            gc_pause, self._gc = self._gc, None
            gc_pause.__exit__(None, None, None)
