"""Real daemons for the tests: ``python -m p2pd serve --port 0`` processes with their own P2PD_HOME, a Claude
Code home holding one corpus session, and (when asked) a real signaling server."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.corpus import CORPUS
from tests.signal_process import SignalProcess, signal_server

ROOT = Path(__file__).resolve().parents[2]
SESSION_ID = "cfbdefef-46d0-438f-bafc-c75f200bc243"
SESSION_CWD = "/home/me/ht/unleash"
_LISTENING = re.compile(r"listening on (http://\S+)")


def corpus_session() -> Path:
    if CORPUS is None:
        pytest.fail("the shared transcript corpus was not found; set P2PD_CORPUS")
    return CORPUS / "claude-code" / "unleash" / "claude-10turn.jsonl"


def make_env(base: Path, signal_url: str | None = None, **extra: str) -> dict[str, str]:
    """An environment whose homes are all under ``base``: P2PD_HOME, Claude Code (one session), Codex, Gemini."""
    claude = base / "claude"
    project_dir = claude / "projects" / "-home-me-ht-unleash"
    if not project_dir.exists():
        project_dir.mkdir(parents=True)
        shutil.copy(corpus_session(), project_dir / f"{SESSION_ID}.jsonl")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("P2PD_", "CLAUDE_"))}
    env.update(PYTHONPATH=str(ROOT), P2PD_HOME=str(base / "p2pd-home"), P2PD_CONFIG=str(base / "config.toml"),
               CLAUDE_CONFIG_DIR=str(claude), CODEX_HOME=str(base / "codex"), GEMINI_DIR=str(base / "gemini"),
               HOME=str(base), P2PD_ICE_HOST_ADDRESSES="127.0.0.1", P2PD_SIGNAL=signal_url or "ws://127.0.0.1:9/")
    env.update(extra)
    return env


class Daemon:
    """One ``p2pd serve`` process."""

    def __init__(self, base: Path, *, signal_url: str | None = None, args: tuple[str, ...] = (),
                 **extra_env: str) -> None:
        self.base = base
        self.env = make_env(base, signal_url, **extra_env)
        self.home = Path(self.env["P2PD_HOME"])
        self.args = args
        self.process: subprocess.Popen[str] | None = None
        self.output: list[str] = []
        self.url = ""

    def start(self, timeout: float = 30.0) -> Daemon:
        self.output = []
        self.process = subprocess.Popen([sys.executable, "-m", "p2pd", "serve", "--port", "0", *self.args],
                                        env=self.env, cwd=self.base, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL)
        found: list[str] = []

        def read() -> None:
            assert self.process is not None and self.process.stdout is not None
            for line in self.process.stdout:
                self.output.append(line)
                m = _LISTENING.search(line)
                if m and not found:
                    found.append(m.group(1))

        threading.Thread(target=read, daemon=True).start()
        deadline = time.monotonic() + timeout
        while not found and time.monotonic() < deadline and self.process.poll() is None:
            time.sleep(0.05)
        if not found:
            self.kill()
            raise AssertionError("the daemon did not start:\n" + "".join(self.output))
        self.url = found[0]
        return self

    @property
    def token(self) -> str:
        return (self.home / "token").read_text().strip()

    def client(self, **kw: Any) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {self.token}"}, timeout=60,
                            trust_env=False, **kw)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        assert self.process is not None
        self.process.send_signal(sig)
        try:
            return self.process.wait(timeout)
        finally:
            time.sleep(0.05)  # let the reader thread take the last lines

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)

    def p2pd(self, *args: str, timeout: float = 120.0, input: str | None = None) -> subprocess.CompletedProcess[str]:
        """Run a p2pd CLI command in this daemon's environment."""
        return subprocess.run([sys.executable, "-m", "p2pd", *args], env=self.env, cwd=self.base, text=True,
                              capture_output=True, timeout=timeout, input=input)


@pytest.fixture
def signaling() -> Iterator[SignalProcess]:
    with signal_server() as server:
        yield server


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    d = Daemon(tmp_path).start()
    try:
        yield d
    finally:
        d.kill()


@pytest.fixture(scope="module")
def shared_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """One daemon for a module's read-mostly tests (starting one takes a second or two)."""
    d = Daemon(tmp_path_factory.mktemp("daemon")).start()
    try:
        yield d
    finally:
        d.kill()
