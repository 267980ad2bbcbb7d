"""The receiver's :class:`~p2pd.transfer.streamstore.StreamSink` for streamed transfers: the payload is checked by
a child process (:mod:`p2pd.exchange.consumer`) fed through a pipe, so decompressing and checking the document
(~265 MB/s of JSON here, all three: tests/bench/consumer.py) runs on another core than the receiver's event loop,
which keeps up with the wire. Blocking (the transfer's worker threads)."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from p2pd.errors import InvalidInputError

if TYPE_CHECKING:
    from p2pd.exchange.packing import Unpacked


def spawn() -> subprocess.Popen[bytes]:
    """A checking process, waiting for its first record (start it early: it imports while the peers pair)."""
    return subprocess.Popen([sys.executable, "-m", "p2pd.exchange.consumer"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
    with contextlib.suppress(Exception):
        proc.wait(10)
    for f in (proc.stdin, proc.stdout, proc.stderr):
        with contextlib.suppress(Exception):
            f.close() if f else None


class ChildUnpacker:
    def __init__(self, codec: str, folder: Path, *, max_raw_size: int,
                 proc: subprocess.Popen[bytes] | None = None) -> None:
        """``proc``: a process from :func:`spawn` (one is started if None)."""
        from p2pd.exchange.packing import staging_file

        self.staged = staging_file(folder)
        self.unpacked: Unpacked | None = None
        self._proc: subprocess.Popen[bytes] | None = proc or spawn()
        setup = {"codec": codec, "staged": str(self.staged), "max_raw_size": max_raw_size}
        self._send(b"S", json.dumps(setup).encode())

    def _send(self, tag: bytes, data: bytes) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        try:
            self._proc.stdin.write(tag + len(data).to_bytes(4, "big") + data)
        except BrokenPipeError:
            raise self._refusal() from None

    def _refusal(self) -> InvalidInputError | OSError:
        """Why the checking process ended: the payload refused (InvalidInputError), or a write this machine
        refused (OSError: reported as a storage failure, not as the peer's fault)."""
        from p2pd.exchange.consumer import STORAGE

        assert self._proc is not None and self._proc.stderr is not None
        status = self._proc.wait()
        text = self._proc.stderr.read().decode("utf-8", "replace").strip()
        if status == STORAGE:
            return OSError(text or "the checking process could not write the conversation")
        return InvalidInputError(text or f"the checking process ended with status {status}")

    def feed(self, data: bytes) -> None:
        self._send(b"D", data)

    def finish(self, raw_size: int) -> Path:
        assert self._proc is not None and self._proc.stdin is not None and self._proc.stdout is not None
        self._send(b"E", raw_size.to_bytes(8, "big"))
        with contextlib.suppress(BrokenPipeError):
            self._proc.stdin.close()
        out = self._proc.stdout.read()
        if self._proc.wait() != 0:
            raise self._refusal()
        self.unpacked = _unpacked(json.loads(out), self.staged)
        stop(self._proc)
        self._proc = None
        return self.staged

    def abort(self) -> None:
        if self._proc is not None:
            stop(self._proc)
            self._proc = None
        with contextlib.suppress(FileNotFoundError):
            self.staged.unlink()


def _unpacked(data: dict[str, Any], staged: Path) -> Unpacked:
    from p2pd.conversation.model import Counts, Origin
    from p2pd.exchange.packing import Unpacked

    return Unpacked(str(data["context_id"]), str(data["title"]), Counts.model_validate(data["counts"]), staged,
                    Origin.model_validate(data["origin"]))
