"""A Claude Code message made straight into its JSON (``Message.to_json_dict()``'s dict), without the models.

The streamed writer (:mod:`p2pd.agents.claude_code.streamed`) converts every message of a session and writes it at
once: building and validating pydantic ``Part``/``Message`` objects only to turn them back into the dict they were
made from was a fifth of its conversion time. :func:`~p2pd.agents.claude_code.export.group_json` builds that dict
directly, with the same keys in the same order and the same values (the models validate nothing these values
could fail: a text part's text and an image's data and media type are strings by construction; a data part holds
any JSON); the model path is that dict validated (``Message.model_validate``), and a test holds both ways to the
same bytes over the whole corpus. :class:`MessageView` reads such a dict as the summary, the counts and the
title read a :class:`~p2pd.conversation.model.Message` (role, ``metadata.p2pd``, parts).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from p2pd.agents.claude_code.export import Group, group_json, units
from p2pd.agents.jsonl import SourceLine
from p2pd.conversation.shapes import Role


def iter_messages_json(lines: Iterable[SourceLine], context_id: str, active: set[int]) -> Iterator[dict[str, Any]]:
    """The messages :func:`~p2pd.agents.claude_code.export.iter_transcript` makes of these lines, as JSON (the
    lines that make no message are skipped: a streamed writer passes only message lines)."""
    used_ids: set[str] = set()
    for unit in units(lines):
        if isinstance(unit, Group):
            yield group_json(unit, context_id, active, used_ids)


_ROLES = {r.value: r for r in Role}


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
        role = message["role"]
        self.role = _ROLES[role] if role in _ROLES else Role(role)  # (the enum's call is slow; the same member)
        meta = (message.get("metadata") or {}).get("p2pd")
        self.p2pd: dict[str, Any] = meta if isinstance(meta, dict) else {}
        self.parts = [PartView(p) for p in message["parts"]]
