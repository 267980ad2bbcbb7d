"""Captured-terminal checks: ``p2pd`` on a real pseudo-terminal (:mod:`tests.cli.terminal`) — Ctrl-C at each
place a user waits, the transfer's progress bar, prompts — as a user sees them."""

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
from tests.cli.helpers import SHORT
from tests.cli.terminal import ROOT, Terminal
from tests.signal_process import SignalProcess, signal_server

pytestmark = pytest.mark.skipif(SHORT is None, reason="needs the transcript corpus")


@pytest.fixture(scope="module")
def server() -> Iterator[SignalProcess]:
    with signal_server() as s:
        yield s


def _env(server: SignalProcess, tmp_path: Path) -> dict[str, str]:
    return {"P2PD_SIGNAL": server.url, "P2PD_ICE_HOST_ADDRESSES": "127.0.0.1", "P2PD_HOME": str(tmp_path / "home"),
            "XDG_CONFIG_HOME": str(tmp_path / "config"), "CLAUDE_CONFIG_DIR": str(tmp_path / "claude")}


def _sender(code: str, env: dict[str, str], *extra: str) -> subprocess.Popen[str]:
    """``p2pd send SHORT --code CODE`` started and waiting in its room (its "Code:" line printed)."""
    sender = subprocess.Popen([sys.executable, "-m", "p2pd", "send", str(SHORT), "--code", code, *extra],
                              env={**os.environ, "PYTHONPATH": str(ROOT), **env}, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    assert sender.stderr is not None
    for line in sender.stderr:
        if line.startswith("Code:"):
            return sender
    sender.kill()
    raise AssertionError(f"the sender ended before waiting: exit {sender.wait()}")


def _clean_interrupt(t: Terminal) -> None:
    assert t.wait(60) == ExitCode.INTERRUPTED, t.text
    assert t.text.rstrip().endswith("interrupted"), t.text
    assert "Traceback" not in t.text and "Event loop is closed" not in t.text, t.text


def test_ctrl_c_at_the_accept_prompt_ends_at_once_with_130(server: SignalProcess, tmp_path: Path) -> None:
    env = _env(server, tmp_path)
    code = f"{os.getpid() % 9000 + 1000}-prompt-stop"
    sender = _sender(code, env)
    with Terminal("receive", code, "-o", str(tmp_path / "in"), env=env) as t:
        try:
            t.expect(r"Accept\? \[y/N\] ")
            t.ctrl_c()
            _clean_interrupt(t)
            _, s_err = sender.communicate(timeout=60)
        finally:
            sender.kill()
    assert sender.returncode == ExitCode.TRANSFER_FAILED, s_err
    assert "the transfer was cancelled by the peer" in s_err and "Traceback" not in s_err
    assert not list((tmp_path / "in").glob("*.a2a.json"))


def test_ctrl_c_while_the_sender_waits_for_the_receiver(server: SignalProcess, tmp_path: Path) -> None:
    with Terminal("send", str(SHORT), env=_env(server, tmp_path), cwd=tmp_path) as t:
        t.expect(r"Code: \d+-\w+-\w+")
        t.ctrl_c()
        _clean_interrupt(t)
    assert not list(tmp_path.glob("*.a2a.json"))  # no fallback file: the user stopped it


def test_ctrl_c_while_the_receiver_waits_for_the_sender(server: SignalProcess, tmp_path: Path) -> None:
    with Terminal("receive", "--make-code", env=_env(server, tmp_path)) as t:
        t.expect(r"Code: \d+-\w+-\w+")
        t.ctrl_c()
        _clean_interrupt(t)


def test_ctrl_c_at_the_code_prompt(server: SignalProcess, tmp_path: Path) -> None:
    with Terminal("receive", env=_env(server, tmp_path)) as t:
        t.expect(r"Code: ")
        time.sleep(0.5)  # the prompt shows before readline has set its terminal up (slow on a loaded machine)
        t.ctrl_c()
        _clean_interrupt(t)


def test_the_sent_time_leaves_out_the_receivers_decision(server: SignalProcess, tmp_path: Path) -> None:
    """``Sent … in Xs`` counts from acceptance to verified; the time the receiver took at its prompt is said
    apart (here at least the pause before typing "y")."""
    import json
    import time

    env = _env(server, tmp_path)
    code = f"{os.getpid() % 9000 + 1000}-wait-accept"
    sender = _sender(code, env, "--json")
    with Terminal("receive", code, "-o", str(tmp_path / "in"), env=env) as t:
        try:
            t.expect(r"Accept\? \[y/N\] ")
            time.sleep(1.0)  # the user reads the offer
            t.send("y\r")
            assert t.wait(60) == 0, t.text
            out, s_err = sender.communicate(timeout=60)
        finally:
            sender.kill()
    assert sender.returncode == 0, s_err
    data = json.loads(out)
    assert data["sent"] is True and data["decision_seconds"] >= 1.0, data
    assert data["seconds"] >= 0 and len(data["sha256"]) == 64 and data["code"] == code
    assert re.search(r"in \d+\.\ds from acceptance to verified \(the receiver took \d+\.\ds to accept\)", s_err)
    assert "Received mix phx.server" in t.text


def test_receive_and_import_in_json(server: SignalProcess, tmp_path: Path) -> None:
    import json

    env = _env(server, tmp_path)
    code = f"{os.getpid() % 9000 + 1000}-json-recv"
    sender = _sender(code, env)
    try:
        r = subprocess.run([sys.executable, "-m", "p2pd", "receive", code, "--yes", "--json", "--import", "--cwd",
                            str(tmp_path), "-o", str(tmp_path / "in")], capture_output=True, text=True, timeout=120,
                           env={**os.environ, "PYTHONPATH": str(ROOT), **env})
        sender.communicate(timeout=60)
    finally:
        sender.kill()
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)  # the whole of stdout is one object
    assert data["received"] is True and Path(data["file"]).is_file() and data["messages"] == 5
    assert data["bytes_received"] > 0 and re.fullmatch(r"\d{3} \d{3}", data["verification"])
    assert data["imported"]["agent"] == "claude-code" and Path(data["imported"]["path"]).is_file()


