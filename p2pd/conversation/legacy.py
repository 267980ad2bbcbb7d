"""Reading older A2A message shapes and turning them into A2A 1.0.

- A2A v0.2/v0.3 JSON: ``"kind": "message"``, roles ``user``/``agent``, parts tagged ``"kind": "text"|"file"|"data"``,
  files as ``{"file": {"bytes"|"uri", "mimeType", "name"}}``.
- The older ``type``-tagged parts (v0.1 and some tools): ``{"type": "text", "text": …}`` and the like.

A2A 1.0 messages pass through unchanged.
"""

from __future__ import annotations

from typing import Any

_ROLES = {"user": "ROLE_USER", "agent": "ROLE_AGENT", "ROLE_USER": "ROLE_USER", "ROLE_AGENT": "ROLE_AGENT"}


def normalize_part(part: Any) -> Any:
    if not isinstance(part, dict):
        return part
    tag = part.get("kind", part.get("type"))
    if tag is None:
        return part
    out: dict[str, Any] = {}
    if tag == "text":
        out["text"] = part.get("text")
    elif tag == "data":
        out["data"] = part.get("data")
    elif tag == "file":
        file = part.get("file") or {}
        if not isinstance(file, dict):
            return part
        if "bytes" in file:
            out["raw"] = file["bytes"]
        elif "uri" in file:
            out["url"] = file["uri"]
        if file.get("mimeType") is not None:
            out["mediaType"] = file["mimeType"]
        if file.get("name") is not None:
            out["filename"] = file["name"]
    else:
        return part  # unknown tag: leave it for validation to report
    if part.get("metadata") is not None:
        out["metadata"] = part["metadata"]
    if part.get("mediaType") is not None:
        out["mediaType"] = part["mediaType"]
    return out


def normalize_message(msg: Any) -> Any:
    """Return ``msg`` in A2A 1.0 shape (a new dict), or unchanged when it is not a dict."""
    if not isinstance(msg, dict):
        return msg
    out = {k: v for k, v in msg.items() if k not in ("kind", "type")}
    role = msg.get("role")
    if isinstance(role, str) and role in _ROLES:
        out["role"] = _ROLES[role]
    if isinstance(msg.get("parts"), list):
        out["parts"] = [normalize_part(p) for p in msg["parts"]]
    return out


def is_legacy_message(msg: Any) -> bool:
    return isinstance(msg, dict) and (msg.get("kind") == "message" or msg.get("role") in ("user", "agent"))
