"""A2A messages that did not come from Claude Code → Claude Code transcript lines.

Used when a conversation from another agent (or a plain A2A message list) is imported into Claude Code. Tool
calls and results keep their structure when the parts carry p2pd's tool media types; anything Claude Code cannot
take as is becomes readable text, so the resumed agent still sees it.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from p2pd.agents.spec import moved_images_note
from p2pd.conversation import media_types as mt
from p2pd.conversation.model import Message, Part, Role

SYNTH_VERSION = "2.1.39"
# Claude Code restores each message's model as the session model and warns on a name it does not know (another
# agent's model); "<synthetic>" is what it writes on the messages it makes itself.
SYNTH_MODEL = "<synthetic>"


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def part_to_blocks(part: Part, role: Role) -> list[dict[str, Any]]:
    media = part.media_type or ""
    if part.text is not None:
        return [_text(part.text)] if part.text else []
    if part.raw is not None:
        if media.startswith("image/"):
            return [{"type": "image", "source": {"type": "base64", "media_type": media, "data": part.raw}}]
        return [_text(f"[attached file {part.filename or ''} ({media or 'binary'}), not shown]")]
    if part.url is not None:
        return [_text(f"[file: {part.filename or part.url}]({part.url})")]
    data = part.data_value
    if media == mt.TOOL_USE and isinstance(data, dict) and role is Role.AGENT:
        tool_id = data.get("id") or f"toolu_p2pd_{uuid.uuid4().hex[:20]}"
        tool_input = data.get("input")
        if not isinstance(tool_input, dict):
            tool_input = {"value": tool_input}
        return [{"type": "tool_use", "id": tool_id, "name": str(data.get("name") or "tool"), "input": tool_input}]
    if media == mt.TOOL_RESULT and isinstance(data, dict) and role is Role.USER:
        content = data.get("content")
        if not isinstance(content, (str, list)):
            content = json.dumps(content, ensure_ascii=False)
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": str(data.get("tool_use_id", "")),
                                 "content": content}
        if data.get("is_error"):
            block["is_error"] = True
        return [block]
    if media in mt.THINKING_KINDS:
        return []  # reasoning from another model cannot be replayed; it is dropped (and reported)
    return [_text(f"```json\n{json.dumps(data, ensure_ascii=False, indent=1)}\n```")]


def synthesize_lines(messages: Iterable[Message], count: int, git_branch: str | None, session_id: str,
                     cwd: str) -> Iterator[dict[str, Any]]:
    """Claude Code lines, one by one, for a conversation without Claude Code source data (one line per active
    message of the ``count`` messages), linked into one chain."""
    start = datetime.now(UTC) - timedelta(seconds=count + 1)
    carried: list[dict[str, Any]] = []  # images of agent turns, for the next user line (the API takes them there)
    ts = _stamp(start)
    prev: str | None = None
    active = (m for m in messages if m.p2pd.get("active", True))
    for i, m in enumerate(active):
        blocks: list[dict[str, Any]] = []
        for p in m.parts:
            blocks.extend(part_to_blocks(p, m.role))
        if m.role is Role.AGENT:
            carried.extend(b for b in blocks if b["type"] == "image")
            blocks = [b for b in blocks if b["type"] != "image"]
        elif carried:
            blocks += [_text(moved_images_note(len(carried))), *carried]
            carried = []
        if not blocks:
            continue
        ts = _stamp(start + timedelta(seconds=i))
        line: dict[str, Any] = {
            "parentUuid": prev, "isSidechain": False, "userType": "external", "cwd": cwd,
            "sessionId": session_id, "version": SYNTH_VERSION, "gitBranch": git_branch or "",
            "type": "user" if m.role is Role.USER else "assistant", "uuid": str(uuid.uuid4()), "timestamp": ts,
        }
        if m.role is Role.USER:
            line["message"] = {"role": "user", "content": blocks}
        else:
            line["message"] = {"id": f"msg_p2pd_{uuid.uuid4().hex[:24]}", "type": "message", "role": "assistant",
                               "model": SYNTH_MODEL, "content": blocks,
                               "stop_reason": "end_turn", "stop_sequence": None,
                               "usage": {"input_tokens": 0, "output_tokens": 0}}
        prev = line["uuid"]
        yield line
    if carried:
        yield {"parentUuid": prev, "isSidechain": False, "userType": "external", "cwd": cwd,
               "sessionId": session_id, "version": SYNTH_VERSION, "gitBranch": git_branch or "",
               "type": "user", "uuid": str(uuid.uuid4()), "timestamp": ts,
               "message": {"role": "user", "content": [_text(moved_images_note(len(carried))), *carried]}}


def _stamp(when: datetime) -> str:
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def messages_text(messages: list[Message]) -> str:
    return "\n".join(p.text for m in messages for p in m.parts if p.text)
