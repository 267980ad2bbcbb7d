"""Every Claude Code file of the shared corpus: converts with every line accounted for, round-trips exactly,
and every message it produces parses with the official a2a-sdk."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from a2a.types import Message as SdkMessage
from google.protobuf import json_format

from p2pd.agents.claude_code.export import convert_transcript, export_session
from p2pd.agents.claude_code.restore import restored_objects
from p2pd.agents.jsonl import parse_lines, read_text
from p2pd.conversation.document_io import dumps, parse_document
from tests.corpus import claude_code_files, file_id

FILES = claude_code_files()
MAIN_SESSIONS = [f for f in claude_code_files(include_subagents=False)
                 if (f.with_suffix("") / "subagents").is_dir()]


def test_corpus_is_present():
    assert len(FILES) >= 15
    assert len(MAIN_SESSIONS) >= 2


def _source(path: Path) -> list:
    return [ln.value if ln.obj is not None else ln.text for ln in parse_lines(read_text(path))]


@pytest.mark.parametrize("path", FILES, ids=file_id)
def test_round_trip_is_exact(path):
    lines = parse_lines(read_text(path))
    transcript = convert_transcript(lines, "ctx")
    # every source line lands in exactly one place: a message's source list, or a record
    placed = [src["line"] for m in transcript.messages for src in m.metadata["claudeCode"]["lines"]]
    placed += [r.line for r in transcript.records]
    assert sorted(placed) == list(range(1, len(lines) + 1))
    # malformed lines: each one is reported with its line number (zero unreported skips)
    malformed = {ln.n for ln in lines if ln.obj is None}
    reported = {i.line for i in transcript.issues}
    assert malformed <= reported
    # through the serialized document and back: JSON-equal, same order, ints stay ints
    doc_json = json.dumps(transcript.to_json_dict())
    from p2pd.conversation.model import Transcript

    back = restored_objects(Transcript.model_validate_json(doc_json))
    assert back == _source(path)


def _assert_types_equal(a, b):
    """JSON-equal is not enough for ints vs floats (1 == 1.0): check types too."""
    assert type(a) is type(b)
    if isinstance(a, dict):
        assert list(a) == list(b) or set(a) == set(b)
        for k in a:
            _assert_types_equal(a[k], b[k])
    elif isinstance(a, list):
        for x, y in zip(a, b, strict=True):
            _assert_types_equal(x, y)


@pytest.mark.parametrize("path", MAIN_SESSIONS, ids=file_id)
def test_whole_session_with_subagents_round_trips(path):
    doc = export_session(path)
    doc2 = parse_document(dumps(doc, pretty=True))
    back = restored_objects(doc2.main_transcript())
    _assert_types_equal(back, _source(path))
    assert doc2.subagents, "the session's subagent files were not read"
    folder = path.with_suffix("") / "subagents"
    for sub in doc2.subagents:
        assert restored_objects(sub) == _source(folder / sub.file_name)
    assert doc2.counts.subagents == len(list(folder.rglob("*.jsonl")))


@pytest.mark.parametrize("path", FILES, ids=file_id)
def test_every_message_parses_with_a2a_sdk(path):
    doc = export_session(path)
    data = doc.to_json_dict()
    messages = data["messages"] + [m for s in data["subagents"] for m in s["messages"]]
    assert messages
    for m in messages:
        parsed = json_format.ParseDict(m, SdkMessage())
        assert parsed.message_id == m["messageId"]
        assert len(parsed.parts) == len(m["parts"])
        assert parsed.role in (1, 2)  # ROLE_USER, ROLE_AGENT


def test_split_assistant_lines_become_one_message():
    path = next(f for f in FILES if f.name.startswith("4d5611e5"))
    doc = export_session(path)
    multi = [m for m in doc.messages if len(m.metadata["claudeCode"]["lines"]) > 1]
    assert multi, "no API message spanning several lines was merged"
    for m in multi:
        ids = {src["source"]["message"]["id"] for src in m.metadata["claudeCode"]["lines"]}
        assert len(ids) == 1


def test_compaction_keeps_history_before_the_boundary():
    path = next(f for f in FILES if f.name.startswith("4d5611e5"))
    lines = parse_lines(read_text(path))
    boundary = next(ln.n for ln in lines if ln.obj and ln.obj.get("subtype") == "compact_boundary")
    doc = export_session(path)
    active_lines = [src["line"] for m in doc.active_messages() for src in m.metadata["claudeCode"]["lines"]]
    assert min(active_lines) < boundary < max(active_lines)
    summary = [m for m in doc.messages if m.p2pd["kind"] == "compact-summary"]
    assert len(summary) == 1 and summary[0].p2pd["active"]
