"""The adapter (channel → sending/receiving → runloop → jobs) over in-memory channels: whole transfers, the
typed errors it raises itself, cancel through TransferControl, resume, and the run loop's jobs. No aiortc."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from p2pd.blob import container as blob
from p2pd.errors import (
    ConnectionFailedError,
    DeclinedError,
    InvalidInputError,
    NotFoundError,
    Party,
    PeerGoneError,
    PeerTimeoutError,
    TransferCancelledError,
)
from p2pd.transfer.channel import receive_blob, send_blob
from p2pd.transfer.control import TransferControl
from p2pd.transfer.frames import MAX_MESSAGE_SIZE, Offer, OfferInfo
from p2pd.transfer.jobs import JobDone, JobKind, open_blob, read_span
from p2pd.transfer.partial import PARTIAL_DIR
from p2pd.transfer.receiving import COMMIT_BYTES
from p2pd.transfer.runloop import Runner
from p2pd.transfer.tap import attach
from tests.transfer.memchannel import MemChannel, mem_pair
from tests.transfer.rtc import accept_all

INFO = OfferInfo("In memory", "claude-code", "session-m", 5)


def pair(opened: bool = True) -> tuple[MemChannel, MemChannel]:
    """Two connected channels, tapped at once (as peer.connect does: the first frames may come early)."""
    a, b = mem_pair(opened)
    attach(a), attach(b)
    return a, b


def write_blob(path: Path, size: int, seed: int = 0) -> bytes:
    data = blob.encode(os.urandom(size) if seed == 0 else bytes((i * seed) % 256 for i in range(size)))
    path.write_bytes(data)
    return data


async def test_a_whole_transfer_over_an_in_memory_channel(tmp_path: Path) -> None:
    sent = write_blob(tmp_path / "x.blob", 600_000)
    a, b = pair()
    progress: list[tuple[int, int]] = []
    result, got = await asyncio.gather(
        send_blob(a, tmp_path / "x.blob", INFO, max_message_size=MAX_MESSAGE_SIZE,
                  on_progress=lambda d, t: progress.append((d, t))),
        receive_blob(b, tmp_path / "in", decide=accept_all, linger=0.2))
    assert got.path.read_bytes() == sent
    assert got.offer.info == INFO and result.resumed_bytes == got.resumed_bytes == 0
    assert result.chunk_size == MAX_MESSAGE_SIZE - 26 and progress[-1] == (result.compressed_size,) * 2
    assert a.readyState == "closed"  # the sender closes the channel when the transfer is over
    assert a.listeners() == b.listeners() == 0  # both taps detached


async def test_a_declined_offer(tmp_path: Path) -> None:
    write_blob(tmp_path / "x.blob", 10_000)
    a, b = pair()

    async def no(offer: Offer) -> bool:
        return False

    sender, receiver = await asyncio.gather(send_blob(a, tmp_path / "x.blob", INFO),
                                            receive_blob(b, tmp_path / "in", decide=no), return_exceptions=True)
    assert isinstance(sender, DeclinedError) and sender.party is Party.PEER
    assert not sender.peer_text  # the CLI declines with no words: the message says it all
    assert isinstance(receiver, DeclinedError) and receiver.party is Party.LOCAL


@pytest.mark.parametrize("side", ["sender", "receiver"])
async def test_cancel_through_the_control_reaches_both_sides(tmp_path: Path, side: str) -> None:
    write_blob(tmp_path / "x.blob", 3 * COMMIT_BYTES)  # the cancel comes after the first ACK, well before the end
    a, b = pair()
    control = TransferControl()

    def on_progress(done: int, total: int) -> None:
        if done > total // 4:
            control.cancel("stop now")

    kw: dict[str, Any] = {"control": control}
    sender, receiver = await asyncio.gather(
        send_blob(a, tmp_path / "x.blob", INFO, on_progress=on_progress, **(kw if side == "sender" else {})),
        receive_blob(b, tmp_path / "in", decide=accept_all, **(kw if side == "receiver" else {})),
        return_exceptions=True)
    local, remote = (sender, receiver) if side == "sender" else (receiver, sender)
    assert isinstance(local, TransferCancelledError) and local.party is Party.LOCAL
    assert isinstance(remote, TransferCancelledError) and remote.party is Party.PEER
    assert remote.peer_text == "stop now"
    assert (tmp_path / "in" / PARTIAL_DIR).is_dir()  # kept for a resume


async def test_a_broken_transfer_resumes_from_what_the_receiver_holds(tmp_path: Path) -> None:
    sent = write_blob(tmp_path / "x.blob", 3_000_000)
    a, b = pair()
    control = TransferControl()

    def on_progress(done: int, total: int) -> None:
        if done > total // 2:
            control.cancel("break")

    # (broken by the receiver: the sender has sent every chunk long before half are acknowledged, and its cancel
    # after the last chunk waits for the receiver's answer — here, DONE)
    await asyncio.gather(send_blob(a, tmp_path / "x.blob", INFO),
                         receive_blob(b, tmp_path / "in", decide=accept_all, on_progress=on_progress,
                                      control=control), return_exceptions=True)
    a, b = pair()
    result, got = await asyncio.gather(send_blob(a, tmp_path / "x.blob", INFO),
                                       receive_blob(b, tmp_path / "in", decide=accept_all, linger=0.2))
    assert got.path.read_bytes() == sent
    assert result.resumed_bytes > result.compressed_size // 2 - result.chunk_size
    assert result.bytes_sent == result.compressed_size - result.resumed_bytes


async def test_the_peer_closing_the_channel_is_peer_gone(tmp_path: Path) -> None:
    write_blob(tmp_path / "x.blob", 3_000_000)
    a, b = pair()

    def on_progress(done: int, total: int) -> None:
        if done > total // 4:
            b.close()

    sender, receiver = await asyncio.gather(
        send_blob(a, tmp_path / "x.blob", INFO, on_progress=on_progress),
        receive_blob(b, tmp_path / "in", decide=accept_all), return_exceptions=True)
    assert isinstance(sender, PeerGoneError) and isinstance(receiver, PeerGoneError)
    assert sender.peer_text is None  # nothing the peer wrote: this side saw the channel go


async def test_a_silent_peer_times_out(tmp_path: Path) -> None:
    write_blob(tmp_path / "x.blob", 1000)
    a, _ = pair()  # nobody receives
    with pytest.raises(PeerTimeoutError) as info:
        await send_blob(a, tmp_path / "x.blob", INFO, idle_timeout=0.2)
    assert info.value.party is Party.PEER


async def test_a_channel_that_never_opens_is_a_connection_failure(tmp_path: Path) -> None:
    write_blob(tmp_path / "x.blob", 1000)
    a, _ = pair(opened=False)
    with pytest.raises(ConnectionFailedError):
        await send_blob(a, tmp_path / "x.blob", INFO, idle_timeout=0.2)
    closed = MemChannel()
    closed.readyState = "closed"
    with pytest.raises(PeerGoneError):
        await receive_blob(closed, tmp_path / "in", decide=accept_all)


async def test_cancelling_while_the_channel_opens(tmp_path: Path) -> None:
    write_blob(tmp_path / "x.blob", 1000)
    a, _ = pair(opened=False)
    control = TransferControl()
    task = asyncio.ensure_future(send_blob(a, tmp_path / "x.blob", INFO, control=control, idle_timeout=5))
    await asyncio.sleep(0.05)
    control.cancel("never mind")
    a.emit("open")  # any channel event wakes the loop, which sees the cancel (the channel is still connecting)
    with pytest.raises(TransferCancelledError) as info:
        await asyncio.wait_for(task, 2)
    assert info.value.party is Party.LOCAL


def test_control_wakes_watchers_only_while_they_watch() -> None:
    control = TransferControl()
    woken: list[str] = []
    with control.watching(lambda: woken.append("a")):
        pass
    with control.watching(lambda: woken.append("b")):
        control.cancel("x")
        control.cancel("y")  # the first reason stands, nobody is woken twice
    assert woken == ["b"] and control.reason == "x" and control.cancelled


# --- jobs -----------------------------------------------------------------------------------------------


async def test_jobs_report_results_and_errors_through_the_tap() -> None:
    a, _ = mem_pair()
    runner = Runner(a, idle_timeout=1, on_progress=None, control=None)
    runner.start_job(JobKind.READ, lambda: b"bytes")
    with pytest.raises(AssertionError):
        runner.start_job(JobKind.READ, lambda: b"two at once")
    await asyncio.wait_for(runner.tap.wake.wait(), 5)
    assert runner.tap.pop() == JobDone(JobKind.READ, b"bytes") and runner.job is None

    def boom() -> None:
        raise OSError("disk on fire")

    runner.tap.wake.clear()
    runner.start_job(JobKind.WRITE, boom)
    await asyncio.wait_for(runner.tap.wake.wait(), 5)
    done = runner.tap.pop()
    assert isinstance(done, JobDone) and done.kind is JobKind.WRITE and isinstance(done.error, OSError)
    attach(a).detach()


def test_open_blob_checks_the_file_before_any_channel_work(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError):
        open_blob(tmp_path / "missing.blob")
    data = write_blob(tmp_path / "x.blob", 5000)
    (tmp_path / "cut.blob").write_bytes(data[:-1])
    with pytest.raises(InvalidInputError, match="its header says"):
        open_blob(tmp_path / "cut.blob")
    with pytest.raises(InvalidInputError, match="directory"):
        open_blob(tmp_path)
    fd, header = open_blob(tmp_path / "x.blob")
    try:
        assert read_span(fd, 0, header.compressed_size) == data[blob.HEADER_SIZE:]
        with pytest.raises(OSError, match="shorter than its header"):
            read_span(fd, 1, header.compressed_size)
    finally:
        os.close(fd)


def test_the_protocol_and_the_adapter_load_without_aiortc() -> None:
    """Only peer.py imports aiortc: the browser-facing core and the adapter stay light to import."""
    import subprocess
    import sys

    code = ("import sys, p2pd.transfer, p2pd.transfer.frames, p2pd.transfer.channel; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('aiortc', 'aioice')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


async def test_a_verified_blob_the_receiver_cannot_read_is_an_error_for_both_and_is_not_kept(tmp_path: Path) -> None:
    """Red-team finding: a verified but unparseable blob was reported DONE and left in the folder. With a
    ``validate`` hook the receiver checks it before the rename: ERROR(invalid) to the sender, nothing kept."""
    from p2pd.errors import Cause

    write_blob(tmp_path / "x.blob", 20_000)
    seen: list[Path] = []

    def refuse(path: Path) -> None:
        seen.append(path)
        assert blob.read(path)  # the complete blob is there to check
        raise InvalidInputError("not a conversation")

    a, b = pair()
    sender, receiver = await asyncio.gather(
        send_blob(a, tmp_path / "x.blob", INFO, max_message_size=MAX_MESSAGE_SIZE),
        receive_blob(b, tmp_path / "in", decide=accept_all, linger=0.2, validate=refuse), return_exceptions=True)
    assert len(seen) == 1
    assert isinstance(receiver, InvalidInputError) and receiver.party is Party.PEER
    assert isinstance(sender, InvalidInputError) and sender.cause is Cause.INVALID_INPUT
    assert sender.details.get("code") == "invalid"
    assert list((tmp_path / "in").rglob("*")) == []  # no blob, no partial


async def test_a_disk_full_receive_leaves_no_partial_and_the_next_receive_works(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Red-team finding: after a disk-full error the partial stayed, so the next small receive failed too."""
    import errno

    from p2pd.errors import Cause, StorageError, TransferFailedError
    from p2pd.transfer.partial import PartialBlob

    write_blob(tmp_path / "big.blob", 300_000)
    real_write = PartialBlob.write

    def full(self: PartialBlob, offset: int, data: bytes) -> None:
        if offset > 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_write(self, offset, data)

    monkeypatch.setattr(PartialBlob, "write", full)
    a, b = pair()
    sender, receiver = await asyncio.gather(
        send_blob(a, tmp_path / "big.blob", INFO, max_message_size=MAX_MESSAGE_SIZE),
        receive_blob(b, tmp_path / "in", decide=accept_all, linger=0.2), return_exceptions=True)
    # each side says whose disk it was: this machine's (exit 12, as any write it refuses), or the receiver's
    assert isinstance(receiver, StorageError) and receiver.cause is Cause.STORAGE, repr(receiver)
    assert isinstance(sender, TransferFailedError) and sender.cause is Cause.PEER_STORAGE, repr(sender)
    assert not (tmp_path / "in" / PARTIAL_DIR).exists()
    monkeypatch.setattr(PartialBlob, "write", real_write)
    small = write_blob(tmp_path / "small.blob", 2_000)
    a, b = pair()
    _, got = await asyncio.gather(send_blob(a, tmp_path / "small.blob", INFO),
                                  receive_blob(b, tmp_path / "in", decide=accept_all, linger=0.2))
    assert got.path.read_bytes() == small


