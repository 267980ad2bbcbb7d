"""p2pd send / receive end to end: a real signaling server process, a sender process and a receiver process
on loopback, real aiortc peers."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from p2pd.errors import ExitCode
from tests import pipe_lines
from tests.cli.terminal import Terminal
from tests.corpus import claude_code_files
from tests.full_disk import FullDisk

SESSION = next(f for f in claude_code_files(include_subagents=False) if f.name.startswith("4d5611e5"))
SMALL = next(f for f in claude_code_files(include_subagents=False) if f.name == "short.jsonl")


@pytest.fixture
def server():
    proc = subprocess.Popen([sys.executable, "-m", "signaling", "--port", "0"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    m, said = pipe_lines.read_until(proc.stdout, re.compile(r"ws://127\.0\.0\.1:(\d+)"), 30)
    if m is None:
        proc.kill()
    assert m, said
    yield proc, f"ws://127.0.0.1:{m.group(1)}/"
    proc.kill()
    proc.wait()


def _env(url: str, **extra: str) -> dict[str, str]:
    return {**os.environ, "P2PD_SIGNAL": url, "P2PD_ICE_HOST_ADDRESSES": "127.0.0.1", **extra}


def p2pd(*args: str, env: dict, cwd: Path | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "p2pd", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, cwd=cwd, stdin=subprocess.DEVNULL)


def wait_for_code(proc: subprocess.Popen) -> None:
    """Read the sender's stderr until it shows its code (the room exists from then on)."""
    match, said = pipe_lines.read_until(proc.stderr, re.compile("Code:"), 30)
    assert match, f"the sender never showed its code (exit {proc.poll()}):\n{said}"


def finish(proc: subprocess.Popen, timeout: float = 90) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def test_corpus_session_crosses_and_imports(server, tmp_path):
    _, url = server
    home, project, out = tmp_path / "home", tmp_path / "project", tmp_path / "inbox"
    project.mkdir()
    sender = p2pd("send", str(SESSION), "--code", "4242-amber-river", "--timeout", "60", env=_env(url),
                  cwd=tmp_path)
    wait_for_code(sender)
    receiver = p2pd("receive", "4242-amber-river", "--yes", "-o", str(out), "--import", "--cwd", str(project),
                    env=_env(url, CLAUDE_CONFIG_DIR=str(home)))
    rc, rout, rerr = finish(receiver)
    src, _sout, serr = finish(sender)
    assert (rc, src) == (0, 0), rerr + serr
    assert "SHA-256 verified" in rerr and "the receiver checked SHA-256" in serr
    # both sides showed the same verification string
    vs = re.findall(r"Verification string .*: (\d{3} \d{3})", rerr + serr)
    assert len(vs) == 2 and vs[0] == vs[1]
    received = json.loads(next(out.glob("*.a2a.json")).read_text())
    from p2pd.agents.claude_code.export import export_session

    expected = export_session(SESSION).to_json_dict()
    assert received["messages"] == expected["messages"]
    assert received["subagents"] == expected["subagents"]
    session_file = next((home / "projects").rglob("*.jsonl"))
    assert rout.strip().endswith(f"claude --resume {session_file.stem}")
    assert not (tmp_path / f"{SESSION.stem}.a2a.json").exists(), "no fallback file when the transfer worked"


def test_wrong_code_fails_on_both_sides(server, tmp_path):
    _, url = server
    sender = p2pd("send", str(SMALL), "--code", "4243-amber-river", "--timeout", "30", env=_env(url), cwd=tmp_path)
    wait_for_code(sender)
    receiver = p2pd("receive", "4243-amber-lotus", "--yes", "-o", str(tmp_path / "inbox"), env=_env(url))
    rc, _, rerr = finish(receiver)
    src, _, serr = finish(sender)
    assert rc == ExitCode.WRONG_CODE and "wrong code" in rerr.lower()
    assert src == ExitCode.WRONG_CODE and "wrong code" in serr.lower()
    assert not list((tmp_path / "inbox").glob("*")) if (tmp_path / "inbox").exists() else True
    assert not list(tmp_path.glob("*.a2a.json"))


