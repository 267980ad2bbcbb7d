"""Client messages from raw WebSocket frames: the validated message, or why it was refused — a short, safe
description that never echoes the input, with the message's ``id`` when it has a valid one."""

from __future__ import annotations

import json
from dataclasses import dataclass

from pydantic import ValidationError

from signaling import protocol as p


@dataclass(frozen=True, slots=True)
class BadMessage:
    reason: str
    msg_id: p.MessageId | None = None


ClientMessage = p.Allocate | p.Join | p.Relay | p.Leave | p.CloseRoom | p.Ping


def parse_client_message(raw: str | bytes) -> ClientMessage | BadMessage:
    try:
        return p.CLIENT_MESSAGE.validate_json(raw)
    except ValidationError as exc:
        return BadMessage(describe(exc), sniff_id(raw))
    except Exception:  # pragma: no cover - defensive: pydantic reports everything as ValidationError
        return BadMessage("malformed message")


def describe(exc: ValidationError) -> str:
    """A short, safe description of the first validation problem (never echoes the input)."""
    errors = exc.errors(include_url=False, include_input=False, include_context=False)
    if not errors:
        return "malformed message"
    first = errors[0]
    where = ".".join(str(part) for part in first.get("loc", ()) if not isinstance(part, int))
    text = str(first.get("msg", "invalid"))[:160]
    return f"{where}: {text}" if where else text


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
