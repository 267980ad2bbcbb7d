"""A program on a real pseudo-terminal, as a person runs it: stdin, stdout and stderr are the terminal (so
``isatty()`` is true and GNU readline edits the line); what it prints is read back with ANSI escapes removed.
Standard library only (``pty``), no pexpect."""

from __future__ import annotations

import fcntl
import os
import re
import select
import struct
import subprocess
import termios
import time
from collections.abc import Sequence
from pathlib import Path

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Za-z0-9]|\x1b[=>]|\r|\x07")


class Terminal:
    def __init__(self, argv: Sequence[str], *, env: dict[str, str], cwd: Path | None = None,
                 cols: int = 120, rows: int = 40) -> None:
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.process = subprocess.Popen(list(argv), stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd,
                                        start_new_session=True, close_fds=True)
        os.close(slave)
        self._fd = master
        self.raw = ""  # everything printed so far, as written
        self._seen = 0  # how much of the screen text earlier expects consumed

    @property
    def screen(self) -> str:
        """What was printed, escapes and carriage returns removed."""
        return _ANSI.sub("", self.raw)

    def _read(self, wait: float) -> bool:
        ready, _, _ = select.select([self._fd], [], [], wait)
        if not ready:
            return True
        try:
            data = os.read(self._fd, 65536)
        except OSError:  # EIO: the program ended and closed the terminal
            return False
        if not data:
            return False
        self.raw += data.decode("utf-8", "replace")
        return True

    def expect(self, pattern: str, timeout: float = 60.0) -> re.Match[str]:
        """Wait until ``pattern`` (a regex) shows after what earlier calls matched; fails with the screen."""
        compiled = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while True:
            match = compiled.search(self.screen, self._seen)
            if match:
                self._seen = match.end()
                return match
            if time.monotonic() > deadline or not self._read(min(0.2, max(0.0, deadline - time.monotonic()))):
                match = compiled.search(self.screen, self._seen)
                if match:
                    self._seen = match.end()
                    return match
                raise AssertionError(f"{pattern!r} never showed; the terminal shows:\n{self.screen[-3000:]}")

    def send(self, text: str) -> None:
        os.write(self._fd, text.encode("utf-8"))

    def wait(self, timeout: float = 120.0) -> int:
        """Read until the program ends; its exit code."""
        deadline = time.monotonic() + timeout
        while self.process.poll() is None and time.monotonic() < deadline:
            self._read(0.2)
        while self._read(0.05) and self.process.poll() is not None and len(self.raw) < 10_000_000:
            pass  # what it printed last
        return self.process.wait(max(0.0, deadline - time.monotonic()))

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        os.close(self._fd)
