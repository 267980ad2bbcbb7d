"""Fixtures for the agent-session workflows (seeds 002 and 003): a real git repository, a parent session the
SessionStart hook recorded, the real Claude Code program with a stand-in model API, and two daemons paired through
a real signaling server."""

from __future__ import annotations

import json
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.conftest import SESSION_ID, Daemon, device_id, online, pair, wait_for
from tests.realclients import programs, standin
from tests.signal_process import SignalProcess


def git(*args: str, cwd: Path) -> str:
    r = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, f"git {' '.join(args)}: {r.stderr}"
    return r.stdout


def make_repo(path: Path) -> Path:
    """A git repository with one commit and a sub-folder ``src``."""
    (path / "src").mkdir(parents=True)
    (path / "src" / "parser.py").write_text("def parse(x):\n    return x\n")
    git("init", "-q", "-b", "main", cwd=path)
    git("-c", "user.name=t", "-c", "user.email=t@example.invalid", "add", ".", cwd=path)
    git("-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "start", cwd=path)
    return path


def hook(d: Daemon, action: str, **record: Any) -> dict[str, Any]:
    """Run ``p2pd hook ACTION`` as Claude Code would (the input on stdin); returns its JSON output."""
    r = d.p2pd("hook", action, input=json.dumps({"hook_event_name": action, **record}))
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout or "{}")
    assert isinstance(out, dict)
    return out


def context_of(out: dict[str, Any]) -> str:
    return str(out.get("hookSpecificOutput", {}).get("additionalContext", ""))


def parent_transcript(d: Daemon) -> Path:
    return Path(d.env["CLAUDE_CONFIG_DIR"]) / "projects" / "-home-me-ht-unleash" / f"{SESSION_ID}.jsonl"


@pytest.fixture
def model_api() -> Iterator[standin.StandIn]:
    with standin.running() as api:
        yield api


@pytest.fixture
def claude_daemon(tmp_path: Path, model_api: standin.StandIn) -> Iterator[Daemon]:
    """A daemon whose delegate_command starts the real Claude Code (``claude -p --resume``) against the stand-in,
    with the p2pd hooks installed in its Claude Code settings."""
    why = programs.missing()
    if why:
        pytest.skip(why)
    command = shlex.join([str(programs.CLAUDE), "-p", "--output-format", "json", "--resume", "{session_id}",
                          "{prompt}"])
    d = Daemon(tmp_path / "machine", P2PD_DELEGATE_COMMAND=command, ANTHROPIC_API_KEY="sk-ant-standin-key",
               ANTHROPIC_BASE_URL=model_api.url, DISABLE_AUTOUPDATER="1", DISABLE_TELEMETRY="1",
               DISABLE_ERROR_REPORTING="1", CLAUDE_CODE_MAX_RETRIES="0", NO_COLOR="1")
    try:
        assert d.p2pd("hook", "install").returncode == 0
        d.start()
        yield d
    finally:
        d.kill()


@pytest.fixture
def paired(tmp_path: Path, signaling: SignalProcess) -> Iterator[tuple[Daemon, Daemon]]:
    """Two daemons ("desk" and "laptop") paired through the real signaling server, each online at the other;
    the laptop redacts what leaves it."""
    a = Daemon(tmp_path / "a", signal_url=signaling.url)
    b = Daemon(tmp_path / "b", signal_url=signaling.url, P2PD_REDACT="true")
    try:
        assert a.p2pd("devices", "name", "desk").returncode == 0
        assert b.p2pd("devices", "name", "laptop").returncode == 0
        pair(a, b)
        a.start()
        b.start()
        a_id, b_id = device_id(a), device_id(b)
        wait_for(lambda: online(a, b_id) and online(b, a_id), what="desk and laptop online at each other")
        yield a, b
    finally:
        a.kill()
        b.kill()
