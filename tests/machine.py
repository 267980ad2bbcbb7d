"""The machine shared by a run's pytest-xdist workers: a readers-writer lock over processes (``flock``). Every test
holds it shared; a test that times the machine (``@pytest.mark.alone``) holds it alone. A test waiting to be alone
holds the turnstile, which every test passes before it takes its shared hold, so no new test starts meanwhile and
it is not starved."""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def machine(folder: Path, *, alone: bool) -> Iterator[None]:
    with open(folder / "turnstile", "a+b") as turnstile, open(folder / "machine", "a+b") as held:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        if alone:
            fcntl.flock(held, fcntl.LOCK_EX)  # (holding the turnstile while it waits for the others to end)
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        else:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
            fcntl.flock(held, fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)
