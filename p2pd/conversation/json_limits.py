"""What one conversation document may hold (:class:`Limits`), and the exact measures the scanner
(:mod:`p2pd.conversation.json_scan`) takes when its cheap bounds say an element may be over one."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_STRING = re.compile(rb'"[^"\\]*+(?:\\.[^"\\]*+)*+"', re.DOTALL)


@dataclass(frozen=True)
class Limits:
    """What one document may hold. The defaults sit above real sessions (a 200 MB session has ~110,000 lines,
    ~45,000 messages; its largest line, a few screenshots, a few MB) and keep a hostile one within 512 MiB even
    where a whole document is held (a tiny message is ~1.3 KB as a model)."""

    depth: int = 256  # JSON nesting, counted from the document's outermost bracket
    messages: int = 250_000  # main and subagent messages together
    elements: int = 1_000_000  # messages, records and tool results together
    element_bytes: int = 64 << 20  # one element's JSON (so every part and string in it)
    element_values: int = 2_000_000  # JSON values in one element
    skeleton_bytes: int = 8 << 20  # everything outside the element arrays


DEFAULT_LIMITS = Limits()


def count_values(raw: bytes) -> int:
    """Commas, brackets and braces outside strings (the exact count, when the cheap one says too many)."""
    outside = _STRING.sub(b"", raw)
    return outside.count(b",") + outside.count(b"{") + outside.count(b"[")


def value_depth(value: Any) -> int:
    """How deep a parsed value nests (1 for an empty object or array), visiting its containers only, a level at a
    time (a list per level, no tuple per container: ~3x faster than a stack of (value, depth) pairs)."""
    deepest, level = 0, [value]
    while level:
        deepest += 1
        level = [x for v in level for x in (v.values() if type(v) is dict else v) if type(x) is dict or type(x) is list]
    return deepest


_NOT_OPENING = bytes(c for c in range(256) if c not in b"[{")


def opening_brackets(raw: bytes | bytearray | memoryview) -> int:
    """How many ``[`` and ``{`` ``raw`` holds, strings included: a bound on its depth and on its containers (one
    pass in C, a third cheaper than two ``count`` calls)."""
    return len(bytes(raw).translate(None, _NOT_OPENING)) if isinstance(raw, memoryview) else \
        len(raw.translate(None, _NOT_OPENING))
