"""The streamed indented rewrite (``receive --pretty``): the same JSON value as the compact document it reads,
whatever it holds, indented, read in pieces."""

from __future__ import annotations

import io
import json

import pytest

from p2pd.agents.sources import load_file
from p2pd.conversation.document_io import dumps, parse_document
from p2pd.conversation.indented import write_indented
from p2pd.conversation.layout import document_lines
from p2pd.errors import InvalidInputError
from tests.conversation.test_stream_reader import HEAD, MSG, random_document
from tests.corpus import claude_code_files, file_id
from tests.seeds import seeded


def _indented(tmp_path, data: bytes) -> bytes:
    src = tmp_path / "in.a2a.json"
    src.write_bytes(data)
    out = io.BytesIO()
    write_indented(src, out.write)
    return out.getvalue()


def _lines(doc: dict) -> bytes:
    out = io.BytesIO()
    document_lines(doc, out.write)
    return out.getvalue()


@pytest.mark.parametrize("path", claude_code_files(include_subagents=False)[:6], ids=file_id)
def test_corpus_documents_come_out_the_same_value_indented(tmp_path, path):
    doc = load_file(path)
    compact = _lines(doc.to_json_dict())
    got = _indented(tmp_path, compact)
    assert json.loads(got) == json.loads(compact)
    assert parse_document(got) == parse_document(dumps(doc, pretty=False))
    assert b'\n  "messages": [\n    {\n      "messageId": ' in got
    assert got.count(b"\n") > 10 * compact.count(b"\n")


def test_random_documents_come_out_the_same_value(tmp_path):
    seed, rng = seeded()
    for _ in range(200):
        doc = random_document(rng)
        for data in ([_lines(doc)] if isinstance(doc, dict) and "format" in doc else []) + \
                [json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")]:
            got = _indented(tmp_path, data)
            assert json.loads(got) == json.loads(data), seed


def test_what_only_the_standard_library_reads_comes_back_as_it_was(tmp_path):
    # a lone surrogate escape and a huge integer: orjson reads neither; they stay escaped / exact
    odd = b'{"messageId":"m","role":"ROLE_USER","parts":[{"data":{"s":"\\ud800x","n":123456789012345678901234}}]}'
    data = HEAD + b'"metadata":{"n":99999999999999999999999},"messages":[\n' + MSG + b"\n," + odd + b"\n]}"
    got = _indented(tmp_path, data)
    assert json.loads(got) == json.loads(data) and b'"\\ud800x"' in got
    assert parse_document(got) == parse_document(data)


def test_messages_inside_metadata_stay_where_they_are(tmp_path):
    data = HEAD + b'"metadata":{"x":{"messages":[]}},"messages":[\n' + MSG + b"\n]}"
    assert json.loads(_indented(tmp_path, data)) == json.loads(data)
    bare = b"[\n" + MSG + b"\n," + MSG + b"\n]"
    assert json.loads(_indented(tmp_path, bare)) == json.loads(bare)


def test_a_document_that_changes_underneath_is_refused(tmp_path):
    src = tmp_path / "in.a2a.json"
    src.write_bytes(HEAD + b'"messages":[\n' + MSG + b"\n," + MSG + b"\n]}")
    calls = []

    def write(data: bytes) -> None:
        if not calls:  # after the first pass: one message fewer
            src.write_bytes(HEAD + b'"messages":[\n' + MSG + b"\n]}")
        calls.append(data)

    with pytest.raises(InvalidInputError, match="changed"):
        write_indented(src, write)
