"""Receiver-side storage of a blob in transit, kept across broken transfers so a later one can resume.

Layout, in the receiver's destination folder::

    .p2pd-partial/<sha256 hex>/blob.part    the blob being assembled: 60 header bytes (written last), payload
    .p2pd-partial/<sha256 hex>/state.json   which payload byte ranges are durably in blob.part
    .p2pd-partial/<sha256 hex>/lock         flock'd while a transfer writes here (a second one is refused)

``state.json`` only ever names bytes that were fsync'd before it was (atomically) rewritten, so after any
crash the ranges it lists are on disk. A transfer of the same blob (same SHA-256) resumes from them, whatever
its chunk size: ranges are kept in bytes and turned into whole chunks of the new OFFER's size. At the end the
whole payload is hashed; only a match is moved into place (atomic rename). The bytes written in order from the
payload's start are hashed as they are written (a worker thread, while the transfer goes on); the digest reads
back only what comes after (resumed ranges, a gap) — a fresh transfer's 50 MB were read back and hashed after
the last chunk, ~60 ms during which the sender waited for DONE. Blocking I/O: call from a thread.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path

from p2pd.blob.container import HEADER_SIZE, BlobHeader
from p2pd.errors import BusyError
from p2pd.support.atomic import atomic_write_bytes, fsync_dir
from p2pd.support.text import human
from p2pd.transfer.frames import Offer

PARTIAL_DIR = ".p2pd-partial"
STATE_VERSION = 1
_HASH_BLOCK = 1 << 20

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]


Validate = Callable[[Path], object]


class NoRoomError(OSError):
    """The destination's file system has less room than the payload needs (an OSError with ENOSPC, so it is
    reported as this machine's storage failure: the transfer protocol's ``io``)."""

    def __init__(self, folder: Path, free: int, need: int, *, about: bool = False) -> None:
        super().__init__(errno.ENOSPC, f"not enough room in {folder}: {human(free)} free, "
                                       f"{'about ' if about else ''}{human(need)} needed")
        self.folder, self.free, self.need = folder, free, need

    def __str__(self) -> str:
        return str(self.strerror)  # (it names the folder already; no "[Errno 28]")


def free_space(folder: Path) -> int | None:
    """Bytes an unprivileged write may still use on ``folder``'s file system (``df``'s Avail); None: unknown."""
    try:
        stat = os.statvfs(folder)
    except (OSError, AttributeError):  # (no statvfs here: the writes will say)
        return None
    if stat.f_blocks == 0:  # a file system that keeps no count (some FUSE and virtual ones): not known, not full
        return None
    return stat.f_bavail * stat.f_frsize


def check_room(folder: Path, need: int, *, at_least: int | None = None) -> None:
    """Raise NoRoomError when ``folder``'s file system has less than ``at_least`` bytes free (default ``need``:
    an exact size; a smaller ``at_least`` for an estimate, which is then said as "about")."""
    free = free_space(folder)
    if free is not None and free < (need if at_least is None else at_least):
        raise NoRoomError(folder, free, need, about=at_least is not None)


class UnreadableBlob(Exception):
    """The blob verified but the receiver's ``validate`` refused it (``error``: what it raised)."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


