"""The scanner's line-layout fast path (an element alone on its line, parsed at once): the same elements, the
same refusals and the same limits as the bracket-by-bracket scan, in whatever pieces the bytes come, and any key
order around the element arrays."""

from __future__ import annotations

import io
import json

import pytest

from p2pd.agents.sources import load_file
from p2pd.conversation.document_io import parse_document
from p2pd.conversation.json_scan import UNPARSED, Limits, Scanner
from p2pd.conversation.layout import document_lines
from p2pd.conversation.stream_reader import DocumentReader, read_stream, read_whole
from p2pd.errors import InvalidInputError, TooLargeError
from tests.conversation.test_stream_reader import HEAD, MSG, pieces, random_document
from tests.corpus import claude_code_files
from tests.seeds import seeded

ENVELOPE_LAST = ("counts", "summary", "title", "createdAt", "origin", "issues", "lineCount", "metadata")


def _envelope_last(doc: dict) -> dict:
    """The same document with its envelope after the element arrays ("format" stays first)."""
    head = {k: v for k, v in doc.items() if k not in ENVELOPE_LAST}
    return {**head, **{k: doc[k] for k in ENVELOPE_LAST if k in doc}}


def _lines(doc: dict) -> bytes:
    out = io.BytesIO()
    document_lines(doc, out.write)
    return out.getvalue()


def _line_doc(*elements: bytes, tail: bytes = b"\n]}") -> bytes:
    return HEAD + b'"messages":[\n' + b"\n,".join(elements) + tail


def _deep(levels: int) -> bytes:
    return b'{"messageId":"m","role":"ROLE_USER","parts":[{"data":' + b"[" * levels + b"]" * levels + b"}]}"


def test_counts_and_the_envelope_after_the_arrays_read_the_same():
    _, rng = seeded()
    doc = load_file(claude_code_files(include_subagents=False)[0]).to_json_dict()
    moved = _envelope_last(doc)
    assert list(moved)[-1] != "messages" and list(moved).index("counts") > list(moved).index("records")
    for data in (_lines(moved), json.dumps(moved, ensure_ascii=False, separators=(",", ":")).encode()):
        summary = read_stream(pieces(data, rng))
        assert summary.counts.messages == doc["counts"]["messages"] == len(doc["messages"])
        assert read_whole(pieces(data, rng)) == parse_document(data)
    for _ in range(100):
        doc = random_document(rng)
        if isinstance(doc, dict) and "format" in doc:
            data = _lines(_envelope_last({**doc, "counts": {"messages": len(doc["messages"])}, "summary": "s"}))
            assert read_whole(pieces(data, rng)) == parse_document(data)


def test_line_elements_are_handed_out_parsed_and_others_as_bytes():
    got: list[tuple[bytes, object]] = []
    scanner = Scanner(lambda key, sub, raw, value: got.append((raw, value)))
    scanner.feed(_line_doc(MSG, MSG, tail=b"\n," + MSG + b"]}"))  # the last one shares its line with the end
    scanner.finish()
    assert [v for _, v in got[:2]] == [json.loads(MSG)] * 2 and got[2] == (MSG, UNPARSED)


def test_a_line_layout_that_changes_layout_midway_reads_the_same():
    _, rng = seeded()
    data = _line_doc(MSG, MSG, tail=b"\n," + b",".join([MSG] * 50) + b"\n,  " + MSG + b" ,\n" + MSG + b"\n]}")
    summary = read_stream(pieces(data, rng))
    assert summary.counts.messages == 54


@pytest.mark.parametrize("levels", [300, 2000])  # orjson parses 300 levels (the check refuses), not 2000
def test_a_deep_element_alone_on_its_line_is_refused(levels):
    with pytest.raises(InvalidInputError, match="deeper than 256"):
        read_stream([_line_doc(MSG, _deep(levels))])


def test_brackets_inside_strings_are_not_depth():
    text = b'{"messageId":"m","role":"ROLE_USER","parts":[{"text":"' + b"{[" * 1000 + b'"}]}'
    assert read_stream([_line_doc(MSG, text, _deep(200))]).counts.messages == 3


def test_limits_hold_on_the_line_layout():
    limits = Limits(messages=3, element_bytes=1000, element_values=50)
    with pytest.raises(TooLargeError, match="more than 3 messages"):
        read_stream([_line_doc(MSG, MSG, MSG, MSG)], limits=limits)
    with pytest.raises(TooLargeError, match="more than 50 JSON values"):
        read_stream([_line_doc(MSG, b'{"messageId":"m","parts":[{"data":[' + b"1," * 60 + b"1]}]}")], limits=limits)
    # a line that does not end: refused at the element cap while it comes, not at its end
    reader = DocumentReader(limits=limits)
    reader.feed(_line_doc(MSG, tail=b'\n,{"messageId":"m","parts":[{"text":"'))
    with pytest.raises(TooLargeError, match="over 1000 bytes"):
        for _ in range(100):
            reader.feed(b"x" * 100)
