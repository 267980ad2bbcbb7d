"""Conversation documents from parsed JSON: ``load_json`` (msgspec, ``json`` for what msgspec refuses; nesting past
MAX_DEPTH refused without recursing), ``document_from_json`` (a p2pd document, a bare list of A2A messages, or
``{"messages": [...]}``, validated), and the words of a schema error (with its JSON path). Used by the whole-document
reader (:mod:`p2pd.conversation.document_io`) and the streamed one (:mod:`p2pd.conversation.stream_reader`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from msgspec.json import decode
from pydantic import ValidationError

from p2pd.conversation.json_text import DECODE_REFUSED
from p2pd.conversation.legacy import normalize_message
from p2pd.conversation.model import FORMAT_NAME, FORMAT_VERSION, ConversationDocument, Message, Origin
from p2pd.errors import InvalidInputError

# JSON nesting a conversation document may have: real ones stay far below (tool arguments included); deeper
# input is refused before anything recursive (normalization, pydantic) walks it.
MAX_DEPTH = 256


def load_json(raw: bytes, source: str) -> Any:
    """Parse JSON text (msgspec, exact; else ``json`` for what msgspec refuses) and refuse nesting past MAX_DEPTH."""
    try:
        data = decode(raw)
    except DECODE_REFUSED:
        pass  # json says what is wrong (or reads what msgspec does not: NaN, lone surrogate escapes)
    else:
        check_depth(data, source=source)
        return data
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"{source} is not UTF-8 text (byte {exc.start}); not a conversation document") \
            from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{source} is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") \
            from None
    except RecursionError:  # the C decoder's own guard, far past MAX_DEPTH
        raise too_deep(source) from None
    check_depth(data, source=source)
    return data


def too_deep(source: str) -> InvalidInputError:
    return InvalidInputError(f"{source} nests JSON deeper than {MAX_DEPTH} levels; not a conversation document")


def check_depth(data: Any, *, source: str = "input", limit: int | None = None) -> None:
    """Refuse JSON nested deeper than ``limit`` (MAX_DEPTH) levels, without recursing (a hostile document must
    give one clear error, not a RecursionError from whatever walks it next)."""
    limit = MAX_DEPTH if limit is None else limit
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > limit:
            raise too_deep(source)
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values() if isinstance(v, dict | list))
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value if isinstance(v, dict | list))


def document_from_json(data: Any, *, source: str = "input") -> ConversationDocument:
    """Accept a p2pd document, a bare list of A2A messages (1.0 or 0.3), or ``{"messages": [...]}``."""
    if isinstance(data, list):
        data = {"messages": data}
    if not isinstance(data, dict):
        raise InvalidInputError(f"wrong schema in {source} at $: expected a JSON object or an array of messages, "
                                f"found {type(data).__name__}")
    fmt = data.get("format")
    if fmt is None and not isinstance(data.get("messages"), list):  # any other JSON is not a conversation
        raise InvalidInputError(f"{source} is not a conversation document: it has neither \"format\": "
                                f"\"{FORMAT_NAME}\" nor a list of messages (export one with `p2pd export`)")
    if fmt is not None and fmt != FORMAT_NAME:
        raise InvalidInputError(f"wrong schema in {source} at $.format: expected {FORMAT_NAME!r}, found {fmt!r}")
    version = data.get("formatVersion", FORMAT_VERSION)
    if isinstance(version, int) and version > FORMAT_VERSION:
        raise InvalidInputError(f"{source} uses conversation format version {version}; this p2pd reads up to "
                                f"{FORMAT_VERSION} — upgrade p2pd")
    data = _normalized(data)
    if fmt is None:
        data = _wrap_plain_messages(data)
    try:
        return ConversationDocument.model_validate(data)
    except ValidationError as exc:
        raise InvalidInputError(f"wrong schema in {source}: {describe_validation_error(exc)}") from None


def _normalized(data: dict[str, Any]) -> dict[str, Any]:
    out = dict(data)
    if isinstance(out.get("messages"), list):
        out["messages"] = [normalize_message(m) for m in out["messages"]]
    if isinstance(out.get("subagents"), list):
        subs = []
        for sub in out["subagents"]:
            if isinstance(sub, dict) and isinstance(sub.get("messages"), list):
                sub = {**sub, "messages": [normalize_message(m) for m in sub["messages"]]}
            subs.append(sub)
        out["subagents"] = subs
    return out


def _wrap_plain_messages(data: dict[str, Any]) -> dict[str, Any]:
    """A bare A2A conversation from another tool: give it the document envelope."""
    messages = data.get("messages")
    context = None
    if isinstance(messages, list) and messages and isinstance(messages[0], dict):
        context = messages[0].get("contextId")
    wrapped: dict[str, Any] = {
        "contextId": data.get("contextId") or context or "unknown",
        "createdAt": data.get("createdAt") or "",
        "origin": data.get("origin") or Origin(platform="a2a").to_json_dict(),
        "title": data.get("title") or "",
        "messages": messages if messages is not None else [],
    }
    return wrapped


def describe_validation_error(exc: ValidationError, limit: int = 3) -> str:
    """``at $.messages[3].parts[0]: a part holds exactly one of …`` for the first few errors."""
    parts = []
    for err in exc.errors()[:limit]:
        parts.append(f"at {json_path(err['loc'])}: {err['msg']}")
    more = len(exc.errors()) - limit
    if more > 0:
        parts.append(f"and {more} more")
    return "; ".join(parts)


def json_path(loc: Sequence[int | str]) -> str:
    out = "$"
    for item in loc:
        if isinstance(item, int):
            out += f"[{item}]"
        elif item in ("function-after[_exactly_one_content()]", "function-before[_data_may_be_json_null()]"):
            continue
        else:
            out += f".{item}"
    return out


def message_from_json(data: Any) -> Message:
    return Message.model_validate(normalize_message(data))
