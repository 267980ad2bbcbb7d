"""Property tests of the state machines (hypothesis).

* Any honest run delivers identical bytes, whatever the sizes, limits, window, durability batching and resume.
* Truncating, duplicating or corrupting any byte of any frame, in either direction, is detected: the transfer
  never completes on both sides (the only exception: a copy of the final frame that reaches a side that has
  already finished — it changes nothing). And whatever the tampering, a receiver that completes holds exactly
  the sender's bytes.
* Random frame sequences (valid frames of every type with random fields, in any order, and raw garbage)
  never raise out of a machine and never leave it half-dead: it keeps going or fails with an ERROR for the
  peer.
"""

from __future__ import annotations

import hashlib
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from p2pd.transfer.events import Failed, SendFrame
from p2pd.transfer.frames import (
    MAX_MESSAGE_SIZE,
    ZERO_ID,
    Accept,
    Ack,
    Cancel,
    Chunk,
    Code,
    Done,
    End,
    Error,
    Hello,
    Offer,
    OfferInfo,
    Reject,
    Role,
    decode,
    encode,
)
from p2pd.transfer.receiver import Receiver
from p2pd.transfer.sender import Sender
from tests.transfer.sim import INFO, TID, simulate

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

payloads = st.integers(1, 120_000).map(lambda n: random.Random(n).randbytes(n))
limits = st.sampled_from([16384, 32768, 65536])


@SETTINGS
@given(payload=payloads, sender_mms=limits, receiver_mms=limits,
       window=st.sampled_from([64 * 1024, 100_000, 1 << 20]), durable_every=st.integers(1, 6),
       held=st.lists(st.integers(0, 20), max_size=6))
