"""The receiver's DONE lost for a moment (real ``p2pd send`` and ``p2pd receive`` processes, a real ``p2pd-signal``):
both sides still agree that the conversation was handed over.

The receiver commits the conversation, then sends DONE. If it tore the connection down before DONE reached the
sender — it waited 2 s for the sender's close, then closed everything —, a DONE lost on the way and retransmitted
later never arrived: the receiver had the conversation and said so, while the sender said "the peer went away; run
the command again". Seen in CI with the browser as the receiver (tests/web/test_resume.py), where the page did
the same. Here the sending process drops the packet that brings DONE and every packet for 3 s after it
(tests/transfer/deaf/sitecustomize.py): longer than the receiver's 2 s linger, short enough for SCTP's
retransmission to get through within its close wait (p2pd/transfer/receiving.py's ``CLOSE_WAIT``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from p2pd.errors import ExitCode
from tests import pipe_lines
from tests.cli.helpers import SHORT
from tests.signal_process import ROOT, SignalProcess, signal_server
from tests.transfer.lossy import DEAF_SECONDS, LOSS_SIMULATED, deaf_at_done

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server() -> Iterator[SignalProcess]:
    with signal_server() as s:
        yield s


def p2pd(*args: str, server: SignalProcess, cwd: Path, **extra: str) -> subprocess.Popen[str]:
    env = {**os.environ, "P2PD_ICE_HOST_ADDRESSES": "127.0.0.1", "PYTHONPATH": str(ROOT), "P2PD_SIGNAL": server.url,
           **extra}
    env.pop("P2PD_CODE", None)
    return subprocess.Popen([sys.executable, "-m", "p2pd", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True, env=env, cwd=cwd)


def test_a_done_lost_past_the_linger_still_completes_both_sides(server: SignalProcess, tmp_path: Path) -> None:
    inbox = tmp_path / "in"
    receiver = p2pd("receive", "--make-code", "--yes", "-o", str(inbox), "--timeout", "60", server=server,
                    cwd=tmp_path)
    sender: subprocess.Popen[str] | None = None
    try:
        assert receiver.stderr is not None
        match, said = pipe_lines.read_until(receiver.stderr, re.compile(r"Code: (\S+)"), 60)
        assert match is not None, said
        started = time.monotonic()
        sender = p2pd("send", str(SHORT), "--code", match.group(1), "--timeout", "60", server=server, cwd=tmp_path,
                      **deaf_at_done())
        _, serr = sender.communicate(timeout=120)
        _, rerr = receiver.communicate(timeout=120)
        took = time.monotonic() - started
    finally:
        for proc in (receiver, sender):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
    assert LOSS_SIMULATED in serr, "the loss was simulated: " + serr
    assert (receiver.returncode, sender.returncode) == (ExitCode.OK, ExitCode.OK), said + rerr + serr
    assert len(list(inbox.glob("*.a2a.json"))) == 1
    assert took > DEAF_SECONDS, took  # the sender heard DONE only once the loss ended
    print(f"\nDONE and what followed lost for {DEAF_SECONDS} s: both sides done in {took:.1f} s")
