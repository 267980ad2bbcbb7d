"""The receiver's commit point (SPEC.md §6): ``receive_blob(commit=...)`` is called with the verified blob in
place and before DONE. True sends DONE; False — the transfer was cancelled first — sends CANCEL instead: the sender
never hears DONE and the receiver keeps nothing. Over in-memory channels (no aiortc)."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest

from p2pd.errors import Party, TransferCancelledError
from p2pd.transfer.channel import receive_blob, send_blob
from p2pd.transfer.control import TransferControl
from p2pd.transfer.frames import MAX_MESSAGE_SIZE, Accept, FrameType, Hello, Offer, Role, decode, encode
from p2pd.transfer.sender import CANCEL_ANSWER_WAIT
from tests.transfer.memchannel import MemChannel
from tests.transfer.test_adapter import INFO, accept_all, pair, write_blob


def heard_after(channel: MemChannel) -> threading.Event:
    """Set whenever a frame reaches ``channel`` (a worker thread clears it, then waits for the next one)."""
    heard = threading.Event()
    channel.on("message", lambda data: heard.set())
    return heard


async def test_a_commit_comes_before_done_with_the_verified_blob_in_place(tmp_path: Path) -> None:
    sent = write_blob(tmp_path / "x.blob", 200_000)
    seen: list[bytes] = []

    def commit(path: Path) -> bool:
        seen.append(path.read_bytes())  # verified and in place when the decision is made
        return True

    a, b = pair()
    result, got = await asyncio.gather(
        send_blob(a, tmp_path / "x.blob", INFO, max_message_size=MAX_MESSAGE_SIZE),
        receive_blob(b, tmp_path / "in", decide=accept_all, linger=0.2, commit=commit))
    assert seen == [sent] and got.path.read_bytes() == sent and result.chunks_sent > 0


async def test_a_commit_refused_sends_cancel_instead_of_done_and_keeps_nothing(tmp_path: Path) -> None:
    write_blob(tmp_path / "x.blob", 200_000)

    def cancelled_first(path: Path) -> bool:
        path.unlink()  # the caller removes what it will never file
        return False

    a, b = pair()
    sender, receiver = await asyncio.gather(
        send_blob(a, tmp_path / "x.blob", INFO, max_message_size=MAX_MESSAGE_SIZE),
        receive_blob(b, tmp_path / "in", decide=accept_all, linger=0.2, commit=cancelled_first),
        return_exceptions=True)
    assert isinstance(receiver, TransferCancelledError) and receiver.party is Party.LOCAL
    assert isinstance(sender, TransferCancelledError) and sender.party is Party.PEER  # never DONE
    assert [p for p in (tmp_path / "in").rglob("*") if p.is_file() and p.name.endswith(".p2pd")] == []


async def test_a_cancel_reaching_the_receiver_while_it_commits_loses_to_the_commit(tmp_path: Path) -> None:
    """The sender cancels after its last chunk, and the CANCEL reaches the receiver while it commits: the
    receiver keeps the conversation and sends DONE (the CANCEL, read after the decision, is ignored), and the
    sender, waiting for the answer, ends completed too — both sides say the same (before, the receiver filed it
    while the sender said cancelled)."""
    sent = write_blob(tmp_path / "x.blob", 200_000)
    loop = asyncio.get_running_loop()
    control = TransferControl()
    a, b = pair()
    heard = heard_after(b)
    cancel_arrived: list[bool] = []

    def commit(path: Path) -> bool:  # (a worker thread)
        heard.clear()
        loop.call_soon_threadsafe(control.cancel, "pressed stop at the last moment")
        # until the CANCEL frame reached the receiver, where it waits behind this decision
        cancel_arrived.append(heard.wait(5))
        return True

    result, got = await asyncio.gather(
        send_blob(a, tmp_path / "x.blob", INFO, max_message_size=MAX_MESSAGE_SIZE, control=control),
        receive_blob(b, tmp_path / "in", decide=accept_all, linger=0.5, commit=commit))
    assert cancel_arrived == [True]
    assert got.path.read_bytes() == sent
    assert result.cancel_too_late and result.sha256 == got.offer.sha256


async def test_a_cancel_after_the_last_chunk_stands_when_the_receiver_stops_first(tmp_path: Path) -> None:
    """The sender cancels after its last chunk and the receiver, not yet committed, stops on it: both end
    cancelled, and the sender learns it when the receiver closes its end (well within the answer's wait)."""
    write_blob(tmp_path / "x.blob", 200_000)
    loop = asyncio.get_running_loop()
    control = TransferControl()
    a, b = pair()
    heard = heard_after(b)
    ended_at: list[float] = []

    def validate(path: Path) -> None:  # (the receiver's check of the verified blob, before the commit point)
        heard.clear()
        loop.call_soon_threadsafe(control.cancel, "pressed stop at the last moment")
        assert heard.wait(5)  # the CANCEL reached the receiver: read once this check is done, before any commit

    async def sending() -> object:
        try:
            return await send_blob(a, tmp_path / "x.blob", INFO, max_message_size=MAX_MESSAGE_SIZE, control=control)
        finally:
            ended_at.append(time.monotonic())

    started = time.monotonic()
    sender, receiver = await asyncio.gather(
        sending(), receive_blob(b, tmp_path / "in", decide=accept_all, linger=0.5, validate=validate,
                                commit=lambda path: True),
        return_exceptions=True)
    assert isinstance(sender, TransferCancelledError) and sender.party is Party.LOCAL
    assert isinstance(receiver, TransferCancelledError) and receiver.party is Party.PEER
    assert ended_at[0] - started < CANCEL_ANSWER_WAIT
    assert [p for p in (tmp_path / "in").rglob("*") if p.is_file() and p.name.endswith(".p2pd")] == []


async def test_a_sender_stopped_after_its_last_chunk_hears_the_receiver_out(tmp_path: Path) -> None:
    """The sending task is stopped (Ctrl-C on ``p2pd send``) while the receiver commits: the stop sends CANCEL,
    waits for the answer, and the receiver's DONE (it committed first) completes the send — the task returns
    the result instead of ending cancelled, as the receiver ends done."""
    sent = write_blob(tmp_path / "x.blob", 200_000)
    loop = asyncio.get_running_loop()
    a, b = pair()
    heard = heard_after(b)
    sending = asyncio.ensure_future(send_blob(a, tmp_path / "x.blob", INFO, max_message_size=MAX_MESSAGE_SIZE))

    def commit(path: Path) -> bool:  # (a worker thread)
        heard.clear()
        loop.call_soon_threadsafe(sending.cancel)
        assert heard.wait(5)  # the stop's CANCEL reached the receiver, behind this decision
        return True

    result, got = await asyncio.gather(
        sending, receive_blob(b, tmp_path / "in", decide=accept_all, linger=0.5, commit=commit))
    assert got.path.read_bytes() == sent
    assert result.cancel_too_late and not sending.cancelled()


async def test_a_sender_stopped_after_its_last_chunk_without_an_answer_ends_cancelled(tmp_path: Path) -> None:
    """Stopped after its last chunk, with a receiver that never answers: the task ends cancelled once the
    answer's wait is over — and at once when it is stopped a second time."""
    write_blob(tmp_path / "x.blob", 50_000)
    for again in (False, True):
        a, b = pair()
        mute_receiver(b)
        sending = asyncio.ensure_future(send_blob(a, tmp_path / "x.blob", INFO, max_message_size=MAX_MESSAGE_SIZE))
        while not any(decode(frame, max_size=MAX_MESSAGE_SIZE).type is FrameType.END for frame in a.sent):
            await asyncio.sleep(0.01)
        started = time.monotonic()
        sending.cancel()
        if again:
            await asyncio.sleep(0.2)
            sending.cancel()
        with pytest.raises(asyncio.CancelledError):
            await sending
        waited = time.monotonic() - started
        assert (waited < 1.0) if again else (CANCEL_ANSWER_WAIT - 0.1 <= waited < CANCEL_ANSWER_WAIT + 1.0), waited
        assert decode(a.sent[-1], max_size=MAX_MESSAGE_SIZE).type is FrameType.CANCEL


def mute_receiver(channel: MemChannel) -> None:
    """A receiver that accepts the offer and then never says a word (no ACK, no DONE)."""

    def on_message(data: bytes) -> None:
        frame = decode(data, max_size=MAX_MESSAGE_SIZE)
        if isinstance(frame, Hello):
            channel.send(encode(Hello(role=Role.RECEIVER, max_message_size=MAX_MESSAGE_SIZE, codecs=(1, 2))))
        elif isinstance(frame, Offer):
            channel.send(encode(Accept(frame.transfer_id, window=8 << 20)))

    channel.on("message", on_message)
