"""Gemini CLI sessions (JSON and JSONL) → A2A with zero unreported skips."""

from __future__ import annotations

import json

import pytest
from a2a.types import Message as SdkMessage
from google.protobuf import json_format

from p2pd.agents.gemini.export import export_gemini
from p2pd.agents.sessions import list_sessions
from p2pd.agents.sources import detect
from p2pd.conversation import media_types as mt
from p2pd.conversation.neutral import Reasoning, ToolCall, ToolResult, message_items
from tests.agents.helpers import PNG_B64
from tests.corpus import file_id, gemini_files

FILES = [f for f in gemini_files() if f.suffix in (".json", ".jsonl")]


def _accounted(doc) -> set[int]:
    return {m.metadata["gemini"]["at"] for m in doc.messages} | {r.line for r in doc.records}


@pytest.mark.parametrize("path", FILES, ids=file_id)
def test_corpus_converts_with_no_unreported_skip(path):
    assert detect(path) == "gemini"
    doc = export_gemini(path)
    raw = json.loads(path.read_text())
    assert _accounted(doc) == set(range(len(raw["messages"])))
    assert doc.counts.tool_calls == sum(len(m.get("toolCalls", [])) for m in raw["messages"])
    assert doc.counts.tool_results == doc.counts.tool_calls
    items = [i for m in doc.messages for i in message_items(m)]
    assert any(isinstance(i, Reasoning) and i.text for i in items)
    results = [i for i in items if isinstance(i, ToolResult)]
    assert results and all(r.text for r in results)
    for m in doc.to_json_dict()["messages"]:
        json_format.ParseDict(m, SdkMessage())


def _jsonl(tmp_path, lines) -> object:
    path = tmp_path / "session-2026-03-24T15-43-aaaa1111.jsonl"
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


def test_jsonl_updates_rewinds_and_parts(tmp_path):
    meta = {"sessionId": "s-1", "projectHash": "ab" * 32, "startTime": "2026-03-24T15:43:17Z"}
    call = {"id": "c1", "name": "read_file", "args": {"absolute_path": "/p/a.py"}, "status": "executing"}
    done = {**call, "status": "success", "result": [{"functionResponse": {"id": "c1", "name": "read_file",
                                                                         "response": {"output": "x = 1"}}}]}
    path = _jsonl(tmp_path, [
        meta,
        {"id": "u1", "timestamp": "t1", "type": "user", "content": [{"text": "look"},
                                                                    {"inlineData": {"mimeType": "image/png",
                                                                                    "data": PNG_B64}}]},
        {"id": "g1", "timestamp": "t2", "type": "gemini", "content": "", "toolCalls": [call], "model": "gemini-3"},
        {"id": "g1", "timestamp": "t2", "type": "gemini", "content": "", "toolCalls": [done], "model": "gemini-3",
         "thoughts": [{"subject": "Reading", "description": "the file"}]},
        {"$set": {"summary": "reading a file"}},
        {"id": "u2", "timestamp": "t3", "type": "user", "content": "wrong turn"},
        {"id": "g2", "timestamp": "t4", "type": "gemini", "content": [{"functionCall": {"name": "ls", "args": {}}},
                                                                     {"executableCode": {"code": "1"}}]},
        {"$rewindTo": "u2"},
        "{not json",
        {"id": "u3", "timestamp": "t5", "type": "user", "content": "right turn"},
        {"id": "g3", "timestamp": "t6", "type": "gemini", "content": [{"text": "done", "thought": False}]},
        {"id": "i1", "timestamp": "t7", "type": "info", "content": "Request cancelled."},
        {"neither": True},
    ])
    assert detect(path) == "gemini"
    doc = export_gemini(path)
    assert _accounted(doc) == set(range(1, 14))  # every line is a message or a record
    assert {i.line for i in doc.issues} == {9, 13}
    assert doc.metadata["gemini"]["supersededMessages"] == 1 and doc.metadata["gemini"]["rewoundMessages"] == 2
    assert doc.metadata["gemini"]["session"]["summary"] == "reading a file"
    by_id = {m.message_id: m for m in doc.messages}
    assert not by_id["u2"].p2pd["active"] and not by_id["g2"].p2pd["active"] and by_id["u3"].p2pd["active"]
    assert [p.kind for p in by_id["u1"].parts] == ["text", "raw"]
    g1 = [i for i in message_items(by_id["g1"])]
    assert isinstance(g1[0], Reasoning) and g1[0].text == "Reading: the file"
    assert isinstance(g1[1], ToolCall) and g1[1].input == {"absolute_path": "/p/a.py"}
    assert isinstance(g1[2], ToolResult) and g1[2].text == "x = 1"
    assert by_id["g2"].parts[1].media_type == mt.GEMINI_PART
    assert by_id["i1"].p2pd["kind"] == "info"
    assert doc.title == "reading a file"  # the session's own summary wins
    assert doc.summary.startswith("Asked: look")


def test_sessions_lists_gemini(tmp_path, monkeypatch):
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    monkeypatch.setenv("GEMINI_DIR", str(tmp_path / "gemini"))
    chats = tmp_path / "gemini" / "tmp" / ("ab" * 32) / "chats"
    chats.mkdir(parents=True)
    (chats / "session-2026-03-24T15-43-aaaaaaaa.json").write_bytes(FILES[0].read_bytes())
    (chats / "session-2026-01-01T00-00-broken.json").write_text("{oops")
    infos = list_sessions("gemini")
    assert len(infos) == 2 and {i.platform for i in infos} == {"gemini"}
    assert any(i.title.startswith("[unreadable:") for i in infos)
    assert any(i.messages == 6 for i in infos)
