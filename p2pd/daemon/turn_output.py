"""A session's last turn output, for a Stop hook: what the agent said since the last prompt, bounded.

Claude Code's and Codex's Stop hooks may pass ``last_assistant_message``; otherwise the end of the transcript is read
— at most :data:`TAIL_BYTES` from its end. For a Claude Code JSONL file the text blocks of the main chain's assistant
lines after the last real user prompt (not a tool result, not a sidechain) are joined; for a Codex rollout (lines
``{"type": "response_item" | "event_msg" | …, "payload": …}``) it is the last ``task_complete`` event's
``last_agent_message``, else the ``output_text`` of the assistant messages after the last user message. The result
is cut to ``limit`` characters (keeping the end, where the agent's conclusion is) and redacted when asked.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

TAIL_BYTES = 4 << 20
TURN_LIMIT = 12_000


def _text_blocks(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text"
            and isinstance(b.get("text"), str)]


def _is_prompt(line: dict[str, Any]) -> bool:
    """A user line a person (or a program driving the agent) typed: not a tool result, not meta."""
    if line.get("type") != "user" or line.get("isMeta") or line.get("isSidechain"):
        return False
    content = (line.get("message") or {}).get("content")
    if isinstance(content, str):
        return True
    return isinstance(content, list) and not any(isinstance(b, dict) and b.get("type") == "tool_result"
                                                 for b in content)


def _tail_lines(path: Path) -> list[str]:
    with open(path, "rb") as fh:
        size = fh.seek(0, os.SEEK_END)
        start = max(0, size - TAIL_BYTES)
        fh.seek(start)
        data = fh.read()
    if start:
        data = data.split(b"\n", 1)[1] if b"\n" in data else b""
    return data.decode("utf-8", errors="replace").splitlines()


def _rollout_turn(lines: list[dict[str, Any]]) -> str:
    """A Codex rollout's last turn: its ``task_complete`` summary, else the assistant text since the user spoke."""
    texts: list[str] = []
    for line in reversed(lines):
        payload = line.get("payload")
        if not isinstance(payload, dict):
            continue
        if line.get("type") == "event_msg" and payload.get("type") == "task_complete":
            if isinstance(payload.get("last_agent_message"), str) and payload["last_agent_message"].strip():
                return str(payload["last_agent_message"]).strip()
            continue
        if line.get("type") != "response_item" or payload.get("type") != "message":
            continue
        if payload.get("role") == "user":
            break
        if payload.get("role") == "assistant" and isinstance(payload.get("content"), list):
            texts[:0] = [b["text"] for b in payload["content"] if isinstance(b, dict)
                         and b.get("type") == "output_text" and isinstance(b.get("text"), str)]
    return "\n\n".join(t.strip() for t in texts if t.strip())


def _is_rollout(line: dict[str, Any]) -> bool:
    return isinstance(line.get("payload"), dict) and line.get("type") in ("session_meta", "response_item",
                                                                         "event_msg", "turn_context")


def last_turn(transcript: str | os.PathLike[str]) -> str:
    """The assistant text of the transcript's last turn ("" when there is none or the file cannot be read): a
    Claude Code transcript or a Codex rollout, told apart by the shape of its lines."""
    try:
        raw_lines = _tail_lines(Path(transcript))
    except OSError:
        return ""
    lines: list[dict[str, Any]] = []
    for raw in raw_lines:
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        if isinstance(line, dict):
            lines.append(line)
    if any(_is_rollout(line) for line in lines[-50:]):
        return _rollout_turn(lines)
    texts: list[str] = []
    for line in reversed(lines):
        if line.get("isSidechain"):
            continue
        if _is_prompt(line):
            break
        if line.get("type") == "assistant":
            texts[:0] = _text_blocks((line.get("message") or {}).get("content"))
    return "\n\n".join(t.strip() for t in texts if t.strip())


def bounded(text: str, limit: int = TURN_LIMIT, *, redact: bool = False) -> str:
    """``text`` redacted (when asked) and cut to ``limit`` characters, keeping its end."""
    if redact:
        from p2pd.conversation.redact import redact_text

        text = redact_text(text)
    if len(text) > limit:
        text = "…" + text[-(limit - 1):]
    return text
