"""The run loop shared by both sides: one task per transfer drains the tap, feeds the machine, performs its
actions, and runs blocking work as worker-thread jobs, one at a time.

* Backpressure: the sending side sends while ``bufferedAmount`` is at most its high-water mark, then waits for
  ``bufferedamountlow``, never polling; the protocol's window (receiver ACKs) bounds what is in flight beyond.
* File reads, writes, fsyncs, hashing and the final rename run in worker threads (:mod:`p2pd.transfer.jobs`),
  so the event loop (and ICE consent checks) never starve; their results come back through the tap's queue.
* An idle timer fails a transfer whose peer stopped answering; a :class:`TransferControl` wakes the loop to
  cancel (the machine sends CANCEL).

Subclasses (:mod:`sending`, :mod:`receiving`) implement :meth:`Runner.handle` for their side's actions and
:meth:`Runner.on_job` for their jobs' results.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from p2pd.errors import ConnectionFailedError, P2pdError, PeerGoneError, TransferCancelledError
from p2pd.transfer.control import ProgressCallback, TransferControl
from p2pd.transfer.datachannel import DataChannel
from p2pd.transfer.events import Action, Completed, Failed, Failure, Progress, SendFrame
from p2pd.transfer.frames import Code
from p2pd.transfer.jobs import JobDone, JobKind
from p2pd.transfer.receiver import Receiver
from p2pd.transfer.sender import Sender
from p2pd.transfer.tap import Closed, Message, Overflow, TapEvent, attach

log = logging.getLogger(__name__)

FLUSH_TIMEOUT = 1.0
SETTLE_TIMEOUT = 30.0
# How long this side's own close of the channel is waited for, so that the peer took the last frame this side sent
# (DONE, CANCEL) before the connection goes: aiortc's retransmission timer starts at 1 s and doubles, so a frame
# lost for a few seconds still gets through (its retransmissions go 1, 3, 7 and 15 s after it).
CLOSE_WAIT = 15.0


class Runner:
    """One transfer's task: drains the tap, feeds the machine, performs its actions, one job at a time."""

    machine: Sender | Receiver

    def __init__(self, channel: DataChannel, *, idle_timeout: float, on_progress: ProgressCallback | None,
                 control: TransferControl | None) -> None:
        self.channel = channel
        self.tap = attach(channel)
        self.loop = asyncio.get_running_loop()
        self.idle_timeout = idle_timeout
        self.on_progress = on_progress
        self.control = control
        self.failure: Failure | None = None
        self.local_error: P2pdError | None = None  # this side's own typed error behind its failure, if it has one
        self.completed = False
        self.last_activity = self.loop.time()
        self.started = time.monotonic()
        self.job: asyncio.Future[Any] | None = None
        self._sent_tail = False  # a frame was sent in the final batch of actions (flush before closing)
        self._deferred: deque[TapEvent] = deque()  # the peer's events held while :meth:`defers` (jobs go on)

    # --- actions ------------------------------------------------------------------------------------------

    def perform(self, actions: list[Action]) -> None:
        for action in actions:
            if isinstance(action, SendFrame):
                self._send(action.data)
            elif isinstance(action, Progress):
                if self.on_progress is not None:
                    try:
                        self.on_progress(action.done, action.total)
                    except Exception:  # a broken progress display must not break the transfer
                        log.exception("progress callback failed")
            elif isinstance(action, Failed):
                self.failure = action.failure
            elif isinstance(action, Completed):
                self.completed = True
            else:
                self.handle(action)

    def _send(self, data: bytes) -> None:
        try:
            self.channel.send(data)
            self._sent_tail = True
        except Exception as exc:  # InvalidStateError (closed) or ValueError (over the SDP limit)
            if self.machine.finished:
                return
            if self.channel.readyState == "open":
                self.perform(self.machine.fail(Code.INTERNAL, f"cannot send a frame: {exc}"))
            else:
                # Queue the loss behind what already arrived: the peer's CANCEL or ERROR, read first,
                # says why the channel closed.
                self.tap.post(Closed("the data channel was closed"))

    def handle(self, action: Action) -> None:  # pragma: no cover - overridden
        raise NotImplementedError(action)

    # --- events and jobs ----------------------------------------------------------------------------------

    def defers(self) -> bool:
        """Whether the peer's events wait (in order) until a decision in progress is made; job results do not."""
        return False

    def drain(self) -> None:
        """Feed every queued event to the machine, in order, until it finishes or the queue is empty."""
        while not self.machine.finished:
            if self._deferred and not self.defers():
                event: TapEvent = self._deferred.popleft()
            else:
                popped = self.tap.pop()
                if popped is None:
                    return
                event = popped
                if not isinstance(event, JobDone) and self.defers():
                    self._deferred.append(event)
                    continue
            if isinstance(event, Message):
                self.last_activity = self.loop.time()
                self.perform(self.machine.receive(event.data))
            elif isinstance(event, Closed):
                self.perform(self.machine.connection_lost(event.reason))
            elif isinstance(event, Overflow):
                self.perform(self.machine.fail(Code.PROTOCOL, "the peer sent more than the flow-control "
                                                              "window allows"))
            else:
                self.on_job(event)

    def on_job(self, done: JobDone) -> None:  # pragma: no cover - overridden
        raise NotImplementedError(done)

    def start_job(self, kind: JobKind, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` in a worker thread; its :class:`JobDone` arrives through the tap."""
        assert self.job is None, "one job at a time"
        fut = self.loop.run_in_executor(None, fn, *args)
        self.job = fut

        def done(f: asyncio.Future[Any]) -> None:
            self.job = None
            if f.cancelled():
                self.tap.post(JobDone(kind, None, asyncio.CancelledError()))
            elif f.exception() is not None:
                self.tap.post(JobDone(kind, None, f.exception()))
            else:
                self.tap.post(JobDone(kind, f.result()))

        fut.add_done_callback(done)

    async def wait(self, delay: float | None) -> None:
        """Sleep until the tap wakes the loop, at most ``delay`` seconds (None: no limit)."""
        self.tap.wake.clear()
        if delay is None:
            await self.tap.wake.wait()
            return
        if delay <= 0:
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(delay):
                await self.tap.wake.wait()

    def watch_control(self) -> contextlib.AbstractContextManager[None]:
        """While the block runs, a cancel on the control wakes this loop."""
        if self.control is None:
            return contextlib.nullcontext()
        return self.control.watching(self.tap.notify)

    def check_cancel(self) -> None:
        if self.control is not None and self.control.reason is not None and not self.machine.finished:
            self.perform(self.machine.cancel(self.control.reason))

    def idle_delay(self, applies: bool) -> float | None:
        """Seconds left before the idle timeout, or None if it does not apply now; fires it when due."""
        if not applies:
            return None
        left = self.last_activity + self.idle_timeout - self.loop.time()
        if left <= 0:
            self.perform(self.machine.timeout(self.idle_timeout))
            return None
        return left

    # --- beginning and ending -----------------------------------------------------------------------------

    async def wait_open(self) -> None:
        """Wait (up to the idle timeout) until the channel is open."""
        deadline = self.loop.time() + self.idle_timeout
        while self.channel.readyState == "connecting":
            if self.control is not None and self.control.reason is not None:
                raise TransferCancelledError(f"the transfer was cancelled: {self.control.reason}")
            left = deadline - self.loop.time()
            if left <= 0:
                raise ConnectionFailedError(f"the data channel did not open within {self.idle_timeout:g} s")
            await self.wait(left)
        if self.channel.readyState != "open":
            raise PeerGoneError(f"the data channel is {self.channel.readyState}, not open")

    async def flush(self, timeout: float = FLUSH_TIMEOUT) -> None:
        """Wait (bounded) until what we queued left the data channel's buffer."""
        if not self._sent_tail or self.channel.readyState != "open":
            return
        deadline = self.loop.time() + timeout
        with contextlib.suppress(Exception):
            self.channel.bufferedAmountLowThreshold = 0
        while self.channel.bufferedAmount > 0 and self.channel.readyState == "open":
            left = deadline - self.loop.time()
            if left <= 0:
                return
            await self.wait(left)

    async def settle_job(self) -> None:
        """Let an in-flight worker job finish (file descriptors must not close under it); results that
        arrive after the end are handed to :meth:`late_result`."""
        if self.job is not None:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(self.job), SETTLE_TIMEOUT)
        for done in self.tap.take_jobs():
            self.late_result(done)

    def late_result(self, done: JobDone) -> None:
        """A job finished after the transfer ended: release what it holds."""

    def close_channel(self) -> None:
        with contextlib.suppress(Exception):
            if self.channel.readyState in ("open", "connecting"):
                self.channel.close()

    async def close_heard(self, wait: float = CLOSE_WAIT) -> None:
        """Close the channel and wait, up to ``wait`` seconds, until that close went through, so the peer read the
        last frame this side sent before the caller tears the connection down (SPEC.md §1). The close is a stream
        reset sent after that frame, and the channel reaches "closed" only once the peer took everything sent
        before it (RFC 6525 §5.2.2; the W3C closing procedure). Tearing the connection down first, a frame lost on
        the way and being retransmitted never arrives: the peer then says that this side went away."""
        self.close_channel()
        await self.closed_within(wait)

    async def closed_within(self, seconds: float) -> bool:
        """Whether the channel is closed within ``seconds`` (waiting on the tap's wake-ups)."""
        deadline = self.loop.time() + seconds
        while self.channel.readyState != "closed":
            left = deadline - self.loop.time()
            if left <= 0:
                return False
            await self.wait(left)
        return True

    def cancelled_here(self) -> bool:
        """Whether this side cancelled the transfer (its CANCEL went to the peer)."""
        return self.failure is not None and self.failure.code == Code.CANCELLED and not self.failure.by_peer

    def raise_failure(self) -> None:
        assert self.failure is not None
        if self.local_error is not None and not self.failure.by_peer:
            raise self.local_error  # (its own class, cause and words: e.g. the conversation over a limit)
        raise self.failure.exception("receiver" if isinstance(self.machine, Sender) else "sender")
