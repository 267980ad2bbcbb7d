"""A conversation packed while it is sent: the sender's :class:`~p2pd.transfer.streaming.StreamSource`.

A session file is packed by a child process (:mod:`p2pd.exchange.producer`: its own core, no GIL shared with the
event loop); a document already in memory (redacted, another agent's) by a thread. Either way the zstd payload
is appended to a blob file in the send's work folder (header space first, the header written at the end), and
readers wait on a condition for the bytes they want. So the packing never waits on the network, the transfer
reads what is there, and once the payload is complete the same file is the whole blob: for a receiver that
does not stream (the page wants lz4: made then, from it, and only then), and for the fallback file.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from p2pd.blob.codecs import CODECS
from p2pd.blob.container import HEADER_SIZE, BlobHeader
from p2pd.errors import Cause, P2pdError, TransferFailedError, from_wire
from p2pd.exchange import spare

if TYPE_CHECKING:  # the transfer's modules load once the peer is connected, after the code is shown
    from p2pd.conversation.model import ConversationDocument
    from p2pd.transfer.streaming import Summary

ESTIMATE_RATIO = 0.1  # compressed size / transcript size, for a streamed offer's progress (real sessions: ~0.085)


def _source_size(path: Path) -> int:
    """The size of the document a file makes, as far as it is known before it is packed: a blob's header says
    it; a session or a document file, its own size (an estimate, for progress, until the payload is complete)."""
    try:
        with path.open("rb") as fh:
            return BlobHeader.unpack(fh.read(HEADER_SIZE)).raw_size
    except P2pdError:  # (no blob: the file itself)
        return path.stat().st_size
    except OSError:
        return 0  # (unreadable: the packing process says so)


class Stopped(Exception):
    """The transfer ended while a reader waited."""


class Production:
    """The payload of one conversation as it is produced; thread-safe."""

    def __init__(self, work: Path, source_size: int) -> None:
        self.path = work / "conversation.zstd.a2a.p2pd"
        self.work = work
        self._fh: IO[bytes] = self.path.open("w+b")
        self._fh.write(b"\0" * HEADER_SIZE)
        self._hash = hashlib.sha256()
        self._cond = threading.Condition()
        self.size = 0  # payload bytes written
        self.source_size = source_size
        self.head: dict[str, Any] | None = None
        self.raw_size: int | None = None  # set when complete
        self.error: str | P2pdError | None = None
        self._stopped = False
        self._proc: subprocess.Popen[bytes] | None = None
        self._lz4: Path | None = None

    # --- producing ----------------------------------------------------------------------------------------

    @classmethod
    def start(cls, source: ConversationDocument | Path, work: Path) -> Production:
        if isinstance(source, Path):
            prod = cls(work, _source_size(source))
            spool = work / "spool"
            spool.mkdir()
            prod._proc = spare.hand(source, spool) or subprocess.Popen(
                [sys.executable, "-m", "p2pd.exchange.producer", str(source), str(spool)],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            threading.Thread(target=prod._read_child, name="p2pd-producer", daemon=True).start()
        else:
            prod = cls(work, 0)
            threading.Thread(target=prod._pack_document, args=(source,), name="p2pd-producer", daemon=True).start()
        return prod

    def _read_child(self) -> None:
        proc = self._proc
        assert proc is not None and proc.stdout is not None and proc.stderr is not None
        try:
            while rec := proc.stdout.read(5):
                data = proc.stdout.read(int.from_bytes(rec[1:5], "big"))
                tag = rec[:1]
                if tag == b"D":
                    self._append(data)
                elif tag == b"S":
                    self._set_head(json.loads(data))
                elif tag == b"E":
                    self._complete(int(json.loads(data)["raw_size"]))
                elif tag == b"X":  # the packing's own error, typed (a conversation over the limits…)
                    self._fail(from_wire(json.loads(data), fallback_message="the packing process failed"))
            status = proc.wait()
            err = proc.stderr.read().decode("utf-8", "replace").strip()
            if self.raw_size is None and self.error is None:
                self._fail(err or f"the packing process ended with status {status}")
        except Exception as exc:
            self._fail(f"{type(exc).__name__}: {exc}")

    def _pack_document(self, doc: ConversationDocument) -> None:
        from p2pd.conversation.layout import document_lines
        from p2pd.exchange.producer import _Out, offered
        from p2pd.support.gcpause import bulk_work

        try:
            with bulk_work():
                data = doc.to_json_dict()
                out = _Out()
                out.record = self._from_out  # type: ignore[method-assign]
                document_lines(data, out.write)
                out.finish()  # (in memory already: quick; the offer then has the real sizes)
                self._set_head(offered(data))
        except P2pdError as exc:
            self._fail(exc)
        except Exception as exc:
            self._fail(f"{type(exc).__name__}: {exc}")

    def _from_out(self, tag: bytes, data: bytes) -> None:
        if tag == b"D":
            self._append(data)
        elif tag == b"E":
            self._complete(int(json.loads(data)["raw_size"]))

    def _append(self, data: bytes) -> None:
        self._fh.write(data)
        self._fh.flush()
        self._hash.update(data)
        with self._cond:
            self.size += len(data)
            self._cond.notify_all()

    def _set_head(self, head: dict[str, Any]) -> None:
        with self._cond:
            self.head = head
            self._cond.notify_all()

    def _complete(self, raw_size: int) -> None:
        header = BlobHeader("zstd", raw_size, self.size, self._hash.digest())
        self._fh.seek(0)
        self._fh.write(header.pack())
        self._fh.seek(0, os.SEEK_END)
        self._fh.flush()
        with self._cond:
            self.raw_size = raw_size
            self._cond.notify_all()

    def _fail(self, text: str | P2pdError) -> None:
        with self._cond:
            self.error = text
            self._cond.notify_all()

    # --- reading (the transfer's worker threads) ----------------------------------------------------------

    def _wait(self, ready: Any) -> None:
        with self._cond:
            while not ready():
                if self._stopped:
                    raise Stopped("the transfer ended")
                if isinstance(self.error, P2pdError):
                    raise self.error  # (its own class and cause: the conversation is over a limit…)
                if self.error is not None:
                    raise TransferFailedError(f"could not pack the conversation: {self.error}",
                                              cause=Cause.INVALID_INPUT)
                self._cond.wait()

    def summary(self) -> Summary:
        from p2pd.transfer.frames import OfferInfo
        from p2pd.transfer.streaming import Summary

        self._wait(lambda: self.head is not None)
        assert self.head is not None
        h = self.head
        origin, counts = h.get("origin") or {}, h.get("counts") or {}
        context = str(h.get("contextId") or "")
        info = OfferInfo.normalized(str(h.get("title") or context), str(origin.get("platform") or ""),
                                    str(origin.get("sessionId") or context), int(counts.get("messages") or 0))
        if self.raw_size is not None:  # complete already: the real sizes
            return Summary(info, "zstd", self.raw_size, max(1, self.size))
        return Summary(info, "zstd", self.source_size, max(1, int(self.source_size * ESTIMATE_RATIO)))

    def read(self, offset: int, max_len: int, min_len: int) -> bytes:
        self._wait(lambda: self.size - offset >= min_len or self.raw_size is not None)
        n = min(max_len, self.size - offset)
        return os.pread(self._fh.fileno(), n, HEADER_SIZE + offset) if n > 0 else b""

    def totals(self) -> tuple[int, int, bytes]:
        self._wait(lambda: self.raw_size is not None)
        assert self.raw_size is not None
        return self.raw_size, self.size, self._hash.digest()

    def wait_complete(self) -> Path:
        self.totals()
        return self.path

    def blobs(self, codecs: tuple[int, ...]) -> list[Path]:
        self.wait_complete()
        if CODECS["zstd"].wire_id in codecs:
            return [self.path]
        if self._lz4 is None:  # the page: lz4 from the zstd blob, now that it is needed
            from p2pd.blob.stream import BlobWriter, iter_raw

            lz4 = self.work / "conversation.a2a.p2pd"
            with BlobWriter(lz4, "lz4") as w:
                for piece in iter_raw(self.path):
                    w.write(piece)
            self._lz4 = lz4
        return [self._lz4]

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()

    def close(self) -> None:
        """Stop the packing (if it still runs) and every reader."""
        self.stop()
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            with contextlib.suppress(Exception):
                self._proc.wait(5)
        with contextlib.suppress(OSError):
            self._fh.close()