def test_start_up_sweep_removes_old_partials_only(tmp_path: Path) -> None:
    import fcntl
    import time

    from p2pd.transfer.partial import sweep

    root = tmp_path / PARTIAL_DIR
    old, fresh, busy = root / "old", root / "fresh", root / "busy"
    for d in (old, fresh, busy):
        d.mkdir(parents=True)
        (d / "blob.part").write_bytes(b"x" * 100)
    long_ago = time.time() - 10 * 3600
    for d in (old, busy):
        for f in (d / "blob.part", d):
            os.utime(f, (long_ago, long_ago))
    fd = os.open(busy / "lock", os.O_RDWR | os.O_CREAT)
    os.utime(busy / "lock", (long_ago, long_ago))
    os.utime(busy, (long_ago, long_ago))
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        assert sweep(tmp_path, 3600) == 1
    finally:
        os.close(fd)
    assert not old.exists() and fresh.exists() and busy.exists()


async def offered_by_hand(data: bytes, into: Path, tid: bytes, chunk: int, **limits: Any
                          ) -> tuple[MemChannel, list[Any], asyncio.Future[Any]]:
    """A sender played frame by frame (a hostile party): HELLO and OFFER of the blob ``data`` to a real
    ``receive_blob`` into ``into`` (``limits``: its keyword arguments), then up to a second for its ACCEPT. The
    sender's channel, the frames it heard, and the receive."""
    from p2pd.blob.codecs import get_codec
    from p2pd.transfer.frames import Hello, Role, decode, encode

    header = blob.BlobHeader.unpack(data)
    a, b = pair()
    replies: list[Any] = []
    a.on("message", lambda m: replies.append(decode(m, max_size=MAX_MESSAGE_SIZE)))
    receiving = asyncio.ensure_future(receive_blob(b, into, decide=accept_all, idle_timeout=30, linger=0.1,
                                                   **limits))
    a.send(encode(Hello(role=Role.SENDER, max_message_size=MAX_MESSAGE_SIZE, codecs=(1,))))
    a.send(encode(Offer(tid, get_codec(header.codec).wire_id, header.raw_size, header.compressed_size,
                        header.sha256, chunk, INFO)))
    for _ in range(100):
        if any(r.type.name == "ACCEPT" for r in replies):
            break
        await asyncio.sleep(0.01)
    return a, replies, receiving


