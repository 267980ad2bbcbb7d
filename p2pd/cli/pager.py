"""Output through the user's pager as it is made, as git does: ``$PAGER`` (else ``less``) is started first and
reads a pipe, so the first page shows while the rest is still being rendered. rich's own pager holds everything
until the end: ``p2pd show`` of a 50 MB session showed nothing for 7.7 s, then all of it. A person who quits the
pager early ends the rendering there (the pipe closes): no error, exit 0.

``less`` gets ``-FRX`` unless ``$LESS`` says otherwise (colours; a short conversation stays on screen).
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
from collections.abc import Callable, Iterator
from typing import Any

from rich.console import Console


def pager_command() -> str | None:
    """The pager to run, or None when the user turned paging off (``PAGER=`` or ``PAGER=cat``)."""
    command = os.environ.get("PAGER", "less").strip()
    return None if command in ("", "cat") else command


@contextlib.contextmanager
def _pipe_to(command: str) -> Iterator[io.TextIOWrapper]:
    env = dict(os.environ)
    env.setdefault("LESS", "FRX")
    proc = subprocess.Popen(command, shell=True, stdin=subprocess.PIPE, env=env)  # (a command line, as git runs it)
    assert proc.stdin is not None
    pipe = io.TextIOWrapper(proc.stdin, encoding="utf-8", errors="replace")
    try:
        yield pipe
    finally:
        with contextlib.suppress(OSError):  # (BrokenPipeError: the pager is gone already)
            pipe.close()
        while True:
            try:
                proc.wait()
                break
            except KeyboardInterrupt:  # (Ctrl-C is the pager's to handle while it runs: wait for it to end)
                continue


class _PagerClosed(Exception):
    """The person quit the pager: nothing more to show."""


class _PagingConsole(Console):
    def on_broken_pipe(self) -> None:  # (rich's own points stdout at /dev/null and exits with status 1)
        raise _PagerClosed


def paged(console: Console, command: str, show: Callable[[Console], object]) -> None:
    """Run ``show`` on a console like ``console`` (its width and colours) whose output goes to ``command``."""
    with _pipe_to(command) as pipe:
        colours: Any = console.color_system  # (the same names the constructor takes)
        paging = _PagingConsole(file=pipe, width=console.width, color_system=colours, force_terminal=True,
                                highlight=False, soft_wrap=True)
        with contextlib.suppress(_PagerClosed, BrokenPipeError):
            show(paging)
            paging.file.flush()


__all__ = ["paged", "pager_command"]
