"""Real aiortc peer pairs on loopback (one process): corpus conversations, a 50 MB one, decline, cancel from
either side, a vanished peer, idle timeout, resume, and hostile frames over a real channel."""

from __future__ import annotations

import asyncio
import hashlib
import os
import time
from pathlib import Path
from typing import Any

import pytest

from p2pd.blob import container as blob
from p2pd.errors import (
    BusyError,
    Cause,
    DeclinedError,
    InvalidInputError,
    NotFoundError,
    Party,
    PeerGoneError,
    PeerTimeoutError,
    StorageError,
    TooLargeError,
    TransferCancelledError,
    TransferFailedError,
)
from p2pd.transfer.channel import HIGH_WATER, TransferControl, receive_blob, send_blob
from p2pd.transfer.frames import (
    MAX_MESSAGE_SIZE,
    Code,
    Error,
    Hello,
    Offer,
    OfferInfo,
    Reject,
    Role,
    decode,
    encode,
)
from p2pd.transfer.partial import PARTIAL_DIR
from tests.corpus import claude_code_files, codex_files, file_id, gemini_files
from tests.transfer.gen import generate_conversation
from tests.transfer.rtc import accept_all, connected_pair, open_channels

INFO = OfferInfo("Loopback test", "claude-code", "session-1", 3)


def write_blob(path: Path, raw: bytes) -> bytes:
    data = blob.encode(raw)
    path.write_bytes(data)
    return data


def corpus_conversations() -> list[Path]:
    files = [*claude_code_files(), *codex_files(), *gemini_files()]
    return [p for p in files if p.suffix in (".jsonl", ".json")]


async def test_every_corpus_conversation_crosses_intact(tmp_path: Path) -> None:
    files = corpus_conversations()
    assert len(files) >= 15
    async with connected_pair() as (a, b):
        for n, path in enumerate(files):
            raw = path.read_bytes()
            sent = write_blob(tmp_path / f"{n}.blob", raw)
            ca, cb = await open_channels(a, b, 2 + 2 * n)
            info = OfferInfo.normalized(path.stem, path.parts[-2], path.stem, raw.count(b"\n"))
            offers: list[Offer] = []

            async def decide(offer: Offer, offers: list[Offer] = offers) -> bool:
                offers.append(offer)
                return True

            result, got = await asyncio.gather(
                send_blob(ca, tmp_path / f"{n}.blob", info, max_message_size=MAX_MESSAGE_SIZE),
                receive_blob(cb, tmp_path / "in", decide=decide))
            assert got.path.read_bytes() == sent, file_id(path)
            assert blob.read(got.path) == raw, file_id(path)
            assert offers[0].info == info and got.offer.sha256 == hashlib.sha256(sent[60:]).digest()
            assert result.bytes_sent == len(sent) - 60 and result.resumed_bytes == 0
    assert not (tmp_path / "in" / PARTIAL_DIR).exists()


async def test_generated_50mb_conversation_with_bounded_buffering(tmp_path: Path) -> None:
    raw = generate_conversation(50_000_000)
    sent = write_blob(tmp_path / "big.blob", raw)
    del raw
    peaks: list[int] = []
    progress: list[tuple[int, int]] = []
    async with connected_pair() as (a, b):
        ca, cb = await open_channels(a, b)

        def on_progress(done: int, total: int) -> None:
            progress.append((done, total))
            peaks.append(ca.bufferedAmount)

        result, got = await asyncio.gather(
            send_blob(ca, tmp_path / "big.blob", INFO, max_message_size=MAX_MESSAGE_SIZE,
                      on_progress=on_progress),
            receive_blob(cb, tmp_path / "in", decide=accept_all))
    assert hashlib.sha256(got.path.read_bytes()).digest() == hashlib.sha256(sent).digest()
    assert got.path.read_bytes() == sent
    assert result.chunk_size == MAX_MESSAGE_SIZE - 26
    assert progress[-1] == (len(sent) - 60, len(sent) - 60)
    assert [d for d, _ in progress] == sorted(d for d, _ in progress)
    assert max(peaks) <= HIGH_WATER + MAX_MESSAGE_SIZE  # backpressure held the channel's queue down