def test_honest_runs_deliver_identical_bytes(payload: bytes, sender_mms: int, receiver_mms: int, window: int,
                                             durable_every: int, held: list[int]) -> None:
    chunk = min(sender_mms, receiver_mms) - 26
    nchunks = -(-len(payload) // chunk)
    held_set = sorted({i for i in held if i < nchunks})
    ranges: list[tuple[int, int]] = []
    for i in held_set:
        if ranges and ranges[-1][1] == i:
            ranges[-1] = (ranges[-1][0], i + 1)
        else:
            ranges.append((i, i + 1))
    storage = bytearray(len(payload))
    for a, b in ranges:
        storage[a * chunk: b * chunk] = payload[a * chunk: b * chunk]
    res = simulate(payload, sender_mms=sender_mms, receiver_mms=receiver_mms, window=window,
                   durable_every=durable_every, have=ranges, storage=storage)
    assert res.both_completed, (res.sender_failure, res.receiver_failure)
    assert bytes(res.storage) == payload
    assert res.sender.chunks_sent == nchunks - len(held_set)
    assert max(len(f) for f in res.s2r) <= min(sender_mms, receiver_mms)
    assert res.progress[-1] == (len(payload), len(payload))


def _tamper_op(kind: str, target: int, position: int, bit: int):  # type: ignore[no-untyped-def]
    def tamper(n: int, frame: bytes) -> list[bytes]:
        if n != target:
            return [frame]
        if kind == "corrupt":
            bad = bytearray(frame)
            bad[position % len(frame)] ^= bit
            return [bytes(bad)]
        if kind == "truncate":
            return [frame[: position % len(frame)]]
        return [frame, frame]  # duplicate

    return tamper


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(payload=st.integers(1, 60_000).map(lambda n: random.Random(n).randbytes(n)),
       direction=st.sampled_from(["s2r", "r2s"]), kind=st.sampled_from(["corrupt", "truncate", "duplicate"]),
       target=st.integers(0, 12), position=st.integers(0, 1 << 16),
       bit=st.sampled_from([1, 2, 4, 8, 16, 32, 64, 128]))
def test_tampering_with_any_frame_is_detected(payload: bytes, direction: str, kind: str, target: int,
                                              position: int, bit: int) -> None:
    tamper = _tamper_op(kind, target, position, bit)
    res = simulate(payload, window=64 * 1024, **{f"tamper_{direction}": tamper})  # type: ignore[arg-type]
    frames_in_direction = len(res.s2r if direction == "s2r" else res.r2s)
    if target >= frames_in_direction:
        assert res.both_completed  # nothing was tampered with
        return
    _check_detected(res, payload, kind)


def _check_detected(res, payload: bytes, kind: str) -> None:  # type: ignore[no-untyped-def]
    if res.receiver.state.value == "completed":
        assert bytes(res.storage) == payload
    if res.both_completed:
        assert kind == "duplicate" and res.late_deliveries >= 1, "tampering went unnoticed"
    else:
        failures = [f for f in (res.sender_failure, res.receiver_failure) if f is not None]
        assert failures and all(f.code != Code.PEER_GONE for f in failures)


def test_every_frame_tampered_every_way_is_detected() -> None:
    """Exhaustive over frames and tamper kinds (byte positions sampled where frames are long)."""
    payload = random.Random(7).randbytes(3 * 16358 + 1000)
    honest = simulate(payload, window=64 * 1024)
    assert honest.both_completed
    runs = 0
    for direction, sent in (("s2r", honest.s2r), ("r2s", honest.r2s)):
        for n, frame in enumerate(sent):
            size = len(frame)
            positions = sorted({0, 1, 2, 17, 18, 21, 22, size // 2, size - 5, size - 1} & set(range(size)))
            ops = [("duplicate", 0, 1)]
            ops += [("truncate", p, 1) for p in positions]
            ops += [("corrupt", p, bit) for p in positions for bit in (0x01, 0x80)]
            for kind, position, bit in ops:
                res = simulate(payload, window=64 * 1024,
                               **{f"tamper_{direction}": _tamper_op(kind, n, position, bit)})  # type: ignore[arg-type]
                _check_detected(res, payload, kind)
                runs += 1
    assert runs > 300


@SETTINGS
@given(payload=st.integers(1, 60_000).map(lambda n: random.Random(n).randbytes(n)),
       direction=st.sampled_from(["s2r", "r2s"]), target=st.integers(0, 12))
def test_a_lost_frame_never_hangs_and_never_corrupts(payload: bytes, direction: str, target: int) -> None:
    def drop(n: int, frame: bytes) -> list[bytes]:
        return [] if n == target else [frame]

    res = simulate(payload, window=64 * 1024, **{f"tamper_{direction}": drop})  # type: ignore[arg-type]
    assert res.sender.finished and res.receiver.finished  # the simulation settled: no hang
    if res.receiver.state.value == "completed":
        assert bytes(res.storage) == payload


# --- random frame sequences ------------------------------------------------------------------------------

ids = st.sampled_from([TID, ZERO_ID, bytes(15) + b"\x01"])
small = st.integers(0, 40)
infos = st.builds(OfferInfo, st.text(max_size=20).map(lambda t: "".join(c for c in t if c.isprintable())),
                  st.sampled_from(["claude-code", "codex"]), st.text("abc", max_size=5), st.integers(0, 1000))
frames = st.one_of(
    st.builds(Hello, role=st.sampled_from(list(Role)),
              max_message_size=st.sampled_from([16384, 65536, 1 << 20]),
              codecs=st.sampled_from([(1,), (1, 2), (2, 1)])),
    st.builds(Offer, ids.filter(lambda i: i != ZERO_ID), st.sampled_from([1, 2, 7]), st.integers(0, 10**6),
              st.integers(1, 200_000), st.binary(min_size=32, max_size=32),
              st.sampled_from([1024, 16358, 65510]), infos),
    st.builds(Accept, ids, st.sampled_from([64 * 1024, 1 << 20]),
              st.sampled_from([(), ((0, 1),), ((0, 2), (3, 4)), ((1, 50),)])),
    st.builds(Reject, ids, st.sampled_from(list(Code)), st.text(max_size=10)),
    st.builds(Chunk, ids, small, st.binary(min_size=1, max_size=2000)),
    st.builds(Ack, ids, small),
    st.builds(End, ids, small),
    st.builds(Done, ids, st.binary(min_size=32, max_size=32)),
    st.builds(Cancel, ids, st.just(Code.CANCELLED), st.text(max_size=10)),
    st.builds(Error, ids, st.sampled_from(list(Code)), st.text(max_size=10)),
)
messages = st.one_of(frames.map(encode), st.binary(max_size=64), st.text(max_size=5))


def _check_actions(actions: list, machine: Sender | Receiver, was_finished: bool) -> None:  # type: ignore[type-arg]
    if was_finished:
        assert actions == []
        return
    failed = [a for a in actions if isinstance(a, Failed)]
    assert len(failed) <= 1
    if failed:
        assert machine.finished and actions[-1] is failed[0]
        f = failed[0].failure
        if f.code == Code.PROTOCOL and not f.by_peer:  # a protocol error is always reported to the peer
            sent = [decode(a.data, max_size=MAX_MESSAGE_SIZE) for a in actions if isinstance(a, SendFrame)]
            assert isinstance(sent[-1], Error) and sent[-1].code == Code.PROTOCOL
    for a in actions:
        if isinstance(a, SendFrame):
            assert len(a.data) <= MAX_MESSAGE_SIZE
            decode(a.data, max_size=MAX_MESSAGE_SIZE)  # everything a machine sends is well-formed


@SETTINGS
@given(st.lists(messages, max_size=25), st.booleans(), st.booleans())
def test_receiver_survives_any_message_sequence(seq: list, accept: bool, proper_start: bool) -> None:  # type: ignore[type-arg]
    r = Receiver(max_raw_size=500_000, window=64 * 1024)
    r.start()
    if proper_start:
        r.receive(encode(Hello(role=Role.SENDER, max_message_size=16384, codecs=(1,))))
    for msg in seq:
        was = r.finished
        actions = r.receive(msg)
        _check_actions(actions, r, was)
        if r.state.value == "deciding":
            more = r.accept() if accept else r.reject("no")
            _check_actions(more, r, False)
        if r.state.value in ("receiving", "finishing") and r.plan is not None:
            _check_actions(r.chunks_durable(r._received), r, False)
        if r.state.value == "verifying":
            _check_actions(r.verified(hashlib.sha256(b"").digest()), r, False)


@SETTINGS
@given(st.lists(messages, max_size=25), st.integers(1, 100_000), st.booleans())
def test_sender_survives_any_message_sequence(seq: list, size: int, pump: bool) -> None:  # type: ignore[type-arg]
    s = Sender(transfer_id=TID, codec="lz4", raw_size=size, compressed_size=size, sha256=bytes(32), info=INFO)
    s.start()
    for msg in seq:
        was = s.finished
        _check_actions(s.receive(msg), s, was)
        while pump and (nxt := s.next_chunk()) is not None:
            _check_actions(s.send_chunk(nxt[0], bytes(nxt[2])), s, False)
