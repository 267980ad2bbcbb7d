"""A Gemini CLI session in the older JSON format (one object holding every message) converted a message at a time
(p2pd/agents/gemini/json_session.py, streamed.py): the same bytes as the whole way's document in the line layout —
for the corpus session, one of every odd element written as Gemini CLI writes it (indented), compact and one per
line, odd files, and a generated big one —; and, for what this reading could read otherwise, left to the whole way
with nothing written. It used to be read whole always."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from p2pd.agents.gemini.export import export_gemini
from p2pd.agents.gemini.streamed import write_recording
from tests.agents.helpers import declined_unwritten, line_layout, offer_of, packed_in_process, written_as_stream
from tests.corpus import gemini_files
from tests.transfer.gen import as_json_session, generate_recording


def _same_as_whole(path: Path, spool: Path) -> bytes:
    data, head = written_as_stream(write_recording, path, spool)
    doc = export_gemini(path)
    assert data == line_layout(doc)
    assert head == offer_of(doc)
    return data


def test_the_corpus_json_session_streams_to_the_whole_ways_bytes(tmp_path: Path) -> None:
    sources = [p for p in gemini_files() if p.suffix == ".json"]
    assert sources, "the corpus has a Gemini CLI JSON session"
    for n, source in enumerate(sources):
        _same_as_whole(source, tmp_path / f"spool{n}")


ODD: list[Any] = [
    {"id": "u1", "timestamp": "2026-03-24T15:44:00Z", "type": "user", "content": "first"},  # 0
    {"id": "g1", "type": "gemini", "content": "", "toolCalls": [{"id": "c1", "name": "ls", "status": "executing"}]},
    {"id": "g1", "type": "gemini", "content": "done", "timestamp": "2026-03-24T15:45:00Z"},  # 2 replaces 1
    {"no": "type"},  # 3: a record and an issue
    {"type": 5, "id": "x"},  # 4 a type that is no string
    {"id": "u2", "type": "user", "content": "wrong turn"},  # 5
    {"$rewindTo": "u2"},  # 6 no type: a record and an issue, and a rewind of 5
    {"type": "info", "$set": {"summary": "dropped"}},  # 7 typed, but an update to the timeline: dropped
    {"id": "u2", "type": "user", "content": "again"},  # 8 an id the rewind freed: renamed u2#8
    {"id": "big", "type": "user", "content": "n", "n": 123456789012345678901234567890, "f": 1.5e300},  # 9
    {"id": "esc", "type": "user", "content": "caf\u00e9 \u2028 \U0001f600 \t"},  # 10
    "a string",  # 11: a record and an issue, as each of the next three
    7,  # 12
    None,  # 13
    [1, {"type": "user"}],  # 14
    {"id": "deep", "type": "user", "content": "d", "x": json.loads("[" * 120 + "]" * 120)},  # 15
]


def _odd_text(indent: int | None) -> str:
    text = json.dumps({"sessionId": "odd-json", "projectHash": "h", "startTime": "2026-03-24T15:43:17Z",
                       "messages": ODD, "lastUpdated": "2026-03-24T16:00:00Z", "summary": "an odd JSON session"},
                      indent=indent, ensure_ascii=False)
    # what json.loads reads but msgspec does not: NaN, a lone surrogate (a string cut inside an emoji)
    return text.replace('"content": "first"', '"content": "first", "score": NaN, "cut": "\\ud83d"')


@pytest.mark.parametrize("indent", [2, None], ids=["indented as Gemini CLI writes it", "compact"])
def test_a_session_of_every_odd_element_streams_to_the_whole_ways_bytes(tmp_path: Path, indent: int | None) -> None:
    path = tmp_path / "session-2026-03-24T15-43-oddjson.json"
    path.write_text(_odd_text(indent), encoding="utf-8")
    _same_as_whole(path, tmp_path / "spool")
    doc = export_gemini(path)
    assert [m.message_id for m in doc.messages] == ["u1", "g1", "u2", "u2#8", "big", "esc", "deep"]
    assert {i.line for i in doc.issues} == {3, 4, 6, 11, 12, 13, 14}
    assert {r.line for r in doc.records} == {1, 3, 4, 6, 11, 12, 13, 14}  # (1: the version 2 replaced)
    assert doc.title == "an odd JSON session" and doc.created_at == "2026-03-24T16:00:00Z"


def test_one_message_per_line_streams_to_the_whole_ways_bytes(tmp_path: Path) -> None:
    path = tmp_path / "lines.json"
    rows = ",\n".join(json.dumps(m) for m in ODD)
    path.write_text('{"sessionId": "lines", "messages": [\n' + rows + "\n]}\n", encoding="utf-8")
    _same_as_whole(path, tmp_path / "spool")


ALIKE = {
    "not UTF-8 (kept as surrogates, as the whole reading decodes)":
        b'{"sessionId": "s", "messages": [{"type": "user", "id": "a", "content": "caf\xe9 \xff"}], "x": "\xc3"}',
    "a records array": b'{"sessionId": "s", "messages": [], "records": [{"line": 1}]}',
    "subagents": b'{"sessionId": "s", "subagents": [{"messages": []}], "messages": []}',
    "no whitespace": b'{"sessionId":"s","messages":[{"type":"user","content":"a"},3,{"type":"gemini"}],"n":1}',
    "whitespace everywhere": b' \r\n{ "sessionId" :"s" ,\t"messages" : [ { "type" : "user" } , 1.5e1 ] , "n" : -0 }\n ',
    "a duplicate key in the metadata": b'{"sessionId": "a", "messages": [], "sessionId": "b", "z": 1}',
}


@pytest.mark.parametrize("what", sorted(ALIKE))
def test_odd_files_stream_to_the_whole_ways_bytes(tmp_path: Path, what: str) -> None:
    path = tmp_path / "session-odd.json"
    path.write_bytes(ALIKE[what])
    _same_as_whole(path, tmp_path / "spool")


LEFT_WHOLE = {
    "a byte-order mark": b'\xef\xbb\xbf{"sessionId": "s", "messages": []}',
    "two messages arrays": b'{"sessionId": "s", "messages": [{"type": "user", "content": "a"}], "messages": []}',
    "messages that is no array": b'{"sessionId": "s", "messages": {"a": 1}}',
    "no messages": b'{"sessionId": "s"}',
    "an empty object": b"{}",
    "a top-level array": b'[{"sessionId": "s", "type": "user", "content": "a"}]',
    "cut off": b'{"sessionId": "s", "messages": [{"type": "user", "content": "a"}',
    "text after it": b'{"sessionId": "s", "messages": []} {}',
    "a trailing comma": b'{"sessionId": "s", "messages": [{"type": "user"},]}',
    "too deep for json": b'{"sessionId": "s", "messages": [' + b"[" * 100_000 + b"]" * 100_000 + b"]}",
}


@pytest.mark.parametrize("what", sorted(LEFT_WHOLE))
def test_what_this_reading_could_read_otherwise_is_left_to_the_whole_way(tmp_path: Path, what: str) -> None:
    path = tmp_path / "session.json"
    path.write_bytes(LEFT_WHOLE[what])
    declined_unwritten(write_recording, path, tmp_path / "spool")
    try:
        expected: Any = export_gemini(path).to_json_dict()
    except Exception as exc:  # (the whole way's own error: the packing process says it)
        expected = type(exc)
    if isinstance(expected, dict):  # the packing process reads it the whole way
        payload, _ = packed_in_process(path, tmp_path / "work")
        assert json.loads(payload) == json.loads(json.dumps(expected))


def test_a_big_generated_json_session_streams_to_the_whole_ways_bytes(tmp_path: Path) -> None:
    """A generated recording's metadata and message objects as one JSON session, indented (versions of a
    message, rewinds and updates included, as elements)."""
    path = tmp_path / "session-big.json"
    path.write_bytes(as_json_session(generate_recording(3_000_000, seed=5)))
    data = _same_as_whole(path, tmp_path / "spool")
    assert data.count(b'"messageId"') > 100


def test_a_session_rewritten_between_the_readings_is_left_to_the_whole_way(tmp_path: Path, monkeypatch) -> None:
    """Gemini CLI writes the whole file again at every turn: when the second reading finds another number of
    messages than the first, nothing has been written yet, and the whole reading takes it."""
    from p2pd.agents.gemini import json_session

    path = tmp_path / "session-live.json"
    path.write_text(_odd_text(2), encoding="utf-8")
    readings = [0]
    real = json_session.JsonSession.messages

    def growing(self: Any) -> Any:
        readings[0] += 1
        yield from real(self)
        if readings[0] > 1:
            yield 99, {"id": "late", "type": "user", "content": "a new turn"}

    monkeypatch.setattr(json_session.JsonSession, "messages", growing)
    declined_unwritten(write_recording, path, tmp_path / "spool")
    assert readings[0] == 2
