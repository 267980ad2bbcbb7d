"""A Gemini CLI JSONL recording converted as it is written (p2pd/agents/gemini/streamed.py): the same bytes as the
whole way's document in the line layout — for a recording of every odd line and update, and a generated one —;
the same errors with nothing written; JSON sessions through the real packing process (here and
tests/exchange/test_producing.py; their own tests: tests/agents/test_gemini_json_streamed.py). The whole way's own
rules are held by tests/agents/test_gemini.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from p2pd.agents.gemini.export import export_gemini
from p2pd.agents.gemini.streamed import write_recording
from p2pd.agents.sources import detect
from tests.agents.helpers import (
    LEFT_WHOLE_GEMINI_JSON,
    declined_unwritten,
    line_layout,
    offer_of,
    packed_in_process,
    refused_alike,
    written_as_stream,
)
from tests.corpus import gemini_files
from tests.transfer.gen import generate_recording


def whole(path: Path) -> bytes:
    return line_layout(export_gemini(path))


def streamed(path: Path, spool: Path) -> tuple[bytes, dict]:
    return written_as_stream(write_recording, path, spool)


def odd_recording(*, as_found: bool = False) -> bytes:
    """Every kind of line the conversion treats apart, numbered as the file numbers them. ``as_found``: without
    the empty object of line 2, so that the file is found to be Gemini CLI's (its first object is the metadata)."""
    done = {"id": "c1", "name": "read_file", "status": "success",
            "result": [{"functionResponse": {"id": "c1", "name": "read_file", "response": {"output": "x = 1"}}}]}
    lines: list[object] = [
        "",  # 1 blank: an issue and a record
        {},  # 2 an empty object: the metadata, which stays empty...
        {"sessionId": "odd-1", "startTime": "2026-03-24T15:43:17Z"},  # 3 ...so this one is it
        {"id": "u1", "timestamp": "2026-03-24T15:44:00Z", "type": "user", "content": "first"},  # 4
        {"id": "g1", "type": "gemini", "content": "", "toolCalls": [{**done, "status": "executing",
                                                                    "result": None}]},  # 5
        {"id": "i1", "type": "info", "content": "Running read_file"},  # 6 comes before the version it follows
        {"id": "g1", "timestamp": "2026-03-24T15:45:00Z", "type": "gemini", "content": "", "toolCalls": [done],
         "thoughts": [{"subject": "Reading", "description": "the file"}]},  # 7 replaces 5 (before i1)
        {"id": "u2", "type": "user", "content": "wrong turn"},  # 8
        {"id": "g2", "type": "gemini", "content": "on the wrong turn"},  # 9
        {"$rewindTo": "u2"},  # 10 takes back 8 and 9
        {"$rewindTo": "nowhere"},  # 11 an unknown id: nothing
        {"$set": "not an object"},  # 12
        {"id": "g2", "type": "gemini", "content": "again"},  # 13 an id the rewind freed: renamed g2#13
        {"id": "g2", "type": "gemini", "content": "again, done"},  # 14 replaces 13, keeps g2#13
        {"id": "", "type": "user", "content": "no id"},  # 15 gemini-15
        {"id": "", "type": "user", "content": "no id, again"},  # 16 replaces 15
        {"id": 7, "type": "info", "content": "a number for an id"},  # 17 gemini-17
        {"type": "warning", "content": "no id at all"},  # 18 gemini-18
        {"$set": {"summary": "an odd session", "lastUpdated": "2026-03-24T16:00:00Z"}},  # 19
        {"neither": True},  # 20 an issue and a record
        "[1, 2]",  # 21 not an object
        "{not json",  # 22
        '{"id": "u5", "type": "user", "content": "crlf"}\r',  # 23
    ]
    if as_found:
        lines.remove({})
    text = b"".join((x if isinstance(x, str) else json.dumps(x)).encode() + b"\n" for x in lines)
    not_utf8 = b'{"id": "u3", "type": "user", "content": "\xff\xfe"}\n'  # 24
    return text + not_utf8 + b'{"id": "u4", "type": "user", "content": "cut off'  # 25, no newline


