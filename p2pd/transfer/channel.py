"""aiortc adapter: runs the sans-I/O sender/receiver over one reliable, ordered RTCDataChannel.

Thin by design — every protocol decision is in ``sender.py`` / ``receiver.py``. This module only moves bytes:

* one task per transfer; channel events (messages, close, ``bufferedamountlow``, ICE/DTLS failure) are queued
  by :class:`ChannelTap` and handled in order by that task;
* backpressure: chunks are sent while ``bufferedAmount`` is at most ``high_water``, then the task waits for
  the ``bufferedamountlow`` event (threshold ``low_water``), never polling; the protocol's flow-control
  window (receiver ACKs) bounds what is in flight beyond that;
* file reads, writes, fsyncs, hashing and the final rename run in worker threads, one job at a time per
  transfer, so the event loop (and ICE consent checks) never starve;
* an idle timer fails a transfer whose peer stopped answering; cancelling (``TransferControl.cancel`` or
  cancelling the task) sends CANCEL before returning.

Call :func:`attach` on a channel as soon as it exists if the transfer starts later: it buffers what arrives in
between (aiortc drops messages nobody listens to).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from p2pd.blob.container import DEFAULT_MAX_RAW_SIZE, HEADER_SIZE, BlobHeader
from p2pd.errors import BusyError, InvalidInputError, NotFoundError, P2pdError, TransferFailedError
from p2pd.transfer.events import (
    Action,
    Completed,
    Failed,
    Failure,
    FinalizeBlob,
    OfferReceived,
    Progress,
    SendFrame,
    TransferCancelledError,
    VerifyPayload,
    WriteChunk,
)
from p2pd.transfer.frames import BASE_MESSAGE_SIZE, MAX_MESSAGE_SIZE, Code, Offer, OfferInfo
from p2pd.transfer.partial import PartialBlob
from p2pd.transfer.receiver import DEFAULT_WINDOW as RECEIVE_WINDOW
from p2pd.transfer.receiver import Receiver, ReceiverState
from p2pd.transfer.sender import Sender

log = logging.getLogger(__name__)

HIGH_WATER = 1024 * 1024
LOW_WATER = 256 * 1024
READ_BATCH = 1024 * 1024
READ_AHEAD = 2 * 1024 * 1024
COMMIT_BYTES = 1024 * 1024
COMMIT_INTERVAL = 0.25
FLUSH_TIMEOUT = 1.0
_TAP_LIMIT = RECEIVE_WINDOW + 4 * MAX_MESSAGE_SIZE  # bytes a tap holds before the transfer consumes them

ProgressCallback = Callable[[int, int], None]


# --- public results and control --------------------------------------------------------------------------


@dataclass(frozen=True)
class TransferResult:
    """A completed send: the receiver confirmed the SHA-256 of the whole payload."""

    transfer_id: str
    sha256: bytes
    raw_size: int
    compressed_size: int
    chunk_size: int
    chunks_sent: int
    bytes_sent: int
    resumed_bytes: int  # payload bytes the receiver already held (not sent again)
    elapsed: float


@dataclass(frozen=True)
class ReceivedBlob:
    """A completed receive: ``path`` is a complete, verified blob file (``p2pd.blob`` format)."""

    path: Path
    offer: Offer
    bytes_received: int
    resumed_bytes: int
    elapsed: float


class TransferControl:
    """Handle to stop a running transfer from outside: ``control.cancel("reason")``; works on either side."""

    def __init__(self) -> None:
        self.reason: str | None = None
        self._wakers: list[Callable[[], None]] = []

    def cancel(self, reason: str = "cancelled by the user") -> None:
        if self.reason is None:
            self.reason = reason
            for wake in list(self._wakers):
                wake()

    @property
    def cancelled(self) -> bool:
        return self.reason is not None


# --- channel events --------------------------------------------------------------------------------------


class ChannelTap:
    """Listens on a channel from the moment it is attached and queues what happens, in order."""

    def __init__(self, channel: Any) -> None:
        self.channel = channel
        self.events: deque[tuple[str, Any]] = deque()
        self.wake = asyncio.Event()
        self._held = 0
        self._overflow = False
        self._handlers: list[tuple[Any, str, Callable[..., None]]] = []
        self._listen(channel, "message", self._on_message)
        self._listen(channel, "close", self._on_close)
        self._listen(channel, "open", self._notify)
        self._listen(channel, "bufferedamountlow", self._notify)
        sctp = getattr(channel, "transport", None)
        dtls = getattr(sctp, "transport", None)
        ice = getattr(dtls, "transport", None)
        for name, transport in (("DTLS", dtls), ("ICE", ice)):
            if transport is not None and hasattr(transport, "on"):
                self._listen(transport, "statechange", self._state_watcher(name, transport))
        if channel.readyState == "closed":
            self.events.append(("closed", "the data channel is closed"))

    def _listen(self, emitter: Any, event: str, handler: Callable[..., None]) -> None:
        emitter.on(event, handler)
        self._handlers.append((emitter, event, handler))

    def detach(self) -> None:
        for emitter, event, handler in self._handlers:
            with contextlib.suppress(Exception):
                emitter.remove_listener(event, handler)
        self._handlers.clear()
        if getattr(self.channel, "_p2pd_tap", None) is self:
            with contextlib.suppress(Exception):
                del self.channel._p2pd_tap

    def _notify(self, *_: object) -> None:
        self.wake.set()

    def _on_message(self, data: bytes | str) -> None:
        if self._overflow:
            return
        self._held += len(data)
        if self._held > _TAP_LIMIT:
            self._overflow = True
            self.events.append(("overflow", None))
        else:
            self.events.append(("message", data))
        self.wake.set()

    def _on_close(self) -> None:
        self.events.append(("closed", "the data channel was closed"))
        self.wake.set()

    def _state_watcher(self, name: str, transport: Any) -> Callable[[], None]:
        def watch() -> None:
            state = getattr(transport, "state", "")
            if state in ("failed", "closed"):
                self.events.append(("closed", f"the connection to the peer {state} ({name})"))
                self.wake.set()
        return watch

    def pop(self) -> tuple[str, Any] | None:
        if not self.events:
            return None
        kind, value = self.events.popleft()
        if kind == "message":
            self._held -= len(value)
        return kind, value


def attach(channel: Any) -> ChannelTap:
    """The channel's tap, created on first call: attach early so no frame is lost before a transfer starts."""
    tap = getattr(channel, "_p2pd_tap", None)
    if tap is None:
        tap = ChannelTap(channel)
        channel._p2pd_tap = tap
    return tap


