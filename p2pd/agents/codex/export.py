"""Codex rollout → p2pd conversation document (A2A 1.0 messages), losslessly.

Each ``response_item`` line becomes one message (see :mod:`p2pd.codex.items` for the mapping); a ``compacted``
line becomes a ``compact-summary`` user message whose text is the summary. Every other line — ``session_meta``,
``turn_context``, ``event_msg`` (the UI's duplicate view), unknown types, malformed lines — is kept verbatim in
``records`` (malformed ones are also listed in ``issues``).

Each message keeps its source line in ``metadata.codex`` as ``{"line": n, "from": "content"|"data"|"message",
"source": <the line, with the part-carried content left out>}`` so :mod:`p2pd.codex.restore` gives every line back.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from p2pd.agents.codex import NAME
from p2pd.agents.codex.items import CODEX, payload_to_parts, role_and_kind
from p2pd.agents.codex.paths import rollout_id
from p2pd.agents.codex.rollout import read_rollout
from p2pd.agents.counting import count
from p2pd.agents.jsonl import SourceLine, line_stamps, require_lines, session_time, verbatim_record
from p2pd.conversation import media_types as mt
from p2pd.conversation.model import ConversationDocument, LineIssue, Message, Origin, Part, Record, Role, Transcript
from p2pd.conversation.summary import summarize

PLATFORM = NAME


def convert_rollout(lines: list[SourceLine], context_id: str) -> Transcript:
    messages: list[Message] = []
    records: list[Record] = []
    issues: list[LineIssue] = []
    for unit in rollout_units(lines, context_id):
        if isinstance(unit, Message):
            messages.append(unit)
        elif isinstance(unit, Record):
            records.append(unit)
        else:
            issues.append(unit)
    return Transcript(messages=messages, records=records, issues=issues, line_count=len(lines))


def rollout_units(lines: Iterable[SourceLine], context_id: str) -> Iterator[Message | Record | LineIssue]:
    """Each line's message, or its record (a malformed line's issue before it), in line order: what
    :func:`convert_rollout` collects, one line at a time (the streamed writer's way, :mod:`.streamed`)."""
    used: set[str] = set()
    model: str | None = None
    for line in lines:
        obj = line.obj
        if obj is None:
            yield LineIssue(line=line.n, reason=line.error or "unreadable")
            yield verbatim_record(line)
            continue
        ltype = obj.get("type")
        payload = obj.get("payload")
        if not isinstance(ltype, str):
            yield LineIssue(line=line.n, reason="JSON object without a 'type' field")
            yield Record(line=line.n, value=obj)
            continue
        if ltype == "turn_context" and isinstance(payload, dict) and isinstance(payload.get("model"), str):
            model = payload["model"]
        msg: Message | None = None
        if ltype == "response_item":
            if isinstance(payload, dict) and isinstance(payload.get("type"), str):
                msg = _item_message(line.n, obj, payload, context_id, model)
            else:
                yield LineIssue(line=line.n, reason="response_item without a typed payload object")
        elif ltype == "compacted" and isinstance(payload, dict) and isinstance(payload.get("message"), str):
            msg = _compacted_message(line.n, obj, payload, context_id)
        if msg is None:
            yield Record(line=line.n, value=obj)
            continue
        if msg.message_id in used:
            msg.message_id = f"{msg.message_id}#L{line.n}"
        used.add(msg.message_id)
        yield msg


def _neutral(obj: dict[str, Any], kind: str, model: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"active": True, "kind": kind}
    if isinstance(obj.get("timestamp"), str):
        out["timestamp"] = obj["timestamp"]
    if model:
        out["model"] = model
    return out


def _item_message(n: int, obj: dict[str, Any], payload: dict[str, Any], context_id: str,
                  model: str | None) -> Message:
    parts, source_from = payload_to_parts(payload)
    envelope = dict(obj)
    if source_from == "content":
        envelope["payload"] = {k: v for k, v in payload.items() if k != "content"}
    else:
        envelope["payload"] = None
    role, kind = role_and_kind(payload)
    pid = payload.get("id") if isinstance(payload.get("id"), str) else None
    return Message(message_id=pid or f"codex-line-{n}", context_id=context_id, role=role, parts=parts,
                   metadata={"p2pd": _neutral(obj, kind, model if role is Role.AGENT else None),
                             CODEX: {"line": n, "from": source_from, "source": envelope}},
                   extensions=[mt.EXT_CODEX])


def _compacted_message(n: int, obj: dict[str, Any], payload: dict[str, Any], context_id: str) -> Message:
    envelope = dict(obj)
    envelope["payload"] = {k: v for k, v in payload.items() if k != "message"}
    return Message(message_id=f"codex-line-{n}", context_id=context_id, role=Role.USER,
                   parts=[Part(text=payload["message"], media_type=mt.TEXT)],
                   metadata={"p2pd": _neutral(obj, "compact-summary", None),
                             CODEX: {"line": n, "from": "message", "source": envelope}},
                   extensions=[mt.EXT_CODEX])


def _meta(lines: Iterable[SourceLine]) -> dict[str, Any]:
    """The first ``session_meta`` line's payload (``{}`` when there is none)."""
    for ln in lines:
        o = ln.obj
        if o and o.get("type") == "session_meta" and isinstance(o.get("payload"), dict):
            meta = o["payload"]
            # newer CLIs nest the meta: {"meta": {...}, "git": {...}}
            if isinstance(meta.get("meta"), dict):
                meta = {**meta["meta"], **{k: v for k, v in meta.items() if k != "meta"}}
            return meta
    return {}


def export_rollout(path: Path) -> ConversationDocument:
    """Read a Codex rollout into a conversation document."""
    path = Path(path)
    lines = read_rollout(path)
    require_lines(lines, path)
    meta = _meta(lines)
    session_id = meta_session_id(meta, path)
    main = convert_rollout(lines, session_id)
    doc = ConversationDocument(
        context_id=session_id, created_at=session_time(line_stamps(lines), path), origin=rollout_origin(meta, path),
        messages=main.messages, records=main.records, issues=main.issues, line_count=main.line_count,
    )
    doc.counts = count(doc)
    summarize(doc)
    return doc


def meta_session_id(meta: dict[str, Any], path: Path) -> str:
    """The session's id: its meta's, else the one in the rollout's file name."""
    raw_id = meta.get("id")
    return raw_id if isinstance(raw_id, str) and raw_id else rollout_id(path)


def rollout_origin(meta: dict[str, Any], path: Path) -> Origin:
    raw_git = meta.get("git")
    git: dict[str, Any] = raw_git if isinstance(raw_git, dict) else {}
    session_id = meta_session_id(meta, path)
    return Origin(platform=PLATFORM, session_id=session_id, cwd=_str(meta.get("cwd")),
                  git_branch=_str(git.get("branch")), client_version=_str(meta.get("cli_version")),
                  transcript_path=str(path.resolve()), hostname=socket.gethostname())


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) and v else None
