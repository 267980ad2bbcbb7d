"""The sending side of a streamed transfer (SPEC.md §12): the conversation is still being packed when the channel
opens. The sender's HELLO lists STREAMS; once the receiver's HELLO is in, the offer is prepared from the
:class:`StreamSource`:

* the receiver streams too: STREAM_OFFER as soon as the summary is known, then the payload as it is produced,
  chunk by chunk (window and channel buffer permitting), then STREAM_END with the totals and the SHA-256;
* it does not (the page, an older peer): wait for the whole blob in the receiver's codec, then the version-1
  OFFER and chunks exactly as :class:`~p2pd.transfer.sending.SendSide` sends a finished blob.

The source is read in worker-thread jobs that block until bytes are there, so the event loop never waits on the
packing, and the packing (another process) never waits on the network: its output goes to a file.
"""

from __future__ import annotations

import os
import time
from collections import deque
from pathlib import Path
from typing import Protocol

import msgspec

from p2pd.errors import P2pdError, TooLargeError
from p2pd.transfer.control import ProgressCallback, TransferControl, TransferResult
from p2pd.transfer.datachannel import DataChannel
from p2pd.transfer.frames import Code, OfferInfo
from p2pd.transfer.jobs import JobDone, JobKind, open_blob
from p2pd.transfer.runloop import Runner
from p2pd.transfer.sender import Encoding, Sender
from p2pd.transfer.sending import HIGH_WATER, LOW_WATER, READ_AHEAD, READ_BATCH, SendSide


class Summary(msgspec.Struct, frozen=True):
    """What a STREAM_OFFER says before the payload exists: the description and size estimates."""

    info: OfferInfo
    codec: str
    raw_estimate: int
    compressed_estimate: int


class StreamSource(Protocol):
    """A payload being produced elsewhere; every method may block (worker threads) and raises on a failed
    production (the transfer fails with ``io``)."""

    def summary(self) -> Summary: ...

    def read(self, offset: int, max_len: int, min_len: int) -> bytes:
        """Payload bytes from ``offset``: waits until ``min_len`` are there or the payload ended; b"" at its end."""

    def totals(self) -> tuple[int, int, bytes]:
        """(raw size, compressed size, SHA-256) of the finished payload."""

    def blobs(self, codecs: tuple[int, ...]) -> list[Path]:
        """Whole blob files for a receiver listing ``codecs``: the first in a codec it lists (the last: lz4)."""

    def stop(self) -> None:
        """Wake every waiting call (they raise): the transfer is over."""


