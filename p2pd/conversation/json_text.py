"""Compact JSON bytes as the documents are written (orjson, with ``json`` for what orjson refuses), and lone
surrogates escaped: the pieces the writers need, without the reading side of :mod:`~p2pd.conversation.document_io`
(its schema checks import pydantic, which a streamed writer never needs); and :func:`loads`, JSON read exactly.

Reading is msgspec's and not orjson's: orjson reads an integer past 64 bits as a float, silently (a tool's output,
an id: ``123456789012345678901234567890`` would arrive as ``1.2345678901234568e+29``), where msgspec reads it as
the integer it is. Writing is orjson's (it refuses such an integer, and ``json`` writes it)."""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec

try:
    import orjson
except ImportError:  # pragma: no cover - a dependency; ``json`` alone gives the same documents, slower
    orjson = None  # type: ignore[assignment, unused-ignore]

_DECODE = msgspec.json.decode
# What msgspec refuses that ``json`` may read (NaN, infinities, lone surrogate escapes, nesting past its guard),
# or not JSON at all (``json`` then says why).
DECODE_REFUSED = (msgspec.DecodeError, UnicodeError, RecursionError)


def loads(raw: bytes | bytearray | memoryview | str) -> Any:
    """JSON text's value, as ``json.loads`` reads it (the same values; the same errors for what is not JSON),
    through msgspec where it can (3x faster, and exact where orjson is not)."""
    try:
        return _DECODE(raw)
    except DECODE_REFUSED:
        return json.loads(raw if isinstance(raw, (bytes, bytearray, str)) else bytes(raw))


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def escape_lone_surrogates(json_text: str) -> str:
    """JSON text with each lone UTF-16 surrogate (a string cut inside an emoji, as JavaScript writes it: ``\\ud83d``)
    written as its escape, so the text encodes as UTF-8 and reads back to the same string."""
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", json_text)


def compact_json(data: Any) -> bytes:
    """``data`` as compact UTF-8 JSON: what ``json.dumps(ensure_ascii=False, separators=(",", ":"))`` writes."""
    if orjson is not None:
        try:
            return orjson.dumps(data)
        except orjson.JSONEncodeError:
            pass  # a lone surrogate, a huge integer, a non-string key: json writes those
    return escape_lone_surrogates(json.dumps(data, ensure_ascii=False, separators=(",", ":"))).encode("utf-8")
