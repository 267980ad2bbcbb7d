"""Gemini CLI session → p2pd conversation document.

Files live under ``~/.gemini/tmp/<sha256(projectRoot)>/chats/``. Two formats (formats.md §2.2):

- **JSON** (older): one object ``{sessionId, projectHash, startTime, lastUpdated, messages[], …}``.
- **JSONL** (newer): the first line is that metadata without ``messages``; then one message per line, plus
  ``{"$set": {…}}`` metadata updates and ``{"$rewindTo": "<message id>"}`` truncations. A message line whose
  ``id`` was seen before replaces the earlier version (the recorder rewrites a message as its tool calls finish).

Mapping of a message ``{id, timestamp, type, content, thoughts?, tokens?, model?, toolCalls?}``:

| Gemini                               | A2A                                                                |
|--------------------------------------|--------------------------------------------------------------------|
| ``type: user``                       | ROLE_USER message, kind ``prompt``                                 |
| ``type: gemini``                     | ROLE_AGENT message, kind ``response``                              |
| ``type: info/error/warning`` (UI)    | ROLE_AGENT message, kind = the type                                |
| any other type                       | ROLE_AGENT message, kind ``item``                                  |
| ``content`` string / ``{text}`` part | text part (other keys of the part in ``part.metadata.gemini.part``)|
| ``inlineData {mimeType, data}``      | raw part                                                           |
| ``fileData {mimeType, fileUri}``     | url part                                                           |
| ``functionCall`` / ``functionResponse`` part | TOOL_USE / TOOL_RESULT data part (the part as is)          |
| each of ``thoughts[]``               | THINKING data part (the thought as is)                             |
| each of ``toolCalls[]``              | TOOL_USE data part (the call without ``result``), then TOOL_RESULT |
|                                      | data part ``{id, name, status, result, resultDisplay?}``           |
| other content parts                  | GEMINI_PART data part                                              |

The rest of each message (``tokens``, ``model``, ids, …) is kept in ``metadata.gemini.source``. Messages removed
by ``$rewindTo`` stay in the document, marked inactive. Nothing is skipped without a report: lines that are not
messages go to ``records`` and unreadable ones also to ``issues``.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from p2pd.agents.counting import count
from p2pd.agents.gemini import NAME
from p2pd.agents.gemini.timeline import NEITHER, Kind, LineKinds, Place, Timeline
from p2pd.agents.jsonl import parse_lines, read_text, require_lines, session_time, verbatim_record
from p2pd.conversation import media_types as mt
from p2pd.conversation.model import ConversationDocument, LineIssue, Message, Origin, Part, Record, Role
from p2pd.conversation.summary import TITLE_MAX, clip, summarize
from p2pd.errors import InvalidInputError

PLATFORM = NAME
GEMINI = "gemini"
_KINDS = {"user": "prompt", "gemini": "response", "info": "info", "error": "error", "warning": "warning"}


def content_to_parts(content: Any) -> list[Part]:
    if content is None:
        return []
    if isinstance(content, str):
        return [Part(text=content, media_type=mt.TEXT)] if content else []
    items = content if isinstance(content, list) else [content]
    return [_part(item) for item in items]


def _part(item: Any) -> Part:
    if isinstance(item, str):
        return Part(text=item, media_type=mt.TEXT)
    if isinstance(item, dict):
        if isinstance(item.get("text"), str):
            extra = {k: v for k, v in item.items() if k != "text"}
            if extra.get("thought") is True:
                return Part.model_validate({"data": item, "mediaType": mt.THINKING})
            return Part(text=item["text"], media_type=mt.TEXT, metadata={GEMINI: {"part": extra}} if extra else None)
        inline = item.get("inlineData")
        if isinstance(inline, dict) and isinstance(inline.get("data"), str):
            return Part(raw=inline["data"], media_type=str(inline.get("mimeType") or "application/octet-stream"))
        file_data = item.get("fileData")
        if isinstance(file_data, dict) and isinstance(file_data.get("fileUri"), str):
            mime = file_data.get("mimeType")
            return Part(url=file_data["fileUri"], media_type=mime if isinstance(mime, str) else None)
        if "functionCall" in item:
            return Part.model_validate({"data": item, "mediaType": mt.TOOL_USE})
        if "functionResponse" in item:
            return Part.model_validate({"data": item, "mediaType": mt.TOOL_RESULT})
    return Part.model_validate({"data": item, "mediaType": mt.GEMINI_PART})


def message_to_a2a(msg: dict[str, Any], where: int, context_id: str) -> Message:
    mtype = msg.get("type")
    kind = _KINDS.get(mtype, "item") if isinstance(mtype, str) else "item"
    role = Role.USER if mtype == "user" else Role.AGENT
    parts: list[Part] = []
    thoughts = msg.get("thoughts")
    if isinstance(thoughts, list):
        parts.extend(Part.model_validate({"data": t, "mediaType": mt.THINKING}) for t in thoughts)
    parts.extend(content_to_parts(msg.get("content")))
    calls = msg.get("toolCalls")
    if isinstance(calls, list):
        for call in calls:
            if not isinstance(call, dict):
                parts.append(Part.model_validate({"data": call, "mediaType": mt.GEMINI_PART}))
                continue
            parts.append(Part.model_validate({"data": {k: v for k, v in call.items() if k != "result"},
                                              "mediaType": mt.TOOL_USE}))
            if "result" in call or call.get("status") not in (None, "scheduled", "executing"):
                result = {k: call[k] for k in ("id", "name", "status", "result", "resultDisplay") if k in call}
                parts.append(Part.model_validate({"data": result, "mediaType": mt.TOOL_RESULT}))
    neutral: dict[str, Any] = {"active": True, "kind": kind}
    if isinstance(msg.get("timestamp"), str):
        neutral["timestamp"] = msg["timestamp"]
    if isinstance(msg.get("model"), str):
        neutral["model"] = msg["model"]
    source = {k: v for k, v in msg.items() if k not in ("content", "thoughts", "toolCalls")}
    raw_id = msg.get("id")
    mid = raw_id if isinstance(raw_id, str) and raw_id else f"gemini-{where}"
    return Message(message_id=mid, context_id=context_id, role=role, parts=parts,
                   metadata={"p2pd": neutral, GEMINI: {"at": where, "source": source}})


UNTYPED = "message is not a JSON object with a 'type'"  # the issue of such an element of a JSON session


def typed(value: Any) -> bool:
    """Whether an element of a JSON session's ``messages`` is one (an object with a string ``type``); any other
    is a record, with the issue UNTYPED."""
    return isinstance(value, dict) and isinstance(value.get("type"), str)


def _load(path: Path) -> tuple[dict[str, Any], list[tuple[int, Any]], list[Record], list[LineIssue], int]:
    """(session metadata, [(line or index, message dict)], records, issues, line count)."""
    text = read_text(path)
    if path.name.endswith(".jsonl"):
        lines = parse_lines(text)
        require_lines(lines, path)
        kinds = LineKinds()
        entries: list[tuple[int, Any]] = []
        records: list[Record] = []
        issues: list[LineIssue] = []
        for ln in lines:
            kind = kinds.kind(ln.obj)
            if kind is Kind.UNREADABLE:
                issues.append(LineIssue(line=ln.n, reason=ln.error or "unreadable"))
                records.append(verbatim_record(ln))
                continue
            if kind in (Kind.UPDATE, Kind.MESSAGE):
                entries.append((ln.n, ln.obj))
            if kind is Kind.OTHER:
                issues.append(LineIssue(line=ln.n, reason=NEITHER))
            if kind is not Kind.MESSAGE:
                records.append(Record(line=ln.n, value=ln.obj))
        return kinds.meta, entries, records, issues, len(lines)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{path} is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        raise InvalidInputError(f"{path} is not a Gemini CLI session (no 'messages' list)")
    meta = {k: v for k, v in data.items() if k != "messages"}
    entries = list(enumerate(data["messages"]))
    issues = [LineIssue(line=i, reason=UNTYPED) for i, m in entries if not typed(m)]
    records = [Record(line=i, value=m) for i, m in entries if not typed(m)]
    return meta, entries, records, issues, len(entries)


def session_id_of(meta: dict[str, Any], path: Path) -> str:
    raw_sid = meta.get("sessionId")
    return raw_sid if isinstance(raw_sid, str) and raw_sid else path.stem


def kept_message(entry: dict[str, Any], place: Place, context_id: str) -> Message:
    """The message of the version a document keeps, with its place's id and state."""
    msg = message_to_a2a(entry, place.line, context_id)
    msg.message_id = place.message_id
    if not place.active:
        (msg.metadata or {})["p2pd"]["active"] = False
    return msg