async def test_decline_stops_before_any_chunk(tmp_path: Path) -> None:
    write_blob(tmp_path / "x.blob", os.urandom(100_000))

    async def decline(offer: Offer) -> bool:
        return False

    async with connected_pair() as (a, b):
        ca, cb = await open_channels(a, b)
        sender, receiver = await asyncio.gather(
            send_blob(ca, tmp_path / "x.blob", INFO), receive_blob(cb, tmp_path / "in", decide=decline),
            return_exceptions=True)
    assert isinstance(sender, DeclinedError) and str(sender) == "the receiver declined the offer; nothing was sent"
    assert not sender.peer_text  # a plain "no" says nothing more
    assert isinstance(receiver, DeclinedError)
    assert not (tmp_path / "in").exists() or not any((tmp_path / "in").iterdir())


async def test_offer_over_the_receivers_cap_is_refused(tmp_path: Path) -> None:
    write_blob(tmp_path / "x.blob", os.urandom(5000))
    async with connected_pair() as (a, b):
        ca, cb = await open_channels(a, b)
        sender, receiver = await asyncio.gather(
            send_blob(ca, tmp_path / "x.blob", INFO),
            receive_blob(cb, tmp_path / "in", decide=accept_all, max_raw_size=4999), return_exceptions=True)
    assert isinstance(sender, DeclinedError) and "over its size limit" in str(sender)
    assert isinstance(receiver, TooLargeError)


async def _cancel_mid_transfer(tmp_path: Path, side: str) -> tuple[BaseException, BaseException, float]:
    if not (tmp_path / "x.blob").exists():
        write_blob(tmp_path / "x.blob", os.urandom(12_000_000))
    control = TransferControl()
    cancelled_at: list[float] = []
    ended: dict[str, float] = {}

    def on_progress(done: int, total: int) -> None:
        if done > total // 5 and not cancelled_at:
            cancelled_at.append(time.monotonic())
            control.cancel("user pressed stop")

    async def timed(name: str, coro: Any) -> Any:
        try:
            return await coro
        finally:
            ended[name] = time.monotonic()

    async with connected_pair() as (a, b):
        ca, cb = await open_channels(a, b)
        sender_kw: dict[str, Any] = {"control": control} if side == "sender" else {}
        receiver_kw: dict[str, Any] = {"control": control} if side == "receiver" else {}
        sender, receiver = await asyncio.gather(
            timed("s", send_blob(ca, tmp_path / "x.blob", INFO, max_message_size=MAX_MESSAGE_SIZE,
                                 on_progress=on_progress, **sender_kw)),
            timed("r", receive_blob(cb, tmp_path / "in", decide=accept_all, **receiver_kw)),
            return_exceptions=True)
    assert cancelled_at, "the transfer finished before it could be cancelled"
    return sender, receiver, max(ended.values()) - cancelled_at[0]


@pytest.mark.alone  # (timed: both sides stop within a second)
@pytest.mark.parametrize("side", ["sender", "receiver"])
async def test_cancel_from_either_side_stops_both_within_a_second(tmp_path: Path, side: str) -> None:
    sender, receiver, took = await _cancel_mid_transfer(tmp_path, side)
    assert isinstance(sender, TransferCancelledError) and isinstance(receiver, TransferCancelledError)
    local, remote = (sender, receiver) if side == "sender" else (receiver, sender)
    assert str(local) == "the transfer was cancelled: user pressed stop"
    assert str(remote) == "the transfer was cancelled by the peer" and remote.peer_text == "user pressed stop"
    assert (local.party, remote.party) == (Party.LOCAL, Party.PEER)
    assert remote.peer_text == "user pressed stop" and local.peer_text is None
    assert took < 1.0
    assert (tmp_path / "in" / PARTIAL_DIR).is_dir()  # what arrived is kept for a resume


