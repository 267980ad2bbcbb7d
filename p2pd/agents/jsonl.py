"""Reading a JSONL file line by line, for every agent that writes one (Claude Code, Codex, Gemini).

Nothing here fails on bad input: every line becomes a :class:`SourceLine`, malformed ones carry the reason (not
JSON, not an object, not UTF-8, or cut off by the end of the file).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Container, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import msgspec

from p2pd.conversation.json_text import DECODE_REFUSED, escape_lone_surrogates
from p2pd.conversation.json_text import loads as _fast_loads
from p2pd.errors import InvalidInputError, NotFoundError

if TYPE_CHECKING:
    from p2pd.conversation.model import Record


_HAS_SURROGATE = re.compile("[\udc80-\udcff]")


@dataclass(slots=True)
class SourceLine:
    n: int  # 1-based line number
    text: str
    value: Any = None
    error: str | None = None
    obj: dict[str, Any] | None = field(init=False, default=None)  # the value when it is a well-formed object
    type: str | None = field(init=False, default=None)  # its "type" when that is a string

    def __post_init__(self) -> None:
        if self.error is None and isinstance(self.value, dict):
            self.obj = self.value
            t = self.value.get("type")
            self.type = t if isinstance(t, str) else None


READ_BUFFER = 1 << 20  # a transcript is read in large reads (its lines are ~2 KB, a tool result's up to MBs)


def open_lines(path: Path, *, buffering: int = -1) -> BinaryIO:
    """The transcript opened for reading, or the error a person understands."""
    try:
        return path.open("rb", buffering=buffering)
    except FileNotFoundError:
        raise NotFoundError(f"transcript not found: {path}") from None
    except IsADirectoryError:
        raise InvalidInputError(f"{path} is a directory, not a transcript") from None


def read_text(path: Path) -> str:
    with open_lines(path) as fh:
        return fh.read().decode("utf-8", errors="surrogateescape")


def parse_lines(text: str) -> list[SourceLine]:
    """Split JSONL text into lines (a final newline does not make an extra line) and parse each one."""
    raw_lines = text.split("\n")
    truncated = bool(text) and not text.endswith("\n")
    if raw_lines and raw_lines[-1] == "":
        raw_lines.pop()
    out: list[SourceLine] = []
    for i, line in enumerate(raw_lines, start=1):
        out.append(parse_line(i, line, last_without_newline=truncated and i == len(raw_lines)))
    return out


def parse_line(n: int, line: str, *, last_without_newline: bool = False,
               maybe_undecodable: bool = True) -> SourceLine:
    if not line.strip():
        return SourceLine(n, line, error="blank line")
    try:
        value = _fast_loads(line)
    except json.JSONDecodeError as exc:
        reason = f"not valid JSON ({exc.msg} at column {exc.colno})"
        if last_without_newline:
            reason = f"truncated: the file ends inside this line ({exc.msg} at column {exc.colno})"
        return SourceLine(n, line, error=reason)
    except RecursionError:
        return SourceLine(n, line, error="not valid JSON (nested too deeply)")
    if maybe_undecodable and _HAS_SURROGATE.search(line):
        return SourceLine(n, line, value=value, error="not valid UTF-8")
    if not isinstance(value, dict):
        return SourceLine(n, line, value=value, error=f"not a JSON object (a {type(value).__name__})")
    return SourceLine(n, line, value=value)


def iter_lines(path: Path, *, keep_text: bool = True, only: Container[int] | None = None) -> Iterator[SourceLine]:
    """The lines of a JSONL file, parsed one at a time as :func:`parse_lines` would (same numbers, same
    reasons), reading the file as a stream: memory holds one line, not the file. ``keep_text=False``: a line
    that is a JSON object is parsed from its bytes and carries no ``text`` (for readers of its JSON only).
    ``only``: the numbers of the lines wanted (the others are skipped unparsed)."""
    if keep_text:
        for n, raw in iter_raw(path, only=only):
            yield exact_line(n, raw)
        return
    loads, decode_error = msgspec.json.decode, DECODE_REFUSED
    with open_lines(path, buffering=READ_BUFFER) as fh:  # (iter_raw, inline: every line of a session goes by)
        for n, raw in enumerate(fh, start=1):
            if only is not None and n not in only:
                continue
            try:
                value = loads(raw)
            except decode_error:
                value = None  # (the exact way says why)
            yield SourceLine(n, "", value=value) if value.__class__ is dict else exact_line(n, raw)


def iter_raw(path: Path, *, only: Container[int] | None = None) -> Iterator[tuple[int, bytes]]:
    """Each line's number and bytes (its newline included, when it has one); ``only``: the numbers wanted."""
    with open_lines(path, buffering=READ_BUFFER) as fh:
        for n, raw in enumerate(fh, start=1):
            if only is None or n in only:
                yield n, raw