def test_a_recording_of_every_odd_line_streams_to_the_whole_ways_bytes(tmp_path: Path) -> None:
    path = tmp_path / "session-2026-03-24T15-43-odd.jsonl"
    path.write_bytes(odd_recording())
    data, head = streamed(path, tmp_path / "spool")
    assert data == whole(path)
    assert head == offer_of(export_gemini(path))
    doc = export_gemini(path)
    ids = [m.message_id for m in doc.messages]
    assert [m.metadata["gemini"]["at"] for m in doc.messages] == [4, 7, 6, 8, 9, 14, 16, 17, 18, 23]
    assert ids == ["u1", "g1", "i1", "u2", "g2", "g2#13", "gemini-15", "gemini-17", "gemini-18", "u5"]
    assert len(set(ids)) == len(ids)  # a replaced message keeps the id it was renamed to
    by_id = {m.message_id: m for m in doc.messages}
    assert by_id["g2#13"].parts[0].text == "again, done" and by_id["gemini-15"].parts[0].text == "no id, again"
    assert not by_id["u2"].p2pd["active"] and not by_id["g2"].p2pd["active"] and by_id["g2#13"].p2pd["active"]
    gemini = doc.metadata["gemini"]
    assert (gemini["supersededMessages"], gemini["rewoundMessages"]) == (3, 2)
    assert gemini["session"]["sessionId"] == "odd-1" and doc.title == "an odd session"
    assert {i.line for i in doc.issues} == {1, 20, 21, 22, 24, 25}
    assert {r.line for r in doc.records} | {m.metadata["gemini"]["at"] for m in doc.messages} == set(range(1, 26))
    assert doc.created_at == "2026-03-24T16:00:00Z"
    assert detect(path) != "gemini"  # (its first object is no metadata)
    path.write_bytes(odd_recording(as_found=True))
    assert detect(path) == "gemini"
    assert streamed(path, tmp_path / "spool")[0] == whole(path)


@pytest.mark.parametrize("seed", [1, 2])
def test_a_generated_recording_streams_to_the_whole_ways_bytes(tmp_path: Path, seed: int) -> None:
    print("seed", seed)
    path = tmp_path / "session.jsonl"
    path.write_bytes(generate_recording(2_000_000, seed=seed))
    data, head = streamed(path, tmp_path / "spool")
    assert data == whole(path)
    assert head == offer_of(export_gemini(path))
    doc = export_gemini(path)
    assert doc.metadata["gemini"]["supersededMessages"] > 50 and doc.counts.tool_results > 50


def test_the_same_errors_and_nothing_written(tmp_path: Path) -> None:
    cases = {"garbage.jsonl": b"not json\n[1]\n", "empty.jsonl": b"\n\n", "array.jsonl": b"[1, 2]\n"}
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        refused_alike(export_gemini, write_recording, tmp_path / name, tmp_path)
    refused_alike(export_gemini, write_recording, tmp_path / "missing.jsonl", tmp_path)


def test_json_sessions_through_the_packing_process(tmp_path: Path) -> None:
    """The corpus JSON session is streamed (tests/agents/test_gemini_json_streamed.py); one only the whole reading
    takes is declined before anything is written, and read whole by the packing process."""
    source = next(p for p in gemini_files() if p.suffix == ".json")
    payload, _ = packed_in_process(source, tmp_path / "work")
    assert payload == whole(source)
    left = tmp_path / "session-left.json"
    left.write_bytes(LEFT_WHOLE_GEMINI_JSON)
    declined_unwritten(write_recording, left, tmp_path / "spool")
    payload, _ = packed_in_process(left, tmp_path / "work2")  # the packing process reads it whole
    assert json.loads(payload) == export_gemini(left).to_json_dict()
