"""Claude Code session → p2pd conversation document (A2A 1.0 messages), losslessly.

Every source line ends up either in a message (user/assistant lines; one A2A message per API message, so the
lines Claude Code writes for one response — one per content block, sharing ``message.id`` — become one message)
or in ``records`` (everything else: progress rows, system lines, snapshots, queue operations, unknown types, and
malformed lines, which are also listed in ``issues`` with their line number and reason).

Each message keeps, per source line, the line's JSON minus ``message.content`` (the content is in the parts), so
:mod:`p2pd.claude_code.restore` can give back every line exactly.
"""

from __future__ import annotations

import base64
import json
import socket
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from p2pd.agents.claude_code import NAME
from p2pd.agents.claude_code.blocks import block_part_json
from p2pd.agents.claude_code.transcript import MESSAGE_TYPES, TITLE_TYPES, active_chain, message_problem
from p2pd.agents.jsonl import (
    SourceLine,
    line_stamps,
    parse_lines,
    read_text,
    require_lines,
    session_time,
    verbatim_record,
)
from p2pd.conversation import media_types as mt
from p2pd.conversation.shapes import MessageLike, Role

if TYPE_CHECKING:
    from p2pd.conversation.model import (
        ConversationDocument,
        LineIssue,
        Message,
        Record,
        SidecarFile,
        Subagent,
        Transcript,
    )

CC_KEY = "claudeCode"
PLATFORM = NAME
TITLE_MAX = 80


@dataclass
class Group:
    role: Role
    lines: list[tuple[SourceLine, dict[str, Any]]] = field(default_factory=list)
    message_id: str | None = None


def convert_transcript(lines: list[SourceLine], context_id: str) -> Transcript:
    """Turn parsed lines into messages + records + issues (one file)."""
    from p2pd.conversation.model import Message, Record, Transcript

    t = Transcript(line_count=len(lines))
    for item in iter_transcript(lines, context_id, set(active_chain(lines))):
        if isinstance(item, Message):
            t.messages.append(item)
        elif isinstance(item, Record):
            t.records.append(item)
        else:
            t.issues.append(item)
    return t


def iter_transcript(lines: Iterable[SourceLine], context_id: str,
                    active: set[int]) -> Iterator[Message | Record | LineIssue]:
    """The messages, records and issues of one file, in file order, as the lines go by (a message is given
    once its last line is read). ``active``: the line numbers of the active chain (:func:`active_chain`)."""
    from p2pd.conversation.model import LineIssue, Record

    used_ids: set[str] = set()
    for unit in units(lines):
        if isinstance(unit, Group):
            yield _group_to_message(unit, context_id, active, used_ids)
            continue
        line, reason = unit
        if line.obj is None:  # malformed (not JSON, not an object, blank): reported, and kept byte for byte
            yield LineIssue(line=line.n, reason=reason or "unreadable")
            yield verbatim_record(line)
            continue
        if reason is not None:
            yield LineIssue(line=line.n, reason=reason)
        yield Record(line=line.n, value=line.obj)


def message_count(lines: Iterable[SourceLine]) -> int:
    """How many messages :func:`iter_transcript` makes of these lines; the grouping reads only what the line
    index keeps (type, ``message.id``, whether ``message.content`` is text or blocks, ``isSidechain``)."""
    return sum(1 for unit in units(lines) if isinstance(unit, Group))


def units(lines: Iterable[SourceLine]) -> Iterator[Group | tuple[SourceLine, str | None]]:
    """The lines grouped, in file order: a message's lines as a :class:`Group` (given once its last line is
    read), any other line with the reason it is an issue (None: an ordinary record)."""
    group: Group | None = None
    for line in lines:
        obj = line.obj
        if obj is None:
            yield line, line.error or "unreadable"
            continue
        ltype = line.type
        if ltype is None:
            yield line, "JSON object without a 'type' field"
            continue
        if ltype in MESSAGE_TYPES:
            problem = message_problem(obj)
            if problem is not None:
                yield line, problem
                continue
            role = Role.USER if ltype == "user" else Role.AGENT
            msg_id = obj["message"].get("id") if role is Role.AGENT else None
            same_response = (group is not None and role is Role.AGENT and group.role is Role.AGENT
                             and isinstance(msg_id, str) and msg_id == group.message_id
                             and bool(group.lines[-1][1].get("isSidechain")) == bool(obj.get("isSidechain")))
            if not same_response:
                if group is not None:
                    yield group
                group = Group(role=role, message_id=msg_id if isinstance(msg_id, str) else None)
            assert group is not None
            group.lines.append((line, obj))
            continue
        # Non-message lines keep their place; they do not end an assistant response that continues after them.
        yield line, None
    if group is not None:
        yield group


