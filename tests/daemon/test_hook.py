"""``p2pd hook``: install/uninstall in Claude Code's settings.json without touching anything else, refusing bad
JSON, and ``session-start`` recording the session with the daemon or, without one, in the store."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from p2pd.daemon import hook
from p2pd.daemon.home import Home
from p2pd.daemon.store import Store
from p2pd.errors import InvalidInputError
from tests.daemon.conftest import SESSION_ID, Daemon, make_env

OTHER = {"model": "opus", "hooks": {
    "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo hi"}]}],
    "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh"}]}]}}
EVENTS = {"SessionStart": "session-start", "UserPromptSubmit": "prompt-submit", "Stop": "stop",
          "SessionEnd": "session-end"}


def p2pd(env: dict[str, str], *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "p2pd", *args], env=env, capture_output=True, text=True,
                          timeout=60, input=input)


def test_install_is_idempotent_and_uninstall_removes_only_ours(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    settings = Path(env["CLAUDE_CONFIG_DIR"]) / "settings.json"
    settings.write_text(json.dumps(OTHER))
    for _ in range(2):
        r = p2pd(env, "hook", "install")
        assert r.returncode == 0, r.stderr
    data = json.loads(settings.read_text())
    assert data["model"] == "opus" and data["hooks"]["PreToolUse"] == OTHER["hooks"]["PreToolUse"]
    starts = data["hooks"]["SessionStart"]
    assert starts[0] == OTHER["hooks"]["SessionStart"][0]
    assert data["hooks"]["Stop"][0] == OTHER["hooks"]["Stop"][0]
    for event, action in EVENTS.items():  # one entry of ours per event, whatever else is there
        ours = [h for e in data["hooks"][event] for h in e["hooks"] if h["command"].endswith(f"hook {action}")]
        assert len(ours) == 1 and ours[0]["type"] == "command", (event, data["hooks"][event])
    assert "Already installed" in p2pd(env, "hook", "install").stderr
    r = p2pd(env, "hook", "status")
    assert r.returncode == 0 and all(f"hook {a}" in r.stdout for a in EVENTS.values())
    r = p2pd(env, "hook", "uninstall")
    assert r.returncode == 0 and "Removed 4" in r.stderr
    assert json.loads(settings.read_text()) == OTHER
    assert "No p2pd hook" in p2pd(env, "hook", "uninstall").stderr
    assert "not installed" in p2pd(env, "hook", "status").stderr


def test_install_adds_the_missing_hooks_to_an_older_install(tmp_path: Path) -> None:
    """A settings file with only the SessionStart hook (an older p2pd) gets the other three, once."""
    env = make_env(tmp_path)
    settings = Path(env["CLAUDE_CONFIG_DIR"]) / "settings.json"
    settings.write_text(json.dumps({"hooks": {"SessionStart": [{"hooks": [
        {"type": "command", "command": hook.hook_command("session-start"), "timeout": 15}]}]}}))
    assert "Installed" in p2pd(env, "hook", "install").stderr
    data = json.loads(settings.read_text())
    assert sorted(data["hooks"]) == sorted(EVENTS) and all(len(v) == 1 for v in data["hooks"].values())


def test_install_into_a_new_file_and_explicit_path(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    target = tmp_path / "elsewhere" / "settings.json"
    assert p2pd(env, "hook", "install", "--settings", str(target)).returncode == 0
    data = json.loads(target.read_text())
    assert list(data) == ["hooks"] and len(data["hooks"]["SessionStart"]) == 1
    assert p2pd(env, "hook", "uninstall", "--settings", str(target)).returncode == 0
    assert json.loads(target.read_text()) == {}


def test_bad_settings_are_refused_untouched(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    settings = Path(env["CLAUDE_CONFIG_DIR"]) / "settings.json"
    for text in ('{"hooks": [1, 2', "[1, 2]", '{"hooks": []}', '{"hooks": {"SessionStart": {}}}'):
        settings.write_text(text)
        for action in ("install", "uninstall"):
            r = p2pd(env, "hook", action)
            assert r.returncode == 4, (text, r.stderr)
            assert str(settings) in r.stderr.replace("\n", "") and "not changed" in r.stderr
            assert settings.read_text() == text
        assert sorted(p.name for p in settings.parent.iterdir() if p.name.startswith(".settings")) == []


def _hook_input(cwd: str) -> str:
    return json.dumps({"session_id": SESSION_ID, "transcript_path": "/t/x.jsonl", "cwd": cwd,
                       "hook_event_name": "SessionStart", "source": "startup"})


def test_session_start_without_daemon_records_in_the_store(tmp_path: Path) -> None:
    env_file = tmp_path / "claude.env"
    env = make_env(tmp_path, CLAUDE_ENV_FILE=str(env_file))
    r = p2pd(env, "hook", "session-start", input=_hook_input("/proj"))
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "SessionStart"
    assert f"P2PD_SESSION_ID={SESSION_ID}" in out["additionalContext"]
    assert "P2PD_URL=http://127.0.0.1:8737" in out["additionalContext"] and "not running" in out["additionalContext"]
    assert env_file.read_text() == f"export P2PD_URL=http://127.0.0.1:8737\nexport P2PD_SESSION_ID={SESSION_ID}\n"
    row = Store(Path(env["P2PD_HOME"]) / "state.sqlite3").hook_session(SESSION_ID)
    assert row is not None and (row.cwd, row.transcript_path, row.source) == ("/proj", "/t/x.jsonl", "startup")
    for bad in ("not json", "{}", '{"session_id": ""}'):
        r = p2pd(env, "hook", "session-start", input=bad)
        assert r.returncode == 4 and "hook input" in r.stderr and not r.stdout


def test_session_start_with_daemon_records_through_it(daemon: Daemon) -> None:
    r = daemon.p2pd("hook", "session-start", input=_hook_input("/work/here"))
    assert r.returncode == 0, r.stderr
    ctx = json.loads(r.stdout)["hookSpecificOutput"]["additionalContext"]
    assert f"P2PD_URL={daemon.url}" in ctx and "not running" not in ctx
    with daemon.client() as c:
        # the recorded session is what a handoff for that folder carries
        h = c.post("/handoffs", json={"summary": "s", "goal": "g", "cwd": "/work/here"})
        assert h.status_code == 201, h.text
        assert h.json()["source"]["session_id"] == SESSION_ID


def test_the_hook_logic_in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """p2pd/daemon/hook.py on its own (no CLI): settings edited in place, a session recorded in the store."""
    monkeypatch.setenv("P2PD_CONFIG", str(tmp_path / "config.toml"))
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps(OTHER))
    assert hook.install(settings) is True and hook.install(settings) is False
    assert hook.installed(settings) == [hook.hook_command(a) for a in EVENTS.values()]
    assert hook.MARKER in hook.hook_command()
    assert hook.uninstall(settings) == 4 and json.loads(settings.read_text()) == OTHER
    assert hook.settings_path(str(settings)) == settings
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cc"))
    assert hook.settings_path() == tmp_path / "cc" / "settings.json"
    home = Home(tmp_path / "p2pd-home")
    out = hook.session_start(_hook_input("/here"), home, None)
    assert "not running" in out["hookSpecificOutput"]["additionalContext"]
    row = Store(home.db_path).hook_session(SESSION_ID)
    assert row is not None and row.cwd == "/here"
    with pytest.raises(InvalidInputError):
        hook.session_start("[]", home, None)
