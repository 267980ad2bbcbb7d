"""Codes as people use them, with a real ``p2pd-signal`` process and real ``p2pd send`` / ``receive`` processes:
a chosen code in either order, ``--make-code``, typos refused before anything is sent, codes on stdin, what each
side is told, and the prompt with Tab completion on a real terminal."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from p2pd.errors import ExitCode
from tests import pipe_lines
from tests.cli.helpers import SHORT
from tests.cli.terminal import Terminal
from tests.signal_process import ROOT, SignalProcess, signal_server

pytestmark = pytest.mark.slow
UNREACHABLE = "ws://127.0.0.1:9/"  # any attempt to pair would fail with "signaling server unreachable" (exit 6)


@pytest.fixture(scope="module")
def server() -> Iterator[SignalProcess]:
    with signal_server() as s:
        yield s


def environment(server: SignalProcess | None) -> dict[str, str]:
    env = {**os.environ, "P2PD_ICE_HOST_ADDRESSES": "127.0.0.1", "PYTHONPATH": str(ROOT)}
    env["P2PD_SIGNAL"] = server.url if server is not None else UNREACHABLE
    env.pop("P2PD_CODE", None)
    return env


def spawn(*args: str, server: SignalProcess | None, cwd: Path, stdin: str | None = None) -> subprocess.Popen[str]:
    """``p2pd ARGS``; ``stdin``: what a pipe gives it (else /dev/null), so stdin is never a terminal."""
    source: int = subprocess.DEVNULL
    if stdin is not None:
        source, writer = os.pipe()
        os.write(writer, stdin.encode())
        os.close(writer)
    try:
        return subprocess.Popen([sys.executable, "-m", "p2pd", *args], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, stdin=source, text=True, env=environment(server), cwd=cwd)
    finally:
        if stdin is not None:
            os.close(source)


def read_until(proc: subprocess.Popen[str], pattern: str) -> tuple[re.Match[str], str]:
    """Read ``proc``'s stderr line by line until ``pattern`` shows; the match and every line read. Byte by byte
    from the pipe, so nothing after that line waits in a buffer that ``communicate`` would not see; fails after
    60 s even if the process prints nothing (tests/pipe_lines.py)."""
    assert proc.stderr is not None
    match, said = pipe_lines.read_until(proc.stderr, re.compile(pattern), 60)
    if match is None:
        raise AssertionError(f"{pattern!r} never showed within 60 s (exit {proc.poll()}): {said}")
    return match, said


def finish(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, err


def run(*args: str, server: SignalProcess | None, cwd: Path, stdin: str | None = None) -> tuple[int, str, str]:
    return finish(spawn(*args, server=server, cwd=cwd, stdin=stdin))


def received(inbox: Path) -> list[Path]:
    return sorted(inbox.glob("*.a2a.json")) if inbox.exists() else []


# ---------------------------------------------------------------- either order

def test_a_chosen_code_with_the_receiver_first(server: SignalProcess, tmp_path: Path) -> None:
    code = "311-quiet-harbour"
    receiver = spawn("receive", code, "--yes", "-o", str(tmp_path / "in"), "--timeout", "60", server=server,
                     cwd=tmp_path)
    _, said = read_until(receiver, r"Code: 311-quiet-harbour \(waiting for the sender\)")
    sender = spawn("send", str(SHORT), "--code", code, "--timeout", "60", server=server, cwd=tmp_path)
    (rc, _, rerr), (src, _, serr) = finish(receiver), finish(sender)
    assert (rc, src) == (ExitCode.OK, ExitCode.OK), said + rerr + serr
    assert len(received(tmp_path / "in")) == 1
    # the receiver came first: its side says how to send with the code; the sender found it waiting, so it
    # prints no directions, no link and no QR code
    assert "on the sending machine run: p2pd send SESSION --code 311-quiet-harbour" in said + rerr
    assert "Code:" not in serr and "open in a browser" not in serr and "p2pd receive" not in serr, serr


def test_a_chosen_code_with_the_sender_first(server: SignalProcess, tmp_path: Path) -> None:
    code = "312-quiet-harbour"
    sender = spawn("send", str(SHORT), "--code", code, "--timeout", "60", server=server, cwd=tmp_path)
    _, said = read_until(sender, r"Code: 312-quiet-harbour \(waiting for the receiver\)")
    rc, _, rerr = run("receive", code, "--yes", "-o", str(tmp_path / "in"), "--timeout", "60", server=server,
                      cwd=tmp_path)
    src, _, serr = finish(sender)
    assert (rc, src) == (ExitCode.OK, ExitCode.OK), rerr + said + serr
    assert "p2pd receive 312-quiet-harbour" in said + serr  # directions for the receiver that had not come yet
    assert "Code:" not in rerr and "p2pd send" not in rerr, rerr  # the receiver given the sender's code: none


def test_a_code_made_by_the_receiver(server: SignalProcess, tmp_path: Path) -> None:
    receiver = spawn("receive", "--make-code", "--yes", "-o", str(tmp_path / "in"), "--timeout", "60",
                     server=server, cwd=tmp_path)
    match, said = read_until(receiver, r"Code: (\S+) \(waiting for the sender\)")
    sender = spawn("send", str(SHORT), "--code", match.group(1), "--timeout", "60", server=server, cwd=tmp_path)
    (rc, _, rerr), (src, _, serr) = finish(receiver), finish(sender)
    assert (rc, src) == (ExitCode.OK, ExitCode.OK), said + rerr + serr
    assert "open in a browser" not in serr and "Code:" not in serr, serr


def test_make_code_with_a_code_is_a_usage_error(tmp_path: Path) -> None:
    rc, _, err = run("receive", "--make-code", "5-amber-lotus", "--yes", server=None, cwd=tmp_path)
    assert rc == ExitCode.USAGE and "--make-code makes a new code" in err


# ---------------------------------------------------------------- typos

def test_a_one_letter_typo_is_refused_before_pairing_and_burns_nothing(server: SignalProcess,
                                                                       tmp_path: Path) -> None:
    sender = spawn("send", str(SHORT), "--code", "313-amber-lotus", "--timeout", "60", server=server, cwd=tmp_path)
    read_until(sender, r"Code: 313-amber-lotus")
    rc, _, err = run("receive", "313-amber-lotos", "--yes", "-o", str(tmp_path / "in"), server=server,
                     cwd=tmp_path)
    assert rc == ExitCode.INVALID_INPUT, err
    assert "did you mean 313-amber-lotus?" in err and "--exact-code" in err
    assert sender.poll() is None  # the sender never heard of it and still waits: the code is not burned
    rc, _, rerr = run("receive", "313-amber-lotus", "--yes", "-o", str(tmp_path / "in"), server=server,
                      cwd=tmp_path)
    src, _, serr = finish(sender)
    assert (rc, src) == (ExitCode.OK, ExitCode.OK), rerr + serr


def test_the_sender_s_code_is_checked_before_the_session_is_read(tmp_path: Path) -> None:
    rc, _, err = run("send", "no-such-session", "--code", "5-ambre-lotus", server=None, cwd=tmp_path)
    assert rc == ExitCode.INVALID_INPUT and "did you mean 5-amber-lotus?" in err, err  # not 3 (no session)


def test_exact_code_keeps_a_hand_chosen_word_near_the_list(server: SignalProcess, tmp_path: Path) -> None:
    code = "314-quiet-harbor"  # "harbor" is one letter from the list's "arbor"
    sender = spawn("send", str(SHORT), "--code", code, "--exact-code", "--timeout", "60", server=server,
                   cwd=tmp_path)
    read_until(sender, r"Code: 314-quiet-harbor")
    rc, _, rerr = run("receive", code, "--exact-code", "--yes", "-o", str(tmp_path / "in"), server=server,
                      cwd=tmp_path)
    src, _, serr = finish(sender)
    assert (rc, src) == (ExitCode.OK, ExitCode.OK), rerr + serr


# ---------------------------------------------------------------- codes on stdin, no terminal

def test_a_code_on_stdin_without_yes_says_yes_is_needed_before_pairing(tmp_path: Path) -> None:
    rc, _, err = run("receive", "-", server=None, cwd=tmp_path, stdin="5-amber-lotus\n")
    assert rc == ExitCode.USAGE, err
    assert "the code came on standard input" in err and "add --yes" in err
    assert "unreachable" not in err  # refused before connecting: the sender is not told anything false


def test_a_code_on_stdin_with_yes_works(server: SignalProcess, tmp_path: Path) -> None:
    sender = spawn("send", str(SHORT), "--code", "315-amber-lotus", "--timeout", "60", server=server, cwd=tmp_path)
    read_until(sender, r"Code: 315-amber-lotus")
    rc, out, rerr = run("receive", "-", "--yes", "-o", str(tmp_path / "in"), server=server, cwd=tmp_path,
                        stdin="315 Amber Lotus\n")
    src, _, serr = finish(sender)
    assert (rc, src) == (ExitCode.OK, ExitCode.OK), rerr + serr
    assert out.strip() == str(received(tmp_path / "in")[0])


def test_no_code_and_no_terminal_points_to_the_ways_to_give_one(tmp_path: Path) -> None:
    rc, _, err = run("receive", "--yes", server=None, cwd=tmp_path)
    assert rc == ExitCode.USAGE and "--make-code" in err and "'-'" in err, err


# ---------------------------------------------------------------- the prompt on a terminal

def test_the_prompt_completes_words_with_tab_and_catches_a_typo(server: SignalProcess, tmp_path: Path) -> None:
    sender = spawn("send", str(SHORT), "--code", "316-amber-lotus", "--timeout", "60", server=server, cwd=tmp_path)
    read_until(sender, r"Code: 316-amber-lotus")
    inbox = tmp_path / "in"
    receiver = Terminal("receive", "-o", str(inbox), "--timeout", "60", env=environment(server), cwd=tmp_path,
                        ordered=True)
    try:
        receiver.expect(r"Tab completes its words")
        receiver.expect(r"Code: ")
        receiver.send("316-amb\t")
        receiver.expect(r"316-amber-")  # completed by readline, with the separator for the next word
        receiver.send("lotos\r")
        receiver.expect(r"did you mean 316-amber-lotus\?")
        receiver.expect(r"Code: 316-amber-lotus")  # offered for editing
        receiver.send("\r")
        receiver.expect(r"Accept\? \[y/N\]")
        receiver.send("y\r")
        assert receiver.wait() == ExitCode.OK, receiver.text
    finally:
        receiver.close()
    src, _, serr = finish(sender)
    assert src == ExitCode.OK, serr
    assert len(received(inbox)) == 1
