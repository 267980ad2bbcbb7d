"""Start the real signaling server (``python -m signaling --port 0``) as a subprocess for tests, and real ``p2pd``
processes that use it (:func:`p2pd_env`, :func:`p2pd`)."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_LISTENING = re.compile(r"listening on (ws://\S+)")


@dataclass
class SignalProcess:
    url: str
    process: subprocess.Popen[str]
    output: list[str] = field(default_factory=list)  # everything it printed so far (stdout and stderr)

    @property
    def http(self) -> str:
        return "http://" + self.url.removeprefix("ws://").rstrip("/")

    @property
    def port(self) -> int:
        return int(self.url.rstrip("/").rsplit(":", 1)[1])


@contextlib.contextmanager
def signal_server(*args: str, timeout: float = 15.0) -> Iterator[SignalProcess]:
    """Run ``python -m signaling --port 0 *args`` and yield once it printed its URL; stop it afterwards."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "signaling", "--port", "0", *args],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    found: list[str] = []
    output: list[str] = []

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            output.append(line)
            match = _LISTENING.search(line)
            if match and not found:
                found.append(match.group(1))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        deadline = timeout
        while not found and deadline > 0 and process.poll() is None:
            reader.join(0.05)
            deadline -= 0.05
        if not found:
            raise RuntimeError("signaling server did not start: " + "".join(output))
        yield SignalProcess(found[0], process, output)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:  # pragma: no cover
            process.kill()
            process.wait()


def p2pd_env(server: SignalProcess, **extra: str) -> dict[str, str]:
    """The environment of a ``p2pd`` process using ``server``, on loopback only, with ``extra`` added (no code or
    page address taken from the tester's own environment)."""
    env = {**os.environ, "P2PD_SIGNAL": server.url, "P2PD_ICE_HOST_ADDRESSES": "127.0.0.1",
           "PYTHONPATH": str(ROOT), **extra}
    env.pop("P2PD_WEB_URL", None)
    env.pop("P2PD_CODE", None)
    return env


def p2pd(*args: str, env: dict[str, str], cwd: Path | None = None) -> subprocess.Popen[str]:
    """``python -m p2pd ARGS`` with its output piped (text) and no input."""
    return subprocess.Popen([sys.executable, "-m", "p2pd", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, cwd=cwd, stdin=subprocess.DEVNULL)
