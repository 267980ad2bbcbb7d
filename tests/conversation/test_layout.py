"""The line layout: the same document as the compact writer's (modulo newlines), read one element at a time."""

from __future__ import annotations

import io
import json

import pytest

from p2pd.agents.sources import load_file
from p2pd.conversation.document_io import dumps
from p2pd.conversation.json_limits import Limits
from p2pd.conversation.json_text import compact_json
from p2pd.conversation.layout import document_lines, write_document
from p2pd.conversation.stream_reader import DocumentReader, DocumentSummary
from p2pd.errors import Cause, InvalidInputError, TooLargeError
from tests.corpus import claude_code_files, codex_files, file_id, gemini_files

SESSIONS = claude_code_files(include_subagents=False) + codex_files() + gemini_files()


def read_layout(pieces, *, on_element=None) -> DocumentSummary:
    reader = DocumentReader(on_element=on_element)
    for piece in pieces:
        reader.feed(piece)
    return reader.finish()


def _layout(doc_json: dict) -> bytes:
    out = io.BytesIO()
    document_lines(doc_json, out.write)
    return out.getvalue()


@pytest.mark.parametrize("path", SESSIONS, ids=file_id)
def test_layout_is_the_compact_document_with_newlines_and_reads_back(path):
    doc = load_file(path)
    data = _layout(doc.to_json_dict())
    assert data.replace(b"\n", b"") == dumps(doc, pretty=False)
    # any JSON reader reads it as the same document
    assert json.loads(data) == json.loads(dumps(doc, pretty=False))
    # fed in awkward pieces: lines cut anywhere
    summary = read_layout(data[i:i + 997] for i in range(0, len(data), 997))
    assert summary.counts == doc.counts
    assert summary.title == doc.title
    assert summary.document.messages == [] and summary.document.context_id == doc.context_id
    assert len(summary.document.subagents) == len(doc.subagents)


def test_elements_are_heard_with_their_place():
    doc = load_file(claude_code_files(include_subagents=False)[0])
    seen: list[tuple[str, int | None]] = []
    read_layout([_layout(doc.to_json_dict())], on_element=lambda key, sub, value: seen.append((key, sub)))
    assert sum(1 for k, s in seen if k == "messages" and s is None) == len(doc.messages)
    assert sum(1 for k, s in seen if k == "records" and s is None) == len(doc.records)
    for i, sub in enumerate(doc.subagents):
        assert sum(1 for k, s in seen if k == "messages" and s == i) == len(sub.messages)


def test_a_one_line_document_reads_as_a_stream_too():
    doc = load_file(claude_code_files(include_subagents=False)[0])
    reader = DocumentReader()
    reader.feed(dumps(doc, pretty=False) + b"\n")
    assert reader.finish().counts == doc.counts


def test_an_element_with_the_wrong_schema_is_an_invalid_document():
    data = (b'{"format":"p2pd.conversation","contextId":"c","createdAt":"2026-01-01T00:00:00Z",'
            b'"origin":{"platform":"a2a"},"messages":[\n'
            b'{"messageId":"m","role":"ROLE_USER","parts":[{"text":"a","url":"b"}]}\n'
            b'],"records":[\n],"issues":[],"lineCount":0,"subagents":[\n],"toolResults":[\n]}\n')
    with pytest.raises(InvalidInputError, match=r"exactly one of"):
        read_layout([data])


def test_an_element_nested_too_deep_is_refused():
    deep = b"[" * 400 + b"]" * 400
    data = (b'{"format":"p2pd.conversation","contextId":"c","createdAt":"2026-01-01T00:00:00Z",'
            b'"origin":{"platform":"a2a"},"messages":[\n'
            b'{"messageId":"m","role":"ROLE_USER","parts":[{"data":' + deep + b'}]}\n'
            b'],"records":[\n],"issues":[],"lineCount":0,"subagents":[\n],"toolResults":[\n]}\n')
    with pytest.raises(InvalidInputError, match="deeper than"):
        read_layout([data])


def _write_with(doc_json: dict, limits: Limits) -> bytes:
    out = io.BytesIO()
    head = {k: doc_json[k] for k in list(doc_json)[:list(doc_json).index("messages")]}
    write_document(out.write, head, (compact_json(m) for m in doc_json["messages"]),
                   (compact_json(r) for r in doc_json["records"]),
                   lambda: {"issues": doc_json["issues"], "lineCount": doc_json["lineCount"]}, [],
                   (compact_json(t) for t in doc_json["toolResults"]), lambda: {}, limits=limits)
    return out.getvalue()


def test_the_writer_refuses_exactly_the_element_a_reader_would_refuse():
    """What every p2pd reader refuses (one element over its size, too many messages) is refused as it is
    written — the sender learns it there, with the element named — and the boundary is the reader's own."""
    doc = load_file(claude_code_files(include_subagents=False)[0]).to_json_dict()
    sizes = {(kind, i): len(compact_json(e)) for kind in ("messages", "records", "toolResults")
             for i, e in enumerate(doc[kind])}
    (kind, at), biggest = max(sizes.items(), key=lambda kv: kv[1])
    what = {"messages": "message", "records": "record", "toolResults": "tool result"}[kind]
    fits = Limits(element_bytes=biggest)
    read_layout([_write_with(doc, fits)])  # at the limit: written, and a reader with that limit takes it
    with pytest.raises(TooLargeError) as caught:
        _write_with(doc, Limits(element_bytes=biggest - 1))
    assert caught.value.cause is Cause.TOO_LARGE and f"{what} {at + 1} of this conversation" in str(caught.value)
    assert caught.value.details == {"element": what, "index": at, "bytes": biggest, "limit": biggest - 1}
    with pytest.raises(TooLargeError, match="element over"):  # the reader draws the line at the same byte
        reader = DocumentReader(limits=Limits(element_bytes=biggest - 1))
        reader.feed(_write_with(doc, fits))
        reader.finish()
    n = len(doc["messages"])
    read_layout([_write_with(doc, Limits(messages=n))])
    with pytest.raises(TooLargeError, match=f"more than {n - 1:,} messages") as over:
        _write_with(doc, Limits(messages=n - 1))
    assert over.value.details == {"count": "messages", "limit": n - 1}
