"""The sending side of the transfer protocol as a sans-I/O state machine (spec: ``SPEC.md``).

Feed it every message from the channel (:meth:`Sender.receive`) and local events (:meth:`cancel`,
:meth:`timeout`, :meth:`connection_lost`); it returns actions to perform in order. A cancel after the last chunk
(END or STREAM_END sent) is a question, not an end: the receiver may have committed first, and its DONE, crossing
the CANCEL, is the answer (``cancelling``, SPEC.md §6); the adapter waits :data:`CANCEL_ANSWER_WAIT` for it.
Chunks are pulled by the adapter: :meth:`next_chunk` says which chunk may go now (flow-control window permitting)
and :meth:`send_chunk` turns its bytes into a frame. Nothing here does I/O, and nothing here raises on peer input:
a bad frame becomes an ERROR frame to send plus a terminal :class:`Failed`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from enum import Enum

import msgspec

from p2pd.blob.codecs import CODECS, get_codec
from p2pd.transfer.endings import Endings
from p2pd.transfer.events import Action, Completed, Failure, Progress, SendFrame
from p2pd.transfer.frames import (
    BASE_MESSAGE_SIZE,
    CHUNK_OVERHEAD,
    MAX_MESSAGE_SIZE,
    STREAMS,
    ZERO_ID,
    Accept,
    Ack,
    Cancel,
    Code,
    Done,
    End,
    Error,
    Frame,
    FrameError,
    FrameType,
    Hello,
    Offer,
    OfferInfo,
    Reject,
    Role,
    StreamEnd,
    StreamOffer,
    decode,
    encode,
    encode_chunk,
    reason_text,
)
from p2pd.transfer.plan import Plan

DEFAULT_WINDOW = 8 * 1024 * 1024
CANCEL_ANSWER_WAIT = 2.0  # seconds a sender that cancelled after its last chunk waits for a DONE crossing it


class Encoding(msgspec.Struct, frozen=True):
    """Another encoding of the same conversation the sender can offer instead (its blob header's fields)."""

    codec: str
    compressed_size: int
    sha256: bytes


class SenderState(Enum):
    IDLE = "idle"
    AWAIT_HELLO = "await-hello"
    PREPARING = "preparing"  # a deferred offer (streams=True): HELLO seen, the adapter prepares what to offer
    AWAIT_DECISION = "await-decision"
    SENDING = "sending"
    AWAIT_DONE = "await-done"
    CANCELLING = "cancelling"  # cancelled after the last chunk: a DONE crossing the CANCEL still completes it
    COMPLETED = "completed"
    FAILED = "failed"


_TERMINAL = (SenderState.COMPLETED, SenderState.FAILED)
_STOP = frozenset({FrameType.CANCEL, FrameType.ERROR})

# State dispatch: the frames each state takes from the peer (SPEC.md, "Sender states"); any other frame is a
# protocol error. Before start and once finished nothing is taken.
ALLOWED: dict[SenderState, frozenset[FrameType]] = {
    SenderState.IDLE: frozenset(),
    SenderState.AWAIT_HELLO: _STOP | {FrameType.HELLO},
    SenderState.PREPARING: _STOP,
    SenderState.AWAIT_DECISION: _STOP | {FrameType.ACCEPT, FrameType.REJECT},
    SenderState.SENDING: _STOP | {FrameType.ACK},
    SenderState.AWAIT_DONE: _STOP | {FrameType.ACK, FrameType.DONE},
    SenderState.CANCELLING: _STOP | {FrameType.ACK, FrameType.DONE},
    SenderState.COMPLETED: frozenset(),
    SenderState.FAILED: frozenset(),
}


class Sender(Endings):
    """One outgoing transfer of one blob payload.

    ``max_message_size`` is the largest message this side takes and advertises; ``transport_limit`` is what
    the transport lets us send (aiortc: the remote SDP's max-message-size), when known. CHUNK frames are sized
    to the smallest of both sides' advertised limits, the transport's and :data:`MAX_MESSAGE_SIZE`.
    """

    IDLE = SenderState.IDLE
    FAILED = SenderState.FAILED
    SILENCE = "no response from the peer"
    state: SenderState

    def __init__(self, *, transfer_id: bytes, codec: str, raw_size: int, compressed_size: int, sha256: bytes,
                 info: OfferInfo, max_message_size: int = BASE_MESSAGE_SIZE,
                 transport_limit: int | None = None, window: int = DEFAULT_WINDOW,
                 codecs: Sequence[str] = tuple(CODECS), alternatives: Sequence[Encoding] = (),
                 deferred: bool = False) -> None:
        """``deferred``: the offer is not known yet (sizes and digest are ignored); this side lists STREAMS in its
        HELLO and, once the receiver's HELLO is in, waits in PREPARING for :meth:`offer_blob` or (when
        :attr:`peer_streams`) :meth:`offer_stream` (SPEC.md §12)."""
        if len(transfer_id) != 16 or transfer_id == ZERO_ID:
            raise ValueError("transfer id must be 16 bytes, not all zero")
        if max_message_size < BASE_MESSAGE_SIZE:
            raise ValueError(f"max_message_size must be at least {BASE_MESSAGE_SIZE}")
        self.transfer_id = transfer_id
        self._codec_id = get_codec(codec).wire_id
        self._raw_size = raw_size
        self._compressed_size = compressed_size
        self._sha256 = sha256
        self._info = info
        self.max_message_size = max_message_size
        self._transport_limit = transport_limit
        self._window = window
        self._codecs = tuple(get_codec(name).wire_id for name in codecs)  # what HELLO says this side produces
        self.deferred = deferred
        if deferred:
            self._codecs += (STREAMS,)
        self.peer_streams = False  # the receiver's HELLO lists STREAMS
        self.peer_codecs: tuple[int, ...] = ()
        self._limit = BASE_MESSAGE_SIZE  # CHUNK frame size agreed from both HELLOs
        self.end: StreamEnd | None = None  # a streamed transfer's last frame, once sent
        # Offered instead of the encoding above, first one the receiver's HELLO lists (SPEC.md §1: codecs).
        self._alternatives = tuple(alternatives)
        self.choice: int | None = None  # index in ``alternatives`` of the encoding offered; None: the first one
        self.state = SenderState.IDLE
        self.offer: Offer | None = None
        self.plan: Plan | None = None
        self.failure: Failure | None = None
        self._sent = 0  # planned chunks sent
        self._unacked: deque[tuple[int, int]] = deque()  # (index, length) sent, not yet acknowledged
        self._unacked_bytes = 0
        self._acked_upto = 0
        self._acked_bytes = 0  # bytes sent by this transfer and acknowledged
        self.bytes_sent = 0
        self.cancel_reason: str | None = None  # this side's cancel, while cancelling and after
        self.cancel_too_late = False  # completed: the receiver's DONE crossed this side's CANCEL

    # --- local events -------------------------------------------------------------------------------------

    def start(self) -> list[Action]:
        if self.state is not SenderState.IDLE:
            raise RuntimeError("start() called twice")
        self.state = SenderState.AWAIT_HELLO
        return [SendFrame(encode(Hello(role=Role.SENDER, max_message_size=self.max_message_size,
                                       codecs=self._codecs)))]


    def _frame_id(self) -> bytes:
        return self.transfer_id

    @property
    def finished(self) -> bool:
        return self.state in _TERMINAL

    @property
    def cancelling(self) -> bool:
        """True while a cancel sent after the last chunk waits for its answer (DONE, or anything else)."""
        return self.state is SenderState.CANCELLING

    def cancel(self, reason: str = "cancelled") -> list[Action]:
        """This side gives up. Once the last chunk is sent the receiver may have committed already: CANCEL goes,
        and the transfer stays open (``cancelling``) for the answer — DONE completes it; its CANCEL or ERROR, a
        closed channel, anything else, or :meth:`cancel_unanswered` end it cancelled."""
        if self.state is SenderState.CANCELLING:
            return []
        if self.state is not SenderState.AWAIT_DONE:
            return super().cancel(reason)
        self.cancel_reason = reason
        self.state = SenderState.CANCELLING
        return [SendFrame(encode(Cancel(self.transfer_id, Code.CANCELLED, reason_text(reason))))]

    def cancel_unanswered(self) -> list[Action]:
        """No DONE came for :data:`CANCEL_ANSWER_WAIT`: the cancel stands."""
        if self.state is not SenderState.CANCELLING:
            return []
        return self._cancelled()

    def _cancelled(self) -> list[Action]:
        return self._fail(Code.CANCELLED, self.cancel_reason or "cancelled", by_peer=False)

    def fail(self, code: Code, reason: str) -> list[Action]:
        if self.state is SenderState.CANCELLING:  # (CANCEL is sent: nothing more goes to the peer)
            return self._cancelled()
        return super().fail(code, reason)

    def _fail(self, code: int, reason: str, *, by_peer: bool) -> list[Action]:
        if self.state is SenderState.CANCELLING:  # every end of a cancelling transfer (the peer's CANCEL or ERROR,
            # a closed channel, silence, a bad frame) is this side's cancel standing
            code, reason, by_peer = Code.CANCELLED, self.cancel_reason or "cancelled", False
        return super()._fail(code, reason, by_peer=by_peer)

    @property
    def preparing(self) -> bool:
        """True while this side prepares its offer: the peer waits for it (no idle timeout)."""
        return self.state is SenderState.PREPARING

    @property
    def streamed(self) -> bool:
        return isinstance(self.offer, StreamOffer)

    @property
    def sha256(self) -> bytes:
        """The payload's digest: the OFFER's, or a streamed transfer's STREAM_END's."""
        if self.end is not None:
            return self.end.sha256
        return self.offer.sha256 if self.offer is not None else bytes(32)

    def offer_blob(self, codec: str, raw_size: int, compressed_size: int, sha256: bytes, info: OfferInfo,
                   alternatives: Sequence[Encoding] = ()) -> list[Action]:
        """PREPARING: offer a whole blob (the version-1 OFFER; any receiver)."""
        if self.state is not SenderState.PREPARING:
            return []
        self._codec_id, self._raw_size, self._compressed_size = get_codec(codec).wire_id, raw_size, compressed_size
        self._sha256, self._info, self._alternatives = sha256, info, tuple(alternatives)
        return self._offer(self.peer_codecs)

    def offer_stream(self, codec: str, raw_estimate: int, compressed_estimate: int,
                     info: OfferInfo) -> list[Action]:
        """PREPARING, the receiver listed STREAMS: offer a payload still being produced (STREAM_OFFER)."""
        if self.state is not SenderState.PREPARING:
            return []
        if not self.peer_streams:
            raise RuntimeError("offer_stream() to a receiver that does not list STREAMS")
        self.offer = StreamOffer(transfer_id=self.transfer_id, codec_id=get_codec(codec).wire_id,
                                 raw_size=raw_estimate, compressed_size=max(1, compressed_estimate),
                                 sha256=bytes(32), chunk_size=self._limit - CHUNK_OVERHEAD, info=info)
        self.state = SenderState.AWAIT_DECISION
        return [SendFrame(encode(self.offer))]

    def stream_room(self, length: int) -> bool:
        """Streamed: whether a chunk of ``length`` bytes may go now (flow-control window)."""
        if self.state is not SenderState.SENDING or not self.streamed or self.end is not None:
            return False
        return not self._unacked_bytes or self._unacked_bytes + length <= self._window

    def send_stream_chunk(self, payload: bytes) -> list[Action]:
        """Streamed: the next CHUNK (index = chunks sent so far), 1..chunk_size bytes."""
        assert self.offer is not None
        if not self.stream_room(len(payload)) or not 0 < len(payload) <= self.offer.chunk_size:
            raise ValueError(f"send_stream_chunk({len(payload)} bytes) not allowed now")
        index = self._sent
        self._sent += 1
        self._unacked.append((index, len(payload)))
        self._unacked_bytes += len(payload)
        self.bytes_sent += len(payload)
        return [SendFrame(encode_chunk(self.transfer_id, index, payload))]

    def end_stream(self, raw_size: int, sha256: bytes) -> list[Action]:
        """Streamed: every chunk is sent; STREAM_END carries the totals and the digest."""
        if self.state is not SenderState.SENDING or not self.streamed or self.end is not None:
            return []
        self.end = StreamEnd(self.transfer_id, self._sent, raw_size, self.bytes_sent, sha256)
        self.state = SenderState.AWAIT_DONE
        return [SendFrame(encode(self.end))]

    @property
    def awaiting_decision(self) -> bool:
        """True while the receiving user decides: the peer may legitimately stay silent (no idle timeout)."""
        return self.state is SenderState.AWAIT_DECISION

    # --- chunks -------------------------------------------------------------------------------------------

    def next_chunk(self) -> tuple[int, int, int] | None:
        """(index, offset, length) of the chunk that may go now; None: window full, all sent, or not yet."""
        if self.state is not SenderState.SENDING or self.plan is None or self.offer is None:
            return None
        if self._sent >= self.plan.total:
            return None
        index = self.plan.index_at(self._sent)
        offset, length = self.offer.chunk_span(index)
        if self._unacked_bytes and self._unacked_bytes + length > self._window:
            return None
        return index, offset, length

    def send_chunk(self, index: int, payload: bytes) -> list[Action]:
        """The frame for the chunk :meth:`next_chunk` named (and END after the last one)."""
        expected = self.next_chunk()
        if expected is None or expected[0] != index or expected[2] != len(payload):
            raise ValueError(f"send_chunk({index}, {len(payload)} bytes) does not match next_chunk() "
                             f"{expected}")
        assert self.plan is not None
        self._sent += 1
        self._unacked.append((index, len(payload)))
        self._unacked_bytes += len(payload)
        self.bytes_sent += len(payload)
        actions: list[Action] = [SendFrame(encode_chunk(self.transfer_id, index, payload))]
        if self._sent == self.plan.total:
            actions.extend(self._end())
        return actions

    @property
    def chunks_sent(self) -> int:
        return self._sent

    @property
    def window(self) -> int:
        return self._window

    def _end(self) -> list[Action]:
        assert self.offer is not None
        self.state = SenderState.AWAIT_DONE
        return [SendFrame(encode(End(self.transfer_id, self.offer.nchunks)))]

    # --- frames from the peer -----------------------------------------------------------------------------

    def receive(self, data: bytes | bytearray | memoryview | str) -> list[Action]:
        if self.finished:
            return []
        if self.state is SenderState.IDLE:
            return self._protocol_error("a frame arrived before the transfer started")
        try:
            frame = decode(data, max_size=self.max_message_size)
        except FrameError as exc:
            return self._protocol_error(str(exc))
        # CANCEL and ERROR may carry the zero id (sent before the peer saw the OFFER); HELLO always does
        known = (ZERO_ID, self.transfer_id) if isinstance(frame, Cancel | Error) else (self.transfer_id,)
        if not isinstance(frame, Hello) and frame.transfer_id not in known:
            return self._protocol_error(f"{frame.type.name} for another transfer")
        try:
            return self._dispatch(frame)
        except FrameError as exc:
            return self._protocol_error(str(exc))  # (cancelling: the cancel stands, nothing sent)

    def _dispatch(self, frame: Frame) -> list[Action]:
        if frame.type not in ALLOWED[self.state]:
            raise FrameError(f"unexpected {frame.type.name} while {self.state.value}")
        if isinstance(frame, Hello):
            return self._on_hello(frame)
        if isinstance(frame, Accept):
            return self._on_accept(frame)
        if isinstance(frame, Ack):
            return self._on_ack(frame)
        if isinstance(frame, Done):
            return self._on_done(frame)
        if isinstance(frame, Reject | Cancel | Error):  # the peer ended the transfer (cancelling: it stopped first)
            return self._fail(frame.code, frame.text, by_peer=True)
        raise AssertionError(f"ALLOWED lets {frame.type.name} through without a handler")

    def _on_hello(self, hello: Hello) -> list[Action]:
        if hello.role is not Role.RECEIVER:
            raise FrameError("the peer is a sender too (HELLO role)")
        limit = min(self.max_message_size, hello.max_message_size, MAX_MESSAGE_SIZE,
                    self._transport_limit or MAX_MESSAGE_SIZE)
        self._limit = max(limit, BASE_MESSAGE_SIZE)
        self.peer_codecs = hello.codecs
        self.peer_streams = STREAMS in hello.codecs
        if self.deferred:
            self.state = SenderState.PREPARING
            return []
        return self._offer(hello.codecs)

    def _offer(self, codecs: tuple[int, ...]) -> list[Action]:
        codec_id, size, digest = self._codec_id, self._compressed_size, self._sha256
        for i, alt in enumerate(self._alternatives):
            if get_codec(alt.codec).wire_id in codecs:
                self.choice = i
                codec_id, size, digest = get_codec(alt.codec).wire_id, alt.compressed_size, alt.sha256
                break
        self.offer = Offer(transfer_id=self.transfer_id, codec_id=codec_id, raw_size=self._raw_size,
                           compressed_size=size, sha256=digest, chunk_size=self._limit - CHUNK_OVERHEAD,
                           info=self._info)
        self.state = SenderState.AWAIT_DECISION
        return [SendFrame(encode(self.offer))]

    def _on_accept(self, accept: Accept) -> list[Action]:
        assert self.offer is not None
        if self.streamed:
            if accept.have:
                raise FrameError("ACCEPT of a streamed transfer lists held ranges (it restarts from zero)")
            self._window = min(self._window, accept.window)
            self.state = SenderState.SENDING
            return [Progress(0, self.offer.compressed_size)]
        self.plan = Plan(self.offer, accept.have)
        self._window = min(self._window, accept.window)
        self.state = SenderState.SENDING
        actions: list[Action] = [Progress(self.plan.held_bytes, self.offer.compressed_size)]
        if self.plan.total == 0:
            actions.extend(self._end())
        return actions

    def _on_ack(self, ack: Ack) -> list[Action]:
        assert self.offer is not None
        if ack.upto <= self._acked_upto:
            raise FrameError(f"ACK {ack.upto} does not advance past {self._acked_upto} "
                             "(duplicate or reordered)")
        held = self.plan.held_bytes if self.plan is not None else 0
        bound = self.plan.upto_after(self._sent) if self.plan is not None else self._sent
        if ack.upto > bound:
            raise FrameError(f"ACK {ack.upto} acknowledges chunks that were never sent (at most {bound})")
        self._acked_upto = ack.upto
        while self._unacked and self._unacked[0][0] < ack.upto:
            _, length = self._unacked.popleft()
            self._unacked_bytes -= length
            self._acked_bytes += length
        total = max(self.offer.compressed_size, self.bytes_sent) if self.streamed else self.offer.compressed_size
        return [Progress(held + self._acked_bytes, total)]

    def _on_done(self, done: Done) -> list[Action]:
        assert self.offer is not None
        if done.sha256 != self.sha256:
            raise FrameError("DONE confirms a SHA-256 different from the one offered")
        self.cancel_too_late = self.state is SenderState.CANCELLING
        self.state = SenderState.COMPLETED
        total = self.end.compressed_size if self.end is not None else self.offer.compressed_size
        return [Progress(total, total), Completed()]

    # --- endings ------------------------------------------------------------------------------------------

