"""The streamed reader (any JSON layout, fed in any pieces) reads every document to the same model as the
whole-document reader, or refuses it as the whole reader does; limits hold while the bytes come."""

from __future__ import annotations

import io
import json
import random
import string

import pytest

from p2pd.agents.sources import load_file
from p2pd.conversation.document_io import dumps, parse_document
from p2pd.conversation.json_scan import Limits
from p2pd.conversation.layout import document_lines
from p2pd.conversation.stream_reader import DocumentReader, read_stream, read_whole
from p2pd.errors import InvalidInputError, P2pdError, TooLargeError
from tests.corpus import claude_code_files, codex_files, file_id, gemini_files
from tests.seeds import seeded

SESSIONS = claude_code_files(include_subagents=False) + codex_files() + gemini_files()
HEAD = (b'{"format":"p2pd.conversation","contextId":"c","createdAt":"2026-01-01T00:00:00Z",'
        b'"origin":{"platform":"a2a"},')
MSG = b'{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}'


def layouts(doc_json: dict, rng: random.Random) -> dict[str, bytes]:
    lines = io.BytesIO()
    if isinstance(doc_json, dict) and "format" in doc_json:
        document_lines(doc_json, lines.write)
    compact = json.dumps(doc_json, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
    return {**({"lines": lines.getvalue()} if lines.getvalue() else {}), "compact": compact,
            "pretty": json.dumps(doc_json, ensure_ascii=False, indent=1).encode("utf-8", "surrogatepass"),
            "ascii-indent4": json.dumps(doc_json, indent=4).encode(),
            "spaced": json.dumps(doc_json, separators=(" , ", " :\n\t")).encode() + b" \r\n"}


def pieces(data: bytes, rng: random.Random) -> list[bytes]:
    out, i = [], 0
    while i < len(data):
        n = rng.choice([1, 2, 3, 17, 997, 65536, 1 << 20])
        out.append(data[i:i + n])
        i += n
    return out


@pytest.mark.parametrize("path", SESSIONS, ids=file_id)
def test_corpus_documents_read_the_same_streamed_in_every_layout(path):
    _, rng = seeded()
    doc = load_file(path)
    whole = parse_document(dumps(doc, pretty=False))
    for name, data in layouts(doc.to_json_dict(), rng).items():
        assert read_whole(pieces(data, rng)) == whole, name
        assert parse_document(data) == whole, name


def _text(rng: random.Random) -> str:
    alphabet = string.printable + "é日\u2028\x00\"\\🙂"
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))


def _value(rng: random.Random, depth: int = 0) -> object:
    kind = rng.randint(0, 7 if depth < 6 else 4)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.randint(-10**20, 10**20)
    if kind == 3:
        return rng.random() * 1e6
    if kind == 4:
        return _text(rng)
    if kind == 5:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {_text(rng): _value(rng, depth + 1) for _ in range(rng.randint(0, 4))}


def _message(rng: random.Random, i: int) -> dict:
    parts = []
    for _ in range(rng.randint(1, 3)):
        kind = rng.choice(["text", "data", "raw", "url"])
        part: dict = {kind: _value(rng) if kind == "data" else _text(rng)}
        if rng.random() < 0.3:
            part["mediaType"] = "application/vnd.p2pd.tool-use+json"
        parts.append(part)
    m = {"messageId": f"m{i}", "role": rng.choice(["ROLE_USER", "ROLE_AGENT"]), "parts": parts}
    if rng.random() < 0.5:
        m["metadata"] = {"p2pd": {"active": rng.random() < 0.8}, _text(rng): _value(rng)}
    return m


def random_document(rng: random.Random) -> dict:
    def transcript() -> dict:
        return {"messages": [_message(rng, i) for i in range(rng.randint(0, 6))],
                "records": [{"line": i, "value": _value(rng)} for i in range(rng.randint(0, 4))],
                "issues": [{"line": 1, "reason": _text(rng)}] * rng.randint(0, 2), "lineCount": rng.randint(0, 9)}
    doc = {"format": "p2pd.conversation", "formatVersion": 1, "a2aVersion": "1.0", "contextId": _text(rng) or "c",
           "title": _text(rng), "createdAt": "2026-01-01T00:00:00Z", "origin": {"platform": "claude-code"},
           **transcript(),
           "subagents": [{**transcript(), "agentId": _text(rng), "fileName": "agent-x.jsonl",
                          "meta": {"a": _value(rng)}} for _ in range(rng.randint(0, 3))],
           "toolResults": [{"name": "t.txt", "text": _text(rng)} for _ in range(rng.randint(0, 2))],
           "metadata": {"teams": _value(rng)}}
    if rng.random() < 0.2:  # another tool's: a bare list of messages, or only messages
        return [_message(rng, i) for i in range(rng.randint(0, 4))] if rng.random() < 0.5 else \
            {"messages": [_message(rng, i) for i in range(rng.randint(0, 4))], "title": _text(rng)}
    return doc


def test_random_documents_read_the_same_streamed():
    seed, rng = seeded()
    for _ in range(300):
        doc = random_document(rng)
        for name, data in layouts(doc, rng).items():
            try:
                whole = parse_document(data)
            except P2pdError as exc:
                with pytest.raises(type(exc)):
                    read_whole(pieces(data, rng))
                continue
            assert read_whole(pieces(data, rng)) == whole, (seed, name)


