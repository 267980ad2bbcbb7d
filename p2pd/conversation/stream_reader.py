"""Reading a conversation document as a stream, in any JSON layout, each element checked as it goes by.

:class:`DocumentReader` is fed the document's bytes in pieces (``feed``) and ends with ``finish()``. The structural
scanner (:mod:`p2pd.conversation.json_scan`) cuts out each element of the big arrays; each is parsed (orjson) and
validated on its own — a message as :class:`Message` (A2A 0.3 messages normalized first, as the whole-document
reader does), a record as :class:`Record`, a tool result as :class:`SidecarFile` — counted, handed to
``on_item`` and let go. The rest of the document (the envelope, the subagents' fields) is parsed and validated at
the end, exactly as :func:`~p2pd.conversation.document_io.document_from_json` does for a whole document, with the
big arrays empty. Streamed or whole, a document reads to the same model (tests hold it on the corpus and on
random documents); limits (:class:`~p2pd.conversation.json_scan.Limits`) are checked while the bytes come, so
memory is bounded by one element whatever the document holds.

A document that has no ``"format"`` before its arrays (a bare A2A message list, another tool's
``{"messages": [...]}``) is read the same way: its ``messages`` are elements, anything else stays with the
envelope (and is dropped by the envelope's rules, as for a whole document).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from msgspec.json import decode
from pydantic import BaseModel, ValidationError

from p2pd.conversation.document_json import describe_validation_error, document_from_json, load_json
from p2pd.conversation.element_check import QuickMessage, QuickRecord, quick_check
from p2pd.conversation.json_scan import DEFAULT_LIMITS, UNPARSED, Limits, Scanner
from p2pd.conversation.json_text import DECODE_REFUSED
from p2pd.conversation.legacy import normalize_message
from p2pd.conversation.model import ConversationDocument, Counts, Message, Record, SidecarFile, Subagent
from p2pd.conversation.shapes import FORMAT_NAME, FORMAT_VERSION, Tally
from p2pd.errors import InvalidInputError, TooLargeError

_MODELS: dict[str, type[BaseModel]] = {"records": Record, "toolResults": SidecarFile}
_MESSAGE = Message.__pydantic_validator__.validate_python  # Message.model_validate without its wrapper's cost


@dataclass
class Item:
    """One element as it went by: ``key`` (``messages``, ``records``, ``toolResults``), the subagent index (None
    at the top), its index in its array, its parsed JSON and its model."""

    key: str
    subagent: int | None
    index: int
    value: Any
    model: Any


@dataclass
class DocumentSummary:
    """What a streamed read tells of the document (the elements themselves were checked and let go)."""

    document: ConversationDocument  # the envelope: every field, with the big arrays empty
    counts: Counts = field(default_factory=Counts)

    @property
    def title(self) -> str:
        return self.document.title

    @property
    def context_id(self) -> str:
        return self.document.context_id


ItemSink = Callable[[Item], None]
SubagentSink = Callable[[int, Subagent], None]


class DocumentReader:
    """Feed it bytes, then ``finish()`` for the summary. ``on_item`` hears each element as it is checked;
    ``on_subagent`` hears each subagent's fields (its arrays empty) once its object has closed, after its
    elements. ``on_element(key, subagent, value)`` is the older, value-only form of ``on_item``.
    ``on_model(key, subagent, model)`` hears each element's model only — a message or record the quick check took
    as its struct (``QuickMessage``: ``role``, ``p2pd``… as the model has them) —, so the quick path stays on."""

    def __init__(self, *, source: str = "input", limits: Limits = DEFAULT_LIMITS, on_item: ItemSink | None = None,
                 on_subagent: SubagentSink | None = None,
                 on_element: Callable[[str, int | None, Any], None] | None = None,
                 on_model: Callable[[str, int | None, Any], None] | None = None) -> None:
        self.source = source
        self.limits = limits
        self.on_item = on_item
        self.on_element = on_element
        self.on_model = on_model
        self.on_subagent = on_subagent
        self.counts = Counts()  # (set by finish(), from _tally)
        self._tally = Tally()  # (counted as plain data: a pydantic model's setattr costs ~1 µs a field)
        self.messages = 0  # main and subagent messages
        self._records = 0  # the main transcript's
        self._index: dict[tuple[str, int | None], int] = {}
        self._first_context: Any = None
        self.normalized = 0  # messages read only once normalized (an A2A 0.3 shape): the document is not as written
        self.own_format = False  # set by finish(): the document says p2pd's format and this p2pd's version
        quick = quick_check if on_item is None and on_element is None else None  # (they want the values)
        self._scanner = Scanner(self._element, self._subagent if on_subagent is not None else None,
                                limits=limits, source=source, quick=quick)

    def feed(self, data: bytes) -> None:
        self._scanner.feed(data)

    def finish(self) -> DocumentSummary:
        skeleton = load_json(self._scanner.finish(), self.source)
        if isinstance(skeleton, list):  # a bare list of messages (its elements were read)
            skeleton = {"messages": []}
        self.own_format = (isinstance(skeleton, dict) and skeleton.get("format") == FORMAT_NAME
                           and skeleton.get("formatVersion", FORMAT_VERSION) == FORMAT_VERSION)
        if isinstance(skeleton, dict) and skeleton.get("format") is None and self._first_context is not None:
            skeleton.setdefault("contextId", None)
            skeleton["contextId"] = skeleton["contextId"] or self._first_context
        doc = document_from_json(skeleton, source=self.source)
        tally = self._tally
        tally.source_lines = doc.line_count
        tally.records = self._records
        tally.malformed_lines = len(doc.issues) + sum(len(s.issues) for s in doc.subagents)
        tally.subagents = len(doc.subagents)
        self.counts = Counts(**asdict(tally))
        return DocumentSummary(document=doc, counts=self.counts)

    def _element(self, key: str, subagent: int | None, raw: bytes, value: Any) -> None:
        if value is UNPARSED:
            value = _parse(raw, self.source, self._scanner)
        slot = (key, subagent)
        index = self._index.get(slot, 0)
        self._index[slot] = index + 1
        model: Any
        if key == "messages":
            self.messages += 1
            if self.messages > self.limits.messages:
                raise TooLargeError(f"{self.source} holds more than {self.limits.messages} messages, over this "
                                    "receiver's limit")
            if self._first_context is None and subagent is None and index == 0:
                if isinstance(value, dict):
                    self._first_context = value.get("contextId") or None
                elif isinstance(value, QuickMessage):
                    self._first_context = value.context_id or None
            if type(value) is QuickMessage:  # checked as the model would (element_check.py)
                model = value
            else:
                try:  # an A2A 1.0 message is read as it is (normalizing one that validates changes nothing)
                    model = _MESSAGE(value)
                except ValidationError:
                    model = self._validated(Message, normalize_message(value), slot, index)
                    self.normalized += 1
            if subagent is None:
                self._tally.add(model)
        else:
            if key == "records" and subagent is None:
                self._records += 1
            model = value if type(value) is QuickRecord else self._validated(_MODELS[key], value, slot, index)
        if self.on_item is not None:
            self.on_item(Item(key, subagent, index, value, model))
        if self.on_element is not None:
            self.on_element(key, subagent, value)
        if self.on_model is not None:
            self.on_model(key, subagent, model)

    def _subagent(self, index: int, raw: bytes) -> None:
        assert self.on_subagent is not None
        value = load_json(raw, self.source)
        if not isinstance(value, dict):  # pragma: no cover - the scanner only calls for an object
            return
        sub = self._validated(Subagent, value, ("subagents", None), index)
        self.on_subagent(index, sub)

    def _validated(self, model: type[BaseModel], value: Any, slot: tuple[str, int | None], index: int) -> Any:
        try:
            return model.__pydantic_validator__.validate_python(value)  # (model_validate, without its wrapper)
        except ValidationError as exc:
            key, sub = slot
            where = f"$.subagents[{sub}].{key}[{index}]" if sub is not None else f"$.{key}[{index}]"
            detail = describe_validation_error(exc).replace("at $", f"at {where}")
            raise InvalidInputError(f"wrong schema in {self.source}: {detail}") from None


def _parse(raw: bytes, source: str, scanner: Scanner) -> Any:
    try:
        return decode(raw)
    except DECODE_REFUSED:
        pass  # what msgspec refuses but JSON allows (lone surrogate escapes, NaN, deep nesting), or not JSON
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"{source} is not UTF-8 text (an element's byte {exc.start}); not a "
                                "conversation document") from None
    except json.JSONDecodeError as exc:
        at = scanner.where(scanner.element_at, exc.lineno - 1, exc.colno) if exc.lineno > 1 else \
            scanner.where(scanner.element_at, 0, exc.colno)
        raise InvalidInputError(f"{source} is not JSON: {exc.msg} at {at}") from None


def read_stream(pieces: Iterable[bytes], *, source: str = "input", limits: Limits = DEFAULT_LIMITS,
                on_item: ItemSink | None = None, on_subagent: SubagentSink | None = None) -> DocumentSummary:
    reader = DocumentReader(source=source, limits=limits, on_item=on_item, on_subagent=on_subagent)
    for piece in pieces:
        reader.feed(piece)
    return reader.finish()


def read_whole(pieces: Iterable[bytes], *, source: str = "input",
               limits: Limits = DEFAULT_LIMITS) -> ConversationDocument:
    """The whole document, read as a stream (so within the limits) and put together in memory: for the callers
    that need all of it (small documents, tests)."""
    elements: list[Item] = []
    subagents: dict[int, Subagent] = {}
    summary = read_stream(pieces, source=source, limits=limits, on_item=elements.append,
                          on_subagent=subagents.__setitem__)
    doc = summary.document
    subs = [subagents[i] for i in sorted(subagents)]
    for item in elements:
        holder: Any = doc if item.subagent is None else subs[item.subagent]
        getattr(holder, {"toolResults": "tool_results"}.get(item.key, item.key)).append(item.model)
    if subs:
        doc.subagents = subs
    return doc
