"""The OFFER's description (spec: ``SPEC.md`` §3): what is offered, as strict one-line JSON."""

from __future__ import annotations

import json
import re

import msgspec

from p2pd.transfer.codes import FrameError

TITLE_MAX_CHARS = 500
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _single_line(text: str) -> str:
    return " ".join(_CONTROL.sub(" ", text).split())


class OfferInfo(msgspec.Struct, frozen=True):
    """What is offered, shown to the receiving user before any chunk flows."""

    title: str
    platform: str
    session_id: str
    message_count: int

    @classmethod
    def normalized(cls, title: str, platform: str, session_id: str, message_count: int) -> OfferInfo:
        """Build an OfferInfo that is valid on the wire: one-line strings, title capped, count clamped."""
        t = _single_line(title)
        if len(t) > TITLE_MAX_CHARS:
            t = t[: TITLE_MAX_CHARS - 1] + "…"
        return cls(title=t, platform=_single_line(platform)[:64], session_id=_single_line(session_id)[:256],
                   message_count=max(0, min(int(message_count), 0x7FFF_FFFF)))

    def to_json(self) -> bytes:
        return json.dumps({"title": self.title, "platform": self.platform, "session_id": self.session_id,
                           "message_count": self.message_count}, ensure_ascii=False,
                          separators=(",", ":")).encode("utf-8")

    @classmethod
    def from_json(cls, data: bytes) -> OfferInfo:
        def no_constants(name: str) -> object:
            raise FrameError(f"OFFER description: {name} is not valid JSON")

        try:
            obj = json.loads(data.decode("utf-8"), parse_constant=no_constants)
        except UnicodeDecodeError:
            raise FrameError("OFFER description is not valid UTF-8") from None
        except json.JSONDecodeError as exc:
            raise FrameError(f"OFFER description is not valid JSON: {exc.msg}") from None
        if not isinstance(obj, dict):
            raise FrameError("OFFER description is not a JSON object")
        values: dict[str, object] = {}
        for key in ("title", "platform", "session_id"):
            value = obj.get(key)
            if not isinstance(value, str):
                raise FrameError(f"OFFER description: {key!r} is missing or not a string")
            if _CONTROL.search(value):
                raise FrameError(f"OFFER description: {key!r} contains control characters")
            values[key] = value
        count = obj.get("message_count")
        if not isinstance(count, int) or isinstance(count, bool) or not 0 <= count <= 0x7FFF_FFFF:
            raise FrameError("OFFER description: 'message_count' is missing or not an integer in range")
        return cls(title=str(values["title"]), platform=str(values["platform"]),
                   session_id=str(values["session_id"]), message_count=count)