async def test_cancelling_the_task_sends_cancel(tmp_path: Path) -> None:
    write_blob(tmp_path / "x.blob", os.urandom(12_000_000))
    started = asyncio.Event()

    def on_progress(done: int, total: int) -> None:
        if done > total // 5:
            started.set()

    async with connected_pair() as (a, b):
        ca, cb = await open_channels(a, b)
        task = asyncio.ensure_future(send_blob(ca, tmp_path / "x.blob", INFO, on_progress=on_progress,
                                               max_message_size=MAX_MESSAGE_SIZE))
        receiving = asyncio.ensure_future(receive_blob(cb, tmp_path / "in", decide=accept_all))
        await asyncio.wait_for(started.wait(), 30)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        with pytest.raises(TransferCancelledError, match="cancelled by the peer") as gone:
            await asyncio.wait_for(receiving, 2)
        assert gone.value.peer_text == "the sender was stopped"


async def test_resume_after_a_break_sends_only_the_missing_chunks(tmp_path: Path) -> None:
    sent = write_blob(tmp_path / "x.blob", os.urandom(12_000_000))
    _, receiver, _ = await _cancel_mid_transfer(tmp_path, "sender")
    assert isinstance(receiver, TransferCancelledError)
    async with connected_pair() as (a, b):
        ca, cb = await open_channels(a, b)
        result, got = await asyncio.gather(
            send_blob(ca, tmp_path / "x.blob", INFO, max_message_size=MAX_MESSAGE_SIZE),
            receive_blob(cb, tmp_path / "in", decide=accept_all))
    payload_size = len(sent) - 60
    nchunks = -(-payload_size // result.chunk_size)
    assert result.resumed_bytes >= payload_size // 5 and got.resumed_bytes == result.resumed_bytes
    assert result.chunks_sent < nchunks and result.bytes_sent == payload_size - result.resumed_bytes
    assert got.path.read_bytes() == sent  # verified as a whole, resumed part included
    assert not (tmp_path / "in" / PARTIAL_DIR).exists()


async def test_resume_with_a_smaller_chunk_size(tmp_path: Path) -> None:
    """A browser (16 KiB) picking up what a daemon (64 KiB) left: held bytes map onto the new chunks."""
    sent = write_blob(tmp_path / "x.blob", os.urandom(12_000_000))
    await _cancel_mid_transfer(tmp_path, "receiver")
    async with connected_pair() as (a, b):
        ca, cb = await open_channels(a, b)
        result, got = await asyncio.gather(
            send_blob(ca, tmp_path / "x.blob", INFO, max_message_size=MAX_MESSAGE_SIZE),
            receive_blob(cb, tmp_path / "in", decide=accept_all, max_message_size=16384))
    assert result.chunk_size == 16384 - 26 and result.resumed_bytes > 0
    assert got.path.read_bytes() == sent


async def test_peer_connection_closing_fails_the_other_side_quickly(tmp_path: Path) -> None:
    write_blob(tmp_path / "x.blob", os.urandom(12_000_000))
    async with connected_pair() as (a, b):
        ca, cb = await open_channels(a, b)
        receiving = asyncio.ensure_future(receive_blob(cb, tmp_path / "in", decide=accept_all))
        closing: list[asyncio.Future[None]] = []

        def on_progress(done: int, total: int) -> None:
            if done > total // 5 and not closing:
                closing.append(asyncio.ensure_future(b.close()))

        started = time.monotonic()
        with pytest.raises(PeerGoneError, match="the peer went away"):
            await send_blob(ca, tmp_path / "x.blob", INFO, on_progress=on_progress, idle_timeout=10)
        assert time.monotonic() - started < 8
        with pytest.raises(PeerGoneError, match="the peer went away"):
            await receiving
    assert (tmp_path / "in" / PARTIAL_DIR).is_dir()


async def test_silent_peer_times_out(tmp_path: Path) -> None:
    write_blob(tmp_path / "x.blob", os.urandom(1000))
    async with connected_pair() as (a, b):
        ca, cb = await open_channels(a, b)  # nobody runs a receiver on cb
        started = time.monotonic()
        with pytest.raises(PeerTimeoutError, match=r"^no response from the peer for 0.5 s; run the command again"):
            await send_blob(ca, tmp_path / "x.blob", INFO, idle_timeout=0.5)
        assert 0.4 < time.monotonic() - started < 3
        assert ca.readyState in ("closing", "closed")  # the sender closes its channel when it gives up
        ca, cb = await open_channels(a, b, 4)  # now nobody runs a sender on ca
        with pytest.raises(PeerTimeoutError, match=r"no data from the peer for 0\.5 s"):
            await receive_blob(cb, tmp_path / "in", decide=accept_all, idle_timeout=0.5)


async def test_hostile_sender_over_a_real_channel(tmp_path: Path) -> None:
    """A peer playing the sender by hand: a lying OFFER is refused, a garbage frame is a protocol error."""
    async with connected_pair() as (a, b):
        for n, (frames, expect) in enumerate([
            ([Offer(b"\x07" * 16, 1, 1 << 40, 1 << 30, bytes(32), 16358, INFO)], Reject),
            ([b"\x01\x02garbage that is not a frame"], Error),
        ]):
            ca, cb = await open_channels(a, b, 10 + 2 * n)
            replies: list[Any] = []

            def on_message(m: bytes, replies: list[Any] = replies) -> None:
                replies.append(decode(m, max_size=MAX_MESSAGE_SIZE))

            ca.on("message", on_message)
            receiving = asyncio.ensure_future(
                receive_blob(cb, tmp_path / "in", decide=accept_all, idle_timeout=5))
            ca.send(encode(Hello(role=Role.SENDER, max_message_size=16384, codecs=(1,))))
            for f in frames:
                ca.send(f if isinstance(f, bytes) else encode(f))
            with pytest.raises((TooLargeError, TransferFailedError)) as info:
                await asyncio.wait_for(receiving, 5)
            await asyncio.sleep(0.05)
            assert isinstance(replies[0], Hello)
            assert isinstance(replies[-1], expect), replies
            if expect is Error:
                assert replies[-1].code == Code.PROTOCOL and "protocol" in str(info.value)


async def test_sender_cancelling_while_the_user_decides(tmp_path: Path) -> None:
    write_blob(tmp_path / "x.blob", os.urandom(1000))
    asked = asyncio.Event()
    never = asyncio.Event()

    async def slow_decision(offer: Offer) -> bool:
        asked.set()
        await never.wait()
        return True

    control = TransferControl()
    async with connected_pair() as (a, b):
        ca, cb = await open_channels(a, b)
        sending = asyncio.ensure_future(send_blob(ca, tmp_path / "x.blob", INFO, control=control))
        receiving = asyncio.ensure_future(receive_blob(cb, tmp_path / "in", decide=slow_decision))
        await asyncio.wait_for(asked.wait(), 5)
        control.cancel("changed my mind")
        with pytest.raises(TransferCancelledError, match="the transfer was cancelled: changed my mind"):
            await asyncio.wait_for(sending, 1)
        with pytest.raises(TransferCancelledError, match="cancelled by the peer") as by_peer:
            await asyncio.wait_for(receiving, 1)
        assert by_peer.value.peer_text == "changed my mind"


async def test_a_second_transfer_of_the_same_blob_into_one_folder_is_refused(tmp_path: Path) -> None:
    sent = write_blob(tmp_path / "x.blob", os.urandom(6_000_000))
    async with connected_pair() as (a, b):
        ca, cb = await open_channels(a, b, 2)
        ca2, cb2 = await open_channels(a, b, 4)
        first_started = asyncio.Event()

        def on_progress(done: int, total: int) -> None:
            first_started.set()

        first = asyncio.ensure_future(asyncio.gather(
            send_blob(ca, tmp_path / "x.blob", INFO, on_progress=on_progress),
            receive_blob(cb, tmp_path / "in", decide=accept_all)))
        await asyncio.wait_for(first_started.wait(), 5)
        second = await asyncio.gather(send_blob(ca2, tmp_path / "x.blob", INFO),
                                      receive_blob(cb2, tmp_path / "in", decide=accept_all),
                                      return_exceptions=True)
        assert isinstance(second[0], BusyError) and second[0].party is Party.PEER  # the sender: try later
        assert isinstance(second[1], BusyError) and second[1].party is Party.LOCAL
        _, got = await first
    assert got.path.read_bytes() == sent


async def test_a_bad_blob_file_is_refused_before_the_channel_is_touched(tmp_path: Path) -> None:
    untouchable = object()  # any use of the channel would raise AttributeError
    with pytest.raises(NotFoundError):
        await send_blob(untouchable, tmp_path / "missing.blob", INFO)
    data = blob.encode(b"{}" * 1000)
    (tmp_path / "short.blob").write_bytes(data[:-1])
    with pytest.raises(InvalidInputError, match=r"holds \d+ payload bytes, its header says"):
        await send_blob(untouchable, tmp_path / "short.blob", INFO)
    (tmp_path / "other.bin").write_bytes(b"not a blob at all" * 10)
    with pytest.raises(InvalidInputError, match="not a p2pd blob"):
        await send_blob(untouchable, tmp_path / "other.bin", INFO)


async def test_ice_transport_going_down_fails_the_transfer_with_that_reason(tmp_path: Path) -> None:
    write_blob(tmp_path / "x.blob", os.urandom(12_000_000))
    async with connected_pair() as (a, b):
        ca, cb = await open_channels(a, b)
        stopping: list[asyncio.Future[None]] = []

        def on_progress(done: int, total: int) -> None:
            if done > total // 5 and not stopping:
                stopping.append(asyncio.ensure_future(ca.transport.transport.transport.stop()))

        sender, receiver = await asyncio.gather(
            send_blob(ca, tmp_path / "x.blob", INFO, on_progress=on_progress,
                      max_message_size=MAX_MESSAGE_SIZE),
            receive_blob(cb, tmp_path / "in", decide=accept_all, idle_timeout=1), return_exceptions=True)
    assert isinstance(sender, PeerGoneError)
    assert str(sender) == ("the peer went away (the connection to the peer closed (ICE)); "
                           "run the command again to resume")
    assert isinstance(receiver, PeerTimeoutError) and "no data from the peer for 1 s" in str(receiver)
    assert (tmp_path / "in" / PARTIAL_DIR).is_dir()


async def test_a_storage_failure_on_the_receiver_stops_both_with_the_reason(tmp_path: Path) -> None:
    write_blob(tmp_path / "x.blob", os.urandom(10_000))
    (tmp_path / "not-a-folder").write_bytes(b"a file where the destination folder should be")
    async with connected_pair() as (a, b):
        ca, cb = await open_channels(a, b)
        sender, receiver = await asyncio.gather(
            send_blob(ca, tmp_path / "x.blob", INFO),
            receive_blob(cb, tmp_path / "not-a-folder", decide=accept_all), return_exceptions=True)
    assert isinstance(receiver, StorageError) and receiver.party is Party.LOCAL and receiver.cause is Cause.STORAGE
    assert "could not store the conversation: cannot store the blob" in str(receiver)
    assert isinstance(sender, TransferFailedError) and sender.party is Party.PEER
    assert sender.cause is Cause.PEER_STORAGE  # the receiver's disk: a daemon sends it again later
    assert str(sender) == "the receiver could not store the conversation (is its disk full?)"
    assert sender.peer_text is not None and "cannot store the blob" in sender.peer_text


async def test_a_sender_that_cannot_read_its_blob_tells_the_receiver_in_the_senders_words(tmp_path: Path) -> None:
    write_blob(tmp_path / "x.blob", os.urandom(12_000_000))
    async with connected_pair() as (a, b):
        ca, cb = await open_channels(a, b)

        def on_progress(done: int, total: int) -> None:
            if done > total // 5:
                os.truncate(tmp_path / "x.blob", 1000)  # the blob is cut short under the sender: a short read

        sender, receiver = await asyncio.gather(
            send_blob(ca, tmp_path / "x.blob", INFO, on_progress=on_progress, max_message_size=MAX_MESSAGE_SIZE),
            receive_blob(cb, tmp_path / "in", decide=accept_all), return_exceptions=True)
    assert isinstance(sender, StorageError) and sender.party is Party.LOCAL and sender.cause is Cause.STORAGE
    assert "cannot read the blob file" in str(sender)
    assert isinstance(receiver, TransferFailedError) and receiver.party is Party.PEER
    assert receiver.cause is Cause.PEER_STORAGE
    assert str(receiver) == "the sender could not read or pack the conversation it was sending; nothing was kept here"
    assert receiver.peer_text is not None and "shorter than its header says" in receiver.peer_text
