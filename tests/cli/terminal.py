"""``p2pd`` in a real terminal for the CLI tests: a pseudo-terminal (stdlib ``pty``) is the process's controlling
terminal, so what it prints is what a user sees (colours, spinners, bars, prompts), and Ctrl-C is the terminal's
own SIGINT to the foreground process group — not a signal sent by the test."""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import struct
import sys
import termios
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")


class Terminal:
    """``python -m p2pd ARGS`` on a pty of ``columns`` x ``rows``; :meth:`expect` reads until a pattern shows."""

    def __init__(self, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
                 columns: int = 80, rows: int = 24, ordered: bool = False) -> None:
        full_env = {**os.environ, "PYTHONPATH": str(ROOT), "TERM": "xterm-256color", "COLUMNS": str(columns),
                    "LINES": str(rows), **(env or {})}
        full_env.pop("NO_COLOR", None)
        pid, fd = pty.fork()
        if pid == 0:  # the child: its stdin/stdout/stderr are the pty, which is its controlling terminal
            if cwd is not None:
                os.chdir(cwd)
            os.execve(sys.executable, [sys.executable, "-m", "p2pd", *args], full_env)
        self.pid, self.fd = pid, fd
        import fcntl

        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        self.raw = b""
        self.status: int | None = None
        self.ordered = ordered  # each expect looks only after what the previous one matched
        self._seen = 0

    @property
    def text(self) -> str:
        """Everything printed so far, escape sequences and carriage returns taken out."""
        return _ANSI.sub("", self.raw.decode("utf-8", "replace"))

    def _read(self, timeout: float) -> str:
        """Read what is there: ``"data"``, ``"idle"`` (nothing within ``timeout``) or ``"eof"``."""
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return "idle"
        try:
            data = os.read(self.fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            return "eof"
        if not data:
            return "eof"
        self.raw += data
        return "data"

    def expect(self, pattern: str, timeout: float = 60.0) -> re.Match[str]:
        """Read until ``pattern`` (a regex) appears in :attr:`text` (with ``ordered``: after the previous match);
        fail with the output so far otherwise."""
        deadline = time.monotonic() + timeout
        compiled = re.compile(pattern)
        while True:
            match = compiled.search(self.text, self._seen)
            if match:
                break
            if time.monotonic() > deadline or self._read(0.1) == "eof":
                match = compiled.search(self.text, self._seen)
                if match:
                    break
                raise AssertionError(f"{pattern!r} not seen; the terminal shows:\n{self.text}")
        if self.ordered:
            self._seen = match.end()
        return match

    def send(self, data: str) -> None:
        os.write(self.fd, data.encode())

    def ctrl_c(self) -> None:
        self.send("\x03")  # the terminal turns it into SIGINT for the foreground process group

    def wait(self, timeout: float = 60.0) -> int:
        """Read to the end and return the exit code (a signal's number as 128 + n, like a shell)."""
        deadline = time.monotonic() + timeout
        while self.status is None:
            while self._read(0.05) == "data":
                pass
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                code = os.waitstatus_to_exitcode(status)
                self.status = 128 - code if code < 0 else code
            elif time.monotonic() > deadline:
                self.kill()
                raise AssertionError(f"p2pd did not end; the terminal shows:\n{self.text}")
        while self._read(0.05) == "data":
            pass
        return self.status

    def kill(self) -> None:
        if self.status is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
            self.status = -9

    def close(self) -> None:
        self.kill()
        os.close(self.fd)

    def __enter__(self) -> Terminal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
