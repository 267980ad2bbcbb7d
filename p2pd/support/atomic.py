"""Atomic file writes: a temp file beside the target, fsync, then rename. A failure leaves nothing behind."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from p2pd.errors import ConflictError


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike[str], *, overwrite: bool = True,
                  mode: int = 0o644) -> Iterator[BinaryIO]:
    """Yield a binary file; on clean exit it becomes ``path`` atomically, on error it is removed.

    With ``overwrite=False`` an existing target raises :class:`ConflictError` (checked before writing and
    enforced at the end with a hard link, so a file that appears meanwhile is not clobbered either).
    """
    target = Path(path)
    if not overwrite and target.exists():
        raise ConflictError(f"refusing to overwrite existing file: {target}")
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        if overwrite:
            os.replace(tmp, target)
        else:
            try:
                os.link(tmp, target)
            except FileExistsError:
                raise ConflictError(f"refusing to overwrite existing file: {target}") from None
            tmp.unlink()
        fsync_dir(target.parent)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes, *, overwrite: bool = True) -> None:
    with atomic_writer(path, overwrite=overwrite) as fh:
        fh.write(data)


def fsync_dir(directory: Path) -> None:
    """Make a rename or a new entry in ``directory`` durable (best effort: not every file system allows it)."""
    try:
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)