def _group_to_message(group: Group, context_id: str, active: set[int], used_ids: set[str]) -> Message:
    from p2pd.conversation.model import Message

    return Message.model_validate(group_json(group, context_id, active, used_ids))


def group_json(group: Group, context_id: str, active: set[int], used_ids: set[str]) -> dict[str, Any]:
    """A group's message as its JSON (``Message.to_json_dict()``'s dict), made without the models (the streamed
    writer's path, :mod:`p2pd.agents.claude_code.message_json`; :func:`_group_to_message` is this, validated)."""
    parts: list[dict[str, Any]] = []
    sources = []
    for line, obj in group.lines:
        message = obj["message"]
        content = message["content"]
        envelope = obj.copy()
        envelope["message"] = stripped = message.copy()  # (the line's JSON without message.content)
        del stripped["content"]
        if isinstance(content, str):
            parts.append({"text": content, "mediaType": mt.TEXT})
            sources.append({"line": line.n, "content": "string", "parts": 1, "source": envelope})
        else:
            parts += [block_part_json(b) for b in content]
            sources.append({"line": line.n, "content": "blocks", "parts": len(content), "source": envelope})
    first = group.lines[0][1]
    uid = first.get("uuid")
    mid: str = uid if isinstance(uid, str) else f"line-{group.lines[0][0].n}"
    if mid in used_ids:
        mid = f"{mid}#L{group.lines[0][0].n}"
    used_ids.add(mid)
    is_active = any(line.n in active for line, _ in group.lines)
    neutral: dict[str, Any] = {"active": is_active, "kind": _kind(group, parts)}
    ts = first.get("timestamp")
    if isinstance(ts, str):
        neutral["timestamp"] = ts
    if first.get("isSidechain"):
        neutral["sidechain"] = True
    model = first["message"].get("model")
    if isinstance(model, str):
        neutral["model"] = model
    return {"messageId": mid, "contextId": context_id, "role": group.role.value, "parts": parts,
            "metadata": {"p2pd": neutral, CC_KEY: {"lines": sources}}, "extensions": [mt.EXT_CLAUDE_CODE]}


def _kind(group: Group, parts: list[dict[str, Any]]) -> str:
    first = group.lines[0][1]
    if group.role is Role.AGENT:
        return "response"
    if first.get("isCompactSummary"):
        return "compact-summary"
    if first.get("isMeta"):
        return "meta"
    if parts and all(p.get("mediaType") == mt.TOOL_RESULT for p in parts):
        return "tool-result"
    return "prompt"


def session_dir_for(transcript: Path) -> Path:
    """``<id>.jsonl`` keeps its subagents and spilled tool results in the folder ``<id>/`` beside it."""
    return transcript.with_suffix("")


def read_subagents(transcript: Path, context_id: str) -> list[Subagent]:
    return list(iter_subagents(transcript, context_id))


def iter_subagents(transcript: Path, context_id: str) -> Iterator[Subagent]:
    """The session's subagents, one file at a time."""
    from p2pd.conversation.model import Subagent

    for path, rel, meta in subagent_files(transcript):
        t = convert_transcript(parse_lines(read_text(path)), context_id)
        yield Subagent(agent_id=path.stem.removeprefix("agent-"), file_name=rel, meta=meta, messages=t.messages,
                       records=t.records, issues=t.issues, line_count=t.line_count)


