"""A conversation document read as a stream into a spool on disk, for importers that go through it in another
order than it came (lines by number, each subagent's lines together).

:func:`spool_document` reads the document's bytes with the streamed reader
(:mod:`p2pd.conversation.stream_reader`: any layout, every element checked, within the limits) and writes each
element to one spool file, with its place kept in compact arrays (no Python object per element): memory is one
element and the arrays, not the session. :class:`DocumentSource` is what importers read — the envelope, the
messages in order, the main transcript's and each subagent's source lines by line number, the tool results —
whether from a spool or from a document already in memory (:class:`MemorySource`).
"""

from __future__ import annotations

import contextlib
import os
from array import array
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from p2pd.conversation.document_io import compact_json
from p2pd.conversation.json_text import loads
from p2pd.conversation.model import ConversationDocument, Message, Record, SidecarFile, Subagent, Transcript
from p2pd.conversation.stream_reader import DocumentReader, Item

LineRestorer = Callable[[Message], "list[tuple[int, dict[str, Any]]] | None"]  # its source lines; None: it has none


class RawLine(str):
    """A source line kept verbatim (it was not a JSON object)."""


def record_line(rec: Record) -> tuple[int, Any]:
    from p2pd.agents.jsonl import verbatim_text

    text = verbatim_text(rec)
    return rec.line, (RawLine(text) if text is not None else rec.value)


class DocumentSource:
    """What an importer reads. ``restored`` says whether every main message gave its source lines."""

    document: ConversationDocument  # the envelope (its big arrays may be empty)
    subagents: list[Subagent]  # their fields (their arrays may be empty)
    restored: bool
    shared = False  # the lines' values belong to a document in memory: copy one before changing it

    def messages(self) -> Iterator[Message]:
        raise NotImplementedError

    def message_count(self) -> int:
        raise NotImplementedError

    def main_lines(self) -> Iterator[tuple[int, Any]]:
        """The main transcript's source lines (messages restored, records) in line order."""
        raise NotImplementedError

    def subagent_lines(self, index: int) -> Iterator[tuple[int, Any]]:
        raise NotImplementedError

    def tool_results(self) -> Iterator[SidecarFile]:
        raise NotImplementedError


class MemorySource(DocumentSource):
    shared = True

    def __init__(self, doc: ConversationDocument, restore: LineRestorer) -> None:
        self.document = doc
        self.subagents = doc.subagents
        self._restore = restore
        self.restored = bool(doc.messages) and all(_has_lines(m, restore) for m in doc.messages)

    def messages(self) -> Iterator[Message]:
        return iter(self.document.messages)

    def message_count(self) -> int:
        return len(self.document.messages)

    def main_lines(self) -> Iterator[tuple[int, Any]]:
        return iter(_sorted_lines(self.document.main_transcript(), self._restore))

    def subagent_lines(self, index: int) -> Iterator[tuple[int, Any]]:
        return iter(_sorted_lines(self.subagents[index], self._restore))

    def tool_results(self) -> Iterator[SidecarFile]:
        return iter(self.document.tool_results)


def _has_lines(message: Message, restore: LineRestorer) -> bool:
    return restore(message) is not None


def _sorted_lines(transcript: Transcript, restore: LineRestorer) -> list[tuple[int, Any]]:
    items: list[tuple[int, Any]] = []
    for m in transcript.messages:
        items.extend(restore(m) or ())
    items.extend(record_line(r) for r in transcript.records)
    items.sort(key=lambda item: item[0])
    return items


class _Slot:
    __slots__ = ("lengths", "numbers", "offsets")

    def __init__(self) -> None:
        self.numbers, self.offsets, self.lengths = array("q"), array("q"), array("q")


