"""p2pd/cli/exchange.py: ``receive --file`` (the sender's fallback) in-process, the sender's fallback file when no
peer comes, and ``demo`` — the main job across three real processes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from p2pd.cli.main import main
from p2pd.errors import ExitCode
from tests.agents.claude_code.helpers import Session
from tests.cli.helpers import SHORT, run


def test_receive_a_fallback_file_and_import_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    s = Session(cwd=str(tmp_path))
    s.user("title with [/] markup \u202eand bidi")
    s.assistant([{"type": "text", "text": "ok"}])
    doc = tmp_path / "c.a2a.json"
    assert main(["export", str(s.write(tmp_path / "src")), "-o", str(doc)]) == ExitCode.OK
    capsys.readouterr()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    inbox = tmp_path / "inbox"
    assert main(["receive", "--file", str(doc), "-o", str(inbox), "--import", "--cwd", str(tmp_path)]) == ExitCode.OK
    captured = capsys.readouterr()
    assert "Read title with [/] markup \\u202eand bidi (2 messages) → " in captured.err
    assert "\u202e" not in captured.err
    assert list(inbox.glob("*.a2a.json"))
    assert captured.out.startswith(f"cd {tmp_path.resolve()} && claude --resume ")


def test_send_without_a_peer_writes_the_fallback(tmp_path: Path) -> None:
    r = run("send", str(SHORT), "--signal", "ws://127.0.0.1:9/", "--timeout", "2", "--fallback-dir", str(tmp_path))
    assert r.returncode == ExitCode.FALLBACK_WRITTEN, r.stderr
    written = list(tmp_path.glob("*.a2a.json"))
    assert len(written) == 1 and r.stdout == f"p2pd import {written[0].name}\n"
    assert "No peer connection" in r.stderr


def test_demo_runs_the_main_job(tmp_path: Path) -> None:
    r = run("demo", str(SHORT))
    assert r.returncode == 0, r.stderr
    assert "SHA-256 verified" in r.stderr and "signaling server: ws://127.0.0.1:" in r.stderr
    m = re.fullmatch(r"cd (\S+) && claude --resume (\S+)", r.stdout.strip())
    assert m is not None, r.stdout
    cwd, session_id = m.groups()
    home = Path(cwd).parent / "claude-home"
    assert list(home.rglob(f"{session_id}.jsonl"))
