"""The last frame a side sends (the receiver's DONE, a CANCEL) lost for a moment: both sides still agree on how the
transfer ended.

The receiver commits the conversation, then sends DONE. When it tore the connection down before DONE reached the
sender (it waited 2 s for the sender's close, then closed everything), a DONE lost on the way and retransmitted
later never arrived. The receiver had the conversation and said so, while the sender said "the peer went away; run
the command again". This was seen in CI with the browser as the receiver (tests/web/test_resume.py), where the
page did the same. A cancelling sender likewise closed once its CANCEL had left its buffer, and the receiver said
the sender went away.

Here the side hearing the frame drops the packet that brings it and every packet for 3 s after it
(tests/transfer/lossy.py). That is longer than the receiver's 2 s linger, and short enough for SCTP's
retransmission to get through within the close wait (p2pd/transfer/runloop.py's ``CLOSE_WAIT``)."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from p2pd.errors import ExitCode
from tests import pipe_lines
from tests.cli.helpers import SHORT
from tests.signal_process import SignalProcess, p2pd, p2pd_env, signal_server
from tests.transfer.lossy import DEAF_SECONDS, deaf_at, loss_simulated

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server() -> Iterator[SignalProcess]:
    with signal_server() as s:
        yield s


def test_a_done_lost_past_the_linger_still_completes_both_sides(server: SignalProcess, tmp_path: Path) -> None:
    inbox = tmp_path / "in"
    receiver = p2pd("receive", "--make-code", "--yes", "-o", str(inbox), "--timeout", "60", env=p2pd_env(server),
                    cwd=tmp_path)
    sender: subprocess.Popen[str] | None = None
    try:
        assert receiver.stderr is not None
        match, said = pipe_lines.read_until(receiver.stderr, re.compile(r"Code: (\S+)"), 60)
        assert match is not None, said
        started = time.monotonic()
        sender = p2pd("send", str(SHORT), "--code", match.group(1), "--timeout", "60",
                      env=p2pd_env(server, **deaf_at("DONE")), cwd=tmp_path)
        _, serr = sender.communicate(timeout=120)
        _, rerr = receiver.communicate(timeout=120)
        took = time.monotonic() - started
    finally:
        for proc in (receiver, sender):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
    assert loss_simulated("DONE") in serr, "the loss was simulated: " + serr
    assert (receiver.returncode, sender.returncode) == (ExitCode.OK, ExitCode.OK), said + rerr + serr
    assert len(list(inbox.glob("*.a2a.json"))) == 1
    assert took > DEAF_SECONDS, took  # the sender heard DONE only once the loss ended
    print(f"\nDONE and what followed lost for {DEAF_SECONDS} s: both sides done in {took:.1f} s")


async def test_a_cancel_lost_for_a_moment_still_reaches_the_receiver(tmp_path: Path) -> None:
    """The sender cancels (a TransferControl: ``p2pd cancel`` on a daemon) and its CANCEL, with every packet for 3 s
    after it, is lost on the way (two real aiortc peers in this process, tests/transfer/lossy.py). The connection is
    closed as soon as the send returns, as the CLI and the daemon do: the send waits until its channel's close,
    sent after the CANCEL, went through, so the receiver says the sender cancelled — not that it went away."""
    from p2pd.blob import container as blob
    from p2pd.errors import Party, TransferCancelledError
    from p2pd.transfer.channel import receive_blob, send_blob
    from p2pd.transfer.control import TransferControl
    from p2pd.transfer.frames import MAX_MESSAGE_SIZE, OfferInfo
    from tests.transfer.lossy import Deafness
    from tests.transfer.rtc import accept_all, connected_pair, open_channels

    (tmp_path / "x.blob").write_bytes(blob.encode(os.urandom(12_000_000)))
    control = TransferControl()
    lost: list[float] = []

    def on_progress(done: int, total: int) -> None:
        if done > total // 5:
            control.cancel("stopped by the test")

    async with connected_pair() as (a, b):
        ca, cb = await open_channels(a, b)
        Deafness("CANCEL", DEAF_SECONDS, on_start=lambda: lost.append(time.monotonic())).install(b.sctp)

        async def send_then_close() -> object:
            try:
                return await send_blob(ca, tmp_path / "x.blob", OfferInfo("Lossy", "codex", "s-1", 3),
                                       on_progress=on_progress, control=control, max_message_size=MAX_MESSAGE_SIZE)
            finally:
                await a.close()

        sender, receiver = await asyncio.gather(
            send_then_close(), receive_blob(cb, tmp_path / "in", decide=accept_all, idle_timeout=30),
            return_exceptions=True)
    assert lost, "the CANCEL was dropped"
    assert isinstance(sender, TransferCancelledError) and sender.party is Party.LOCAL, sender
    assert isinstance(receiver, TransferCancelledError) and receiver.party is Party.PEER, receiver
    assert receiver.peer_text is not None and "stopped by the test" in receiver.peer_text