class SpooledSource(DocumentSource):
    """Elements in one file (``path``, removed by :meth:`close`), found by slot: ``messages``, ``lines``
    (the main source lines), ``sub<i>`` and ``tools``."""

    def __init__(self, path: Path, restore: LineRestorer) -> None:
        self.path = path
        self._restore = restore
        self._out: BinaryIO = path.open("wb", buffering=1 << 20)  # (elements are ~2 KB: one write per MiB)
        self._slots: dict[str, _Slot] = {}
        self._size = 0
        self.restored = True
        self.subagents = []
        self._subs: dict[int, Subagent] = {}

    # ---- writing, as the reader hears the elements
    def _add(self, slot: str, n: int, data: bytes) -> None:
        s = self._slots.get(slot)
        if s is None:
            s = self._slots[slot] = _Slot()
        s.numbers.append(n)
        s.offsets.append(self._size)
        s.lengths.append(len(data))
        self._out.write(data)
        self._size += len(data)

    def _line(self, slot: str, n: int, value: Any) -> None:
        self._add(slot, n, compact_json([1, value] if isinstance(value, RawLine) else [0, value]))

    def item(self, item: Item) -> None:
        if item.key == "toolResults":
            self._add("tools", item.index, compact_json(item.value))
            return
        slot = "lines" if item.subagent is None else f"sub{item.subagent}"
        if item.key == "records":
            self._line(slot, *record_line(item.model))
            return
        if item.subagent is None:
            self._add("messages", item.index, compact_json(item.value))
            if not self.restored:
                return
        lines = self._restore(item.model)
        if lines is None:  # no source lines: this transcript is imported another way
            if item.subagent is None:
                self.restored = False
            return
        for n, obj in lines:
            self._line(slot, n, obj)

    def subagent(self, index: int, sub: Subagent) -> None:
        self._subs[index] = sub

    def close_writing(self, doc: ConversationDocument) -> None:
        self._out.close()
        self.document = doc
        self.subagents = [self._subs[i] for i in sorted(self._subs)]
        if "messages" not in self._slots:
            self.restored = False

    # ---- reading
    def _read(self, slot: str, *, by_number: bool) -> Iterator[tuple[int, bytes]]:
        s = self._slots.get(slot)
        if s is None:
            return
        order: Iterable[int] = range(len(s.numbers))
        if by_number:
            order = sorted(order, key=s.numbers.__getitem__)
        with self.path.open("rb") as fh:
            for i in order:
                fh.seek(s.offsets[i])
                yield s.numbers[i], fh.read(s.lengths[i])

    def _lines(self, slot: str) -> Iterator[tuple[int, Any]]:
        for n, data in self._read(slot, by_number=True):
            kind, value = loads(data)
            yield n, (RawLine(value) if kind else value)

    def messages(self) -> Iterator[Message]:
        from p2pd.conversation.document_io import message_from_json

        return (message_from_json(loads(data)) for _, data in self._read("messages", by_number=False))

    def message_count(self) -> int:
        slot = self._slots.get("messages")
        return len(slot.numbers) if slot is not None else 0

    def main_lines(self) -> Iterator[tuple[int, Any]]:
        return self._lines("lines")

    def subagent_lines(self, index: int) -> Iterator[tuple[int, Any]]:
        return self._lines(f"sub{index}")

    def tool_results(self) -> Iterator[SidecarFile]:
        return (SidecarFile.model_validate(loads(data)) for _, data in self._read("tools", by_number=False))

    def close(self) -> None:
        self._out.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)


def spool_document(pieces: Iterable[bytes], path: Path, restore: LineRestorer, *,
                   source: str = "input") -> SpooledSource:
    """Read the document in ``pieces`` into a spool at ``path``; the caller closes it."""
    spooled = SpooledSource(path, restore)
    try:
        reader = DocumentReader(source=source, on_item=spooled.item, on_subagent=spooled.subagent)
        for piece in pieces:
            reader.feed(piece)
        spooled.close_writing(reader.finish().document)
    except BaseException:
        spooled.close()
        raise
    return spooled