async def test_a_slowloris_sender_is_ended_by_the_minimum_rate(tmp_path: Path) -> None:
    """Red-team finding: one chunk every 20 s kept a receive open for ever (each chunk resets the idle timeout).
    Here, scaled down: one chunk every 0.2 s against a minimum rate of 1 MB/s over 0.5 s windows."""
    from p2pd.errors import PeerTimeoutError
    from p2pd.transfer.frames import Chunk, encode

    data = write_blob(tmp_path / "x.blob", 400_000)
    payload = data[blob.HEADER_SIZE:]
    tid = b"\x05" * 16
    chunk = 16_000
    a, replies, receiving = await offered_by_hand(data, tmp_path / "in", tid, chunk, min_rate=1_000_000,
                                                  rate_window=0.5)
    started = asyncio.get_running_loop().time()
    for index in range(len(payload) // chunk):
        if receiving.done():
            break
        a.send(encode(Chunk(tid, index, payload[index * chunk:(index + 1) * chunk])))
        await asyncio.sleep(0.2)
    with pytest.raises(PeerTimeoutError) as info:
        await asyncio.wait_for(receiving, 5)
    assert "minimum rate" in str(info.value)
    assert asyncio.get_running_loop().time() - started < 2.5
    assert replies and replies[-1].type.name == "ERROR"
    # a sender at full speed passes the same guard
    a, b = pair()
    _, got = await asyncio.gather(send_blob(a, tmp_path / "x.blob", INFO),
                                  receive_blob(b, tmp_path / "in2", decide=accept_all, min_rate=1_000_000,
                                               rate_window=0.5, linger=0.1))
    assert got.path.read_bytes() == data


@pytest.mark.parametrize("code_name", ["TOO_LARGE", "DECLINED", "CHECKSUM"])
async def test_a_sender_that_ends_with_a_receivers_reason_is_a_protocol_error(tmp_path: Path, code_name: str) -> None:
    """A broken or hostile sender ends an accepted transfer with a code only a receiver sends: the receiver raises
    a ProtocolError from the peer, not a refusal it never made, and keeps nothing."""
    from p2pd.errors import Cause, ProtocolError
    from p2pd.transfer.frames import Code, Error, encode

    tid = b"\x06" * 16
    a, replies, receiving = await offered_by_hand(write_blob(tmp_path / "x.blob", 50_000), tmp_path / "in", tid,
                                                  16_000)
    assert any(r.type.name == "ACCEPT" for r in replies)
    a.send(encode(Error(tid, Code[code_name], "over \x1b[2Jthe limit")))
    with pytest.raises(ProtocolError) as info:
        await asyncio.wait_for(receiving, 5)
    exc = info.value
    assert exc.cause is Cause.PROTOCOL and exc.party is Party.PEER
    assert str(exc).startswith("the sender broke the transfer protocol")
    assert exc.peer_text == "over \x1b[2Jthe limit"  # (shown escaped by the CLI, never compared)
    assert not any(p.is_file() for p in (tmp_path / "in").rglob("*.a2a.json"))