def test_declined_offer_transfers_nothing(server, tmp_path):
    _, url = server
    sender = p2pd("send", str(SMALL), "--code", "4244-amber-river", "--timeout", "30", env=_env(url), cwd=tmp_path)
    wait_for_code(sender)
    inbox = tmp_path / "inbox"
    # a person at a terminal, who says no
    receiver = Terminal("receive", "4244-amber-river", "-o", str(inbox), env=_env(url), ordered=True)
    try:
        receiver.expect(r"Accept\? \[y/N\]")
        receiver.send("n\r")
        rc, rerr = receiver.wait(), receiver.text
    finally:
        receiver.close()
    src, _, serr = finish(sender)
    assert rc == ExitCode.DECLINED and src == ExitCode.DECLINED, rerr + serr
    assert "declin" in serr.lower()
    assert not list(inbox.glob("*.a2a.json"))


def test_the_configured_receive_cap_refuses_a_larger_conversation(server, tmp_path):
    _, url = server
    config = tmp_path / "config.toml"
    config.write_text("receive_max_size = 2000\n")  # p2pd receive reads it (the daemon too)
    sender = p2pd("send", str(SMALL), "--code", "4245-amber-lotus", "--timeout", "30", env=_env(url), cwd=tmp_path)
    wait_for_code(sender)
    inbox = tmp_path / "inbox"
    receiver = p2pd("receive", "4245-amber-lotus", "--yes", "-o", str(inbox), env=_env(url, P2PD_CONFIG=str(config)))
    rc, _, rerr = finish(receiver)
    src, _, serr = finish(sender)
    assert rc == ExitCode.TOO_LARGE and src == ExitCode.DECLINED, rerr + serr
    assert "2000 bytes" in rerr and "over its size limit" in serr
    assert not inbox.exists() or not [p for p in inbox.rglob("*") if p.is_file()]


def _hand_over(url: str, session: Path, code: str, into: Path, cwd: Path) -> tuple[int, str, int, str]:
    """``p2pd send SESSION --code CODE`` and ``p2pd receive CODE --yes -o INTO``: (receiver's exit status and
    stderr, sender's exit status and stderr)."""
    sender = p2pd("send", str(session), "--code", code, "--timeout", "60", env=_env(url), cwd=cwd)
    wait_for_code(sender)
    receiver = p2pd("receive", code, "--yes", "-o", str(into), env=_env(url))
    rc, _, rerr = finish(receiver)
    src, _, serr = finish(sender)
    return rc, rerr, src, serr


def test_a_receiver_whose_disk_is_full_says_so_on_both_sides_and_keeps_nothing(server, tmp_path):
    """ENOSPC while the conversation is written is this machine's failure, not a payload p2pd cannot read: both
    sides say the receiver could not store it (it used to say the conversation was unreadable)."""
    _, url = server
    disk = FullDisk(tmp_path / "inbox")
    try:
        rc, rerr, src, serr = _hand_over(url, SESSION, "4246-amber-river", disk.folder, tmp_path)
        assert rc != 0 and src != 0, rerr + serr
        # refused at the offer: the room measured against the sender's estimate, before a byte was sent
        assert "could not store the conversation: not enough room in" in rerr and "needed" in rerr, rerr
        assert str(disk.folder) in rerr
        assert rc == ExitCode.STORAGE and src == ExitCode.TRANSFER_FAILED, (rc, src)
        assert "the receiver could not store the conversation" in serr, serr
        assert "not one p2pd can read" not in rerr + serr
        assert disk.files() == []  # nothing half-written where the user looks
    finally:
        disk.unmount()


def test_a_receiver_whose_disk_fills_up_while_it_arrives_stops_at_that_write(server, tmp_path):
    """Room for the offer's estimate, not for the document: the write the kernel refuses ends the transfer, both
    sides say whose disk it was (exit 12 here, 6 there), and nothing half-written is left. (That the stream stops
    at that write, not at its end as it used to, is tests/transfer/test_streamstore.py's.)"""
    from tests.transfer.gen import generate_conversation

    _, url = server
    session = tmp_path / "fills.jsonl"
    session.write_bytes(generate_conversation(80_000, seed=7))  # ~105 KB of document; 64 KiB of room
    disk = FullDisk(tmp_path / "inbox")
    disk.free()
    try:
        rc, rerr, src, serr = _hand_over(url, session, "4247-amber-river", disk.folder, tmp_path)
        assert rc == ExitCode.STORAGE and src == ExitCode.TRANSFER_FAILED, rerr + serr
        assert "could not store the conversation" in rerr and "No space left on device" in rerr, rerr
        assert "the receiver could not store the conversation" in serr, serr
        assert disk.files() == []
    finally:
        disk.unmount()


