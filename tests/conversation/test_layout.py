"""The line layout: the same document as the compact writer's (modulo newlines), read one element at a time."""

from __future__ import annotations

import io
import json

import pytest

from p2pd.agents.sources import load_file
from p2pd.conversation.document_io import dumps
from p2pd.conversation.layout import document_lines
from p2pd.conversation.stream_reader import DocumentReader, DocumentSummary
from p2pd.errors import InvalidInputError
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
