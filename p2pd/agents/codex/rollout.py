"""Reading a Codex rollout file (``.jsonl`` or ``.jsonl.zst``) into parsed lines.

Every line is ``{"timestamp": RFC3339, "type": T, "payload": {…}}`` (newer CLIs add ``ordinal``). Nothing here
fails on a bad line: each one becomes a :class:`~p2pd.agents.jsonl.SourceLine`, malformed ones carrying
the reason. A broken ``.zst`` file is one clear error.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import zstandard

from p2pd.agents.jsonl import READ_BUFFER, SourceLine, exact_line, parse_lines
from p2pd.conversation.json_text import DECODE_REFUSED
from p2pd.errors import CodecError, InvalidInputError, NotFoundError, TooLargeError

MAX_ROLLOUT_SIZE = 1 << 30  # decompressed bytes
_STEP = 1 << 20


def read_bytes(path: Path, max_size: int = MAX_ROLLOUT_SIZE) -> bytes:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise NotFoundError(f"rollout not found: {path}") from None
    except IsADirectoryError:
        raise InvalidInputError(f"{path} is a directory, not a rollout") from None
    if not path.name.endswith(".zst"):
        return data
    out = bytearray()
    try:
        with zstandard.ZstdDecompressor().stream_reader(data) as reader:
            while chunk := reader.read(_STEP):
                out += chunk
                if len(out) > max_size:
                    raise TooLargeError(f"{path.name} expands past the {max_size}-byte limit")
    except zstandard.ZstdError as exc:
        raise CodecError(f"{path.name}: zstd decompression failed ({exc})") from None
    return bytes(out)


def read_rollout(path: Path) -> list[SourceLine]:
    text = read_bytes(Path(path)).decode("utf-8", errors="surrogateescape")
    return parse_lines(text)


def iter_rollout(path: Path, max_size: int = MAX_ROLLOUT_SIZE) -> Iterator[SourceLine]:
    """The lines :func:`read_rollout` reads, one at a time (a ``.zst`` decompressed as it is read): memory holds one
    line, not the rollout. The same lines, numbers and reasons, and the same errors."""
    path = Path(path)
    try:
        fh = path.open("rb", buffering=READ_BUFFER)
    except FileNotFoundError:
        raise NotFoundError(f"rollout not found: {path}") from None
    except IsADirectoryError:
        raise InvalidInputError(f"{path} is a directory, not a rollout") from None
    with fh:
        if not path.name.endswith(".zst"):
            yield from _lines(fh)
            return
        counted = _Counted(zstandard.ZstdDecompressor().stream_reader(fh), max_size, path.name)
        try:
            yield from _lines(io.BufferedReader(counted, READ_BUFFER))
        except zstandard.ZstdError as exc:
            raise CodecError(f"{path.name}: zstd decompression failed ({exc})") from None


def _lines(fh: Iterable[bytes]) -> Iterator[SourceLine]:
    decode, refused = msgspec.json.decode, DECODE_REFUSED
    for n, raw in enumerate(fh, start=1):
        try:
            value = decode(raw)
        except refused:
            value = None  # (the exact way says why)
        yield SourceLine(n, "", value=value) if value.__class__ is dict else exact_line(n, raw)


class _Counted(io.RawIOBase):
    """A zstd stream reader that refuses to give more than ``limit`` bytes in all (:func:`read_bytes`'s cap)."""

    def __init__(self, reader: Any, limit: int, name: str) -> None:
        self._reader, self._limit, self._name, self._got = reader, limit, name, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._reader.read(len(buffer))
        n = len(data)
        self._got += n
        if self._got > self._limit:
            raise TooLargeError(f"{self._name} expands past the {self._limit}-byte limit")
        buffer[:n] = data
        return n


def looks_like_rollout(first: SourceLine | None) -> bool:
    """True when a JSONL file's first line has the rollout envelope (``type`` + ``payload``)."""
    o = first.obj if first is not None else None
    return o is not None and "payload" in o and isinstance(o.get("type"), str) and "sessionId" not in o
