"""Reading a child process's output line by line with a deadline that holds even when the process prints nothing:
the pipe is waited on with ``select`` (a blocking ``readline`` would check its deadline only between lines, so a
silent, living process hung the test until pytest's own timeout, or for ever). Bytes are taken one at a time from
the file descriptor, so nothing past the matching line is left in a buffer that a later ``communicate`` (which
reads the descriptor, not the Python stream) or read would not see. Do not mix with the stream's own
``readline``: what that buffers, this does not see."""

from __future__ import annotations

import os
import re
import select
import time
from typing import IO, Any


def read_until(stream: IO[Any], pattern: re.Pattern[str], timeout: float) -> tuple[re.Match[str] | None, str]:
    """Read ``stream`` (a pipe from a child process) until a line matches ``pattern``; returns the match (``None``
    when ``timeout`` seconds passed or the pipe closed first) and everything read. A line ends at ``\\n`` or
    ``\\r`` (as text-mode ``readline`` has it); the text is decoded as UTF-8, errors replaced."""
    fd = stream.fileno()
    seen = bytearray()
    start = 0  # where the current line starts in ``seen``
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            break
        byte = os.read(fd, 1)
        if byte:
            seen += byte
        if not byte or byte in b"\r\n":  # a whole line (or the last one, without its end, at end of file)
            match = pattern.search(seen[start:].decode(errors="replace"))
            start = len(seen)
            if match or not byte:
                return match, seen.decode(errors="replace")
    return None, seen.decode(errors="replace")
