"""A pure, in-memory run of a Sender against a Receiver: frames cross two queues that a test may tamper with.

No I/O, no clock: "storage" is a bytearray, "durable" is reported after every ``durable_every`` writes, and
when nothing can move any more (a lost frame, say) both sides get ``timeout()``, as the adapters' idle timers
would fire.
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from p2pd.transfer.events import (
    Action,
    Completed,
    Failed,
    Failure,
    FinalizeBlob,
    OfferReceived,
    Progress,
    SendFrame,
    VerifyPayload,
    WriteChunk,
)
from p2pd.transfer.frames import OfferInfo
from p2pd.transfer.receiver import Receiver
from p2pd.transfer.sender import Sender

Tamper = Callable[[int, bytes], list[bytes]]  # (sequence number in its direction, frame) -> frames delivered

INFO = OfferInfo(title="A conversation", platform="claude-code", session_id="abc", message_count=7)
TID = bytes(range(1, 17))


@dataclass
class SimResult:
    sender: Sender
    receiver: Receiver
    storage: bytearray
    s2r: list[bytes] = field(default_factory=list)  # frames as sent by the sender (before tampering)
    r2s: list[bytes] = field(default_factory=list)
    progress: list[tuple[int, int]] = field(default_factory=list)  # sender side
    receiver_progress: list[tuple[int, int]] = field(default_factory=list)
    late_deliveries: int = 0  # frames delivered to a side that had already finished
    offers: list[object] = field(default_factory=list)
    chunks_written: int = 0

    @property
    def both_completed(self) -> bool:
        return self.sender.state.value == "completed" and self.receiver.state.value == "completed"

    @property
    def sender_failure(self) -> Failure | None:
        return self.sender.failure

    @property
    def receiver_failure(self) -> Failure | None:
        return self.receiver.failure


def simulate(payload: bytes, *, sender_mms: int = 16384, receiver_mms: int = 65536, window: int = 1 << 20,
             have: list[tuple[int, int]] | None = None, storage: bytearray | None = None,
             accept: bool = True, durable_every: int = 1, tamper_s2r: Tamper | None = None,
             tamper_r2s: Tamper | None = None, max_raw_size: int = 1 << 30, codec: str = "lz4",
             raw_size: int | None = None, sha256: bytes | None = None, max_steps: int = 200_000) -> SimResult:
    sender = Sender(transfer_id=TID, codec=codec, raw_size=len(payload) if raw_size is None else raw_size,
                    compressed_size=len(payload), sha256=sha256 or hashlib.sha256(payload).digest(),
                    info=INFO, max_message_size=sender_mms)
    receiver = Receiver(max_message_size=receiver_mms, window=window, max_raw_size=max_raw_size)
    result = SimResult(sender, receiver, storage if storage is not None else bytearray(len(payload)))
    s2r: deque[bytes] = deque()
    r2s: deque[bytes] = deque()
    seq = {"s2r": 0, "r2s": 0}
    pending_writes = 0

    def out(direction: str, data: bytes) -> None:
        if direction == "s2r":
            queue, log, tamper = s2r, result.s2r, tamper_s2r
        else:
            queue, log, tamper = r2s, result.r2s, tamper_r2s
        log.append(data)
        n = seq[direction]
        seq[direction] += 1
        queue.extend(tamper(n, data) if tamper else [data])

    def run_sender(actions: list[Action]) -> None:
        for a in actions:
            if isinstance(a, SendFrame):
                out("s2r", a.data)
            elif isinstance(a, Progress):
                result.progress.append((a.done, a.total))

    def run_receiver(actions: list[Action]) -> None:
        nonlocal pending_writes
        work: deque[Action] = deque(actions)
        while work:
            a = work.popleft()
            if isinstance(a, SendFrame):
                out("r2s", a.data)
            elif isinstance(a, Progress):
                result.receiver_progress.append((a.done, a.total))
            elif isinstance(a, OfferReceived):
                result.offers.append(a.offer)
                if a.offer.compressed_size != len(result.storage):
                    result.storage[:] = bytes(a.offer.compressed_size)
                ranges = have or []
                work.extend(receiver.accept(ranges) if accept else receiver.reject("no thanks"))
            elif isinstance(a, WriteChunk):
                result.storage[a.offset:a.offset + len(a.data)] = a.data
                result.chunks_written += 1
                pending_writes += 1
                if pending_writes >= durable_every:
                    pending_writes = 0
                    work.extend(receiver.chunks_durable(result.chunks_written))
            elif isinstance(a, VerifyPayload):
                work.extend(receiver.verified(hashlib.sha256(result.storage).digest()))
            elif isinstance(a, FinalizeBlob):
                work.extend(receiver.finalized())
            elif isinstance(a, Failed | Completed):
                pass

    run_sender(sender.start())
    run_receiver(receiver.start())
    steps = 0
    while steps < max_steps:
        steps += 1
        moved = False
        # the sender pushes every chunk the window allows
        while (nxt := sender.next_chunk()) is not None:
            index, offset, length = nxt
            run_sender(sender.send_chunk(index, payload[offset:offset + length]))
            moved = True
        if s2r:
            frame = s2r.popleft()
            if receiver.finished:
                result.late_deliveries += 1
            run_receiver(receiver.receive(frame))
            moved = True
        if r2s:
            frame = r2s.popleft()
            if sender.finished:
                result.late_deliveries += 1
            run_sender(sender.receive(frame))
            moved = True
        if not moved and pending_writes and not receiver.finished:
            pending_writes = 0  # the adapter commits leftovers after a short delay
            run_receiver(receiver.chunks_durable(result.chunks_written))
            moved = True
        if not moved:
            if sender.finished and receiver.finished:
                break
            # nothing can move: the idle timers fire
            run_sender(sender.timeout(30))
            run_receiver(receiver.timeout(30))
    else:
        raise AssertionError("simulation did not settle")
    return result