def test_the_receiver_names_each_long_step_after_the_bar(server: SignalProcess, tmp_path: Path) -> None:
    """No silence between the last byte and the end: decompressing, writing and importing each show a spinner
    with their name (transient: the lines for good stay clean)."""
    env = _env(server, tmp_path)
    code = f"{os.getpid() % 9000 + 1000}-steps-shown"
    sender = _sender(code, env)
    with Terminal("receive", code, "--yes", "--import", "--cwd", str(tmp_path), "-o", str(tmp_path / "in"),
                  env=env) as t:
        try:
            assert t.wait(60) == 0, t.text
            sender.communicate(timeout=60)
        finally:
            sender.kill()
    # (streamed between two p2pd: decompressed and checked while the bytes arrive, said once they have)
    steps = ["checked while it arrived", "writing the conversation document", "Importing into Claude Code"]
    positions = [t.text.find(step) for step in steps]
    assert all(p >= 0 for p in positions) and positions == sorted(positions), t.text
    assert t.text.find("Received mix phx.server") > positions[1]
    # before them the transfer's bar: percentage, bytes done of all, time left (never 'acknowledged')
    assert re.search(r"receiving ━+ +100% (\d+\.\d KB)/\1 .* eta 0:00:00", t.text), t.text
    assert t.text.find("receiving ━") < positions[0] and "acknowledged" not in t.text


def test_send_latest_names_the_session_it_picked_before_the_code(server: SignalProcess, tmp_path: Path) -> None:
    env = _env(server, tmp_path)
    project = Path(env["CLAUDE_CONFIG_DIR"]) / "projects" / "-work-demo"
    project.mkdir(parents=True)
    (project / SHORT.name.replace("short", "55604662-cf2a-4331-851a-ec234028f8ca")).write_bytes(SHORT.read_bytes())
    with Terminal("send", "latest", env=env, cwd=tmp_path, ordered=True) as t:
        t.expect(r"Picked Claude Code session 55604662-cf2a-4331-851a-ec234028f8ca \(\d+\.\d KB, \S+-work-demo\)")
        t.expect(r"Code: \d+-\w+-\w+")  # (packing starts once the code is shown; it names the title then)
        t.expect(r"Sending mix phx\.server doesnt seem to start \(claude-code session 55604662-[0-9a-f-]+, "
                 r"5 messages\)")
        t.ctrl_c()
        _clean_interrupt(t)
