"""The sending side of the adapter: runs a :class:`~p2pd.transfer.sender.Sender` over a data channel, reading
the blob file ahead of the sends in worker-thread jobs.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import deque
from collections.abc import Sequence

from p2pd.blob.container import BlobHeader
from p2pd.transfer.control import ProgressCallback, TransferControl, TransferResult
from p2pd.transfer.datachannel import DataChannel
from p2pd.transfer.events import Action
from p2pd.transfer.frames import Code, OfferInfo
from p2pd.transfer.jobs import JobDone, JobKind, read_span
from p2pd.transfer.runloop import Runner
from p2pd.transfer.sender import CANCEL_ANSWER_WAIT, Encoding, Sender

HIGH_WATER = 1024 * 1024
LOW_WATER = 256 * 1024
READ_BATCH = 1024 * 1024
READ_AHEAD = 2 * 1024 * 1024


class SendSide(Runner):
    """One outgoing transfer of the blob open at ``fd`` (this object closes it)."""

    machine: Sender
    _answer_by: float | None = None  # cancelling: when the cancel stands without a DONE (set at its first wait)

    def __init__(self, channel: DataChannel, fd: int, header: BlobHeader, info: OfferInfo, *,
                 max_message_size: int, idle_timeout: float, decision_timeout: float | None,
                 on_progress: ProgressCallback | None, control: TransferControl | None,
                 high_water: int = HIGH_WATER, low_water: int = LOW_WATER,
                 alternatives: Sequence[tuple[int, BlobHeader]] = ()) -> None:
        """``alternatives``: open blobs of the same conversation in other codecs (this object closes them too),
        preferred over ``fd`` when the receiver's HELLO lists their codec."""
        super().__init__(channel, idle_timeout=idle_timeout, on_progress=on_progress, control=control)
        self.decision_timeout = decision_timeout
        self.high_water = high_water
        self.low_water = low_water
        self.machine = Sender(transfer_id=os.urandom(16), codec=header.codec, raw_size=header.raw_size,
                              compressed_size=header.compressed_size, sha256=header.sha256, info=info,
                              max_message_size=max_message_size,
                              transport_limit=self.tap.remote_max_message_size,
                              alternatives=[Encoding(h.codec, h.compressed_size, h.sha256) for _, h in alternatives])
        self.fds = (fd, *(f for f, _ in alternatives))
        self.ready: deque[tuple[int, bytes]] = deque()  # chunks read, not sent yet
        self.ready_bytes = 0
        self.read_pos = 0  # plan position of the next chunk to read
        self._reading = (0, 0)  # (first index, count) of the read job in flight
        self.decision_seconds = 0.0  # how long the receiver took to accept

    async def run(self) -> TransferResult:
        try:
            await self.wait_open()
            try:
                await self.loop_until_finished()
            except asyncio.CancelledError:
                self.perform(self.machine.cancel("the sender was stopped"))
                if not await self.answered():
                    self.close_channel()
                    raise
            finally:
                self.stop_source()
                await self.settle_job()
            await self.flush()
            if self.cancelled_here():
                await self.close_heard()  # the CANCEL reaches the receiver before the connection goes
            self.close_channel()  # the sender closes the channel once the transfer is over (SPEC.md)
        finally:
            for fd in self.fds:
                os.close(fd)
            self.tap.detach()
        if not self.completed:
            self.raise_failure()
        return self.result()

    async def answered(self) -> bool:
        """This task was stopped (Ctrl-C on ``p2pd send``, a daemon stopping) after its last chunk: wait, at most
        :data:`CANCEL_ANSWER_WAIT`, for the receiver's answer to the CANCEL just sent. True when its DONE came —
        the receiver kept the conversation, so the transfer completed and the stop is withdrawn, as both sides
        then say; False when the cancel stands (or the task is stopped again meanwhile)."""
        if not self.machine.cancelling:
            return False
        try:
            while not self.machine.finished:
                self.drain()
                left = None if self.machine.finished else self.answer_delay()
                if left is None:
                    break
                await self.wait(left)
        except asyncio.CancelledError:
            return False
        task = asyncio.current_task()
        if not self.completed or task is None:
            return False
        task.uncancel()
        return True

    def answer_delay(self) -> float | None:
        """Cancelling: seconds left for the receiver's answer (the wait starts at the first call); once they are
        over the cancel stands (the machine ends) and None is returned."""
        if self._answer_by is None:
            self._answer_by = self.loop.time() + CANCEL_ANSWER_WAIT
        left = self._answer_by - self.loop.time()
        if left > 0:
            return left
        self.perform(self.machine.cancel_unanswered())
        return None

    def stop_source(self) -> None:
        """Wake a job waiting on a producer (none here: the blob is complete)."""

    def result(self) -> TransferResult:
        m = self.machine
        assert m.offer is not None and m.plan is not None
        return TransferResult(transfer_id=m.transfer_id.hex(), sha256=m.offer.sha256,
                              raw_size=m.offer.raw_size, compressed_size=m.offer.compressed_size,
                              chunk_size=m.offer.chunk_size, chunks_sent=m.chunks_sent,
                              bytes_sent=m.bytes_sent, resumed_bytes=m.plan.held_bytes,
                              elapsed=time.monotonic() - self.started, decision_seconds=self.decision_seconds,
                              cancel_too_late=m.cancel_too_late)

    async def loop_until_finished(self) -> None:
        self.channel.bufferedAmountLowThreshold = self.low_water
        with self.watch_control():
            self.perform(self.machine.start())
            decision_started: float | None = None
            while not self.machine.finished:
                self.drain()
                self.check_cancel()
                self.pump()
                self.read_ahead()
                if self.machine.finished:
                    break
                delay: float | None = None
                if self.machine.cancelling:  # a DONE may cross the CANCEL: the receiver committed first
                    delay = self.answer_delay()
                    if delay is None:
                        break
                elif self.machine.preparing:
                    self.prepare()
                    self.last_activity = self.loop.time()  # the peer waits for this side: no idle timeout
                elif self.machine.awaiting_decision:
                    # the receiving user is deciding: silence is normal, only decision_timeout applies
                    decision_started = decision_started or self.loop.time()
                    if self.decision_timeout is not None:
                        delay = decision_started + self.decision_timeout - self.loop.time()
                        if delay <= 0:
                            reason = f"no decision from the receiver within {self.decision_timeout:g} s"
                            self.perform(self.machine.fail(Code.TIMEOUT, reason))
                            break
                else:
                    if decision_started is not None:
                        self.decision_seconds += self.loop.time() - decision_started
                        decision_started = None
                        self.last_activity = self.loop.time()
                    delay = self.idle_delay(True)
                    if self.machine.finished:
                        break
                await self.wait(delay)

    def prepare(self) -> None:
        """A deferred offer (:mod:`p2pd.transfer.streaming`); a complete blob is offered on HELLO."""

    def handle(self, action: Action) -> None:  # pragma: no cover - the sender asks for nothing else
        raise AssertionError(f"unexpected sender action {action!r}")

    def pump(self) -> None:
        """Send the chunks already read while the window and the channel's buffer allow."""
        m = self.machine
        while not m.finished:
            nxt = m.next_chunk()
            if nxt is None or not self.ready or self.channel.bufferedAmount > self.high_water:
                return
            index, payload = self.ready.popleft()
            self.ready_bytes -= len(payload)
            self.perform(m.send_chunk(index, payload))

    def read_ahead(self) -> None:
        """Start reading the next run of planned chunks, unless enough is read already."""
        m = self.machine
        plan, offer = m.plan, m.offer
        if self.job is not None or plan is None or offer is None or m.finished:
            return
        if self.read_pos >= plan.total or self.ready_bytes >= READ_AHEAD:
            return
        first = plan.index_at(self.read_pos)
        # a contiguous run of planned chunks, within one missing range, up to READ_BATCH bytes
        range_end = next(end for start, end in plan.missing if start <= first < end)
        count = max(1, min(range_end - first, READ_BATCH // offer.chunk_size))
        offset = first * offer.chunk_size
        length = plan.span_bytes(first, first + count)
        self.read_pos += count
        self.start_job(JobKind.READ, read_span, self.fd, offset, length)
        self._reading = (first, count)

    @property
    def fd(self) -> int:
        """The blob the OFFER named."""
        choice = self.machine.choice
        return self.fds[0 if choice is None else choice + 1]

    def on_job(self, done: JobDone) -> None:
        if done.error is not None:
            self.perform(self.machine.fail(Code.IO, f"cannot read the blob file: {done.error}"))
            return
        assert done.kind is JobKind.READ and isinstance(done.result, bytes)
        first, count = self._reading
        cs = self.machine.offer.chunk_size if self.machine.offer else 0
        for i in range(count):
            piece = done.result[i * cs:(i + 1) * cs]
            self.ready.append((first + i, piece))
            self.ready_bytes += len(piece)