def over_an_element(into: Path) -> Path:
    """The corpus session with one tool result grown past what a p2pd receiver takes for one element (64 MiB):
    the line a person could have, as Claude Code writes it."""
    lines = SESSION.read_bytes().splitlines()
    for i, raw in enumerate(lines):
        obj = json.loads(raw)
        content = obj.get("message", {}).get("content") if isinstance(obj.get("message"), dict) else None
        if obj.get("type") == "user" and isinstance(content, list) and \
                any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    block["content"] = "build log line\n" * ((65 << 20) // 15)
            lines[i] = json.dumps(obj).encode()
            break
    else:
        raise AssertionError("the corpus session has no tool result")
    into.write_bytes(b"\n".join(lines) + b"\n")
    return into


def test_a_conversation_over_a_receivers_element_limit_is_refused_by_the_sender_with_the_element_named(
        server, tmp_path):
    """Every p2pd receiver refuses an element over 64 MiB; the sender finds it as it packs, stops the transfer
    (a cancel, with its reason) and says which element: exit 5 (too_large), not a storage failure."""
    _, url = server
    session = over_an_element(tmp_path / "huge.jsonl")
    rc, rerr, src, serr = _hand_over(url, session, "4247-amber-stone", tmp_path / "inbox", tmp_path)
    assert src == ExitCode.TOO_LARGE, serr
    assert re.search(r"message \d+ of this conversation is \d+\.\d MB as JSON, over the 67\.1 MB", serr), serr
    assert "could not store" not in serr and "cannot pack" not in serr
    assert rc == ExitCode.TRANSFER_FAILED and "cancelled by the peer" in rerr and "cannot be carried" in rerr, rerr
    assert not (tmp_path / "inbox").exists() or not [p for p in (tmp_path / "inbox").rglob("*") if p.is_file()]


def test_no_peer_falls_back_to_a_file_that_imports(server, tmp_path):
    _, url = server
    sender = p2pd("send", str(SMALL), "--timeout", "2", env=_env(url), cwd=tmp_path)
    rc, out, err = finish(sender)
    assert rc == ExitCode.FALLBACK_WRITTEN, err
    assert "no peer joined within 2 s" in err
    name = out.strip().split()[-1]
    assert out.strip() == f"p2pd import {name}"
    fallback = tmp_path / name
    assert fallback.is_file()
    home = tmp_path / "home"
    r = subprocess.run([sys.executable, "-m", "p2pd", "import", str(fallback), "--cwd", str(tmp_path)],
                       capture_output=True, text=True, env={**os.environ, "CLAUDE_CONFIG_DIR": str(home)})
    assert r.returncode == 0 and "claude --resume" in r.stdout
    r = subprocess.run([sys.executable, "-m", "p2pd", "receive", "--file", str(fallback), "-o", str(tmp_path / "in")],
                       capture_output=True, text=True)
    assert r.returncode == 0 and Path(r.stdout.strip()).is_file()


def test_unreachable_signaling_falls_back(tmp_path):
    sender = p2pd("send", str(SMALL), "--timeout", "5", env=_env("ws://127.0.0.1:9/"), cwd=tmp_path)
    rc, _, err = finish(sender)
    assert rc == ExitCode.FALLBACK_WRITTEN and "unreachable" in err
    assert list(tmp_path.glob("*.a2a.json"))


def test_signaling_killed_mid_pairing_then_fallback(server, tmp_path):
    proc, url = server
    sender = p2pd("send", str(SMALL), "--timeout", "60", env=_env(url), cwd=tmp_path)
    wait_for_code(sender)
    proc.send_signal(signal.SIGKILL)
    rc, _, err = finish(sender, timeout=60)
    assert rc == ExitCode.FALLBACK_WRITTEN, err
    assert "signaling" in err.lower() or "server" in err.lower()
    assert list(tmp_path.glob("*.a2a.json"))
