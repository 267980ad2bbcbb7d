"""A conversation document file (``.a2a.json``, or an ``.a2a.p2pd`` blob) packed to send as it is, once checked.

``p2pd send FILE.a2a.json`` — the fallback file of an earlier send, an export — used to load the document whole
(pydantic models, 6 MiB of memory per MB of document: 309 MiB at 50 MB) and write it again. A document p2pd wrote
needs none of that: the whole way would send the same values. So the packing process
(:mod:`p2pd.exchange.producer`) reads it twice, as a stream:

1. :func:`check_document`: every element checked by the
   :class:`~p2pd.conversation.stream_reader.DocumentReader`, within the receiver's limits (memory: one element),
   which tells what the conversation is offered under (title, contextId, origin, the messages it counted) and
   whether the file can go as it is — p2pd's own format at this version, every message in the current shape (none
   read only once normalized), a summary, the counts it stores the same as those counted, and, when it holds
   agent-team state (``metadata.teams``), the title and summary it stores the same as those made again from its
   messages and that state (a second checking pass, for such a document only: the whole way summarizes it again);
2. :func:`~p2pd.agents.file_source.document_pieces`: its JSON (decompressed, for a blob) compressed as it is read.

Any other document — another tool's bare A2A messages, A2A 0.3 shapes, an older p2pd's without a summary, stale
counts — is loaded whole and written again, as before (the whole way normalizes it, counts and summarizes). The
receiver checks every element again, whatever the layout, and writes the document as it came: it reads to the same
model either way (a test holds it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from p2pd.agents.file_source import document_pieces
from p2pd.conversation.model import ConversationDocument
from p2pd.conversation.stream_reader import DocumentReader

__all__ = ["CheckedDocument", "check_document", "document_pieces", "pass_through"]


@dataclass
class CheckedDocument:
    """What a checking pass found: the ``S`` record's fields, whether the file goes as it is, and the envelope
    (every field but the big arrays, which are empty)."""

    offer: dict[str, Any]
    as_is: bool
    envelope: ConversationDocument

    def head(self) -> dict[str, Any]:
        """The envelope's fields as the daemon's packing process reports them (all but the big arrays)."""
        return {k: v for k, v in self.envelope.to_json_dict().items()
                if k not in ("messages", "records", "subagents", "toolResults")}


def check_document(path: Path) -> CheckedDocument:
    """Read the document at ``path`` as a stream, each element checked (InvalidInputError, TooLargeError… when it
    is no document, or over a receiver's limits)."""
    reader = DocumentReader(source=str(path))
    for piece in document_pieces(path):
        reader.feed(piece)
    summary = reader.finish()
    doc = summary.document
    as_is = (reader.own_format and reader.normalized == 0 and doc.summary is not None
             and doc.counts == summary.counts
             and ("teams" not in (doc.metadata or {}) or _summarized_alike(path, doc)))
    offer = {"title": doc.title, "contextId": doc.context_id, "origin": doc.origin.to_json_dict(),
             "counts": {"messages": summary.counts.messages}}
    return CheckedDocument(offer=offer, as_is=as_is, envelope=doc)


def _summarized_alike(path: Path, envelope: ConversationDocument) -> bool:
    """Whether the whole way's ``summarize`` (run again on a document with team state) gives this document's own
    title and summary: its active messages read again as a stream into a summary, with its metadata."""
    from p2pd.conversation.summary import SummaryBuilder

    builder = SummaryBuilder()

    def heard(key: str, subagent: int | None, model: Any) -> None:
        if key == "messages" and subagent is None and model.p2pd.get("active", True):
            builder.add(model)

    reader = DocumentReader(source=str(path), on_model=heard)
    for piece in document_pieces(path):
        reader.feed(piece)
    reader.finish()
    return builder.finish(envelope.title, envelope.metadata) == (envelope.title, envelope.summary)


def pass_through(path: Path, write: Callable[[bytes], object],
                 on_head: Callable[[dict[str, Any]], object] | None = None) -> CheckedDocument:
    """Check the document at ``path``; when it can go as it is, tell ``on_head`` what it is offered under, then
    write its JSON through ``write``. Returns the check: when ``as_is`` is false nothing was written (the caller
    loads it whole)."""
    from p2pd.support.gcpause import bulk_work

    with bulk_work():
        checked = check_document(path)
    if checked.as_is:
        if on_head is not None:
            on_head(checked.offer)
        for piece in document_pieces(path):
            write(piece)
    return checked
