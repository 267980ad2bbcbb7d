"""A real full disk for tests: a small tmpfs mounted on a folder and filled up, so every write there fails with
ENOSPC from the kernel until it is freed. Needs root (as CI has); elsewhere the test is skipped with the reason."""

from __future__ import annotations

import errno
import os
import subprocess
from pathlib import Path

import pytest


class FullDisk:
    """A 64 KiB tmpfs on ``folder`` (made if missing), filled up; :meth:`free` makes room, :meth:`unmount`
    takes it away (always call it)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"a full disk cannot be made here (mount tmpfs: {done.stderr.strip() or done.returncode})")
        self.filler = folder / "filler"
        try:
            fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT, 0o600)
            try:
                with pytest.raises(OSError) as full:
                    while True:
                        os.write(fd, b"\0" * 4096)
                assert full.value.errno == errno.ENOSPC
            finally:
                os.close(fd)
        except BaseException:
            self.unmount()
            raise

    def free(self) -> None:
        self.filler.unlink()

    def files(self) -> list[Path]:
        """What is in it besides the filler."""
        return sorted(p for p in self.folder.rglob("*") if p != self.filler)

    def unmount(self) -> None:
        subprocess.run(["umount", "-l", str(self.folder)], check=False, capture_output=True)