class StreamSendSide(SendSide):
    """One outgoing transfer of a conversation still being packed."""

    def __init__(self, channel: DataChannel, source: StreamSource, *, max_message_size: int, idle_timeout: float,
                 decision_timeout: float | None, on_progress: ProgressCallback | None,
                 control: TransferControl | None, high_water: int = HIGH_WATER, low_water: int = LOW_WATER) -> None:
        Runner.__init__(self, channel, idle_timeout=idle_timeout, on_progress=on_progress, control=control)
        self.decision_timeout = decision_timeout
        self.high_water = high_water
        self.low_water = low_water
        placeholder = OfferInfo.normalized("", "", "", 0)
        self.machine = Sender(transfer_id=os.urandom(16), codec="lz4", raw_size=0, compressed_size=1,
                              sha256=bytes(32), info=placeholder, max_message_size=max_message_size,
                              transport_limit=self.tap.remote_max_message_size, deferred=True)
        self.source = source
        self.fds: tuple[int, ...] = ()
        self.ready: deque[tuple[int, bytes]] = deque()
        self.ready_bytes = 0
        self.read_pos = 0
        self._reading = (0, 0)
        self.decision_seconds = 0.0
        self.stream_pos = 0  # payload bytes read from the source
        self.stream_ended = False

    def stop_source(self) -> None:
        self.source.stop()

    def prepare(self) -> None:
        if self.job is not None:
            return
        m = self.machine
        if m.peer_streams:
            self.start_job(JobKind.SUMMARY, self.source.summary)
        else:
            self.start_job(JobKind.BLOB, self.source.blobs, m.peer_codecs)

    def pump(self) -> None:
        m = self.machine
        if not m.streamed:
            super().pump()
            return
        while self.ready and self.channel.bufferedAmount <= self.high_water and m.stream_room(len(self.ready[0][1])):
            _, payload = self.ready.popleft()
            self.ready_bytes -= len(payload)
            self.perform(m.send_stream_chunk(payload))
        if self.stream_ended and not self.ready and m.end is None and not m.finished:
            raw, size, digest = self.source.totals()
            if size != m.bytes_sent:
                self.perform(m.fail(Code.INTERNAL, f"the source produced {size} bytes, {m.bytes_sent} were sent"))
                return
            self.perform(m.end_stream(raw, digest))

    def read_ahead(self) -> None:
        m = self.machine
        if not m.streamed:
            super().read_ahead()
            return
        if self.job is not None or m.finished or m.offer is None or self.stream_ended:
            return
        if self.ready_bytes >= READ_AHEAD:
            return
        cs = m.offer.chunk_size
        self.start_job(JobKind.READ, self.source.read, self.stream_pos, max(cs, READ_BATCH // cs * cs), cs)

    def on_job(self, done: JobDone) -> None:
        m = self.machine
        if done.error is not None:
            if isinstance(done.error, P2pdError) and not m.finished:  # the packing's own error: this side's
                self.local_error = done.error
            if isinstance(done.error, TooLargeError):  # over what any receiver takes: the program stops it
                self.perform(m.cancel(f"the conversation is over what a p2pd receiver takes: {done.error}"))
            else:
                self.perform(m.fail(Code.IO, f"cannot pack the conversation: {done.error}"))
            return
        if done.kind is JobKind.SUMMARY:
            s = done.result
            assert isinstance(s, Summary)
            self.perform(m.offer_stream(s.codec, s.raw_estimate, s.compressed_estimate, s.info))
        elif done.kind is JobKind.BLOB:
            assert isinstance(done.result, list)
            opened = [open_blob(Path(p)) for p in done.result]  # (small reads of the headers)
            self.fds = tuple(fd for fd, _ in opened)
            (_, first), rest = opened[0], opened[1:]
            self.perform(m.offer_blob(first.codec, first.raw_size, first.compressed_size, first.sha256,
                                      self.summary_info(),
                                      [Encoding(h.codec, h.compressed_size, h.sha256) for _, h in rest]))
        elif m.streamed:
            assert isinstance(done.result, bytes) and m.offer is not None
            if not done.result:
                self.stream_ended = True
                return
            cs = m.offer.chunk_size
            for i in range(0, len(done.result), cs):
                piece = done.result[i:i + cs]
                self.ready.append((-1, piece))
                self.ready_bytes += len(piece)
            self.stream_pos += len(done.result)
        else:
            super().on_job(done)

    def summary_info(self) -> OfferInfo:
        return self.source.summary().info  # known: the blobs are complete

    def result(self) -> TransferResult:
        m = self.machine
        if not m.streamed:
            return super().result()
        assert m.offer is not None and m.end is not None
        return TransferResult(transfer_id=m.transfer_id.hex(), sha256=m.end.sha256, raw_size=m.end.raw_size,
                              compressed_size=m.end.compressed_size, chunk_size=m.offer.chunk_size,
                              chunks_sent=m.chunks_sent, bytes_sent=m.bytes_sent, resumed_bytes=0,
                              elapsed=time.monotonic() - self.started, decision_seconds=self.decision_seconds,
                              cancel_too_late=m.cancel_too_late)


async def send_stream(channel: DataChannel, source: StreamSource, *, on_progress: ProgressCallback | None = None,
                      idle_timeout: float = 30.0, max_message_size: int = 65536,
                      control: TransferControl | None = None, decision_timeout: float | None = None) -> TransferResult:
    """Send a conversation still being produced by ``source`` (streamed when the receiver speaks it, else as a
    whole blob once done); errors as :func:`p2pd.transfer.channel.send_blob`."""
    side = StreamSendSide(channel, source, max_message_size=max_message_size, idle_timeout=idle_timeout,
                          decision_timeout=decision_timeout, on_progress=on_progress, control=control)
    return await side.run()


__all__ = ["StreamSendSide", "StreamSource", "Summary", "send_stream"]
