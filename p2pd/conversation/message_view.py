"""A message's JSON (``Message.to_json_dict()``'s dict) read as a :class:`~p2pd.conversation.model.Message` is
read — role, ``metadata.p2pd``, parts — by the summary, the counts, the title and the team events, without
building the model: the streamed writers (Claude Code, Gemini CLI) make each message straight into its JSON and
read it back through this view."""

from __future__ import annotations

from typing import Any

from p2pd.conversation.shapes import Role

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
