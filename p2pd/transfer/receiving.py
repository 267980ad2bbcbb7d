"""The receiving side of the adapter: runs a :class:`~p2pd.transfer.receiver.Receiver` over a data channel,
asks the user, and stores chunks in a :class:`~p2pd.transfer.partial.PartialBlob` through worker-thread jobs
(batched writes with fsync, the final digest, the rename into place).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Awaitable, Callable
from pathlib import Path

import msgspec

from p2pd.errors import BusyError
from p2pd.transfer.control import ProgressCallback, ReceivedBlob, TransferControl
from p2pd.transfer.datachannel import DataChannel
from p2pd.transfer.events import Action, FinalizeBlob, OfferReceived, VerifyPayload, WriteChunk
from p2pd.transfer.frames import Code, Offer
from p2pd.transfer.jobs import JobDone, JobKind, write_batch
from p2pd.transfer.partial import NoRoomError, PartialBlob, UnreadableBlob, Validate
from p2pd.transfer.receiver import Receiver, ReceiverState
from p2pd.transfer.runloop import Runner
from p2pd.transfer.streamstore import SinkFactory, StreamStore

# Slowloris guard: while chunks are due, the sender must deliver at least MIN_RATE bytes/s over each RATE_WINDOW
# (or whatever is left, if less); a sender trickling one chunk every 20 s is ended with that reason.
MIN_RATE = 4096.0
RATE_WINDOW = 60.0
# A write batch: its chunks are written, fsync'd and recorded (state.json, staged and renamed) before one ACK.
# 2 MiB, not 1: half the fsyncs and records (receiver -10 ms CPU per 50 MB), still far inside the 8 MiB window.
COMMIT_BYTES = 2 * 1024 * 1024
COMMIT_INTERVAL = 0.25

# Failures after which the partial is removed: its bytes are bad (checksum, invalid), the disk could not take
# them (io: keeping them would make the next receive into this folder fail too), or the peer broke the protocol.
# A cut connection, a timeout or a cancel keep it for a resume.
NO_RESUME = frozenset({Code.CHECKSUM, Code.INVALID, Code.IO, Code.PROTOCOL, Code.INTERNAL})



class Refusal(msgspec.Struct, frozen=True):
    """What ``decide`` returns to refuse an offer with a reason code other than ``declined`` (REJECT ``code``,
    ``reason``: e.g. a daemon's accept policy: too_large, not_allowed, rate_limited)."""

    code: Code
    reason: str


Decide = Callable[[Offer], Awaitable[bool | Refusal]]
# The receiver's commit point (SPEC.md §8): called in a worker thread with the verified blob in place, before DONE
# is sent; it records the decision to keep it durably and returns True, or returns False when the transfer was
# cancelled meanwhile (it then removes the blob, and the sender gets CANCEL instead of DONE).
Commit = Callable[[Path], bool]


class ReceiveSide(Runner):
    """One incoming transfer into ``dest_dir``."""

    machine: Receiver

    def __init__(self, channel: DataChannel, dest_dir: Path, decide: Decide, *, max_message_size: int,
                 max_raw_size: int, idle_timeout: float, on_progress: ProgressCallback | None,
                 control: TransferControl | None, linger: float, validate: Validate | None = None,
                 min_rate: float = MIN_RATE, rate_window: float = RATE_WINDOW,
                 stream_sink: SinkFactory | None = None, commit: Commit | None = None) -> None:
        """``stream_sink``: this side takes streamed transfers (SPEC.md §12), each payload fed to a sink made
        for its offer."""
        super().__init__(channel, idle_timeout=idle_timeout, on_progress=on_progress, control=control)
        self.dest_dir = dest_dir
        self.decide = decide
        self.linger = linger
        self.validate = validate
        self.commit = commit
        self.min_rate = min_rate
        self.rate_window = rate_window
        self.rate_mark: tuple[float, int] | None = None  # (time, bytes received) at the current window's start
        self.machine = Receiver(max_message_size=max_message_size, max_raw_size=max_raw_size,
                                streams=stream_sink is not None)
        self.stream_sink = stream_sink
        self.part: PartialBlob | StreamStore | None = None
        self.decision: asyncio.Task[None] | None = None
        self.queue: deque[tuple[int, bytes | memoryview]] = deque()  # chunks to write
        self.queue_bytes = 0
        self.queued_since = self.loop.time()
        self._batch = 0
        self.committed = 0  # chunks durable (fsync'd and recorded)
        self.path: Path | None = None
        self.checksum_failed = False
        self.committing = False  # the commit job runs: the peer's frames wait for its decision (defers)

    async def run(self) -> ReceivedBlob:
        try:
            await self.wait_open()
            try:
                await self.loop_until_finished()
            except asyncio.CancelledError:
                self.perform(self.machine.cancel("the receiver was stopped"))
                self.close_channel()
                await asyncio.shield(self.cleanup())
                raise
            except BaseException:
                await asyncio.shield(self.cleanup())
                raise
            await self.cleanup()
            await self.flush()
            if self.completed:
                await self.wait_peer_close()
            elif self.cancelled_here():
                await self.close_heard()
            self.close_channel()
        finally:
            self.tap.detach()
        if not self.completed:
            self.raise_failure()
        assert self.path is not None and self.machine.offer is not None
        resumed = self.machine.plan.held_bytes if self.machine.plan else 0
        return ReceivedBlob(path=self.path, offer=self.machine.offer,
                            bytes_received=self.machine.bytes_received, resumed_bytes=resumed,
                            elapsed=time.monotonic() - self.started)

    async def loop_until_finished(self) -> None:
        with self.watch_control():
            self.perform(self.machine.start())
            while not self.machine.finished:
                self.drain()
                self.check_cancel()
                self.schedule_io()
                if self.machine.finished:
                    break
                delay = self.idle_delay(self.machine.awaiting_peer and self.job is None)
                if self.machine.finished:
                    break
                io_in = self.io_delay()
                if io_in is not None:
                    delay = io_in if delay is None else min(delay, io_in)
                rate_in = self.rate_delay()
                if self.machine.finished:
                    break
                if rate_in is not None:
                    delay = rate_in if delay is None else min(delay, rate_in)
                await self.wait(delay)

    def handle(self, action: Action) -> None:
        if isinstance(action, OfferReceived):
            self.decision = asyncio.ensure_future(self._decide(action.offer))
        elif isinstance(action, WriteChunk):
            if not self.queue:
                self.queued_since = self.loop.time()
            self.queue.append((action.offset, action.data))
            self.queue_bytes += len(action.data)
        elif isinstance(action, VerifyPayload):
            assert self.part is not None and self.job is None
            self.start_job(JobKind.DIGEST, self.part.digest)
        elif isinstance(action, FinalizeBlob):
            assert self.part is not None and self.job is None
            if isinstance(self.part, StreamStore) and self.machine.end is not None:
                self.part.expected_raw = self.machine.end.raw_size
            self.start_job(JobKind.FINALIZE, self.part.finalize, self.validate)

    async def _decide(self, offer: Offer) -> None:
        try:
            verdict = await self.decide(offer)
            done = JobDone(JobKind.DECISION, verdict if isinstance(verdict, Refusal) else bool(verdict))
        except BaseException as exc:  # delivered to the run loop, which decides what it means
            done = JobDone(JobKind.DECISION, None, exc)
        self.tap.post(done)

    def schedule_io(self) -> None:
        """Start the next worker job: write and commit the queued chunks once there is a batch's worth (few
        large jobs keep the worker thread from contending for the GIL with the event loop), the transfer is
        finishing, or the oldest queued chunk waited COMMIT_INTERVAL."""
        if self.job is not None or self.part is None or self.machine.finished or not self.queue:
            return
        due = (self.queue_bytes >= COMMIT_BYTES or self.machine.state is ReceiverState.FINISHING
               or self.loop.time() - self.queued_since >= COMMIT_INTERVAL)
        if not due:
            return
        batch = list(self.queue)
        self.queue.clear()
        self.queue_bytes = 0
        self._batch = len(batch)
        self.start_job(JobKind.WRITE, write_batch, self.part, batch, True)

    def rate_delay(self) -> float | None:
        """Seconds until the current rate window ends; at its end, fail a sender under the minimum rate."""
        m = self.machine
        if m.state is not ReceiverState.RECEIVING or m.offer is None or self.min_rate <= 0:
            self.rate_mark = None
            return None
        now = self.loop.time()
        if self.rate_mark is None:
            self.rate_mark = (now, m.bytes_received)
        since, start_bytes = self.rate_mark
        left = since + self.rate_window - now
        if left > 0:
            return left
        got = m.bytes_received - start_bytes
        held = (m.plan.held_bytes if m.plan else 0) + start_bytes
        need = min(self.min_rate * self.rate_window, m.offer.compressed_size - held)
        if got < need and self.job is None:  # (our own slow disk holding the window back is not the sender's fault)
            self.perform(m.fail(Code.TIMEOUT, f"the sender sent {got} bytes in {self.rate_window:g} s, under the "
                                              f"minimum rate of {self.min_rate:g} bytes/s"))
            return None
        self.rate_mark = (now, m.bytes_received)
        return self.rate_window

    def io_delay(self) -> float | None:
        """Seconds until queued chunks are due to be written, if any wait."""
        if not self.queue or self.job is not None:
            return None
        return max(0.0, self.queued_since + COMMIT_INTERVAL - self.loop.time())

    def on_job(self, done: JobDone) -> None:
        m = self.machine
        error = done.error
        if done.kind is JobKind.COMMIT:
            self.committing = False  # (the frames held meanwhile are read next: a CANCEL after DONE is ignored)
        if done.kind is JobKind.DECISION:
            if error is not None:
                if isinstance(error, asyncio.CancelledError):
                    self.perform(m.cancel("the decision was cancelled"))
                else:
                    self.perform(m.fail(Code.INTERNAL, f"the decision failed: {error}"))
            elif isinstance(done.result, Refusal):
                self.perform(m.reject(done.result.reason, done.result.code))
            elif not done.result:
                self.perform(m.reject(""))
            elif m.offer is not None and m.streamed and self.stream_sink is not None:
                self.start_job(JobKind.OPEN, StreamStore.open, self.stream_sink, m.offer)
            elif m.offer is not None:
                self.start_job(JobKind.OPEN, PartialBlob.open, self.dest_dir, m.offer)
            return
        if done.kind is JobKind.OPEN:
            if isinstance(error, BusyError):
                self.perform(m.reject(str(error), Code.BUSY))
            elif isinstance(error, NoRoomError):  # (before ACCEPT: the sender learns it before sending a byte)
                self.perform(m.fail(Code.IO, str(error)))
            elif error is not None:
                self.perform(m.fail(Code.IO, f"cannot store the blob in {self.dest_dir}: {error}"))
            else:
                assert isinstance(done.result, PartialBlob | StreamStore)
                self.part = done.result
                self.perform(m.accept(done.result.held_chunks()))
            return
        if isinstance(error, UnreadableBlob):  # verified, yet not something this side can read: never DONE
            self.checksum_failed = True  # (the partial is already gone; nothing to resume)
            self.perform(m.fail(Code.INVALID, str(error.error)))
            return
        if error is not None:
            self.perform(m.fail(Code.IO, f"cannot {done.kind.value} the received blob: {error}"))
            return
        self.last_activity = self.loop.time()
        if done.kind is JobKind.WRITE:
            self.committed += self._batch
            self.perform(m.chunks_durable(self.committed))
        elif done.kind is JobKind.DIGEST:
            assert isinstance(done.result, bytes)
            self.perform(m.verified(done.result))
            if m.failure is not None and m.failure.code == Code.CHECKSUM:
                self.checksum_failed = True
        elif done.kind is JobKind.FINALIZE:
            assert isinstance(done.result, Path)
            self.path = done.result
            if self.commit is not None:
                self.committing = True
                self.start_job(JobKind.COMMIT, self.commit, done.result)
            else:
                self.perform(m.finalized())
        elif done.kind is JobKind.COMMIT:
            if done.result:
                self.perform(m.finalized())
            else:  # cancelled before it was committed here: never DONE (the commit removed the blob)
                self.perform(m.cancel("the sender cancelled it before it was committed here"))

    def defers(self) -> bool:
        """While the commit job decides, a CANCEL from the sender waits: committed, the conversation is kept and
        DONE goes first (the sender, cancelling after its last chunk, takes DONE as the answer: SPEC.md §6)."""
        return self.committing

    async def cleanup(self) -> None:
        if self.decision is not None and not self.decision.done():
            self.decision.cancel()
            with contextlib.suppress(BaseException):
                await self.decision
        await self.settle_job()
        part = self.part
        if part is None or self.completed:
            return
        failure = self.machine.failure
        if self.checksum_failed or (failure is not None and failure.code in NO_RESUME):
            await asyncio.to_thread(part.discard)
            return
        # keep what arrived for a later resume: write and commit the queue, then release the lock
        batch = list(self.queue)
        self.queue.clear()
        with contextlib.suppress(Exception):
            await asyncio.to_thread(write_batch, part, batch, True)
        part.close()

    def late_result(self, done: JobDone) -> None:
        if done.kind is JobKind.OPEN and isinstance(done.result, PartialBlob | StreamStore):
            done.result.close()  # opened while the transfer was stopping: release its lock
        failure = self.machine.failure
        if done.kind is JobKind.FINALIZE and isinstance(done.result, Path) and failure is not None \
                and failure.by_peer and failure.code == Code.CANCELLED:
            done.result.unlink(missing_ok=True)  # moved into place as the sender's CANCEL came: nothing is kept
            # (a local stop keeps it: a daemon commits a verified blob a stop cut off at its next start)

    async def wait_peer_close(self) -> None:
        """After DONE: the sender reads it and closes the channel. Tearing the connection down before DONE reached
        it would leave the two sides disagreeing (this one kept the conversation; the sender says the peer went
        away), so after ``linger`` seconds without that close (DONE or its packet delayed or lost, and being
        retransmitted) this side closes the channel itself and waits for that close (:meth:`close_heard`)."""
        if not await self.closed_within(self.linger):
            await self.close_heard()
