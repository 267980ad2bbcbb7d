"""A platform-neutral reading of message parts: text, images, tool calls, tool results, reasoning.

Parts keep each agent's own shapes (a Claude Code block, a Codex response item, a Gemini tool call) so they can be
rebuilt exactly; this module is the one place that knows all of them. Summaries, team state, rendering and the
cross-agent importers read conversations through it.

Shapes read:

- TOOL_USE — Claude Code ``{type: tool_use, id, name, input}``; Codex ``function_call {call_id, name, arguments:
  JSON string}``, ``local_shell_call {call_id, action}``, ``custom_tool_call {call_id, name, input: str}``,
  ``web_search_call {action}``; Gemini ``toolCalls[]`` entries ``{id, name, args}`` and ``{functionCall}`` parts.
- TOOL_RESULT — Claude Code ``{tool_use_id, content, is_error}``; Codex ``function_call_output`` and
  ``custom_tool_call_output {call_id, output: str | content items}``; Gemini ``{id, name, status, result}`` and
  ``{functionResponse}`` parts.
- THINKING — Claude Code ``{thinking, signature}`` / ``redacted_thinking``; Codex ``reasoning {summary, content,
  encrypted_content}``; Gemini thoughts ``{subject, description}`` and ``{text, thought: true}`` parts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from p2pd.conversation import media_types as mt
from p2pd.conversation.shapes import MessageLike, PartLike


@dataclass
class Text:
    text: str


@dataclass
class Image:
    media_type: str
    data: str | None = None  # base64
    url: str | None = None


@dataclass
class ToolCall:
    id: str
    name: str
    input: Any  # usually a dict; a string for free-form tools
    raw_arguments: str | None = None  # Codex's JSON string, when that is how it came


@dataclass
class ToolResult:
    id: str
    text: str
    is_error: bool = False
    name: str | None = None
    images: list[Image] = field(default_factory=list)


@dataclass
class Reasoning:
    text: str
    opaque: bool = False  # signed (Claude) or encrypted (OpenAI) content that only the original provider accepts


@dataclass
class Other:
    media_type: str
    data: Any


Item = Text | Image | ToolCall | ToolResult | Reasoning | Other


def _s(v: Any) -> str:
    return v if isinstance(v, str) else ""


def _json_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def content_text(content: Any) -> tuple[str, list[Image]]:
    """Text (and images) of a tool output in any of the shapes above."""
    if content is None:
        return "", []
    if isinstance(content, str):
        return content, []
    if isinstance(content, list):
        texts: list[str] = []
        images: list[Image] = []
        for b in content:
            if isinstance(b, str):
                texts.append(b)
            elif isinstance(b, dict):
                if isinstance(b.get("text"), str):
                    texts.append(b["text"])
                elif b.get("type") == "image" and isinstance(b.get("source"), dict):
                    src = b["source"]
                    images.append(Image(_s(src.get("media_type")) or "image/png", data=src.get("data")))
                elif b.get("type") == "input_image" and isinstance(b.get("image_url"), str):
                    images.append(Image("image/*", url=b["image_url"]))
                elif isinstance(b.get("functionResponse"), dict):
                    texts.append(content_text(b["functionResponse"].get("response"))[0])
                else:
                    texts.append(_json_text(b))
        return "\n".join(t for t in texts if t), images
    if isinstance(content, dict):
        for key in ("output", "content", "text", "error"):
            if key in content:
                return content_text(content[key])
    return _json_text(content), []


def tool_call(data: Any) -> ToolCall | None:
    if not isinstance(data, dict):
        return None
    if isinstance(data.get("functionCall"), dict):
        data = data["functionCall"]
        return ToolCall(_s(data.get("id")), _s(data.get("name")) or "tool", data.get("args"))
    t = data.get("type")
    if t == "tool_use" or (t is None and "input" in data and "id" in data):
        return ToolCall(_s(data.get("id")), _s(data.get("name")) or "tool", data.get("input"))
    if t == "function_call":
        raw = data.get("arguments")
        parsed: Any = raw
        if isinstance(raw, str):
            try:
                parsed = json.loads(raw)
            except ValueError:
                parsed = raw
        return ToolCall(_s(data.get("call_id")) or _s(data.get("id")), _s(data.get("name")) or "function",
                        parsed, raw if isinstance(raw, str) else None)
    if t == "custom_tool_call":
        return ToolCall(_s(data.get("call_id")) or _s(data.get("id")), _s(data.get("name")) or "custom",
                        data.get("input"))
    if t == "local_shell_call":
        action = data.get("action") if isinstance(data.get("action"), dict) else {}
        return ToolCall(_s(data.get("call_id")) or _s(data.get("id")), "local_shell", action)
    if t == "web_search_call":
        return ToolCall(_s(data.get("call_id")) or _s(data.get("id")), "web_search", data.get("action"))
    if "args" in data or "name" in data:  # a Gemini tool call
        return ToolCall(_s(data.get("id")), _s(data.get("name")) or "tool", data.get("args"))
    return None


def tool_result(data: Any) -> ToolResult | None:
    if not isinstance(data, dict):
        return None
    if isinstance(data.get("functionResponse"), dict):
        fr = data["functionResponse"]
        text, images = content_text(fr.get("response"))
        return ToolResult(_s(fr.get("id")), text, name=_s(fr.get("name")) or None, images=images)
    if "tool_use_id" in data:
        text, images = content_text(data.get("content"))
        return ToolResult(_s(data.get("tool_use_id")), text, bool(data.get("is_error")), images=images)
    if data.get("type") in ("function_call_output", "custom_tool_call_output"):
        output = data.get("output")
        failed = isinstance(output, dict) and output.get("success") is False
        text, images = content_text(output)
        return ToolResult(_s(data.get("call_id")), text, failed, images=images)
    if "result" in data or "status" in data:  # Gemini
        text, images = content_text(data.get("result"))
        if not text and isinstance(data.get("resultDisplay"), str):
            text = data["resultDisplay"]
        return ToolResult(_s(data.get("id")), text, data.get("status") in ("error", "cancelled"),
                          name=_s(data.get("name")) or None, images=images)
    return None


def reasoning(data: Any) -> Reasoning:
    if not isinstance(data, dict):
        return Reasoning(_json_text(data))
    if data.get("type") == "redacted_thinking":
        return Reasoning("", opaque=True)
    if "thinking" in data:
        return Reasoning(_s(data.get("thinking")), opaque=bool(data.get("signature")))
    if data.get("type") == "reasoning":
        texts = [_s(s.get("text")) for key in ("summary", "content") if isinstance(data.get(key), list)
                 for s in data[key] if isinstance(s, dict)]
        return Reasoning("\n".join(t for t in texts if t), opaque=bool(data.get("encrypted_content")))
    if "subject" in data or "description" in data:
        subject, desc = _s(data.get("subject")), _s(data.get("description"))
        return Reasoning(f"{subject}: {desc}" if subject and desc else subject or desc)
    if isinstance(data.get("text"), str):
        return Reasoning(data["text"])
    return Reasoning(_json_text(data))


def part_items(part: PartLike) -> list[Item]:
    media = part.media_type or ""
    if part.text is not None:
        return [Text(part.text)]
    if part.raw is not None:
        return [Image(media or "application/octet-stream", data=part.raw)]
    if part.url is not None:
        return [Image(media or "application/octet-stream", url=part.url)]
    data = part.data_value
    if media == mt.TOOL_USE:
        call = tool_call(data)
        if call is not None:
            return [call]
    elif media == mt.TOOL_RESULT:
        res = tool_result(data)
        if res is not None:
            return [res]
    elif media in mt.THINKING_KINDS:
        return [reasoning(data)]
    elif media == mt.CLAUDE_CODE_BLOCK and isinstance(data, dict) and data.get("type") == "tool_reference":
        return [Text(f"[tool reference: {data.get('tool_name', '')}]")]
    return [Other(media, data)]


def message_items(message: MessageLike) -> list[Item]:
    return [item for p in message.parts for item in part_items(p)]


def message_text(message: MessageLike) -> str:
    return "\n".join(i.text for i in message_items(message) if isinstance(i, Text)).strip()
