"""The line index of a Claude Code transcript: what the active chain, the title, the times, the origin and the
number of messages need of each line (ids, parent links, a few strings), small next to the session.

:func:`read_index` reads it in one pass. Each line is decoded by msgspec into only the keys the index keeps — the
rest of the line (tool results, texts: nearly all its bytes) is checked and skipped without becoming Python
objects, several times faster than parsing it whole. Whatever that decoder does not take as it is (a line that is
not one well-formed JSON object of the usual shape, bytes that are not UTF-8, numbers past a double) goes the
exact way, :func:`p2pd.agents.jsonl.parse_line` and :func:`light_line`; a test holds both ways to the same index.
"""

from __future__ import annotations

import operator
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from p2pd.agents.claude_code.transcript import MESSAGE_TYPES, TITLE_TYPES, message_problem
from p2pd.agents.jsonl import READ_BUFFER, SourceLine, iter_lines, open_lines, parse_line

try:
    import msgspec
except ImportError:  # pragma: no cover - a dependency; the exact way reads the same index
    msgspec = None  # type: ignore[assignment, unused-ignore]

# What the index keeps of a line: the keys the chain, title, times and origin read.
KEEP = ("type", "uuid", "parentUuid", "logicalParentUuid", "isSidechain", "isMeta", "teamName", "sessionId",
        "cwd", "gitBranch", "version", "timestamp", *TITLE_TYPES.values())
_REPEATED = frozenset({"type", "sessionId", "cwd", "gitBranch", "version", "teamName", "isSidechain", "isMeta"})
_BLOCKS: dict[Any, dict[str, Any]] = {}  # one shared object for every id-less block of a type (read only)


def read_index(path: Path) -> list[SourceLine]:
    """The index of every line of the transcript at ``path``."""
    return list(index_lines(path))


def message_line(line: SourceLine) -> bool:
    """Whether the line (whole or its index entry: the same answer) goes into a message; every other line is a
    record (:func:`p2pd.agents.claude_code.export.iter_transcript`), malformed or not."""
    return line.obj is not None and line.type in MESSAGE_TYPES and message_problem(line.obj) is None


def index_lines(path: Path, *, exact: bool = False) -> Iterator[SourceLine]:
    """Each line's index entry: the fast way (msgspec), or ``exact``ly — the same entries (a test holds it),
    each line parsed whole."""
    return _exact_lines(path) if exact or msgspec is None else _fast_lines(path)


def _exact_lines(path: Path) -> Iterator[SourceLine]:
    for line in iter_lines(path):
        yield light_line(line)


def _shared(value: Any) -> Any:
    """One object for the values most lines repeat (session id, cwd, version…): the index keeps each once."""
    return sys.intern(value) if isinstance(value, str) else value


def _light_block(block: dict[str, Any]) -> dict[str, Any]:
    kind = block.get("type")
    if "id" not in block and "tool_use_id" not in block:
        key = kind if isinstance(kind, str) or kind is None else repr(kind)
        shared = _BLOCKS.get(key)
        if shared is None:
            shared = _BLOCKS.setdefault(key, {"type": kind} if "type" in block else {})
        return shared
    light: dict[str, Any] = {k: block[k] for k in ("type", "id", "tool_use_id") if k in block}
    if isinstance(kind, str):
        light["type"] = sys.intern(kind)
    return light


def light_line(line: SourceLine) -> SourceLine:
    """What the line index keeps of a line (the keys the active chain, title, times and origin read)."""
    obj = line.obj
    if obj is None:
        value = line.value if not isinstance(line.value, list | dict) else type(line.value)()
        return SourceLine(line.n, "" if line.text.strip() else line.text, value=value, error=line.error)
    light: dict[str, Any] = {k: _shared(obj[k]) if k in _REPEATED else obj[k] for k in KEEP if k in obj}
    msg = obj.get("message")
    if isinstance(msg, dict):
        content = msg.get("content")
        if isinstance(content, list):
            content = [_light_block(b) if isinstance(b, dict) else None for b in content]
        elif isinstance(content, str):
            content = ""
        light["message"] = {k: v for k, v in (("id", msg.get("id")), ("content", content)) if k in msg}
    elif "message" in obj:
        light["message"] = msg
    return SourceLine(line.n, "", value=light)