def transport_limit(channel: Any) -> int | None:
    """The largest message the remote's SDP accepts (aiortc enforces it in send()), if known."""
    limit = getattr(getattr(channel, "transport", None), "_remote_max_message_size", None)
    return limit if isinstance(limit, int) and limit > 0 else None


# --- the shared run loop ---------------------------------------------------------------------------------


class _Run:
    """One transfer's task: drains the tap, feeds the machine, performs its actions, one job at a time."""

    machine: Sender | Receiver

    def __init__(self, channel: Any, *, idle_timeout: float, on_progress: ProgressCallback | None,
                 control: TransferControl | None) -> None:
        self.channel = channel
        self.tap = attach(channel)
        self.loop = asyncio.get_running_loop()
        self.idle_timeout = idle_timeout
        self.on_progress = on_progress
        self.control = control
        self.failure: Failure | None = None
        self.completed = False
        self.last_activity = self.loop.time()
        self.started = time.monotonic()
        self.job: asyncio.Future[Any] | None = None
        self._sent_tail = False  # a frame was sent in the final batch of actions (flush before closing)

    # action handling

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
                self.tap.events.append(("closed", "the data channel was closed"))
                self.tap.wake.set()

    def handle(self, action: Action) -> None:  # pragma: no cover - overridden
        raise NotImplementedError(action)

    # events

    def drain(self) -> None:
        while not self.machine.finished:
            event = self.tap.pop()
            if event is None:
                return
            kind, value = event
            if kind == "message":
                self.last_activity = self.loop.time()
                self.perform(self.machine.receive(value))
            elif kind == "closed":
                self.perform(self.machine.connection_lost(value))
            elif kind == "overflow":
                self.perform(self.machine.fail(Code.PROTOCOL, "the peer sent more than the flow-control "
                                                              "window allows"))
            elif kind == "job":
                self.on_job(*value)

    def on_job(self, name: str, result: Any, error: BaseException | None) -> None:  # pragma: no cover
        raise NotImplementedError

    def start_job(self, name: str, fn: Callable[..., Any], *args: Any) -> None:
        assert self.job is None, "one job at a time"
        fut = self.loop.run_in_executor(None, fn, *args)
        self.job = fut

        def done(f: asyncio.Future[Any]) -> None:
            self.job = None
            if f.cancelled():
                error: BaseException | None = asyncio.CancelledError()
                result = None
            else:
                error = f.exception()
                result = None if error else f.result()
            self.tap.events.append(("job", (name, result, error)))
            self.tap.wake.set()

        fut.add_done_callback(done)

    async def wait(self, delay: float | None) -> None:
        self.tap.wake.clear()
        if delay is None:
            await self.tap.wake.wait()
            return
        if delay <= 0:
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(delay):
                await self.tap.wake.wait()

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

    # ending

    async def wait_open(self) -> None:
        deadline = self.loop.time() + self.idle_timeout
        while self.channel.readyState == "connecting":
            if self.control is not None and self.control.reason is not None:
                raise TransferCancelledError(f"transfer cancelled: {self.control.reason}")
            left = deadline - self.loop.time()
            if left <= 0:
                raise TransferFailedError(f"the data channel did not open within {self.idle_timeout:g} s")
            await self.wait(left)
        if self.channel.readyState != "open":
            raise TransferFailedError(f"the data channel is {self.channel.readyState}, not open")

    async def flush(self, timeout: float = FLUSH_TIMEOUT) -> None:
        """Wait (bounded) until what we queued left aiortc's data-channel buffer."""
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
                await asyncio.wait_for(asyncio.shield(self.job), 30)
        kept: deque[tuple[str, Any]] = deque()
        for kind, value in self.tap.events:
            if kind == "job":
                self.late_result(*value)
            else:
                kept.append((kind, value))
        self.tap.events.clear()
        self.tap.events.extend(kept)

    def late_result(self, name: str, result: Any, error: BaseException | None) -> None:
        """A job finished after the transfer ended: release what it holds."""

    def close_channel(self) -> None:
        with contextlib.suppress(Exception):
            if self.channel.readyState in ("open", "connecting"):
                self.channel.close()

    def raise_failure(self) -> None:
        assert self.failure is not None
        raise self.failure.exception()


