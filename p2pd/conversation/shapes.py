"""What reading a conversation needs without the pydantic models: the roles, the format's names, what a message
and a part look like to their readers (a model, or a view of its JSON), and the counts.

:mod:`p2pd.conversation.model` builds on these; the streamed writer (:mod:`p2pd.agents.claude_code.streamed`) uses
them alone, so a packing process never imports pydantic (0.1 s of its start-up on this machine).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from enum import StrEnum
from typing import Any, Protocol

from p2pd.conversation import media_types as mt

FORMAT_NAME = "p2pd.conversation"
FORMAT_VERSION = 1
A2A_PROTOCOL_VERSION = "1.0"

JsonObject = dict[str, Any]


class Role(StrEnum):
    USER = "ROLE_USER"
    AGENT = "ROLE_AGENT"


class PartLike(Protocol):
    """What readers of parts use: a model's ``Part``, or a part's JSON read as one (a streamed writer's view)."""

    @property
    def text(self) -> str | None: ...
    @property
    def raw(self) -> str | None: ...
    @property
    def url(self) -> str | None: ...
    @property
    def media_type(self) -> str | None: ...
    @property
    def data_value(self) -> Any: ...


class MessageLike(Protocol):
    """What the summary, the counts and the title read of a message: a model's ``Message``, or a view of its
    JSON."""

    @property
    def role(self) -> Role: ...
    @property
    def p2pd(self) -> JsonObject: ...
    @property
    def parts(self) -> Sequence[PartLike]: ...


class _Counter(Protocol):
    messages: int
    user_messages: int
    agent_messages: int
    tool_calls: int
    tool_results: int
    active_messages: int
    side_branch_messages: int


def count_message(counts: _Counter, message: MessageLike) -> None:
    """Count one main-transcript message (its role, branch, tool calls and results) into ``counts``."""
    counts.messages += 1
    if message.role is Role.USER:
        counts.user_messages += 1
    else:
        counts.agent_messages += 1
    if message.p2pd.get("active", True):
        counts.active_messages += 1
    else:
        counts.side_branch_messages += 1
    for p in message.parts:
        if p.media_type == mt.TOOL_USE:
            counts.tool_calls += 1
        elif p.media_type == mt.TOOL_RESULT:
            counts.tool_results += 1


@dataclass
class Tally:
    """The document's ``counts`` as plain data (the fields of the model's ``Counts``, in its order: a test holds
    it)."""

    messages: int = 0
    user_messages: int = 0
    agent_messages: int = 0
    tool_calls: int = 0
    tool_results: int = 0
    active_messages: int = 0
    side_branch_messages: int = 0
    source_lines: int = 0
    records: int = 0
    malformed_lines: int = 0
    subagents: int = 0

    def add(self, message: MessageLike) -> None:
        count_message(self, message)

    def to_json_dict(self) -> JsonObject:
        return {_camel(f.name): getattr(self, f.name) for f in fields(self)}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.capitalize() for w in rest)
