"""The quick check of one element of the line layout: msgspec Structs that read a message or a record in one pass
in C, without building its free-form JSON (``metadata``, a data part, a record's ``value``: kept as
:class:`msgspec.Raw`, which msgspec still reads through to its end as JSON; the line's UTF-8 is checked apart).

It only ever says yes or "not sure": each Struct is the pydantic model's fields (``model.py``, a test holds them
the same) under stricter rules — camelCase names only, no coercion, no unknown key, 64-bit integers, the part's
exactly-one-content rule — so what it accepts the model accepts, with the same role, parts and metadata (tests
hold it on real and random elements, and on mutated bytes; a kept value read alone — ``p2pd``, a part's data — is
read as the usual way reads it). Anything else (a legacy A2A shape, a snake_case key, an error) returns None and goes
the usual way: a JSON parse, then the pydantic model, whose error is the one reported. 2.3x cheaper than orjson plus
pydantic on real-shaped sessions (tests/bench/consumer.py).
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from p2pd.conversation.json_text import loads
from p2pd.conversation.shapes import JsonObject, Role

_UNSET: Any = msgspec.UNSET


class QuickPart(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    text: str | None = None
    raw: str | None = None
    url: str | None = None
    data: msgspec.Raw | msgspec.UnsetType = _UNSET  # present (even JSON null) or not, as the model tells them
    media_type: str | None = None
    filename: str | None = None
    metadata: dict[str, msgspec.Raw] | None = None

    @property
    def data_value(self) -> Any:
        return _loads(self.data) if isinstance(self.data, msgspec.Raw) else None


class QuickMessage(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    message_id: str
    role: Role
    parts: list[QuickPart]
    context_id: str | None = None
    task_id: str | None = None
    metadata: dict[str, msgspec.Raw] | None = None
    extensions: list[str] | None = None
    reference_task_ids: list[str] | None = None

    @property
    def p2pd(self) -> JsonObject:
        """The model's ``Message.p2pd``: ``metadata.p2pd`` when it is an object, else empty."""
        raw = self.metadata.get("p2pd") if self.metadata is not None else None
        value = _loads(raw) if raw is not None else None
        return value if isinstance(value, dict) else {}


class QuickRecord(msgspec.Struct, forbid_unknown_fields=True):
    line: Annotated[int, msgspec.Meta(ge=-(1 << 63), le=(1 << 63) - 1)]  # (past 64 bits: the usual way says)
    value: msgspec.Raw | msgspec.UnsetType = _UNSET
    text: str | None = None
    raw: str | None = None


def _loads(raw: msgspec.Raw) -> Any:
    """A kept value as the usual way reads it (:func:`~p2pd.conversation.json_text.loads`)."""
    return loads(raw)


QUICK_MODELS: dict[str, type[msgspec.Struct]] = {"messages": QuickMessage, "records": QuickRecord}
_DECODE = {key: msgspec.json.Decoder(model).decode for key, model in QUICK_MODELS.items()}


def quick_check(key: str, line: bytes | bytearray) -> QuickMessage | QuickRecord | None:
    """The element ``line`` (one JSON object, alone) of the array ``key`` read as its Struct, or None: not sure."""
    decode = _DECODE.get(key)
    if decode is None:
        return None
    try:
        value = decode(line)
        if not line.isascii():
            line.decode("utf-8")  # (what msgspec.Raw skipped is checked too)
    except (msgspec.DecodeError, UnicodeDecodeError):
        return None
    if type(value) is QuickMessage:
        for p in value.parts:
            if (p.text is not None) + (p.raw is not None) + (p.url is not None) + (p.data is not _UNSET) != 1:
                return None
    return value  # type: ignore[return-value]