# --- the fast way (msgspec) ----------------------------------------------------------------------------------

if msgspec is not None:
    # One decode per line: the kept keys, and of ``message`` only its id and its content's shape (text, or
    # blocks with their type and ids); everything else is skipped unbuilt. A line of another shape
    # (a message that is no object, a block that is no object…) fails to decode and goes the exact way.
    # The kept values are strings, booleans or null as they are decoded (the decoder refuses anything else: a
    # number — the exact way reads the ones past 64 bits as floats —, a list or an object that may hold one).
    _UNSET: Any = msgspec.UNSET
    _Plain: Any = str | bool | None | msgspec.UnsetType

    class _Block(msgspec.Struct):
        type: _Plain = _UNSET
        id: _Plain = _UNSET
        tool_use_id: _Plain = _UNSET

    class _Message(msgspec.Struct):
        id: _Plain = _UNSET
        content: str | list[_Block] | msgspec.UnsetType = _UNSET

    _Line = msgspec.defstruct("_Line", [(k, _Plain, _UNSET) for k in KEEP]
                              + [("message", _Message | msgspec.UnsetType, _UNSET)])
    _LINE = msgspec.json.Decoder(_Line)
    _BUILTINS = msgspec.to_builtins  # (a struct as a dict of its set fields: UNSET ones are left out)
    # The values most lines repeat, read and written back at once (one object each, as ``_shared`` keeps them):
    _SHARED_KEYS = ("type", "sessionId", "cwd", "gitBranch", "version", "teamName")
    _get_shared = operator.attrgetter(*_SHARED_KEYS)
    _shared_values: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    _SHARED_MAX = 1 << 12  # (distinct combinations cached at most: a session has a few)


class _Odd(Exception):
    """A line the fast way does not take as it is."""


def _fast_lines(path: Path) -> Iterator[SourceLine]:
    for line, _, _ in index_lines_raw(path):
        yield line


def index_lines_raw(path: Path) -> Iterator[tuple[SourceLine, bytes, bool]]:
    """:func:`index_lines`, each entry with the line's bytes (newline included) and whether the fast way read
    them — then they are one well-formed JSON object, UTF-8 throughout, that orjson and msgspec read as they
    are; else the line went the exact way."""
    with open_lines(path, buffering=READ_BUFFER) as fh:
        for n, raw in enumerate(fh, start=1):
            try:  # (the newline is JSON whitespace: the line is decoded with it, not copied without it)
                if not raw.isascii():
                    raw.decode("utf-8")  # (the decoder checks only the strings it keeps)
                yield _fast_line(n, raw), raw, True
            except (_Odd, UnicodeDecodeError, RecursionError, msgspec.MsgspecError):
                ends = raw.endswith(b"\n")
                body = raw[:-1] if ends else raw
                try:
                    line = parse_line(n, body.decode("utf-8"), last_without_newline=not ends, maybe_undecodable=False)
                except UnicodeDecodeError:
                    line = parse_line(n, body.decode("utf-8", errors="surrogateescape"), last_without_newline=not ends)
                yield light_line(line), raw, False


def _fast_line(n: int, raw: bytes) -> SourceLine:
    if not raw.startswith(b"{"):
        raise _Odd
    decoded: Any = _LINE.decode(raw)
    values = _get_shared(decoded)
    shared = _shared_values.get(values)
    if shared is None:
        shared = tuple(_shared(v) for v in values)
        if len(_shared_values) < _SHARED_MAX:
            _shared_values[values] = shared
    decoded.type, decoded.sessionId, decoded.cwd, decoded.gitBranch, decoded.version, decoded.teamName = shared
    light: dict[str, Any] = _BUILTINS(decoded)  # (the keys present, in KEEP's order, message last)
    msg = light.get("message")
    if msg is not None:
        content = msg.get("content")
        if content.__class__ is str:
            msg["content"] = ""
        elif content is not None:
            msg["content"] = [_light_block(block) for block in content]
    return SourceLine(n, "", value=light)
