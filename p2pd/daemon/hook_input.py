"""The JSON an agent's hook gives ``p2pd hook ACTION`` on stdin, from Claude Code or from Codex CLI.

Both send one object with the same core fields (``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name``;
``source`` at SessionStart; ``last_assistant_message`` at Stop). They are told apart by fields, never by text:
Codex adds ``turn_id`` to its turn events, may pass ``transcript_path: null`` (an ephemeral session) and names its
transcript ``rollout-….jsonl``; anything else is taken as Claude Code. Codex 0.169's input schemas (embedded in its
binary) and what it sent in a real run are in ``p2pd/daemon/DAEMON.md`` ("Codex CLI hooks").

Bad input is refused with :class:`~p2pd.errors.InvalidInputError`: not JSON, not an object, no ``session_id``, a
known field of the wrong type, or a ``hook_event_name`` for another event than the command's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from p2pd.errors import InvalidInputError

EVENTS: dict[str, str] = {"SessionStart": "session-start", "UserPromptSubmit": "prompt-submit", "Stop": "stop",
                          "SessionEnd": "session-end"}  # the agent's hook event → p2pd's hook action
CLAUDE_CODE = "claude-code"
CODEX = "codex"
SESSION_ID_MAX = 200
_TEXT_FIELDS = ("session_id", "transcript_path", "cwd", "source", "last_assistant_message", "turn_id",
                "hook_event_name")
_KEPT = {"session-start": ("session_id", "transcript_path", "cwd", "source")}
_KEPT_DEFAULT = ("session_id", "transcript_path", "cwd", "last_assistant_message")


@dataclass(frozen=True)
class HookInput:
    """One hook call: which agent sent it and the fields p2pd uses (only those that are strings)."""

    agent: str
    action: str
    record: dict[str, str]

    @property
    def session_id(self) -> str:
        return self.record["session_id"]


def agent_of(data: dict[str, Any]) -> str:
    """Which agent sent this input, by its fields."""
    path = data.get("transcript_path")
    if "turn_id" in data or ("transcript_path" in data and path is None):
        return CODEX
    if isinstance(path, str) and PurePath(path).name.startswith("rollout-"):
        return CODEX
    return CLAUDE_CODE


def parse(raw: str, action: str) -> HookInput:
    """Check and read the hook input for ``action`` (``session-start``, ``prompt-submit``, ``stop``,
    ``session-end``)."""
    events = {a: e for e, a in EVENTS.items()}
    if action not in events:
        raise InvalidInputError(f"unknown hook event {action!r} (one of {', '.join(EVENTS.values())})")
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise InvalidInputError(f"the hook input is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise InvalidInputError("the hook input is not a JSON object")
    for name in _TEXT_FIELDS:
        if name in data and data[name] is not None and not isinstance(data[name], str):
            raise InvalidInputError(f"the hook input's {name!r} is not a string")
    sid = data.get("session_id")
    if not isinstance(sid, str) or not sid.strip():
        raise InvalidInputError(f"the hook input has no session_id (is this run by Claude Code's or Codex's "
                                f"{events[action]} hook?)")
    if len(sid) > SESSION_ID_MAX:
        raise InvalidInputError(f"the hook input's session_id is longer than {SESSION_ID_MAX} characters")
    named = data.get("hook_event_name")
    if named is not None and named not in (events[action], action):
        raise InvalidInputError(f"this input is for another hook event than {events[action]} "
                                f"(`p2pd hook {action}`); check the hook configuration")
    record = {k: data[k] for k in _KEPT.get(action, _KEPT_DEFAULT) if isinstance(data.get(k), str)}
    return HookInput(agent_of(data), action, record)