def sweep(dest_dir: Path, max_age: float, *, now: float | None = None) -> int:
    """Remove the partials under ``dest_dir`` untouched for ``max_age`` seconds (none is being written: a locked
    one is skipped). Returns how many were removed. Blocking I/O."""
    import time

    root = Path(dest_dir) / PARTIAL_DIR
    cutoff = (time.time() if now is None else now) - max_age
    removed = 0
    try:
        entries = list(root.iterdir())
    except OSError:
        return 0
    for entry in entries:
        try:
            newest = max([entry.lstat().st_mtime, *(f.lstat().st_mtime for f in entry.iterdir())])
        except OSError:
            continue
        if newest > cutoff or not entry.is_dir() or entry.is_symlink():
            continue
        try:
            fd = os.open(entry / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            continue
        try:
            if fcntl is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue
            shutil.rmtree(entry, ignore_errors=True)
            removed += 1
        finally:
            os.close(fd)
    with contextlib.suppress(OSError):
        root.rmdir()
    return removed


def remove_unlocked(entry: Path) -> bool:
    """Remove one partial (a folder under ``.p2pd-partial``) unless a transfer holds its lock; returns whether it
    was removed. Blocking I/O."""
    if not entry.is_dir() or entry.is_symlink():
        return False
    try:
        fd = os.open(entry / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return False
    try:
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
        shutil.rmtree(entry, ignore_errors=True)
        return True
    finally:
        os.close(fd)


def final_name(sha256: bytes) -> str:
    """The received blob's file name: content-addressed, so a retransfer lands on the same file."""
    return f"{sha256.hex()[:16]}.a2a.p2pd"


def merge(ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted, disjoint, non-touching union of half-open ranges (empty ones dropped)."""
    out: list[tuple[int, int]] = []
    for start, end in sorted(r for r in ranges if r[0] < r[1]):
        if out and start <= out[-1][1]:
            if end > out[-1][1]:
                out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out


def bytes_to_chunks(ranges: Iterable[tuple[int, int]], chunk_size: int, size: int) -> list[tuple[int, int]]:
    """Chunk ranges wholly inside the byte ranges (a chunk that is only partly held is sent again)."""
    nchunks = -(-size // chunk_size)
    out = []
    for start, end in ranges:
        first = -(-start // chunk_size)
        last = nchunks if end >= size else end // chunk_size
        if first < last:
            out.append((first, last))
    return merge(out)


class PartialBlob:
    """The partial file and record of one blob; opened for one transfer (holds the lock until closed)."""

    def __init__(self, dest_dir: Path, offer: Offer) -> None:
        self.dest_dir = Path(dest_dir)
        self.offer = offer
        self.dir = self.dest_dir / PARTIAL_DIR / offer.sha256.hex()
        self.part_path = self.dir / "blob.part"
        self.state_path = self.dir / "state.json"
        self._lock_fd: int | None = None
        self._fd: int | None = None
        self.have: list[tuple[int, int]] = []  # durable payload byte ranges
        self._pending: list[tuple[int, int]] = []  # written since the last commit
        self.resumed_bytes = 0
        self._hash = hashlib.sha256()  # of the payload's first `_hashed` bytes, as they were written
        self._hashed = 0

    # --- opening ------------------------------------------------------------------------------------------

    @classmethod
    def open(cls, dest_dir: Path, offer: Offer) -> PartialBlob:
        part = cls(dest_dir, offer)
        try:
            part._open()
        except BaseException:
            part.close()
            raise
        return part

    def _open(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._lock_fd = os.open(self.dir / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        if fcntl is not None:
            try:
                fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise BusyError("this blob is being received by another transfer right now") from None
        self.have = self._load_state()
        self._check_room()
        self._fd = os.open(self.part_path, os.O_RDWR | os.O_CREAT, 0o600)
        size = os.fstat(self._fd).st_size
        if self.have and size < HEADER_SIZE + self.have[-1][1]:
            self.have = []  # the record claims more than the file holds: start over
        if not self.have:
            os.ftruncate(self._fd, 0)
        self.resumed_bytes = sum(end - start for start, end in self.have)

    def _check_room(self) -> None:
        """Refuse (NoRoomError) when the folder's file system has less room than the payload still missing here:
        the sender learns it before a byte is sent (a disk that fills up meanwhile still fails the write)."""
        try:
            check_room(self.dest_dir, HEADER_SIZE + self.offer.compressed_size
                       - sum(end - start for start, end in self.have))
        except NoRoomError:
            if not self.have:
                self._remove_dir()  # nothing of it was here before: nothing is left behind
            raise

    def _load_state(self) -> list[tuple[int, int]]:
        try:
            state = json.loads(self.state_path.read_bytes())
            if (state.get("version") != STATE_VERSION or state.get("sha256") != self.offer.sha256.hex()
                    or state.get("compressed_size") != self.offer.compressed_size):
                return []
            ranges = [(int(a), int(b)) for a, b in state.get("have", [])]
        except (OSError, ValueError, TypeError, AttributeError):
            return []
        if any(not 0 <= a < b <= self.offer.compressed_size for a, b in ranges):
            return []
        return merge(ranges)

    def held_chunks(self) -> list[tuple[int, int]]:
        """The held chunks in this OFFER's chunk size, for ACCEPT."""
        return bytes_to_chunks(self.have, self.offer.chunk_size, self.offer.compressed_size)

    # --- writing ------------------------------------------------------------------------------------------

    def write(self, offset: int, data: bytes | memoryview) -> None:
        assert self._fd is not None
        view = memoryview(data)
        pos = HEADER_SIZE + offset
        while view:
            n = os.pwrite(self._fd, view, pos)
            view = view[n:]
            pos += n
        self._pending.append((offset, offset + len(data)))
        if offset == self._hashed:
            self._hash.update(data)
            self._hashed += len(data)

    def commit(self) -> None:
        """Make every write so far durable, then record it (in that order)."""
        if not self._pending:
            return
        assert self._fd is not None
        os.fdatasync(self._fd) if hasattr(os, "fdatasync") else os.fsync(self._fd)
        self.have = merge([*self.have, *self._pending])
        self._pending = []
        record = {"version": STATE_VERSION, "sha256": self.offer.sha256.hex(),
                  "compressed_size": self.offer.compressed_size, "have": self.have}
        atomic_write_bytes(self.state_path, json.dumps(record).encode())

    # --- finishing ----------------------------------------------------------------------------------------

    def digest(self) -> bytes:
        """SHA-256 of the payload (the whole of it, resumed parts included): what was written in order from its
        start was hashed then; the rest is read back."""
        assert self._fd is not None
        h = self._hash.copy()
        pos, end = HEADER_SIZE + self._hashed, HEADER_SIZE + self.offer.compressed_size
        while pos < end:
            block = os.pread(self._fd, min(_HASH_BLOCK, end - pos), pos)
            if not block:
                break
            h.update(block)
            pos += len(block)
        return h.digest()

    def finalize(self, validate: Validate | None = None) -> Path:
        """Write the blob header, make it durable and move the blob into ``dest_dir`` atomically.

        ``validate(path)`` runs on the complete blob before the rename; whatever it raises is re-raised as
        :class:`UnreadableBlob` after the partial is removed (its bytes verified, so a resume cannot help)."""
        assert self._fd is not None
        offer = self.offer
        codec = offer.codec
        if codec is None:
            raise ValueError(f"unknown codec id {offer.codec_id}")
        header = BlobHeader(codec=codec, raw_size=offer.raw_size, compressed_size=offer.compressed_size,
                            sha256=offer.sha256)
        os.pwrite(self._fd, header.pack(), 0)
        os.ftruncate(self._fd, HEADER_SIZE + offer.compressed_size)
        os.fsync(self._fd)
        os.fchmod(self._fd, 0o644)
        if validate is not None:
            try:
                validate(self.part_path)
            except Exception as exc:
                self._remove_dir()
                raise UnreadableBlob(exc) from exc
        target = self.dest_dir / final_name(offer.sha256)
        os.replace(self.part_path, target)
        fsync_dir(self.dest_dir)
        self._remove_dir()
        return target

    def discard(self) -> None:
        """Forget this partial entirely (its bytes are known bad)."""
        self._remove_dir()

    def close(self) -> None:
        """Release the file and the lock; what was committed stays for a later resume."""
        for attr in ("_fd", "_lock_fd"):
            fd = getattr(self, attr)
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
                setattr(self, attr, None)

    def _remove_dir(self) -> None:
        self.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        with contextlib.suppress(OSError):
            (self.dest_dir / PARTIAL_DIR).rmdir()  # only when no other partial is left
