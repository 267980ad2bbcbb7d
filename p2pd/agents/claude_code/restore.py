"""p2pd conversation document → the Claude Code source lines it was made from, exactly.

Messages carry, per source line, the line minus ``message.content``; the content comes back from the parts.
Records come back as they were (malformed lines byte for byte). Lines are put back in their original order.
"""

from __future__ import annotations

import copy
from typing import Any

from p2pd.agents.claude_code.blocks import part_to_block
from p2pd.agents.claude_code.export import CC_KEY
from p2pd.agents.jsonl import dumps_line, verbatim_text
from p2pd.conversation.model import Message, Transcript
from p2pd.errors import InvalidInputError


def source_lines(message: Message) -> list[dict[str, Any]] | None:
    cc = (message.metadata or {}).get(CC_KEY)
    lines = cc.get("lines") if isinstance(cc, dict) else None
    return lines if isinstance(lines, list) else None


def restore_message_lines(message: Message) -> list[tuple[int, dict[str, Any]]]:
    """The source lines of one message as (line number, JSON object)."""
    sources = source_lines(message)
    if sources is None:
        raise InvalidInputError(f"message {message.message_id} carries no Claude Code source data")
    out = []
    cursor = 0
    for src in sources:
        count = src.get("parts")
        envelope = src.get("source")
        if not isinstance(count, int) or not isinstance(envelope, dict) or count < 0:
            raise InvalidInputError(f"message {message.message_id}: malformed Claude Code source entry")
        parts = message.parts[cursor: cursor + count]
        if len(parts) != count:
            raise InvalidInputError(f"message {message.message_id}: source lines claim more parts than it has")
        cursor += count
        obj = copy.copy(envelope)
        msg = dict(envelope.get("message") or {})
        if src.get("content") == "string":
            if count != 1 or parts[0].text is None:
                raise InvalidInputError(f"message {message.message_id}: string content must be one text part")
            msg["content"] = parts[0].text
        else:
            msg["content"] = [part_to_block(p) for p in parts]
        obj["message"] = msg
        out.append((int(src.get("line", 0)), obj))
    if cursor != len(message.parts):
        raise InvalidInputError(f"message {message.message_id}: {len(message.parts) - cursor} parts belong to "
                                "no source line")
    return out


def restore_transcript(transcript: Transcript) -> list[tuple[int, Any]]:
    """Every line, in file order: (line number, JSON object) or (line number, raw text str) for malformed ones."""
    items: list[tuple[int, Any]] = []
    for m in transcript.messages:
        items.extend(restore_message_lines(m))
    for rec in transcript.records:
        text = verbatim_text(rec)
        items.append((rec.line, _RawText(text) if text is not None else rec.value))
    items.sort(key=lambda item: item[0])
    return items


class _RawText(str):
    """A line kept verbatim (it was not a JSON object)."""


def to_jsonl(transcript: Transcript) -> str:
    out = []
    for _, value in restore_transcript(transcript):
        if isinstance(value, _RawText):
            out.append(str(value))
        else:
            out.append(dumps_line(value))
    return "".join(line + "\n" for line in out)


def restored_objects(transcript: Transcript) -> list[Any]:
    """The lines as Python values (raw text for malformed ones), for comparisons."""
    return [str(v) if isinstance(v, _RawText) else v for _, v in restore_transcript(transcript)]