def subagent_files(transcript: Path) -> Iterator[tuple[Path, str, dict[str, Any] | None]]:
    """The session's subagent transcripts: each file, its name under ``subagents/`` and its meta (None: none)."""
    folder = session_dir_for(transcript) / "subagents"
    if not folder.is_dir():
        return
    for path in sorted(folder.rglob("*.jsonl")):
        meta_path = path.with_name(path.stem + ".meta.json")
        meta = None
        if meta_path.is_file():
            try:
                loaded = json.loads(meta_path.read_text(encoding="utf-8"))
                meta = loaded if isinstance(loaded, dict) else {"value": loaded}
            except (ValueError, UnicodeDecodeError):
                meta = {"unreadable": meta_path.read_text(encoding="utf-8", errors="replace")}
        yield path, path.relative_to(folder).as_posix(), meta


def read_tool_results(transcript: Path) -> list[SidecarFile]:
    return list(iter_tool_results(transcript))


def iter_tool_results(transcript: Path) -> Iterator[SidecarFile]:
    from p2pd.conversation.model import SidecarFile

    for item in iter_tool_results_json(transcript):
        yield SidecarFile.model_validate(item)


def iter_tool_results_json(transcript: Path) -> Iterator[dict[str, str]]:
    """The spilled tool results as the document holds them (``SidecarFile.to_json_dict()``), without the model."""
    folder = session_dir_for(transcript) / "tool-results"
    if not folder.is_dir():
        return
    for path in sorted(p for p in folder.iterdir() if p.is_file()):
        data = path.read_bytes()
        try:
            yield {"name": path.name, "text": data.decode("utf-8")}
        except UnicodeDecodeError:
            yield {"name": path.name, "raw": base64.b64encode(data).decode("ascii")}


def export_session(path: Path, *, progress: Callable[[str], None] | None = None) -> ConversationDocument:
    """Read a Claude Code session file (plus its subagents and tool results) into a conversation document."""
    from p2pd.agents.counting import count
    from p2pd.conversation.model import ConversationDocument, Origin

    path = Path(path)
    lines = parse_lines(read_text(path))
    require_lines(lines, path)
    session_id = first_str(lines, "sessionId") or path.stem
    main = convert_transcript(lines, session_id)
    if progress:
        progress(f"read {len(lines)} lines")
    subagents = read_subagents(path, session_id)
    tool_results = read_tool_results(path)
    doc = ConversationDocument(
        context_id=session_id,
        title=session_title(lines, main.messages),
        created_at=session_time(line_stamps(lines), path),
        origin=Origin(platform=PLATFORM, session_id=session_id, cwd=first_str(lines, "cwd"),
                      git_branch=last_str(lines, "gitBranch"), client_version=last_str(lines, "version"),
                      transcript_path=str(path.resolve()), hostname=socket.gethostname()),
        messages=main.messages, records=main.records, issues=main.issues, line_count=main.line_count,
        subagents=subagents, tool_results=tool_results,
    )
    doc.counts = count(doc)
    return doc


def first_str(lines: list[SourceLine], key: str) -> str | None:
    for ln in lines:
        v = ln.obj.get(key) if ln.obj else None
        if isinstance(v, str) and v:
            return v
    return None


def last_str(lines: list[SourceLine], key: str) -> str | None:
    for ln in reversed(lines):
        v = ln.obj.get(key) if ln.obj else None
        if isinstance(v, str) and v:
            return v
    return None


def session_title(lines: list[SourceLine], messages: Iterable[Message]) -> str:
    """The session's own title line when there is one (last wins), else its first real prompt."""
    return line_title(lines) or next((t for m in messages if (t := prompt_title(m))), "")


def line_title(lines: list[SourceLine]) -> str | None:
    """The session's own title line (custom, AI-made or summary; the last one wins), if it has one."""
    for ln in reversed(lines):
        key = TITLE_TYPES.get(ln.type or "")
        if key and ln.obj and isinstance(ln.obj.get(key), str) and ln.obj[key].strip():
            return _clip(ln.obj[key])
    return None


def prompt_title(m: MessageLike) -> str | None:
    """A title from a message when it is a real prompt (not a command or caveat line)."""
    if m.role is Role.USER and m.p2pd.get("kind") == "prompt":
        text = " ".join(p.text for p in m.parts if p.text is not None).strip()
        if text and not text.startswith("<") and not text.startswith("Caveat:"):
            return _clip(text)
    return None


def _clip(text: str, limit: int = TITLE_MAX) -> str:
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= limit else one_line[: limit - 1].rstrip() + "…"