# --- sending ---------------------------------------------------------------------------------------------


def _open_blob(path: Path) -> tuple[int, BlobHeader]:
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


def _read_span(fd: int, offset: int, length: int) -> bytes:
    data = os.pread(fd, length, HEADER_SIZE + offset)
    if len(data) != length:
        raise OSError(f"the blob file is shorter than its header says (read {len(data)} of {length} bytes)")
    return data


class _SendRun(_Run):
    machine: Sender

    def __init__(self, channel: Any, fd: int, header: BlobHeader, info: OfferInfo, *,
                 max_message_size: int, idle_timeout: float, decision_timeout: float | None,
                 on_progress: ProgressCallback | None, control: TransferControl | None,
                 high_water: int, low_water: int) -> None:
        super().__init__(channel, idle_timeout=idle_timeout, on_progress=on_progress, control=control)
        self.header = header
        self.decision_timeout = decision_timeout
        self.high_water = high_water
        self.low_water = low_water
        self.machine = Sender(transfer_id=os.urandom(16), codec=header.codec, raw_size=header.raw_size,
                              compressed_size=header.compressed_size, sha256=header.sha256, info=info,
                              max_message_size=max_message_size, transport_limit=transport_limit(channel))
        self.fd = fd
        self.ready: deque[tuple[int, bytes]] = deque()
        self.ready_bytes = 0
        self.read_pos = 0  # plan position of the next chunk to read

    async def run(self) -> TransferResult:
        try:
            await self.wait_open()
            try:
                await self.loop_until_finished()
            except asyncio.CancelledError:
                self.perform(self.machine.cancel("the sending task was cancelled"))
                self.close_channel()
                raise
            finally:
                await self.settle_job()
            await self.flush()
            self.close_channel()  # the sender closes the channel once the transfer is over (SPEC.md)
        finally:
            os.close(self.fd)
            self.tap.detach()
        if not self.completed:
            self.raise_failure()
        m = self.machine
        assert m.offer is not None and m.plan is not None
        return TransferResult(transfer_id=m.transfer_id.hex(), sha256=m.offer.sha256,
                              raw_size=m.offer.raw_size, compressed_size=m.offer.compressed_size,
                              chunk_size=m.offer.chunk_size, chunks_sent=m.chunks_sent,
                              bytes_sent=m.bytes_sent, resumed_bytes=m.plan.held_bytes,
                              elapsed=time.monotonic() - self.started)

    async def loop_until_finished(self) -> None:
        self.channel.bufferedAmountLowThreshold = self.low_water
        if self.control is not None:
            self.control._wakers.append(self.tap.wake.set)
        try:
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
                if self.machine.awaiting_decision:
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
                        decision_started = None
                        self.last_activity = self.loop.time()
                    delay = self.idle_delay(True)
                    if self.machine.finished:
                        break
                await self.wait(delay)
        finally:
            if self.control is not None and self.tap.wake.set in self.control._wakers:
                self.control._wakers.remove(self.tap.wake.set)

    def pump(self) -> None:
        m = self.machine
        while not m.finished:
            nxt = m.next_chunk()
            if nxt is None or not self.ready or self.channel.bufferedAmount > self.high_water:
                return
            index, payload = self.ready.popleft()
            self.ready_bytes -= len(payload)
            self.perform(m.send_chunk(index, payload))

    def read_ahead(self) -> None:
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
        self.start_job("read", _read_span, self.fd, offset, length)
        self._reading = (first, count)

    def on_job(self, name: str, result: Any, error: BaseException | None) -> None:
        if error is not None:
            self.perform(self.machine.fail(Code.IO, f"cannot read the blob file: {error}"))
            return
        first, count = self._reading
        cs = self.machine.offer.chunk_size if self.machine.offer else 0
        for i in range(count):
            piece = result[i * cs:(i + 1) * cs]
            self.ready.append((first + i, piece))
            self.ready_bytes += len(piece)


