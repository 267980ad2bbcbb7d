"""Peers in separate processes: one is SIGKILLed mid-transfer; the survivor fails with a reason, the receiver
keeps its partial file, and a new transfer of the same blob resumes from the missing chunks."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from p2pd.blob import container as blob
from p2pd.errors import TransferFailedError
from p2pd.transfer.channel import receive_blob, send_blob
from p2pd.transfer.frames import MAX_MESSAGE_SIZE, OfferInfo
from p2pd.transfer.partial import PARTIAL_DIR
from tests.transfer.procs import PeerProcess, connect_to_process
from tests.transfer.rtc import accept_all

INFO = OfferInfo("Process test", "codex", "session-2", 9)


async def test_sender_killed_then_resumed_by_a_new_sender(tmp_path: Path) -> None:
    data = blob.encode(os.urandom(16_000_000))
    (tmp_path / "x.blob").write_bytes(data)
    dest = tmp_path / "in"

    sender_args = ("send", "--blob", str(tmp_path / "x.blob"), "--mms", str(MAX_MESSAGE_SIZE))
    child = await PeerProcess.spawn(*sender_args)
    try:
        pc, ch = await connect_to_process(child)
        killed_at: list[int] = []

        def on_progress(done: int, total: int) -> None:
            if done > total // 4 and not killed_at:
                killed_at.append(done)
                child.kill()

        with pytest.raises(TransferFailedError) as info:
            await receive_blob(ch, dest, decide=accept_all, on_progress=on_progress, idle_timeout=1.5)
        await pc.close()
    finally:
        await child.close()
    assert killed_at, "the transfer ended before the sender could be killed"
    assert "no data from the peer for 1.5 s" in str(info.value) or "peer_gone" in str(info.value)
    partial_dirs = list((dest / PARTIAL_DIR).iterdir())
    assert len(partial_dirs) == 1 and (partial_dirs[0] / "state.json").exists()

    child = await PeerProcess.spawn(*sender_args)
    try:
        pc, ch = await connect_to_process(child)
        got = await receive_blob(ch, dest, decide=accept_all)
        result = await child.outcome()
        await pc.close()
    finally:
        await child.close()
    assert result["event"] == "result", result
    payload = len(data) - 60
    nchunks = -(-payload // result["chunk_size"])
    assert got.resumed_bytes >= killed_at[0] and result["resumed_bytes"] == got.resumed_bytes
    assert result["chunks_sent"] == nchunks - got.resumed_bytes // result["chunk_size"]
    assert result["bytes_sent"] == payload - got.resumed_bytes
    assert got.path.read_bytes() == data
    assert not (dest / PARTIAL_DIR).exists()


async def test_receiver_killed_fails_the_sender_with_a_reason(tmp_path: Path) -> None:
    (tmp_path / "x.blob").write_bytes(blob.encode(os.urandom(16_000_000)))
    child = await PeerProcess.spawn("recv", "--dest", str(tmp_path / "in"))
    try:
        pc, ch = await connect_to_process(child)
        killed: list[bool] = []

        def on_progress(done: int, total: int) -> None:
            if done > total // 4 and not killed:
                killed.append(True)
                child.kill()

        loop = asyncio.get_running_loop()
        started: list[float] = []

        async def send() -> Any:
            started.append(loop.time())
            return await send_blob(ch, tmp_path / "x.blob", INFO, on_progress=on_progress, idle_timeout=1.5,
                                   max_message_size=MAX_MESSAGE_SIZE)

        with pytest.raises(TransferFailedError, match=r"^no response from the peer for 1.5 s"):
            await send()
        assert killed and loop.time() - started[0] < 15
        await pc.close()
    finally:
        await child.close()
    assert (tmp_path / "in" / PARTIAL_DIR).is_dir()  # the killed receiver's committed bytes are on disk
