"""Reading a Codex rollout file (``.jsonl`` or ``.jsonl.zst``) into parsed lines.

Every line is ``{"timestamp": RFC3339, "type": T, "payload": {…}}`` (newer CLIs add ``ordinal``). Nothing here
fails on a bad line: each one becomes a :class:`~p2pd.agents.jsonl.SourceLine`, malformed ones carrying
the reason. A broken ``.zst`` file is one clear error.
"""

from __future__ import annotations

from pathlib import Path

import zstandard

from p2pd.agents.jsonl import SourceLine, parse_lines
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


def looks_like_rollout(first: SourceLine | None) -> bool:
    """True when a JSONL file's first line has the rollout envelope (``type`` + ``payload``)."""
    o = first.obj if first is not None else None
    return o is not None and "payload" in o and isinstance(o.get("type"), str) and "sessionId" not in o
