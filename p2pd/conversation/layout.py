"""The line layout: a conversation document written so it can be made and read one message at a time.

It is the same JSON document (``SPEC.md``; same keys and values as :meth:`ConversationDocument.to_json_dict`,
compact), with a newline after each element of the three big arrays — ``messages``, ``records`` and
``toolResults``, at the top and in every subagent — and after the lines that open and close them. JSON allows
whitespace there, so any JSON reader reads it as before; the compact encoder never writes a newline inside a
value, so each element is exactly one line::

    {"format":"p2pd.conversation",…,"counts":{…},"messages":[
    {"messageId":"a",…}
    ,{"messageId":"b",…}
    ],"records":[
    {"line":3,…}
    ],"issues":[],"lineCount":42,"subagents":[
    {"messages":[
    {"messageId":"c",…}
    ],"records":[
    ],"issues":[],"lineCount":7,"agentId":"x","fileName":"agent-x.jsonl"}
    ],"toolResults":[
    {"name":"t.txt","text":"…"}
    ]}

Elements after the first start with ``,``. A writer never holds more than one element; the reader
(:mod:`p2pd.conversation.stream_reader`, which takes any layout and any key order) parses each element on its own
and the small rest (the "skeleton") at the end.

The fields around the arrays are asked for when they are reached: a writer that converts a session as it writes
it (:mod:`p2pd.agents.claude_code.streamed`) knows the title, summary and counts only after the last message, so
it puts them at the end (``tail``), after ``toolResults``, and writes ``records`` before ``messages``
(``records_first``), so the document goes out while the transcript is still read. ``format`` always comes first.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from p2pd.conversation.json_limits import DEFAULT_LIMITS, Limits
from p2pd.conversation.json_text import compact_json
from p2pd.errors import TooLargeError
from p2pd.support.text import human

ELEMENT_ARRAYS = ("messages", "records", "toolResults")
Write = Callable[[bytes], object]
Fields = Callable[[], dict[str, Any]]  # an object's members in order, asked for when the writer reaches them


@dataclass
class SubagentLines:
    """One subagent: its elements (already encoded, one JSON value each) and its other fields in document
    order (``issues``, ``lineCount``, ``agentId``, ``fileName``, ``meta``)."""

    messages: Iterable[bytes]
    records: Iterable[bytes]
    rest: dict[str, Any]


class ElementSpool:
    """Elements, encoded one per line, in a file beside the output (removed when closed): what a streamed writer
    holds until the document reaches them. ``items()`` reads them back once."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh: IO[bytes] = path.open("wb")

    def add(self, value: Any) -> None:
        self._fh.write(compact_json(value) + b"\n")

    def items(self) -> Iterator[bytes]:
        self._fh.close()
        with self.path.open("rb") as fh:
            for line in fh:
                yield line[:-1]

    def close(self) -> None:
        self._fh.close()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


class _Budget:
    """What a receiver's document limits (:class:`~p2pd.conversation.json_limits.Limits`, the ones every p2pd
    reader applies) allow, checked as each element is written: a conversation over them is refused here, where
    it is made, with the element named — not by the receiver after the bytes before it crossed."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.elements = 0
        self.messages = 0

    def check(self, item: bytes, where: str, index: int, message: bool) -> None:
        limits = self.limits
        self.elements += 1
        self.messages += message
        if len(item) > limits.element_bytes:
            raise TooLargeError(
                f"{where} {index + 1} of this conversation is {human(len(item))} as JSON, over the "
                f"{human(limits.element_bytes)} a p2pd receiver takes for one element: it cannot be carried as "
                f"it is", details={"element": where, "index": index, "bytes": len(item),
                                   "limit": limits.element_bytes})
        if self.messages > limits.messages or self.elements > limits.elements:
            over_messages = self.messages > limits.messages
            limit = limits.messages if over_messages else limits.elements
            raise TooLargeError(
                f"this conversation has more than {limit:,} {'messages' if over_messages else 'elements'} "
                f"(messages, records and tool results), over what a p2pd receiver takes: it cannot be carried "
                f"as it is", details={"count": "messages" if over_messages else "elements", "limit": limit})


def _elements(write: Write, items: Iterable[bytes], budget: _Budget, where: str, *, message: bool = False) -> int:
    """Each element on a line of its own, after a comma but the first: ``a\n,b\n,c\n``; one write per element
    (its comma and newline joined to it: the calls into the writer saved cost more than the copy), each checked
    against ``budget`` first (``where``: what it is, for the error; ``message``: whether it counts as a message).
    Returns how many."""
    n = 0
    check = budget.check
    for item in items:
        check(item, where, n, message)
        write(b"," + item + b"\n" if n else item + b"\n")
        n += 1
    return n


_WHAT = {"messages": "message", "records": "record"}


def _fields(values: dict[str, Any]) -> bytes:
    """``"a":1,"b":2`` — an object's members without braces (empty when there are none)."""
    return compact_json(values)[1:-1]


