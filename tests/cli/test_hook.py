"""p2pd/cli/hook.py: ``p2pd hook`` in-process — what it says about the settings file (paths printed as written),
the size cap on the hook input, and session-start's JSON on stdout. The editing itself is tested in
tests/daemon/test_hook.py."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from p2pd.cli.main import main
from p2pd.daemon.hook import MARKER, MAX_INPUT
from p2pd.errors import ExitCode


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("P2PD_HOME", str(tmp_path / "p2pd-home"))
    monkeypatch.setenv("P2PD_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.delenv("CLAUDE_ENV_FILE", raising=False)
    return tmp_path / "odd [/] dir" / "settings.json"


def test_install_status_uninstall(settings: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["hook", "status", "--settings", str(settings)]) == ExitCode.OK
    assert capsys.readouterr().err == f"not installed in {settings} (run `p2pd hook install`)\n"
    assert main(["hook", "install", "--settings", str(settings)]) == ExitCode.OK
    assert capsys.readouterr().err == (f"Installed the p2pd hooks (SessionStart, UserPromptSubmit, Stop, SessionEnd) "
                                       f"in {settings}\n")
    assert main(["hook", "install", "--settings", str(settings)]) == ExitCode.OK
    assert capsys.readouterr().err.startswith("Already installed:")
    assert main(["hook", "status", "--settings", str(settings)]) == ExitCode.OK
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert len(lines) == 4 and lines[0].endswith(MARKER) and captured.err == f"installed in {settings}\n"
    assert [line.rsplit(" ", 1)[1] for line in lines] == ["session-start", "prompt-submit", "stop", "session-end"]
    assert main(["hook", "uninstall", "--settings", str(settings)]) == ExitCode.OK
    assert capsys.readouterr().err == f"Removed 4 p2pd hook(s) from {settings}\n"
    assert main(["hook", "uninstall", "--settings", str(settings)]) == ExitCode.OK
    assert capsys.readouterr().err == f"No p2pd hook in {settings}\n"


def test_session_start_prints_the_hook_output(settings: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps({"session_id": "abc", "cwd": "/p"})))
    assert main(["hook", "session-start"]) == ExitCode.OK
    out = json.loads(capsys.readouterr().out)["hookSpecificOutput"]
    assert out["hookEventName"] == "SessionStart" and "P2PD_SESSION_ID=abc" in out["additionalContext"]


def test_session_start_refuses_oversized_input(settings: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(" " * (MAX_INPUT + 1)))
    assert main(["hook", "session-start"]) == ExitCode.INVALID_INPUT
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == "error: the hook input is larger than 1 MiB\n"


def test_the_session_hooks_without_a_daemon(settings: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """No daemon: a link made on the store, a Stop hook's output filed for the other session, shown by its next
    prompt once (escaped), never to the sender; SessionEnd leaves the link."""
    from p2pd.daemon.home import Home
    from p2pd.daemon.session_hooks import local_desk

    desk = local_desk(Home.default())
    link = desk.create_link("s-one", [{"session": "s-two"}])

    def run(action: str, record: dict[str, str]) -> str:
        monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(record)))
        assert main(["hook", action]) == ExitCode.OK
        return capsys.readouterr().out

    assert run("stop", {"session_id": "s-one", "last_assistant_message": "done \x1b[2J here"}) == "{}\n"
    out = json.loads(run("prompt-submit", {"session_id": "s-two", "prompt": "next"}))["hookSpecificOutput"]
    assert out["hookEventName"] == "UserPromptSubmit" and "done \\x1b[2J here" in out["additionalContext"]
    assert link.id in out["additionalContext"]
    assert "done" not in run("prompt-submit", {"session_id": "s-two"})  # delivered once
    assert "done" not in run("prompt-submit", {"session_id": "s-one"})  # never to the sender
    assert run("session-end", {"session_id": "s-two", "reason": "logout"}) == "{}\n"
    assert desk.store.get_link(link.id).left == [desk.ref("s-two")]
