"""Reading a document in the line layout (:mod:`p2pd.conversation.layout`) one element at a time.

Each element line is parsed and checked on its own (nesting depth, schema), then dropped; the other lines — the
"skeleton": the header, the small fields, the subagents' fields — are kept, with a marker where each big array's
elements were, and parsed at the end. The markers prove the attribution: every array the reader took elements
for must sit, in the parsed skeleton, exactly at the path it was taken for (top-level ``messages`` …,
``subagents[i].records``); a document that only looks like the layout fails that check and is read the generic
way instead. Memory: the skeleton plus one line.

A document that is not in the layout at all (another tool's, the page's one-line JSON, a pretty file) raises
:class:`NotLayout` at its first line, before any work; the caller reads it another way.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from p2pd.conversation.document_io import check_depth, compact_json, document_from_json, load_json, message_from_json
from p2pd.conversation.model import ConversationDocument, Counts, Record, SidecarFile
from p2pd.errors import InvalidInputError

_OPENER = re.compile(rb'"(messages|records|toolResults|subagents)":\[\s*$')
_MARK = "\u0000p2pd-elided-"
MAX_ELEMENT_LINE = 1 << 30


class NotLayout(Exception):
    """The bytes are not (or stop being) a document in the line layout; nothing was decided from them."""


@dataclass
class LayoutSummary:
    """What a streamed read tells of the document (the messages themselves were checked and let go)."""

    document: ConversationDocument  # the skeleton: every field, with the big arrays empty
    counts: Counts = field(default_factory=Counts)

    @property
    def title(self) -> str:
        return self.document.title

    @property
    def context_id(self) -> str:
        return self.document.context_id


@dataclass
class _Array:
    key: str
    subagent: int | None  # None: the top level
    mark: str
    elements: int = 0


class LayoutReader:
    """Feed it the document's bytes in pieces (``feed``), then ``finish()`` for the summary. ``on_element``
    hears each element as it is checked (``key``, ``subagent`` index or None, the parsed value)."""

    def __init__(self, *, source: str = "input",
                 on_element: Callable[[str, int | None, Any], None] | None = None) -> None:
        self.source = source
        self.on_element = on_element
        self._pending = b""
        self._skeleton: list[bytes] = []
        self._arrays: list[_Array] = []
        self._open: _Array | None = None
        self._in_subagents = False
        self._subagent = -1
        self._first = True
        self.counts = Counts()

    def feed(self, data: bytes) -> None:
        if not data:
            return
        buf = self._pending + data if self._pending else data
        start = 0
        while True:
            end = buf.find(b"\n", start)
            if end < 0:
                break
            self._line(buf[start:end])
            start = end + 1
        self._pending = buf[start:]
        if len(self._pending) > MAX_ELEMENT_LINE:
            raise NotLayout("a line longer than any element may be")
        if self._first and len(self._pending) > (1 << 20) and not self._skeleton:
            raise NotLayout("no line break in the first MiB")

    def _line(self, line: bytes) -> None:
        if self._first:
            self._first = False
            if not line.startswith(b"{") or not _OPENER.search(line):
                raise NotLayout("the first line does not open the messages")
        if self._open is not None and not line.startswith(b"]"):
            self._element(self._open, line)
            return
        self._open = None
        self._skeleton.append(line)
        m = _OPENER.search(line)
        if m is None:
            return
        key = m.group(1).decode()
        if key == "subagents":
            if self._in_subagents or self._arrays[-1].key != "records":
                raise NotLayout("subagents out of place")
            self._in_subagents = True
            return
        if key == "toolResults":
            self._in_subagents = False
        elif self._in_subagents and key == "messages":
            self._subagent += 1
        array = _Array(key, self._subagent if self._in_subagents else None, f"{_MARK}{len(self._arrays)}")
        self._arrays.append(array)
        self._skeleton.append(compact_json(array.mark))
        self._open = array

    def _element(self, array: _Array, line: bytes) -> None:
        if array.elements:
            if not line.startswith(b","):
                raise NotLayout("an element line without its comma")
            line = line[1:]
        value = self._parse(line)
        array.elements += 1
        if array.key == "messages":
            message = self._checked(message_from_json, value)
            if array.subagent is None:
                self.counts.add(message)
        elif array.key == "records":
            self._checked(Record.model_validate, value)
        else:
            self._checked(SidecarFile.model_validate, value)
        if self.on_element is not None:
            self.on_element(array.key, array.subagent, value)

    def _parse(self, line: bytes) -> Any:
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            try:  # what orjson refuses but JSON allows (lone surrogate escapes, NaN, huge integers)
                value = json.loads(line.decode("utf-8"))
            except (ValueError, RecursionError):
                raise NotLayout("an element line that is not one JSON value") from None
        check_depth(value, source=self.source)
        return value

    def _checked(self, validate: Callable[[Any], Any], value: Any) -> Any:
        from pydantic import ValidationError

        from p2pd.conversation.document_io import describe_validation_error

        try:
            return validate(value)
        except ValidationError as exc:
            raise InvalidInputError(f"wrong schema in {self.source}: {describe_validation_error(exc)}") from None

    def finish(self) -> LayoutSummary:
        if self._pending.strip():
            self._line(self._pending)
            self._pending = b""
        if self._open is not None or self._first:
            raise NotLayout("the document ends inside an array")
        try:
            skeleton = load_json(b"".join(self._skeleton), self.source)
        except InvalidInputError:
            raise NotLayout("the lines between the elements are not one JSON document") from None
        self._unmark(skeleton)
        check_depth(skeleton, source=self.source)
        doc = document_from_json(skeleton, source=self.source)
        self.counts.source_lines = doc.line_count
        self.counts.records = next((a.elements for a in self._arrays if a.key == "records" and a.subagent is None), 0)
        self.counts.malformed_lines = len(doc.issues) + sum(len(s.issues) for s in doc.subagents)
        self.counts.subagents = len(doc.subagents)
        return LayoutSummary(document=doc, counts=self.counts)

    def _unmark(self, skeleton: Any) -> None:
        """Each marker where it was taken for, nowhere else; then the arrays emptied for validation."""
        if not isinstance(skeleton, dict):
            raise NotLayout("the document is not an object")
        for array in self._arrays:
            holder: Any = skeleton
            if array.subagent is not None:
                subs = skeleton.get("subagents")
                if not isinstance(subs, list) or array.subagent >= len(subs) or not isinstance(
                        subs[array.subagent], dict):
                    raise NotLayout("an element array outside the subagent it was read for")
                holder = subs[array.subagent]
            if holder.get(array.key) != [array.mark]:
                raise NotLayout("an element array outside the place it was read for")
            holder[array.key] = []
        subs = skeleton.get("subagents")
        if self._subagent + 1 != (len(subs) if isinstance(subs, list) else 0):
            raise NotLayout("subagents without their element arrays")


def read_layout(pieces: Iterable[bytes], *, source: str = "input",
                on_element: Callable[[str, int | None, Any], None] | None = None) -> LayoutSummary:
    reader = LayoutReader(source=source, on_element=on_element)
    for piece in pieces:
        reader.feed(piece)
    return reader.finish()
