"""A Claude Code message made straight into its JSON (``Message.to_json_dict()``'s dict), without the models.

The streamed writer (:mod:`p2pd.agents.claude_code.streamed`) converts every message of a session and writes it at
once: building and validating pydantic ``Part``/``Message`` objects only to turn them back into the dict they were
made from was a fifth of its conversion time. :func:`~p2pd.agents.claude_code.export.group_json` builds that dict
directly, with the same keys in the same order and the same values (the models validate nothing these values
could fail: a text part's text and an image's data and media type are strings by construction; a data part holds
any JSON); the model path is that dict validated (``Message.model_validate``), and a test holds both ways to the
same bytes over the whole corpus. :class:`~p2pd.conversation.message_view.MessageView` reads such a dict as the
summary, the counts and the title read a :class:`~p2pd.conversation.model.Message`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from p2pd.agents.claude_code.export import Group, group_json, units
from p2pd.agents.jsonl import SourceLine


def iter_messages_json(lines: Iterable[SourceLine], context_id: str, active: set[int]) -> Iterator[dict[str, Any]]:
    """The messages :func:`~p2pd.agents.claude_code.export.iter_transcript` makes of these lines, as JSON (the
    lines that make no message are skipped: a streamed writer passes only message lines)."""
    used_ids: set[str] = set()
    for unit in units(lines):
        if isinstance(unit, Group):
            yield group_json(unit, context_id, active, used_ids)
