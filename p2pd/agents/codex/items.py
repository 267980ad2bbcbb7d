"""Codex response items ⇄ A2A parts, losslessly.

| response item (``payload.type``)                      | message role, kind       | parts                      |
|-------------------------------------------------------|--------------------------|----------------------------|
| ``message`` role user                                 | user, prompt (or meta)   | one part per content item  |
| ``message`` role developer / system                   | user, meta               | one part per content item  |
| ``message`` role assistant                            | agent, response          | one part per content item  |
| ``reasoning`` (summary, content, encrypted_content)   | agent, response          | THINKING data = the item   |
| ``function_call`` (``arguments`` is a JSON string)    | agent, response          | TOOL_USE data = the item   |
| ``local_shell_call``, ``custom_tool_call``,           | agent, response          | TOOL_USE data = the item   |
| ``web_search_call``                                   |                          |                            |
| ``function_call_output``, ``custom_tool_call_output`` | user, tool-result        | TOOL_RESULT data = the item|
| any other item                                        | agent, item              | CODEX_ITEM data = the item |

Content items: ``input_text``/``output_text`` → text part (anything else the item holds is kept in
``part.metadata.codex.item``); ``input_image`` with a base64 ``data:`` URL → raw part; with another URL → url part;
anything else → CODEX_ITEM data part. The item itself is always rebuilt exactly.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from p2pd.conversation import media_types as mt
from p2pd.conversation.model import Part, Role

CODEX = "codex"
TEXT_ITEMS = ("input_text", "output_text")
TOOL_CALL_TYPES = {"function_call", "local_shell_call", "custom_tool_call", "web_search_call"}
TOOL_OUTPUT_TYPES = {"function_call_output", "custom_tool_call_output"}
_DATA_URL = re.compile(r"^data:(?P<media>[\w.+/-]+);base64,(?P<data>.*)$", re.DOTALL)


def item_media_type(item_type: Any) -> str:
    if item_type in TOOL_CALL_TYPES:
        return mt.TOOL_USE
    if item_type in TOOL_OUTPUT_TYPES:
        return mt.TOOL_RESULT
    if item_type == "reasoning":
        return mt.THINKING
    return mt.CODEX_ITEM


def role_and_kind(payload: dict[str, Any]) -> tuple[Role, str]:
    ptype = payload.get("type")
    if ptype == "message":
        role = payload.get("role")
        if role == "assistant":
            return Role.AGENT, "response"
        if role == "user":
            return Role.USER, "meta" if _is_injected_context(payload.get("content")) else "prompt"
        return Role.USER, "meta"
    if ptype in TOOL_OUTPUT_TYPES:
        return Role.USER, "tool-result"
    if ptype in TOOL_CALL_TYPES or ptype == "reasoning":
        return Role.AGENT, "response"
    return Role.AGENT, "item"


def _is_injected_context(content: Any) -> bool:
    """Codex injects AGENTS.md and the environment as user messages (``<environment_context>…``)."""
    if not isinstance(content, list) or not content:
        return False
    first = content[0]
    text = first.get("text") if isinstance(first, dict) else None
    if not isinstance(text, str):
        return False
    head = text.lstrip()
    return head.startswith(("<environment_context>", "<user_instructions>", "# AGENTS.md", "[AGENTS.md")) or (
        head.startswith("<") and head.split(">", 1)[0].endswith(("_context", "_instructions")))


def content_item_to_part(item: Any) -> Part:
    if isinstance(item, dict):
        itype = item.get("type")
        if itype in TEXT_ITEMS and isinstance(item.get("text"), str):
            extra = {k: v for k, v in item.items() if k != "text"}
            return Part(text=item["text"], media_type=mt.TEXT, metadata={CODEX: {"item": extra}})
        if itype == "input_image" and isinstance(item.get("image_url"), str):
            rest = {k: v for k, v in item.items() if k != "image_url"}
            m = _DATA_URL.match(item["image_url"])
            if m and _is_base64(m.group("data")):
                rest["dataUrlMediaType"] = m.group("media")
                return Part(raw=m.group("data"), media_type=m.group("media"), metadata={CODEX: {"item": rest}})
            return Part(url=item["image_url"], metadata={CODEX: {"item": rest}})
    return Part.model_validate({"data": item, "mediaType": mt.CODEX_ITEM})


def part_to_content_item(part: Part) -> Any:
    meta = (part.metadata or {}).get(CODEX)
    extra = meta.get("item") if isinstance(meta, dict) else None
    extra = dict(extra) if isinstance(extra, dict) else None
    if part.text is not None:
        item: dict[str, Any] = {"type": "input_text"}
        if extra is not None:
            item = extra
        return {**item, "text": part.text}
    if part.raw is not None:
        media = part.media_type or "image/png"
        if extra is not None:
            media = extra.pop("dataUrlMediaType", media)
            return {**extra, "image_url": f"data:{media};base64,{part.raw}"}
        return {"type": "input_image", "image_url": f"data:{media};base64,{part.raw}"}
    if part.url is not None:
        return {**(extra or {"type": "input_image"}), "image_url": part.url}
    return part.data_value


def _is_base64(value: str) -> bool:
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def payload_to_parts(payload: dict[str, Any]) -> tuple[list[Part], str]:
    """The parts of one response item, and where its source keeps the rest: ``content`` (a message: the parts
    are its content items) or ``data`` (one data part is the whole item)."""
    if payload.get("type") == "message" and isinstance(payload.get("content"), list):
        return [content_item_to_part(c) for c in payload["content"]], "content"
    return [Part.model_validate({"data": payload, "mediaType": item_media_type(payload.get("type"))})], "data"