async def send_blob(channel: Any, blob_path: Path, offer: OfferInfo, *,
                    on_progress: ProgressCallback | None = None, idle_timeout: float = 30.0,
                    max_message_size: int = BASE_MESSAGE_SIZE, control: TransferControl | None = None,
                    decision_timeout: float | None = None, high_water: int = HIGH_WATER,
                    low_water: int = LOW_WATER) -> TransferResult:
    """Send the blob file at ``blob_path`` (``p2pd.blob`` format) over ``channel``; return once the receiver
    confirmed the SHA-256 of the whole payload.

    ``max_message_size`` is what this side advertises (16 KiB when the peer may be a browser; 64 KiB between
    daemons). ``idle_timeout`` fails the transfer when the peer stops answering; while the receiving user
    decides, ``decision_timeout`` applies instead (None: wait as long as the connection lives).
    ``on_progress(done, total)`` reports payload bytes the receiver acknowledged.
    Raises DeclinedError (refused), TransferCancelledError (cancelled, either side), TransferFailedError.
    """
    info = OfferInfo.normalized(offer.title, offer.platform, offer.session_id, offer.message_count)
    fd, header = await asyncio.to_thread(_open_blob, Path(blob_path))
    try:
        run = _SendRun(channel, fd, header, info, max_message_size=max_message_size,
                       idle_timeout=idle_timeout, decision_timeout=decision_timeout, on_progress=on_progress,
                       control=control, high_water=high_water, low_water=low_water)
    except BaseException:
        os.close(fd)
        raise
    return await run.run()


# --- receiving -------------------------------------------------------------------------------------------


