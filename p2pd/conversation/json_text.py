"""Compact JSON bytes as the documents are written (orjson, with ``json`` for what orjson refuses), and lone
surrogates escaped: the pieces the writers need, without the reading side of :mod:`~p2pd.conversation.document_io`
(its schema checks import pydantic, which a streamed writer never needs)."""

from __future__ import annotations

import json
import re
from typing import Any

try:
    import orjson
except ImportError:  # pragma: no cover - a dependency; ``json`` alone gives the same documents, slower
    orjson = None  # type: ignore[assignment, unused-ignore]

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
