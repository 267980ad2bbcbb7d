"""p2pd conversation document → the Codex rollout lines it was made from, exactly (the inverse of
:mod:`p2pd.codex.export`)."""

from __future__ import annotations

import copy
from typing import Any

from p2pd.agents.codex.items import CODEX, part_to_content_item
from p2pd.agents.jsonl import dumps_line, verbatim_text
from p2pd.conversation.model import Message, Transcript
from p2pd.errors import InvalidInputError


def codex_source(message: Message) -> dict[str, Any] | None:
    src = (message.metadata or {}).get(CODEX)
    return src if isinstance(src, dict) and isinstance(src.get("source"), dict) else None


def restore_message_line(message: Message) -> tuple[int, dict[str, Any]]:
    src = codex_source(message)
    if src is None:
        raise InvalidInputError(f"message {message.message_id} carries no Codex source data")
    obj = copy.copy(src["source"])
    how = src.get("from")
    if how == "data":
        if len(message.parts) != 1 or message.parts[0].kind != "data":
            raise InvalidInputError(f"message {message.message_id}: a Codex item must be one data part")
        obj["payload"] = message.parts[0].data_value
    elif how == "content":
        payload = dict(obj.get("payload") or {})
        payload["content"] = [part_to_content_item(p) for p in message.parts]
        obj["payload"] = payload
    elif how == "message":
        if len(message.parts) != 1 or message.parts[0].text is None:
            raise InvalidInputError(f"message {message.message_id}: a compaction must be one text part")
        obj["payload"] = {"message": message.parts[0].text, **(obj.get("payload") or {})}
    else:
        raise InvalidInputError(f"message {message.message_id}: unknown Codex source kind {how!r}")
    line = src.get("line")
    return (line if isinstance(line, int) else 0), obj


def codex_lines(message: Message) -> list[tuple[int, dict[str, Any]]] | None:
    """A message's Codex rollout line, or None when it carries none (what a spool keeps for a Codex import)."""
    return [restore_message_line(message)] if codex_source(message) is not None else None


def restore_rollout(transcript: Transcript) -> list[tuple[int, Any]]:
    """Every line in file order: (line number, JSON value), or (line number, raw text) for malformed lines."""
    items: list[tuple[int, Any]] = [restore_message_line(m) for m in transcript.messages]
    for rec in transcript.records:
        text = verbatim_text(rec)
        items.append((rec.line, _RawText(text) if text is not None else rec.value))
    items.sort(key=lambda item: item[0])
    return items


class _RawText(str):
    """A line kept verbatim (it was not a JSON object)."""


def restored_values(transcript: Transcript) -> list[Any]:
    return [str(v) if isinstance(v, _RawText) else v for _, v in restore_rollout(transcript)]


def to_jsonl(transcript: Transcript) -> str:
    out = []
    for _, value in restore_rollout(transcript):
        out.append(str(value) if isinstance(value, _RawText)
                   else dumps_line(value))
    return "".join(line + "\n" for line in out)
