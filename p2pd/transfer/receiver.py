"""The receiving side of the transfer protocol as a sans-I/O state machine (spec: ``SPEC.md``).

Feed it every message from the channel (:meth:`Receiver.receive`), the user's decision (:meth:`accept`,
:meth:`reject`) and the adapter's progress (:meth:`chunks_durable`, :meth:`verified`, :meth:`finalized`); it
returns actions to perform in order. It never writes, hashes or renames itself: it asks for it
(:class:`WriteChunk`, :class:`VerifyPayload`, :class:`FinalizeBlob`). Peer input never raises: a bad frame
becomes an ERROR frame to send plus a terminal :class:`Failed`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from enum import Enum

from p2pd.blob.codecs import CODECS
from p2pd.blob.container import DEFAULT_MAX_RAW_SIZE
from p2pd.transfer.endings import Endings
from p2pd.transfer.events import (
    Action,
    Completed,
    Failure,
    FinalizeBlob,
    OfferReceived,
    Progress,
    SendFrame,
    VerifyPayload,
    WriteChunk,
)
from p2pd.transfer.frames import (
    CHUNK_OVERHEAD,
    MAX_MESSAGE_SIZE,
    MAX_RANGES,
    MAX_WINDOW,
    MIN_WINDOW,
    STREAMS,
    ZERO_ID,
    Accept,
    Ack,
    Cancel,
    Chunk,
    Code,
    Done,
    End,
    Error,
    Frame,
    FrameError,
    FrameType,
    Hello,
    Offer,
    Reject,
    Role,
    StreamEnd,
    StreamOffer,
    decode,
    encode,
    reason_text,
)
from p2pd.transfer.plan import Plan, check_ranges

DEFAULT_WINDOW = 8 * 1024 * 1024
# lz4/zstd never expand incompressible input by more than ~0.4% plus a few bytes (the same bound as blob.py).
_MAX_EXPANSION = 1.01


class ReceiverState(Enum):
    IDLE = "idle"
    AWAIT_HELLO = "await-hello"
    AWAIT_OFFER = "await-offer"
    DECIDING = "deciding"
    RECEIVING = "receiving"
    FINISHING = "finishing"  # END received, waiting for the last writes to become durable
    VERIFYING = "verifying"
    FINALIZING = "finalizing"
    COMPLETED = "completed"
    FAILED = "failed"


_TERMINAL = (ReceiverState.COMPLETED, ReceiverState.FAILED)
_STOP = frozenset({FrameType.CANCEL, FrameType.ERROR})

# State dispatch: the frames each state takes from the peer (SPEC.md, "Receiver states"); any other frame is a
# protocol error. While this side decides, writes, hashes or renames, the sender must wait.
ALLOWED: dict[ReceiverState, frozenset[FrameType]] = {
    ReceiverState.IDLE: frozenset(),
    ReceiverState.AWAIT_HELLO: _STOP | {FrameType.HELLO},
    ReceiverState.AWAIT_OFFER: _STOP | {FrameType.OFFER, FrameType.STREAM_OFFER},
    ReceiverState.DECIDING: _STOP,
    ReceiverState.RECEIVING: _STOP | {FrameType.CHUNK, FrameType.END, FrameType.STREAM_END},
    ReceiverState.FINISHING: _STOP,
    ReceiverState.VERIFYING: _STOP,
    ReceiverState.FINALIZING: _STOP,
    ReceiverState.COMPLETED: frozenset(),
    ReceiverState.FAILED: frozenset(),
}


class Receiver(Endings):
    """One incoming transfer. ``max_message_size`` is advertised to the sender; ``window`` caps the bytes
    the sender may have in flight beyond the last ACK (and so the memory that chunks waiting to be written can
    take)."""

    IDLE = ReceiverState.IDLE
    FAILED = ReceiverState.FAILED
    SILENCE = "no data from the peer"
    state: ReceiverState

    def __init__(self, *, max_message_size: int = MAX_MESSAGE_SIZE, max_raw_size: int = DEFAULT_MAX_RAW_SIZE,
                 codecs: Sequence[str] = tuple(CODECS), window: int = DEFAULT_WINDOW, streams: bool = False) -> None:
        """``streams``: list STREAMS in HELLO and take STREAM_OFFER (SPEC.md §12)."""
        if not MIN_WINDOW <= window <= MAX_WINDOW:
            raise ValueError(f"window must be within {MIN_WINDOW}..{MAX_WINDOW}")
        self.max_message_size = max_message_size
        self.max_raw_size = max_raw_size
        self._codec_ids = tuple(CODECS[name].wire_id for name in codecs)
        self.streams = streams
        self.end: StreamEnd | None = None  # a streamed transfer's STREAM_END
        self.peer_streams = False  # the sender's HELLO lists STREAMS
        self.window = window
        self.state = ReceiverState.IDLE
        self.offer: Offer | None = None
        self.plan: Plan | None = None
        self.failure: Failure | None = None
        self._received = 0  # planned chunks received (WriteChunk actions issued)
        self._durable = 0  # planned chunks reported durable
        self._pending: deque[int] = deque()  # lengths of chunks received, not yet durable
        self._unacked_bytes = 0
        self._durable_bytes = 0
        self.bytes_received = 0

    @property
    def transfer_id(self) -> bytes:
        return self.offer.transfer_id if self.offer else ZERO_ID

    def _frame_id(self) -> bytes:
        return self.transfer_id

    @property
    def finished(self) -> bool:
        return self.state in _TERMINAL

    @property
    def streamed(self) -> bool:
        return isinstance(self.offer, StreamOffer)

    @property
    def sha256(self) -> bytes:
        """The digest the payload must have: the OFFER's, or a streamed transfer's STREAM_END's."""
        if self.end is not None:
            return self.end.sha256
        return self.offer.sha256 if self.offer is not None else bytes(32)

    def _total(self) -> int:
        assert self.offer is not None
        if self.end is not None:
            return self.end.compressed_size
        return max(self.offer.compressed_size, self.bytes_received) if self.streamed else self.offer.compressed_size

    @property
    def awaiting_peer(self) -> bool:
        """True while only the peer can move the transfer on (so an idle timeout applies) — not while a sender
        that streams prepares its offer: it is converting the conversation (SPEC.md §12)."""
        if self.state is ReceiverState.AWAIT_OFFER and self.peer_streams:
            return False
        return self.state in (ReceiverState.AWAIT_HELLO, ReceiverState.AWAIT_OFFER, ReceiverState.RECEIVING)

    # --- local events -------------------------------------------------------------------------------------

    def start(self) -> list[Action]:
        if self.state is not ReceiverState.IDLE:
            raise RuntimeError("start() called twice")
        self.state = ReceiverState.AWAIT_HELLO
        return [SendFrame(encode(Hello(role=Role.RECEIVER, max_message_size=self.max_message_size,
                                       codecs=self._codec_ids + ((STREAMS,) if self.streams else ()))))]

    def accept(self, have: Sequence[tuple[int, int]] = ()) -> list[Action]:
        """The user accepted; ``have``: chunk ranges (in this OFFER's chunk size) already held durably."""
        if self.state is not ReceiverState.DECIDING or self.offer is None:
            return []  # the transfer ended meanwhile (cancelled by the peer, or failed)
        if self.streamed:  # nothing is ever held: a streamed transfer restarts from zero (SPEC.md §12)
            self.state = ReceiverState.RECEIVING
            return [SendFrame(encode(Accept(self.transfer_id, window=self.window))), Progress(0, self._total())]
        have = tuple(have)
        check_ranges(have, self.offer.nchunks)
        if len(have) > MAX_RANGES:  # keep the longest prefix that fits; the rest is simply sent again
            have = have[:MAX_RANGES]
        self.plan = Plan(self.offer, have)
        self.state = ReceiverState.RECEIVING
        frame = encode(Accept(self.transfer_id, window=self.window, have=have))
        return [SendFrame(frame), Progress(self.plan.held_bytes, self.offer.compressed_size)]

    def reject(self, reason: str = "declined", code: Code = Code.DECLINED) -> list[Action]:
        if self.state is not ReceiverState.DECIDING:
            return []
        return [SendFrame(encode(Reject(self.transfer_id, code, reason_text(reason)))),
                *self._fail(code, reason, by_peer=False)]

    def chunks_durable(self, count: int) -> list[Action]:
        """The first ``count`` chunks asked for by WriteChunk are durably stored (cumulative)."""
        if self.finished or (self.plan is None and not self.streamed) or self.offer is None:
            return []
        if not self._durable <= count <= self._received:
            raise ValueError(f"chunks_durable({count}) outside {self._durable}..{self._received}")
        if count == self._durable:
            return []
        while self._durable < count:
            length = self._pending.popleft()
            self._unacked_bytes -= length
            self._durable_bytes += length
            self._durable += 1
        if self.plan is None:
            upto, done, total = self._durable, self._durable_bytes, self._received
        else:
            upto, done, total = self.plan.upto_after(self._durable), self.plan.held_bytes + self._durable_bytes, \
                self.plan.total
        actions: list[Action] = [SendFrame(encode(Ack(self.transfer_id, upto))), Progress(done, self._total())]
        if self.state is ReceiverState.FINISHING and self._durable == total:
            self.state = ReceiverState.VERIFYING
            actions.append(VerifyPayload())
        return actions

    def verified(self, digest: bytes) -> list[Action]:
        """The SHA-256 of the whole payload as stored."""
        if self.state is not ReceiverState.VERIFYING or self.offer is None:
            return []
        if digest != self.sha256:
            return self.fail(Code.CHECKSUM, f"the received payload hashes to sha256 {digest.hex()[:16]}…, "
                                            f"the {'sender' if self.end else 'offer'} said {self.sha256.hex()[:16]}…")
        self.state = ReceiverState.FINALIZING
        return [FinalizeBlob()]

    def finalized(self) -> list[Action]:
        """The blob is in place: confirm to the sender."""
        if self.state is not ReceiverState.FINALIZING or self.offer is None:
            return []
        self.state = ReceiverState.COMPLETED
        return [SendFrame(encode(Done(self.transfer_id, self.sha256))), Completed()]


    # --- frames from the peer -----------------------------------------------------------------------------

    def receive(self, data: bytes | bytearray | memoryview | str) -> list[Action]:
        if self.finished:
            return []
        if self.state is ReceiverState.IDLE:
            return self._protocol_error("a frame arrived before the transfer started")
        try:
            frame = decode(data, max_size=self.max_message_size)
        except FrameError as exc:
            return self._protocol_error(str(exc))
        other = self.offer is not None and frame.transfer_id != self.offer.transfer_id
        if other and not isinstance(frame, Hello):
            return self._protocol_error(f"{frame.type.name} for another transfer")
        try:
            return self._dispatch(frame)
        except FrameError as exc:
            return self._protocol_error(str(exc))

    def _dispatch(self, frame: Frame) -> list[Action]:
        if frame.type not in ALLOWED[self.state]:
            raise FrameError(f"unexpected {frame.type.name} while {self.state.value}")
        if isinstance(frame, Chunk):
            return self._on_chunk(frame)
        if isinstance(frame, End):
            return self._on_end(frame)
        if isinstance(frame, StreamEnd):
            return self._on_stream_end(frame)
        if isinstance(frame, Hello):
            if frame.role is not Role.SENDER:
                raise FrameError("the peer is a receiver too (HELLO role)")
            self.state = ReceiverState.AWAIT_OFFER
            self.peer_streams = self.streams and STREAMS in frame.codecs
            return []
        if isinstance(frame, Offer):
            return self._on_offer(frame)
        if isinstance(frame, Cancel | Error):  # the peer ended the transfer
            return self._fail(frame.code, frame.text, by_peer=True)
        raise AssertionError(f"ALLOWED lets {frame.type.name} through without a handler")

    def _on_offer(self, offer: Offer) -> list[Action]:
        if isinstance(offer, StreamOffer) and not self.streams:
            raise FrameError("STREAM_OFFER to a receiver that does not list STREAMS")
        if offer.chunk_size + CHUNK_OVERHEAD > self.max_message_size:
            raise FrameError(f"OFFER chunk size {offer.chunk_size} makes frames over the "
                             f"{self.max_message_size}-byte limit this receiver advertised")
        self.offer = offer
        self.state = ReceiverState.DECIDING
        if offer.codec_id not in self._codec_ids:
            name = offer.codec or "unknown"
            return self.reject(f"codec id {offer.codec_id} ({name}) is not supported here",
                               Code.UNSUPPORTED_CODEC)
        if offer.raw_size > self.max_raw_size:
            return self.reject(f"the conversation is {offer.raw_size} bytes, over this receiver's limit of "
                               f"{self.max_raw_size} bytes", Code.TOO_LARGE)
        if offer.compressed_size > self.max_raw_size * _MAX_EXPANSION + 1024:
            return self.reject(f"the payload is {offer.compressed_size} bytes, more than any conversation "
                               f"within this receiver's limit of {self.max_raw_size} bytes compresses to",
                               Code.TOO_LARGE)
        return [OfferReceived(offer)]

    def _on_chunk(self, chunk: Chunk) -> list[Action]:
        if self.streamed:
            return self._on_stream_chunk(chunk)
        assert self.plan is not None and self.offer is not None
        if self._received >= self.plan.total:
            raise FrameError(f"CHUNK {chunk.index} after all {self.plan.total} planned chunks")
        expected = self.plan.index_at(self._received)
        if chunk.index != expected:
            raise FrameError(f"CHUNK {chunk.index} out of order (expected {expected})")
        offset, length = self.offer.chunk_span(chunk.index)
        if len(chunk.payload) != length:
            raise FrameError(f"CHUNK {chunk.index} carries {len(chunk.payload)} bytes, expected {length}")
        if self._unacked_bytes + length > self.window:
            raise FrameError(f"the sender exceeded the {self.window}-byte flow-control window")
        self._received += 1
        self._pending.append(length)
        self._unacked_bytes += length
        self.bytes_received += length
        return [WriteChunk(chunk.index, offset, chunk.payload)]

    def _on_stream_chunk(self, chunk: Chunk) -> list[Action]:
        assert self.offer is not None
        if chunk.index != self._received:
            raise FrameError(f"CHUNK {chunk.index} out of order (expected {self._received})")
        length = len(chunk.payload)
        if length > self.offer.chunk_size:
            raise FrameError(f"CHUNK {chunk.index} carries {length} bytes, more than the chunk size")
        if self._unacked_bytes + length > self.window:
            raise FrameError(f"the sender exceeded the {self.window}-byte flow-control window")
        if self.bytes_received + length > self.max_raw_size * _MAX_EXPANSION + 1024:
            raise FrameError("the streamed payload grew past anything within this receiver's size limit")
        offset = self.bytes_received
        self._received += 1
        self._pending.append(length)
        self._unacked_bytes += length
        self.bytes_received += length
        return [WriteChunk(chunk.index, offset, chunk.payload)]

    def _on_stream_end(self, end: StreamEnd) -> list[Action]:
        if not self.streamed:
            raise FrameError("STREAM_END in a transfer that is not streamed")
        if end.nchunks != self._received or end.compressed_size != self.bytes_received:
            raise FrameError(f"STREAM_END says {end.nchunks} chunks / {end.compressed_size} bytes, "
                             f"{self._received} / {self.bytes_received} arrived")
        self.end = end
        if end.raw_size > self.max_raw_size:
            return self.fail(Code.INVALID, f"the conversation is {end.raw_size} bytes, over this receiver's "
                                           f"limit of {self.max_raw_size} bytes")
        if self._durable == self._received:
            self.state = ReceiverState.VERIFYING
            return [VerifyPayload()]
        self.state = ReceiverState.FINISHING
        return []

    def _on_end(self, end: End) -> list[Action]:
        if self.streamed:
            raise FrameError("END in a streamed transfer (STREAM_END ends it)")
        assert self.plan is not None and self.offer is not None
        if self._received != self.plan.total:
            raise FrameError(f"END after {self._received} of {self.plan.total} chunks")
        if end.nchunks != self.offer.nchunks:
            raise FrameError(f"END says {end.nchunks} chunks, the OFFER implies {self.offer.nchunks}")
        if self._durable == self.plan.total:
            self.state = ReceiverState.VERIFYING
            return [VerifyPayload()]
        self.state = ReceiverState.FINISHING
        return []

    # --- endings ------------------------------------------------------------------------------------------