def superseded_record(line: int, by: int, entry: Any) -> Record:
    """A replaced version of a message, kept as a record."""
    return Record(line=line, value={"supersededBy": by, "message": entry})


def gemini_envelope(path: Path, meta: dict[str, Any], *, session_id: str, stamps: Iterable[Any],
                    superseded: int, rewound: int, **fields: Any) -> ConversationDocument:
    """The document without its messages' counts, title and summary (``fields``: its elements, issues and line
    count)."""
    doc = ConversationDocument(
        context_id=session_id,
        created_at=session_time([meta.get("lastUpdated"), meta.get("startTime"), *stamps], path),
        origin=Origin(platform=PLATFORM, session_id=session_id, transcript_path=str(path.resolve()),
                      hostname=socket.gethostname()),
        metadata={GEMINI: {"session": meta, "format": "jsonl" if path.name.endswith(".jsonl") else "json",
                           "supersededMessages": superseded, "rewoundMessages": rewound}},
        **fields,
    )
    if isinstance(meta.get("summary"), str):
        doc.title = clip(meta["summary"], TITLE_MAX)  # Gemini CLI's own session summary
    return doc


def export_gemini(path: Path) -> ConversationDocument:
    path = Path(path)
    meta, entries, records, issues, line_count = _load(path)
    session_id = session_id_of(meta, path)
    timeline = Timeline()
    for where, entry in entries:
        if isinstance(entry, dict):
            timeline.entry(where, entry)
    by_line = {where: entry for where, entry in entries}
    messages = [kept_message(by_line[place.line], place, session_id) for place in timeline.places]
    records.extend(superseded_record(line, by, by_line[line]) for line, by in timeline.superseded.items())
    records.sort(key=lambda r: r.line)
    doc = gemini_envelope(path, meta, session_id=session_id,
                          stamps=(m.get("timestamp") if isinstance(m, dict) else None for _, m in entries),
                          superseded=len(timeline.superseded), rewound=timeline.rewound,
                          messages=messages, records=records, issues=issues, line_count=line_count)
    doc.counts = count(doc)
    summarize(doc)
    return doc
