"""Client messages from raw WebSocket frames: the validated message, or why it was refused — a short
description (msgspec's, cut to 160 characters; it may name a field or type the client sent, never a value) with
the message's ``id`` when it has a valid one."""

from __future__ import annotations

import json
from dataclasses import dataclass

import msgspec

from signaling import protocol as p


@dataclass(frozen=True, slots=True)
class BadMessage:
    reason: str
    msg_id: p.MessageId | None = None


ClientMessage = p.ClientMessage


# Containers inside containers, the message object included: relayed ``data`` nests at most 199 deep.
MAX_NESTING = 200


def parse_client_message(raw: str | bytes) -> ClientMessage | BadMessage:
    try:
        message = p.CLIENT_MESSAGE.decode(raw)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        return BadMessage(str(exc)[:160] or "malformed message", sniff_id(raw))
    except (RecursionError, UnicodeError):  # nested deeper than the interpreter's limit; a lone surrogate
        return BadMessage("malformed message", sniff_id(raw))
    if isinstance(message, p.Relay) and _brackets(raw) >= MAX_NESTING and nesting(message.data) >= MAX_NESTING:
        return BadMessage(f"data: nested more than {MAX_NESTING - 1} deep", message.id)
    return message


def nesting(value: object) -> int:
    """How deep lists and objects nest in a decoded JSON value (a scalar is 0, ``[]`` is 1), without recursion."""
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            depth += 1
            deepest = max(deepest, depth)
            stack.extend((child, depth) for child in (item.values() if isinstance(item, dict) else item)
                         if isinstance(child, dict | list))
    return deepest


def _brackets(raw: str | bytes) -> int:
    """Opening brackets in the frame (those in strings too): an upper bound of the nesting, counted in C."""
    if isinstance(raw, str):
        return raw.count("[") + raw.count("{")
    return raw.count(b"[") + raw.count(b"{")


def sniff_id(raw: str | bytes) -> p.MessageId | None:
    """The ``id`` of a message that failed validation, when it is a valid id, so the client can correlate."""
    try:
        value = json.loads(raw)
    except Exception:
        return None
    if isinstance(value, dict):
        msg_id = value.get("id")
        if isinstance(msg_id, int) and not isinstance(msg_id, bool) and abs(msg_id) < 2**53:
            return msg_id
        if isinstance(msg_id, str) and len(msg_id) <= 64:
            return msg_id
    return None
