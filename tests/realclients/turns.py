"""What a model request holds of a conversation: its tool calls and its user texts, read the way each API puts them.

The expectation for an import comes from a *control*: the same real program resumed on the original session
(Claude Code on a Claude Code file, Codex on a Codex rollout), so what the program itself sends is the measure.
Gemini sessions, which no pinned program reads, are read from the file (``messages[].toolCalls``, user ``content``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.realclients.programs import PROMPT


@dataclass(frozen=True)
class Call:
    id: str
    name: str


@dataclass
class Turns:
    """The tool calls (in order) and the user texts (in order) of one request."""

    calls: list[Call]
    user_texts: list[str]
    agent_texts: list[str]

    @property
    def last_user_text(self) -> str | None:
        return self.user_texts[-1] if self.user_texts else None

    def all_text(self) -> str:
        return "\n".join(self.user_texts + self.agent_texts)


# Text the programs add to every request themselves (not part of any conversation), and the records of Claude
# Code's local commands (``/model`` …), which Claude Code 2.1.3xx also sends as user text but which are the UI's
# records rather than turns (p2pd leaves ``system`` rows out of what it imports), and Codex's ``<turn_aborted>``
# marker.
_INJECTED = ("<system-reminder>", "<command-name>", "<command-message>", "<local-command-stdout>",
             "<local-command-stderr>", "<local-command-caveat>", "Caveat: The messages below were generated",
             "<turn_aborted>", "<environment_context>", "<user_instructions>", "# AGENTS.md", "<permissions",
             "<INSTRUCTIONS>", "<collaboration_mode>", "<skills_instructions>", "<personality", "<apps_instructions>",
             "<plugins_instructions>")


def _own(text: str) -> bool:
    return bool(text.strip()) and not text.lstrip().startswith(_INJECTED) and text.strip() != PROMPT


def conversation_request(requests: list[Any], key: str) -> dict[str, Any] | None:
    """The request that carries the resumed conversation: the longest one whose last user turn is the prompt."""
    best: dict[str, Any] | None = None
    for body in requests:
        items = body.get(key)
        if not isinstance(items, list) or not items or PROMPT not in json.dumps(items[-1]):
            continue
        if best is None or len(items) > len(best[key]):
            best = body
    return best


def anthropic_turns(body: dict[str, Any]) -> Turns:
    calls: list[Call] = []
    users: list[str] = []
    agent: list[str] = []
    for msg in body.get("messages", []):
        content = msg.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for b in blocks:
            if not isinstance(b, dict):
                continue
            if b.get("type") == "tool_use":
                calls.append(Call(str(b.get("id")), str(b.get("name"))))
            elif b.get("type") == "text" and isinstance(b.get("text"), str) and _own(b["text"]):
                (users if msg.get("role") == "user" else agent).append(b["text"])
    return Turns(calls, users, agent)


def responses_turns(body: dict[str, Any]) -> Turns:
    calls: list[Call] = []
    users: list[str] = []
    agent: list[str] = []
    for item in body.get("input", []):
        kind = item.get("type")
        if kind in ("function_call", "custom_tool_call", "local_shell_call", "tool_search_call"):
            calls.append(Call(str(item.get("call_id")), str(item.get("name", kind))))
        elif kind == "message" or (kind is None and "role" in item):
            content = item.get("content")
            parts = [{"text": content}] if isinstance(content, str) else content or []
            for p in parts:
                text = p.get("text") if isinstance(p, dict) else None
                if isinstance(text, str) and _own(text):
                    (users if item.get("role") == "user" else agent).append(text)
    return Turns(calls, users, agent)


def gemini_turns(source: Path) -> Turns:
    data = json.loads(source.read_text(encoding="utf-8"))
    calls: list[Call] = []
    users: list[str] = []
    agent: list[str] = []
    for msg in data.get("messages", []):
        content = msg.get("content")
        parts = [{"text": content}] if isinstance(content, str) else content or []
        texts = [p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)]
        if msg.get("type") == "user":
            users.extend(t for t in texts if t.strip())
        elif msg.get("type") == "gemini":
            agent.extend(t for t in texts if t.strip())
            calls.extend(Call(str(c.get("id")), str(c.get("name"))) for c in msg.get("toolCalls") or [])
    return Turns(calls, users, agent)


def request_turns(body: dict[str, Any]) -> Turns:
    return anthropic_turns(body) if "messages" in body else responses_turns(body)
