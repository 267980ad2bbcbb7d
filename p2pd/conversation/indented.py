"""A conversation document rewritten indented, as a stream (``p2pd receive --pretty``).

The document that arrives is compact (the line layout); writing it indented through the model would hold it whole
(~13 MiB per MB of document). Here it is read twice as a stream (:mod:`p2pd.conversation.json_scan`): once for
its skeleton and how many elements each array holds, once for the elements, each written indented (orjson,
2 spaces) in its place in the indented skeleton. Memory is one element and one piece. The input is a document
already checked (this only lays it out again); the output is the same JSON value.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections import Counter, deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from p2pd.conversation.json_scan import UNPARSED, Scanner
from p2pd.conversation.json_text import escape_lone_surrogates
from p2pd.errors import InvalidInputError

Write = Callable[[bytes], object]
Slot = tuple[str, "int | None"]  # (array key, subagent index or None)
PIECE = 1 << 20
_LONG_NUMBER = re.compile(rb"[0-9]{19}")


def _pieces(path: Path) -> Iterator[bytes]:
    with path.open("rb") as fh:
        while piece := fh.read(PIECE):
            yield piece


def _parsed(raw: bytes, value: Any = UNPARSED) -> tuple[Any, bool]:
    """The value (``value`` when parsed already), and whether orjson read it exactly, so that orjson writes it
    back as it was. JSON that orjson does not read (lone surrogates, NaN) or not exactly (an integer past 64 bits
    becomes a float: any run of 19 digits is taken for one) is read and written back by the standard library."""
    if _LONG_NUMBER.search(raw) is None:
        if value is not UNPARSED:
            return value, True
        with contextlib.suppress(orjson.JSONDecodeError):
            return orjson.loads(raw), True
    return json.loads(raw), False


def _dump(value: Any, exact: bool, level: int = 0) -> bytes:
    """``value`` as JSON indented by two spaces, its lines after the first ``level`` steps in (compact when
    ``level`` is -1). ``exact``: orjson read it, so orjson writes it back as it was."""
    if exact:
        try:
            out = orjson.dumps(value, option=None if level < 0 else orjson.OPT_INDENT_2)
        except orjson.JSONEncodeError:  # (not expected of what orjson read; the standard library then)
            exact = False
    if not exact:
        text = json.dumps(value, ensure_ascii=False, indent=None if level < 0 else 2,
                          separators=(",", ":") if level < 0 else None)
        out = escape_lone_surrogates(text).encode("utf-8")
    return out.replace(b"\n", b"\n" + b"  " * level) if level > 0 else out


class _Elements:
    """The document's elements in order, read as a stream (pull: ``take(slot)``)."""

    def __init__(self, path: Path) -> None:
        self._ready: deque[tuple[Slot, Any, bool]] = deque()
        self._scanner = Scanner(self._heard, keep_raw=True)
        self._pieces = _pieces(path)

    def _heard(self, key: str, sub: int | None, raw: bytes, value: Any) -> None:
        self._ready.append(((key, sub), *_parsed(raw, value)))

    def take(self, slot: Slot) -> tuple[Any, bool]:
        while not self._ready:
            piece = next(self._pieces, None)
            if piece is None:
                raise InvalidInputError("the document changed while it was laid out again")
            self._scanner.feed(piece)
        got, value, exact = self._ready.popleft()
        if got != slot:
            raise InvalidInputError("the document changed while it was laid out again")
        return value, exact


def write_indented(src: Path, write: Write) -> None:
    """Write the (checked) document in ``src`` indented, in pieces, to ``write``."""
    sizes: Counter[Slot] = Counter()
    scanner = Scanner(lambda key, sub, raw, value: sizes.update(((key, sub),)))
    for piece in _pieces(src):
        scanner.feed(piece)
    skeleton, exact = _parsed(scanner.finish())
    elements = _Elements(src)

    def value(v: Any, level: int, sub: int | None = None, holder: bool = False) -> None:
        """``v`` at ``level``; ``holder``: the document's object or a subagent's (``sub``), whose arrays may
        be element arrays."""
        if not isinstance(v, dict) or not v:
            write(_dump(v, exact, level))
            return
        pad = b"\n" + b"  " * (level + 1)
        for i, (k, item) in enumerate(v.items()):
            write((b"{" if i == 0 else b",") + pad + _dump(k, exact, -1) + b": ")
            if holder and sub is None and k == "subagents" and isinstance(item, list) and item:
                array(len(item), level + 1, subagents=item)
            elif holder and item == [] and sizes[(k, sub)]:
                array(sizes[(k, sub)], level + 1, slot=(k, sub))
            else:
                value(item, level + 1)
        write(b"\n" + b"  " * level + b"}")

    def array(count: int, level: int, slot: Slot = ("", None), subagents: list[Any] | None = None) -> None:
        """An element array (``slot``) or the subagents, at ``level``."""
        pad = b"\n" + b"  " * (level + 1)
        for n in range(count):
            write((b"[" if n == 0 else b",") + pad)
            if subagents is not None:
                value(subagents[n], level + 1, n, True)
            else:
                write(_dump(*elements.take(slot), level + 1))
        write(b"\n" + b"  " * level + b"]")

    if skeleton == [] and sizes[("messages", None)]:  # a bare list of messages
        array(sizes[("messages", None)], 0, slot=("messages", None))
    else:
        value(skeleton, 0, None, True)
    write(b"\n")
