"""Staging folders a killed process leaves behind, swept by age at start-up.

Work that must not be seen half-done is staged in a folder first: ``p2pd send``'s work folder (``p2pd-send-*``
in the temp folder, holding the packed blobs), an import's staging folder beside the session
(``.p2pd-import-*``), a receive's partials (``.p2pd-partial``, :func:`p2pd.transfer.partial.sweep`) and a streamed
receive's staging file (``.p2pd-receiving-*.a2a.json.part``, :func:`sweep_files`). A clean run
removes its own; a SIGKILL cannot. The next start removes those untouched for ``max_age`` seconds — unless a
live process holds the folder's lock (:func:`hold`): a send waiting hours for its peer keeps its folder.
Blocking I/O.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

LOCK = ".lock"
STAGING_MAX_AGE = 3600.0  # seconds: staging lives for the seconds (an import) or the minutes (a send) of one run


def hold(folder: Path) -> int:
    """Mark ``folder`` as in use by this process until the returned descriptor is closed (or the process
    dies): :func:`sweep` leaves it alone, whatever its age."""
    fd = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def _in_use(folder: Path) -> bool:
    try:
        fd = os.open(folder / LOCK, os.O_RDWR)
    except OSError:
        return False  # no lock file: nobody holds it
    try:
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
        return False
    finally:
        os.close(fd)  # (closing releases the lock just taken)


def _newest(folder: Path) -> float:
    newest = folder.lstat().st_mtime
    for root, dirs, files in os.walk(folder):
        for name in (*dirs, *files):
            with contextlib.suppress(OSError):
                newest = max(newest, os.lstat(os.path.join(root, name)).st_mtime)
    return newest


def _matches(parent: Path, pattern: str) -> list[Path]:
    try:
        return list(Path(parent).glob(pattern))
    except OSError:
        return []


def _cutoff(max_age: float, now: float | None) -> float:
    return (time.time() if now is None else now) - max_age


def sweep(parent: Path, pattern: str, max_age: float = STAGING_MAX_AGE, *, now: float | None = None) -> int:
    """Remove the folders ``parent/pattern`` in which nothing changed for ``max_age`` seconds and that no live
    process holds. Returns how many were removed; never raises for a folder it cannot read or remove."""
    cutoff = _cutoff(max_age, now)
    removed = 0
    for entry in _matches(parent, pattern):
        try:
            if entry.is_symlink() or not entry.is_dir() or _newest(entry) > cutoff or _in_use(entry):
                continue
        except OSError:
            continue
        shutil.rmtree(entry, ignore_errors=True)
        removed += not entry.exists()
    return removed


def sweep_files(parent: Path, pattern: str, max_age: float = STAGING_MAX_AGE, *, now: float | None = None) -> int:
    """Remove the files ``parent/pattern`` unchanged for ``max_age`` seconds: a streamed receive's staging file
    (``.p2pd-receiving-*.a2a.json.part``, written at every chunk while it lives) left by a killed receiver.
    Returns how many were removed; never raises."""
    cutoff = _cutoff(max_age, now)
    removed = 0
    for entry in _matches(parent, pattern):
        with contextlib.suppress(OSError):
            if entry.is_file() and not entry.is_symlink() and entry.stat().st_mtime < cutoff:
                entry.unlink()
                removed += 1
    return removed


__all__ = ["LOCK", "STAGING_MAX_AGE", "hold", "sweep", "sweep_files"]
