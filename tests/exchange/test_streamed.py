"""Streamed handovers (p2pd/transfer/SPEC.md §12) between real processes: a real p2pd-signal, ``p2pd send`` and
``p2pd receive`` (or a test double of one of them, ``tests/exchange/doubles.py``: the real command with one thing
changed) on loopback, real aiortc peers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.exchange.test_handover import SESSION, _env, finish, p2pd, server, wait_for_code

ROOT = Path(__file__).resolve().parents[2]
__all__ = ["server"]  # the fixture, shared


def double(mode: str, *args: str, env: dict[str, str], cwd: Path | None = None) -> subprocess.Popen[str]:
    env = {**env, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))}  # tests.*
    return subprocess.Popen([sys.executable, "-m", "tests.exchange.doubles", mode, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=cwd, stdin=subprocess.DEVNULL)


def everything_in(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) if folder.exists() else []


def handover(url: str, tmp_path: Path, code: str, receiver_mode: str | None = None,
             *more: str) -> tuple[str, bytes]:
    out = tmp_path / f"inbox-{code}"
    sender = p2pd("send", str(SESSION), "--code", code, "--timeout", "60", env=_env(url), cwd=tmp_path)
    wait_for_code(sender)
    args = ("receive", code, "--yes", "-o", str(out), *more)
    receiver = double(receiver_mode, *args, env=_env(url)) if receiver_mode else p2pd(*args, env=_env(url))
    rc, _, rerr = finish(receiver)
    src, _, serr = finish(sender)
    assert (rc, src) == (0, 0), rerr + serr
    assert "SHA-256 verified" in rerr and "the receiver checked SHA-256" in serr
    files = list(out.glob("*.a2a.json"))
    assert len(files) == 1 and everything_in(out) == [files[0].name], everything_in(out)
    return rerr, files[0].read_bytes()


def test_streamed_and_classic_receivers_get_the_same_document(server, tmp_path):
    """Two current peers stream; a receiver that does not list STREAMS (an older p2pd) gets the version-1 OFFER
    of the same zstd blob, and one that lists only lz4 (like the page) the same document in lz4 — byte for byte
    the same file in each case."""
    _, url = server
    streamed_err, streamed = handover(url, tmp_path, "4301-amber-river")
    classic_err, classic = handover(url, tmp_path, "4302-amber-river", "classic")
    lz4_err, lz4 = handover(url, tmp_path, "4303-amber-river", "lz4only")
    assert "streamed: checked while it arrived" in streamed_err
    assert "streamed: checked" not in classic_err and "streamed: checked" not in lz4_err
    assert streamed == classic == lz4
    from p2pd.conversation.document_io import parse_document

    assert parse_document(streamed, source="test").context_id == SESSION.stem


def test_pretty_receive_writes_the_same_document_indented(server, tmp_path):
    """``--pretty``: the streamed document, rewritten indented as a stream before it gets its name."""
    import json

    _, url = server
    _, compact = handover(url, tmp_path, "4304-amber-river")
    _, pretty = handover(url, tmp_path, "4305-amber-river", None, "--pretty")
    assert json.loads(pretty) == json.loads(compact)
    # compact: the line layout (the head on its first line, up to the first array: records, in the streamed order)
    head = compact.split(b"\n", 1)[0]
    assert b'\n  "messages": [\n    {\n' in pretty and head.startswith(b'{"format":') and head.endswith(b'":[')


def test_a_damaged_stream_is_a_checksum_mismatch_and_leaves_nothing(server, tmp_path):
    _, url = server
    out = tmp_path / "inbox"
    sender = double("corrupt", "send", str(SESSION), "--code", "4304-amber-river", "--timeout", "60", env=_env(url),
                    cwd=tmp_path)
    wait_for_code(sender)
    receiver = p2pd("receive", "4304-amber-river", "--yes", "-o", str(out), env=_env(url))
    rc, _, rerr = finish(receiver)
    src, _, serr = finish(sender)
    assert rc != 0 and src != 0, rerr + serr
    assert "SHA-256 mismatch" in rerr and "SHA-256 mismatch" in serr, rerr + serr
    assert everything_in(out) == []
    assert not list(tmp_path.glob("*.a2a.json")), "no fallback file: the peer answered"


def _stalled_transfer(url: str, tmp_path: Path, code: str) -> tuple[subprocess.Popen[str], subprocess.Popen[str], Path]:
    """A sender stalled mid-stream and a receiver holding a staging file of what arrived so far."""
    out = tmp_path / "inbox"
    sender = double("stall", "send", str(SESSION), "--code", code, "--timeout", "60", env=_env(url), cwd=tmp_path)
    wait_for_code(sender)
    receiver = p2pd("receive", code, "--yes", "-o", str(out), env=_env(url))
    deadline = time.monotonic() + 60
    while not list(out.glob(".p2pd-receiving-*")):
        assert receiver.poll() is None and time.monotonic() < deadline, "no streamed chunk arrived"
        time.sleep(0.05)
    return sender, receiver, out


def test_receiver_cancel_mid_stream_leaves_nothing(server, tmp_path):
    _, url = server
    sender, receiver, out = _stalled_transfer(url, tmp_path, "4305-amber-river")
    receiver.send_signal(signal.SIGINT)
    rc, _, rerr = finish(receiver)
    src, _, serr = finish(sender)
    assert rc != 0 and src != 0, rerr + serr
    assert "cancelled by the peer" in serr, serr
    assert everything_in(out) == []


def test_sender_cancel_mid_stream_leaves_nothing(server, tmp_path):
    _, url = server
    sender, receiver, out = _stalled_transfer(url, tmp_path, "4306-amber-river")
    sender.send_signal(signal.SIGINT)
    src, _, serr = finish(sender)
    rc, _, rerr = finish(receiver)
    assert rc != 0 and src != 0, rerr + serr
    # the sender's CANCEL, or the channel it closes right after, whichever the receiver sees first
    assert "cancelled by the peer" in rerr or "the peer went away" in rerr, rerr
    assert everything_in(out) == []
