"""Real daemons for the tests: ``python -m p2pd serve --port 0`` processes with their own P2PD_HOME, a Claude
Code home holding one corpus session, and (when asked) a real signaling server; ``paired`` makes two of them
paired with the real ``p2pd pair`` command through it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
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
_CODE = re.compile(r"Code: (\S+)")


def corpus_session() -> Path:
    if CORPUS is None:
        pytest.fail("the shared transcript corpus was not found; set P2PD_CORPUS")
    return CORPUS / "claude-code" / "unleash" / "claude-10turn.jsonl"


def big_session(path: Path) -> Path:
    """The corpus session with ~40 MB of random text appended (no codec shrinks it), as a document at ``path``:
    a device transfer long enough to be cut mid-way."""
    import base64

    from p2pd.agents.sources import load_file
    from p2pd.conversation.document_io import write_document
    from p2pd.conversation.model import Message, Part

    doc = load_file(corpus_session())
    doc.messages.append(Message(message_id="filler", role="ROLE_USER",
                                parts=[Part(text=base64.b64encode(os.urandom(30_000_000)).decode("ascii"))]))
    write_document(doc, path)
    return path


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


@contextlib.contextmanager
def frozen_under_way(c: httpx.Client, tid: str, size: int, receiver: Daemon) -> Iterator[None]:
    """Once transfer ``tid`` moves bytes, ``receiver`` is frozen (SIGSTOP) — so the transfer cannot end before the
    test cuts it inside the block (a signal sent to the frozen receiver is delivered when it is thawed) — and
    thawed after. (The data path moves ~50 MB/s and progress comes in steps: polling every 0.1 s for "under half
    way" could miss the window, or find the transfer done.)"""
    deadline = time.monotonic() + 60
    while c.get(f"/transfers/{tid}").json()["bytes_done"] == 0:
        assert time.monotonic() < deadline, "the transfer never started"
        time.sleep(0.01)
    assert receiver.process is not None
    receiver.process.send_signal(signal.SIGSTOP)
    try:
        assert c.get(f"/transfers/{tid}").json()["bytes_done"] < size, "the transfer ended before it was cut"
        yield
    finally:
        if receiver.process.poll() is None:
            receiver.process.send_signal(signal.SIGCONT)


def wait_for(check: Callable[[], Any], timeout: float = 60.0, what: str = "condition") -> Any:
    """Poll ``check`` until it returns something true (returned); fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"{what} not met within {timeout} s")


async def until(check: Callable[[], Awaitable[Any]], timeout: float = 120.0, what: str = "condition",
                every: float = 0.3) -> Any:
    """Await ``check`` until it returns something true (returned); fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = await check()
        if value:
            return value
        await asyncio.sleep(every)
    raise AssertionError(f"{what} not met within {timeout} s")


def sent_again_after_a_kill(a: Daemon, tid: str) -> dict[str, Any]:
    """Kill sender ``a`` as if before it recorded DONE for transfer ``tid`` (its row put back to running, as its
    store held it then — chaos seed 346), start it again, and return the row once the resend ended."""
    import sqlite3

    a.stop(signal.SIGKILL)
    with sqlite3.connect(a.home / "state.sqlite3") as db:
        db.execute("UPDATE transfers SET state='running' WHERE id=?", (tid,))
    a.start()
    with a.client() as c:
        row: dict[str, Any] = wait_for(
            lambda: (r := c.get(f"/transfers/{tid}").json())["state"] in ("done", "failed") and r, timeout=120,
            what="sent again")
    return row


def pair(a: Daemon, b: Daemon) -> None:
    """Pair the two daemons' devices with the real CLI: a makes the code, b types it."""
    maker = subprocess.Popen([sys.executable, "-m", "p2pd", "pair", "--timeout", "60"], env=a.env, cwd=a.base,
                             stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert maker.stderr is not None
    lines = []
    code = None
    for line in maker.stderr:
        lines.append(line)
        m = _CODE.search(line)
        if m:
            code = m.group(1)
            break
    assert code, "".join(lines)
    joined = b.p2pd("pair", code, timeout=60)
    rest = maker.communicate(timeout=60)[1]
    assert joined.returncode == 0 and maker.returncode == 0, joined.stderr + "".join(lines) + rest
    assert "Paired with" in joined.stderr and "Paired with" in rest


def device_id(d: Daemon) -> str:
    out = d.p2pd("devices", "name")
    assert out.returncode == 0, out.stderr
    return out.stdout.split("\t")[1]


def online(a: Daemon, b_id: str) -> bool:
    with a.client() as c:
        return any(x["id"] == b_id and x["online"] for x in c.get("/devices").json())


PairMaker = Callable[..., tuple[Daemon, Daemon]]


@pytest.fixture
def paired(tmp_path: Path, signaling: SignalProcess) -> Iterator[PairMaker]:
    """Makes two daemons ``a`` and ``b`` (homes ``tmp_path/a``, ``tmp_path/b``) paired through the real signaling
    server and started: ``paired(names=("desk", "laptop"), b_config="[accept]…", b_env={...}, a_env={...})``.
    ``wait_online=True`` waits until each sees the other online. All are killed at the end."""
    made: list[Daemon] = []

    def make(*, names: tuple[str, str] | None = None, a_config: str = "", b_config: str = "",
             a_env: dict[str, str] | None = None, b_env: dict[str, str] | None = None,
             wait_online: bool = False) -> tuple[Daemon, Daemon]:
        a = Daemon(tmp_path / "a", signal_url=signaling.url, **(a_env or {}))
        b = Daemon(tmp_path / "b", signal_url=signaling.url, **(b_env or {}))
        made.extend((a, b))
        for d, config in ((a, a_config), (b, b_config)):
            if config:
                (d.base / "config.toml").write_text(config)
        if names:
            for d, name in zip((a, b), names, strict=True):
                assert d.p2pd("devices", "name", name).returncode == 0
        pair(a, b)
        a.start()
        b.start()
        if wait_online:
            a_id, b_id = device_id(a), device_id(b)
            wait_for(lambda: online(a, b_id), what="b online at a")
            wait_for(lambda: online(b, a_id), what="a online at b")
        return a, b

    try:
        yield make
    finally:
        for d in made:
            d.kill()


@pytest.fixture
def two(paired: PairMaker) -> tuple[Daemon, Daemon]:
    """Two paired daemons, started (not yet waited online)."""
    return paired()