def test_items_are_heard_with_their_place_and_subagents_after_their_elements():
    doc = load_file(claude_code_files(include_subagents=False)[0])
    seen: list[tuple[str, int | None]] = []
    read_stream([dumps(doc, pretty=True)], on_item=lambda item: seen.append((item.key, item.subagent)),
                on_subagent=lambda i, sub: seen.append(("subagent", i)))
    assert sum(1 for k, s in seen if k == "messages" and s is None) == len(doc.messages)
    for i, sub in enumerate(doc.subagents):
        mine = [k for k, s in seen if s == i]
        assert mine.count("messages") == len(sub.messages) and mine[-1] == "subagent"


def test_messages_inside_metadata_are_not_the_documents():
    fake = (HEAD + b'"metadata":{"x":{"messages":[\n' + MSG + b'\n]}},"messages":[],"records":[]}')
    summary = read_stream([fake])
    assert summary.counts.messages == 0 and summary.document.metadata == {"x": {"messages": [json.loads(MSG)]}}


@pytest.mark.parametrize("data, error, words", [
    (HEAD + b'"messages":[' + MSG + MSG + b"]}", InvalidInputError, "missing comma"),
    (HEAD + b'"messages":[' + MSG + b",]}", InvalidInputError, "unexpected character at line 1 column 183"),
    (b'{"messages": [\n  ' + MSG + b',\n  {"b": 2 3}]}', InvalidInputError, "not JSON: .* at line 3 column 11"),
    (b'{"messages": [\n  ' + MSG + b'\n  {"b": 2}]}', InvalidInputError, "missing comma .* line 3 column 3"),
    (HEAD + b'"messages":[1]}', InvalidInputError, "not an object"),
    (HEAD + b'"messages":[' + MSG + b"]}x", InvalidInputError, "more data after"),
    (HEAD + b'"messages":[' + MSG, InvalidInputError, "ends before"),
    (b"", InvalidInputError, "empty"),
    (b'"a string"', InvalidInputError, "does not start"),
    (HEAD + b'"messages":[],"messages":[]}', InvalidInputError, "twice"),
    (HEAD + b'"messages":[{"messageId":"m","role":"ROLE_USER","parts":[{"text":"a","url":"b"}]}]}',
     InvalidInputError, r"at \$\.messages\[0\]\.parts\[0\]"),
    (HEAD + b'"messages":[' + b"[" * 100_000 + b"]" * 100_000 + b"]}", InvalidInputError, "deeper than 256"),
    (HEAD + b'"metadata":' + b"[" * 100_000 + b"]" * 100_000 + b"}", InvalidInputError, "deeper than 256"),
])
def test_bad_documents_end_with_one_clear_error(data, error, words):
    rng = random.Random(len(data))
    with pytest.raises(error, match=words):
        read_stream(pieces(data, rng))
    if words != "twice":  # (the whole reader takes the last of two arrays; a stream cannot take it back)
        with pytest.raises(P2pdError):
            parse_document(data)


def test_limits_hold_while_streaming():
    limits = Limits(messages=3, element_bytes=1000, element_values=50, skeleton_bytes=2000)
    many = HEAD + b'"messages":[' + b",".join([MSG] * 4) + b"]}"
    with pytest.raises(TooLargeError, match="more than 3 messages"):
        read_stream([many], limits=limits)
    # a huge string stops at the element cap, before the element ends
    reader = DocumentReader(limits=limits)
    reader.feed(HEAD + b'"messages":[{"messageId":"m","parts":[{"text":"')
    with pytest.raises(TooLargeError, match="over 1000 bytes"):
        for _ in range(100):
            reader.feed(b"x" * 100)
    # many values in one small element
    with pytest.raises(TooLargeError, match="more than 50 JSON values"):
        read_stream([HEAD + b'"messages":[{"messageId":"m","parts":[{"data":[' + b"1," * 60 + b"1]}]}]}"],
                    limits=limits)
    # commas inside strings are not values
    text = b'{"messageId":"m","role":"ROLE_USER","parts":[{"text":"' + b"," * 200 + b'"}]}'
    assert read_stream([HEAD + b'"messages":[' + text + b"]}"], limits=limits).counts.messages == 1
    # the envelope is bounded too (a huge title)
    with pytest.raises(TooLargeError, match="outside its messages"):
        read_stream([HEAD + b'"title":"' + b"t" * 5000 + b'","messages":[]}'], limits=limits)


@pytest.mark.parametrize("layout", ["lines", "compact", "pretty"])
def test_integers_past_64_bits_are_read_exactly(layout):
    """A tool's output or an id past 64 bits arrives as the integer it is, whole or streamed, in every layout (not
    rounded through a float, as orjson reads it)."""
    big = 123456789012345678901234567890
    doc = {"format": "p2pd.conversation", "contextId": "c", "createdAt": "2026-01-01T00:00:00Z",
           "origin": {"platform": "a2a"},
           "messages": [{"messageId": "m", "role": "ROLE_USER", "parts": [{"data": {"id": big}}],
                         "metadata": {"p2pd": {"n": big}}}],
           "records": [{"line": 1, "value": {"n": -big}}]}
    data = layouts(doc, random.Random(0))[layout]
    for read in (parse_document(data), read_whole(pieces(data, random.Random(1)))):
        assert read.records[0].value == {"n": -big}
        assert read.messages[0].parts[0].data_value == {"id": big} and read.messages[0].p2pd == {"n": big}
