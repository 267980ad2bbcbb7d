"""The receiver's commit point (SPEC.md §6): ``receive_blob(commit=...)`` is called with the verified blob in
place and before DONE. True sends DONE; False — the transfer was cancelled first — sends CANCEL instead: the sender
never hears DONE and the receiver keeps nothing. Over in-memory channels (no aiortc)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from p2pd.errors import Party, TransferCancelledError
from p2pd.transfer.channel import receive_blob, send_blob
from p2pd.transfer.frames import MAX_MESSAGE_SIZE
from tests.transfer.test_adapter import INFO, accept_all, pair, write_blob


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