class _ReceiveRun(_Run):
    machine: Receiver

    def __init__(self, channel: Any, dest_dir: Path, decide: Callable[[Offer], Awaitable[bool]], *,
                 max_message_size: int, max_raw_size: int, idle_timeout: float,
                 on_progress: ProgressCallback | None, control: TransferControl | None,
                 linger: float) -> None:
        super().__init__(channel, idle_timeout=idle_timeout, on_progress=on_progress, control=control)
        self.dest_dir = dest_dir
        self.decide = decide
        self.linger = linger
        self.machine = Receiver(max_message_size=max_message_size, max_raw_size=max_raw_size)
        self.part: PartialBlob | None = None
        self.decision: asyncio.Task[None] | None = None
        self.queue: deque[tuple[int, bytes]] = deque()  # chunks to write
        self.queue_bytes = 0
        self.queued_since = self.loop.time()
        self._batch = 0
        self.committed = 0  # chunks durable (fsync'd and recorded)
        self.path: Path | None = None
        self.checksum_failed = False

    async def run(self) -> ReceivedBlob:
        try:
            await self.wait_open()
            try:
                await self.loop_until_finished()
            except asyncio.CancelledError:
                self.perform(self.machine.cancel("the receiving task was cancelled"))
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
        if self.control is not None:
            self.control._wakers.append(self.tap.wake.set)
        try:
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
                await self.wait(delay)
        finally:
            if self.control is not None and self.tap.wake.set in self.control._wakers:
                self.control._wakers.remove(self.tap.wake.set)

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
            self.start_job("digest", self.part.digest)
        elif isinstance(action, FinalizeBlob):
            assert self.part is not None and self.job is None
            self.start_job("finalize", self.part.finalize)

    async def _decide(self, offer: Offer) -> None:
        try:
            event: tuple[str, Any] = ("job", ("decision", bool(await self.decide(offer)), None))
        except BaseException as exc:  # delivered to the run loop, which decides what it means
            event = ("job", ("decision", None, exc))
        self.tap.events.append(event)
        self.tap.wake.set()

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
        self.start_job("write", _write_batch, self.part, batch, True)

    def io_delay(self) -> float | None:
        """Seconds until queued chunks are due to be written, if any wait."""
        if not self.queue or self.job is not None:
            return None
        return max(0.0, self.queued_since + COMMIT_INTERVAL - self.loop.time())

    def on_job(self, name: str, result: Any, error: BaseException | None) -> None:
        m = self.machine
        if name == "decision":
            if error is not None:
                if isinstance(error, asyncio.CancelledError):
                    self.perform(m.cancel("the decision was cancelled"))
                else:
                    self.perform(m.fail(Code.INTERNAL, f"the decision failed: {error}"))
            elif not result:
                self.perform(m.reject("the user declined"))
            elif m.offer is not None:
                self.start_job("open", PartialBlob.open, self.dest_dir, m.offer)
            return
        if name == "open":
            if isinstance(error, BusyError):
                self.perform(m.reject(str(error), Code.BUSY))
            elif error is not None:
                self.perform(m.fail(Code.IO, f"cannot store the blob in {self.dest_dir}: {error}"))
            else:
                self.part = result
                self.perform(m.accept(result.held_chunks()))
            return
        if error is not None:
            self.perform(m.fail(Code.IO, f"cannot {name} the received blob: {error}"))
            return
        self.last_activity = self.loop.time()
        if name == "write":
            self.committed += self._batch
            self.perform(m.chunks_durable(self.committed))
        elif name == "digest":
            self.perform(m.verified(result))
            if m.failure is not None and m.failure.code == Code.CHECKSUM:
                self.checksum_failed = True
        elif name == "finalize":
            self.path = result
            self.perform(m.finalized())

    async def cleanup(self) -> None:
        if self.decision is not None and not self.decision.done():
            self.decision.cancel()
            with contextlib.suppress(BaseException):
                await self.decision
        await self.settle_job()
        part = self.part
        if part is None:
            return
        if self.completed:
            return
        if self.checksum_failed:
            await asyncio.to_thread(part.discard)
            return
        # keep what arrived for a later resume: write and commit the queue, then release the lock
        batch = list(self.queue)
        self.queue.clear()
        with contextlib.suppress(Exception):
            await asyncio.to_thread(_write_batch, part, batch, True)
        part.close()

    def late_result(self, name: str, result: Any, error: BaseException | None) -> None:
        if name == "open" and result is not None:
            result.close()  # opened while the transfer was stopping: release its lock

    async def wait_peer_close(self) -> None:
        """After DONE: give the sender time to read it and close the channel (closing first could lose it)."""
        deadline = self.loop.time() + self.linger
        while self.channel.readyState == "open":
            left = deadline - self.loop.time()
            if left <= 0:
                return
            await self.wait(left)


def _write_batch(part: PartialBlob, batch: list[tuple[int, bytes]], commit: bool) -> None:
    for offset, data in batch:
        part.write(offset, data)
    if commit:
        part.commit()


async def receive_blob(channel: Any, dest_dir: Path, *, decide: Callable[[Offer], Awaitable[bool]],
                       on_progress: ProgressCallback | None = None, idle_timeout: float = 30.0,
                       max_raw_size: int = DEFAULT_MAX_RAW_SIZE, max_message_size: int = MAX_MESSAGE_SIZE,
                       control: TransferControl | None = None, linger: float = 2.0) -> ReceivedBlob:
    """Receive one blob over ``channel`` into ``dest_dir``; return once it is verified and in place.

    ``decide(offer)`` runs before any chunk flows: True accepts, False sends REJECT (DeclinedError here).
    Offers over ``max_raw_size`` are refused without asking (TooLargeError). A broken transfer leaves its
    partial file under ``dest_dir/.p2pd-partial/`` and a later transfer of the same blob resumes from it.
    Raises TransferCancelledError (cancelled, either side) or TransferFailedError (peer gone, idle, protocol,
    checksum mismatch, storage).
    """
    dest = Path(dest_dir)
    run = _ReceiveRun(channel, dest, decide, max_message_size=max_message_size, max_raw_size=max_raw_size,
                      idle_timeout=idle_timeout, on_progress=on_progress, control=control, linger=linger)
    try:
        return await run.run()
    except P2pdError:
        raise
    except (OSError, ValueError) as exc:  # pragma: no cover - safety net: report, never leak a raw error
        raise TransferFailedError(f"transfer failed: {exc}") from exc


__all__ = ["ChannelTap", "ReceivedBlob", "TransferControl", "TransferResult", "attach", "receive_blob",
           "send_blob"]