def _key(name: str) -> bytes:
    return compact_json(name) + b":["


def write_document(write: Write, head: dict[str, Any], messages: Iterable[bytes], records: Iterable[bytes],
                   middle: Fields, subagents: Iterable[SubagentLines], tool_results: Iterable[bytes],
                   tail: Fields, *, records_first: bool = False, limits: Limits = DEFAULT_LIMITS) -> None:
    """Write a whole document in the line layout. ``head``: the fields before ``messages`` (``format`` first);
    ``middle``: ``issues`` and ``lineCount``, asked for once the records are written; ``tail``: what follows
    ``toolResults`` (``metadata``, when set; a streamed writer's ``title``, ``summary`` and ``counts``), asked
    for at the end. ``records_first``: the ``records`` array before ``messages`` (a streamed writer's order).
    A conversation over ``limits`` (a receiver's) stops at the element that breaks them (TooLargeError)."""
    budget = _Budget(limits)
    fields = _fields(head)
    first, second = (("records", records), ("messages", messages)) if records_first else \
        (("messages", messages), ("records", records))
    write(b"{" + fields + (b"," if fields else b"") + _key(first[0]) + b"\n")
    _elements(write, first[1], budget, _WHAT[first[0]], message=first[0] == "messages")
    write(b"]," + _key(second[0]) + b"\n")
    _elements(write, second[1], budget, _WHAT[second[0]], message=second[0] == "messages")
    middle_fields = _fields(middle())
    write(b"]," + middle_fields + (b"," if middle_fields else b"") + _key("subagents") + b"\n")
    for i, sub in enumerate(subagents):
        write((b",{" if i else b"{") + _key("messages") + b"\n")
        _elements(write, sub.messages, budget, f"subagent {i + 1}'s message", message=True)
        write(b"]," + _key("records") + b"\n")
        _elements(write, sub.records, budget, f"subagent {i + 1}'s record")
        rest = _fields(sub.rest)
        write(b"]" + (b"," + rest if rest else b"") + b"}\n")
    write(b"]," + _key("toolResults") + b"\n")
    _elements(write, tool_results, budget, "tool result")
    tail_fields = _fields(tail())
    write(b"]" + (b"," + tail_fields if tail_fields else b"") + b"}\n")


def document_lines(doc_json: dict[str, Any], write: Write) -> None:
    """An in-memory document (``ConversationDocument.to_json_dict()``) written in the line layout."""
    subs = [SubagentLines(messages=[compact_json(m) for m in s.get("messages", [])],
                          records=[compact_json(r) for r in s.get("records", [])],
                          rest={k: v for k, v in s.items() if k not in ("messages", "records")})
            for s in doc_json.get("subagents", [])]
    envelope_lines(write, doc_json, (compact_json(m) for m in doc_json.get("messages", [])),
                   (compact_json(r) for r in doc_json.get("records", [])), subs,
                   (compact_json(t) for t in doc_json.get("toolResults", [])))


_BIG = ("messages", "records", "subagents", "toolResults")


def envelope_lines(write: Write, envelope: dict[str, Any], messages: Iterable[bytes], records: Iterable[bytes],
                   subagents: Iterable[SubagentLines] = (), tool_results: Iterable[bytes] = ()) -> None:
    """A document whose envelope is known before its elements are written (``to_json_dict()``'s keys in their
    order; its arrays' contents are not read) and whose elements come encoded — from spools, say: written in the
    line layout in the envelope's key order (the fields before ``messages`` first), as :func:`document_lines`
    writes the whole document."""
    keys = list(envelope)
    split = keys.index("messages") if "messages" in keys else len(keys)
    head = {k: envelope[k] for k in keys[:split]}
    middle: dict[str, Any] = {k: envelope[k] for k in ("issues", "lineCount") if k in envelope}
    tail = {k: v for k, v in envelope.items() if k not in head and k not in middle and k not in _BIG}
    write_document(write, head, messages, records, lambda: middle, subagents, tool_results, lambda: tail)
