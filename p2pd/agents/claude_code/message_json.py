"""A Claude Code message made straight into its JSON (``Message.to_json_dict()``'s dict), without the models.

The streamed writer (:mod:`p2pd.agents.claude_code.streamed`) converts every message of a session and writes it at
once: building and validating pydantic ``Part``/``Message`` objects only to turn them back into the dict they were
made from was a fifth of its conversion time. :func:`group_json` builds that dict directly, with the same keys in
the same order and the same values (the models validate nothing these values could fail: a text part's text and
an image's data and media type are strings by construction; a data part holds any JSON); a test holds both ways
to the same bytes over the whole corpus. :class:`MessageView` reads such a dict as the summary, the counts and the
title read a :class:`~p2pd.conversation.model.Message` (role, ``metadata.p2pd``, parts).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator
from typing import Any

from p2pd.agents.claude_code.blocks import DATA_BLOCK_TYPES, is_base64
from p2pd.agents.claude_code.export import Group, units
from p2pd.agents.jsonl import SourceLine
from p2pd.conversation import media_types as mt
from p2pd.conversation.shapes import Role

_CC = "claudeCode"
_TEXT_KEYS = frozenset({"type", "text"})


def block_part_json(block: Any) -> dict[str, Any]:
    """``block_to_part(block).to_json_dict()``."""
    if block.__class__ is dict:
        btype = block.get("type")
        if btype == "text" and (text := block.get("text")).__class__ is str:
            extra = {k: v for k, v in block.items() if k not in _TEXT_KEYS}
            if not extra:
                return {"text": text, "mediaType": mt.TEXT}
            return {"text": text, "metadata": {_CC: {"block": extra}}, "mediaType": mt.TEXT}
        if btype == "image":
            source = block.get("source")
            if (isinstance(source, dict) and source.get("type") == "base64"
                    and isinstance(source.get("data"), str) and isinstance(source.get("media_type"), str)
                    and is_base64(source["data"])):
                rest = copy.copy(block)
                rest["source"] = {k: v for k, v in source.items() if k != "data"}
                return {"raw": source["data"], "metadata": {_CC: {"block": rest}}, "mediaType": source["media_type"]}
        media = DATA_BLOCK_TYPES.get(btype, mt.CLAUDE_CODE_BLOCK) if isinstance(btype, str) else mt.CLAUDE_CODE_BLOCK
        return {"data": block, "mediaType": media}
    return {"data": block, "mediaType": mt.CLAUDE_CODE_BLOCK}


def iter_messages_json(lines: Iterable[SourceLine], context_id: str, active: set[int]) -> Iterator[dict[str, Any]]:
    """The messages :func:`~p2pd.agents.claude_code.export.iter_transcript` makes of these lines, as JSON (the
    lines that make no message are skipped: a streamed writer passes only message lines)."""
    used_ids: set[str] = set()
    for unit in units(lines):
        if isinstance(unit, Group):
            yield group_json(unit, context_id, active, used_ids)


def group_json(group: Group, context_id: str, active: set[int], used_ids: set[str]) -> dict[str, Any]:
    """``_group_to_message(group, …).to_json_dict()`` (:mod:`p2pd.agents.claude_code.export`)."""
    parts: list[dict[str, Any]] = []
    sources = []
    for line, obj in group.lines:
        message = obj["message"]
        content = message["content"]
        envelope = dict(obj)
        envelope["message"] = {k: v for k, v in message.items() if k != "content"}
        if isinstance(content, str):
            parts.append({"text": content, "mediaType": mt.TEXT})
            sources.append({"line": line.n, "content": "string", "parts": 1, "source": envelope})
        else:
            parts.extend(block_part_json(b) for b in content)
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
            "metadata": {"p2pd": neutral, _CC: {"lines": sources}}, "extensions": [mt.EXT_CLAUDE_CODE]}


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


class PartView:
    """A part's JSON read as a :class:`~p2pd.conversation.model.Part` is (the attributes the readers use)."""

    __slots__ = ("data_value", "media_type", "raw", "text", "url")

    def __init__(self, part: dict[str, Any]) -> None:
        self.text: str | None = part.get("text")
        self.raw: str | None = part.get("raw")
        self.url: str | None = part.get("url")
        self.media_type: str | None = part.get("mediaType")
        self.data_value: Any = part.get("data")


class MessageView:
    """A message's JSON read as a :class:`~p2pd.conversation.model.Message` is (role, ``p2pd``, parts)."""

    __slots__ = ("message_id", "p2pd", "parts", "role")

    def __init__(self, message: dict[str, Any]) -> None:
        self.message_id: str = message["messageId"]
        self.role = Role(message["role"])
        meta = (message.get("metadata") or {}).get("p2pd")
        self.p2pd: dict[str, Any] = meta if isinstance(meta, dict) else {}
        self.parts = [PartView(p) for p in message["parts"]]