def exact_line(n: int, raw: bytes) -> SourceLine:
    """Line ``n`` parsed from its bytes (newline included, when it has one) as :func:`parse_lines` parses it."""
    ends = raw.endswith(b"\n")
    body = raw[:-1] if ends else raw
    try:  # strict first: a line that decodes holds no escaped bytes, so it needs no search for them
        return parse_line(n, body.decode("utf-8"), last_without_newline=not ends, maybe_undecodable=False)
    except UnicodeDecodeError:
        return parse_line(n, body.decode("utf-8", errors="surrogateescape"), last_without_newline=not ends)


def lines_to_text(values: Iterable[str]) -> str:
    return "".join(v + "\n" for v in values)


def verbatim_record(line: SourceLine) -> Record:
    """A malformed line kept byte for byte: as text, or as base64 when it is not valid UTF-8."""
    from p2pd.conversation.model import Record

    return Record.model_validate(verbatim_json(line))


def verbatim_json(line: SourceLine) -> dict[str, Any]:
    """:func:`verbatim_record`'s JSON (``to_json_dict()``), without the model."""
    if _HAS_SURROGATE.search(line.text):
        raw = line.text.encode("utf-8", errors="surrogateescape")
        return {"line": line.n, "raw": base64.b64encode(raw).decode("ascii")}
    return {"line": line.n, "text": line.text}


def verbatim_text(record: Record) -> str | None:
    """The line a :func:`verbatim_record` keeps (undecodable bytes as surrogate escapes), or None."""
    if record.raw is not None:
        return base64.b64decode(record.raw).decode("utf-8", errors="surrogateescape")
    return record.text


def require_lines(lines: list[SourceLine], path: Path) -> None:
    """Refuse a file that is not JSON Lines at all, instead of reading it as an empty session."""
    if any(ln.obj is not None for ln in lines):
        return
    if not lines or all(not ln.text.strip() for ln in lines):
        raise InvalidInputError(f"{path} is empty: no session lines to read")
    if len(lines) == 1 and isinstance(lines[0].value, list):
        raise InvalidInputError(f"{path} holds one JSON array, not JSON Lines (one object per line); if it is a "
                                "list of conversation messages, save it as .json")
    raise InvalidInputError(f"{path} holds no JSON object lines: not a session transcript "
                            f"(line {lines[0].n}: {lines[0].error})")


def _instant(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def session_time(stamps: Iterable[Any], path: Path) -> str:
    """A document's ``createdAt``: the latest time the session itself records (its last activity), else the
    file's modification time — never the clock, so the same session exports to the same bytes."""
    distinct = {s for s in stamps if isinstance(s, str)}  # (each time read once: lines repeat them)
    latest = max((t for t in map(_instant, distinct) if t is not None), default=None)
    if latest is None:
        latest = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    return latest.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def line_stamps(lines: Iterable[SourceLine], key: str = "timestamp") -> Iterable[Any]:
    return (ln.obj.get(key) for ln in lines if ln.obj is not None)


def dumps_line(value: Any) -> str:
    """One JSONL line (no newline) as the agents write them: compact, UTF-8, lone surrogates escaped."""
    return escape_lone_surrogates(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def jsonl_line(value: Any) -> bytes:
    """``dumps_line(value)`` and a newline, in UTF-8: a line with no lone surrogate (all but a few) skips the
    escaping pass."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        return (dumps_line(value) + "\n").encode("utf-8", errors="surrogateescape")


def jsonl_bytes(values: Iterable[Any]) -> Iterator[bytes]:
    """Each value as its line of a session file: a string (a line kept verbatim: it was not a JSON object) as it
    is, anything else as :func:`jsonl_line` writes it."""
    for v in values:
        yield (v + "\n").encode("utf-8", errors="surrogateescape") if isinstance(v, str) else jsonl_line(v)
