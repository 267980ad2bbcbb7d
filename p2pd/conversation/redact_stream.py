"""Redaction of a document read as a stream (:mod:`p2pd.conversation.redact`'s rules, without the whole document in
memory): the same document :func:`~p2pd.conversation.redact.redact_document` makes, written in the line layout.

The document is read once (:class:`~p2pd.conversation.stream_reader.DocumentReader`: each element checked); each
element is masked as it goes by and spooled, encoded, to a file. The head (title, summary, counts …) comes first in
the document but can only be written once everything was read — whether any secret was masked decides whether
the title and summary are made again — so the document is written at the end: the masked envelope, then the
spooled elements in the layout's order. When secrets were masked, the summary is made again from the masked
messages, read back from the spool; the title too when it was clipped from a prompt (as the whole path does).

Memory holds one element, and per element its place in the spool.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from p2pd.conversation.document_io import compact_json
from p2pd.conversation.document_json import document_from_json
from p2pd.conversation.json_text import loads
from p2pd.conversation.layout import SubagentLines, Write, envelope_lines
from p2pd.conversation.legacy import normalize_message
from p2pd.conversation.model import Message, Role
from p2pd.conversation.redact import RedactionReport, _keep_bytes, _messages, _record, _transcript
from p2pd.conversation.stream_reader import DocumentReader, Item

Slot = tuple[str, int | None]  # (array, subagent index or None)


def _masked(item: Item, counts: Counter[str]) -> Any:
    if item.key == "messages":
        return _messages([item.value], counts)[0]
    if item.key == "records":
        return _record(item.value, counts)
    return _keep_bytes(item.value, counts)


def _flat(text: str) -> str:
    return " ".join(text.split())


class _Spool:
    """Encoded elements in one file, and where each slot's are."""

    def __init__(self, path: Path) -> None:
        self._fh = path.open("w+b")
        self._end = 0
        self.slots: dict[Slot, list[tuple[int, int]]] = {}

    def add(self, slot: Slot, data: bytes) -> None:
        self._fh.write(data)
        self.slots.setdefault(slot, []).append((self._end, len(data)))
        self._end += len(data)

    def items(self, slot: Slot) -> Iterator[bytes]:
        self._fh.flush()
        for offset, size in self.slots.get(slot, ()):
            yield os.pread(self._fh.fileno(), size, offset)

    def close(self) -> None:
        self._fh.close()


def redact_stream(pieces: Iterable[bytes], write: Write, spool_dir: Path, *, title: str,
                  source: str = "input") -> RedactionReport:
    """Read the document in ``pieces`` (any layout), write it masked in the line layout through ``write``.
    ``title``: the document's title as it is (before masking; the head is only read at the end)."""
    report = RedactionReport()
    counts = report.counts
    wanted = _flat(title.removesuffix("…"))
    from_prompt = [not wanted]  # the title was clipped from a prompt (whole path: _title_from_prompt)
    spool = _Spool(spool_dir / "redacted.spool")

    def on_item(item: Item) -> None:
        if item.key == "messages" and item.subagent is None and not from_prompt[0]:
            m = item.model
            if m.role is Role.USER and wanted in _flat(" ".join(p.text for p in m.parts if p.text is not None)):
                from_prompt[0] = True
        spool.add((item.key, item.subagent), compact_json(_masked(item, counts)))

    try:
        reader = DocumentReader(source=source, on_item=on_item)
        for piece in pieces:
            reader.feed(piece)
        envelope = reader.finish().document
        data = _transcript(envelope.to_json_dict(), counts)
        red = document_from_json(data, source="redacted document")
        if report.total:
            from p2pd.conversation.summary import SummaryBuilder

            if from_prompt[0]:
                red.title = ""
            builder = SummaryBuilder()
            for raw in spool.items(("messages", None)):
                m = Message.model_validate(normalize_message(loads(raw)))
                if m.p2pd.get("active", True):
                    builder.add(m)
            red.title, red.summary = builder.finish(red.title, red.metadata)
        _write(red.to_json_dict(), spool, write)
    finally:
        spool.close()
    return report


def _write(doc: dict[str, Any], spool: _Spool, write: Write) -> None:
    subagents = [SubagentLines(messages=spool.items(("messages", i)), records=spool.items(("records", i)),
                               rest={k: v for k, v in sub.items() if k not in ("messages", "records")})
                 for i, sub in enumerate(doc.get("subagents", []))]
    envelope_lines(write, doc, spool.items(("messages", None)), spool.items(("records", None)), subagents,
                   spool.items(("toolResults", None)))


__all__ = ["redact_stream"]
