"""Where a p2pd command keeps the big files it makes for itself while it runs — the spools of a conversation read
one element at a time, a send's compressed payload — so that memory stays bounded by a message.

The system's temporary folder (``$TMPDIR``, else ``/tmp``) unless that folder lives in memory: Debian 13, Fedora
and Arch mount ``/tmp`` as a tmpfs (half the RAM at most), where a 200 MB session's spools would take RAM — or
fail for want of room — as much as if the process held them. Then the user's cache folder
(``platformdirs.user_cache_dir("p2pd")/work``: ``~/.cache/p2pd/work`` on Linux) is used instead. Each command's
folder is made inside with :func:`tempfile.mkdtemp` (private, 0700) and removed when it ends; one a killed
process left is swept by a later run (:func:`p2pd.support.staging.sweep`).

:func:`memory_backed` reads the mount table as text (``/proc/self/mountinfo``), sans I/O, so its rules are
tested without mounting anything.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from p2pd.errors import StorageError, writing

RAM_FILESYSTEMS = frozenset({"tmpfs", "ramfs"})
MOUNTINFO = Path("/proc/self/mountinfo")
SEND = "p2pd-send-"  # a send's work folder: its payload, the packing process's spools
SPOOL = ".p2pd-import-spool-"  # a conversation file read one element at a time (import, convert, show…)
SHOW = ".p2pd-show-"  # ``p2pd show --json``'s compact copy
PREFIXES = (SEND, SPOOL, SHOW)


def _unescape(field: str) -> str:
    """A mountinfo path field (space, tab, newline and backslash are written as octal escapes)."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field


def filesystem_of(path: str, mountinfo: str) -> str | None:
    """The filesystem type of the mount ``path`` (absolute, symlinks resolved) is on, by ``mountinfo``'s text
    (proc(5): ``id parent major:minor root mount-point options [optional…] - fstype source super-options``);
    the last mount of the longest mount point wins, as the kernel stacks them. None when nothing says."""
    best: tuple[int, str] | None = None
    for line in mountinfo.splitlines():
        fields = line.split(" ")
        if len(fields) < 7 or "-" not in fields[6:]:
            continue
        point = _unescape(fields[4])
        after = fields[fields.index("-", 6) + 1:]
        fstype = after[0] if after else ""
        inside = path == point or point == "/" or path.startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) >= best[0]):
            best = (len(point), fstype)
    return best[1] if best is not None else None


def memory_backed(path: str, mountinfo: str) -> bool:
    """Whether ``path`` lives in RAM (a tmpfs or a ramfs), by ``mountinfo``'s text."""
    return filesystem_of(path, mountinfo) in RAM_FILESYSTEMS


def work_root() -> Path:
    """The folder a command's work folders go in (module docstring); made when it is the cache folder."""
    temp = os.path.realpath(tempfile.gettempdir())
    try:
        table = MOUNTINFO.read_text("utf-8", "replace")
    except OSError:  # (not Linux: no mount table to read; the temporary folder is on disk there)
        return Path(temp)
    if not memory_backed(temp, table):
        return Path(temp)
    import platformdirs

    root = Path(platformdirs.user_cache_dir("p2pd")) / "work"
    with writing(f"a work folder in {root.parent}"):
        root.mkdir(parents=True, exist_ok=True, mode=0o700)
    return root


def work_roots() -> list[Path]:
    """Where killed runs may have left work folders: the temporary folder and, when it differs, :func:`work_root`
    (for the sweeps)."""
    temp = Path(os.path.realpath(tempfile.gettempdir()))
    root = work_root()
    return [temp] if root == temp else [temp, root]


def work_folder(prefix: str, root: str | os.PathLike[str] | None = None) -> Path:
    """A new private work folder for this run (``prefix``: one of :data:`PREFIXES`), in ``root`` (else
    :func:`work_root`). A folder that cannot be made is a StorageError naming where."""
    where = Path(root) if root is not None else work_root()
    with writing(f"a work folder in {where}"):
        return Path(tempfile.mkdtemp(prefix=prefix, dir=where))


@contextlib.contextmanager
def held_folder(prefix: str, root: str | os.PathLike[str] | None = None) -> Iterator[Path]:
    """A work folder (:func:`work_folder`) held by this run while it is used — a sweep by another run leaves it
    alone (:func:`p2pd.support.staging.hold`) — and removed afterwards."""
    from p2pd.support import staging

    folder = work_folder(prefix, root)
    held = staging.hold(folder)
    try:
        yield folder
    finally:
        os.close(held)
        shutil.rmtree(folder, ignore_errors=True)


def sweep_stale_work() -> int:
    """Remove the work folders killed runs left (untouched for an hour, held by no live process: a run holds its
    own with :func:`p2pd.support.staging.hold`). Returns how many; never raises."""
    from p2pd.support.staging import sweep

    try:
        roots = work_roots()
    except StorageError:  # (the cache folder cannot be made: there is nothing in it to sweep)
        roots = [Path(os.path.realpath(tempfile.gettempdir()))]
    return sum(sweep(root, f"{prefix}*") for root in roots for prefix in PREFIXES)


__all__ = ["PREFIXES", "SEND", "SHOW", "SPOOL", "filesystem_of", "held_folder", "memory_backed", "sweep_stale_work",
           "work_folder", "work_root", "work_roots"]
