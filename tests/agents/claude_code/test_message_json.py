"""Messages made straight into their JSON (the streamed writer's way) are the model's messages, byte for byte:
on every corpus transcript (subagents included) and on blocks of every odd shape; read through
:class:`MessageView`, they give the same counts, summary and title."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from p2pd.agents.claude_code.export import iter_transcript, prompt_title
from p2pd.agents.claude_code.message_json import iter_messages_json
from p2pd.agents.claude_code.transcript import active_chain
from p2pd.agents.jsonl import parse_lines, read_text
from p2pd.conversation.document_io import compact_json
from p2pd.conversation.message_view import MessageView
from p2pd.conversation.model import Counts, Message
from p2pd.conversation.summary import SummaryBuilder
from tests.corpus import claude_code_files, file_id

PNG = "iVBORw0KGgo="
ODD_BLOCKS = [
    "s", 1, None, [2], {"a": 1}, {"type": 5}, {"type": None}, {"type": "text"}, {"type": "text", "text": 3},
    {"type": "text", "text": "plain"}, {"type": "text", "text": "with extra", "citations": [], "cache": None},
    {"text": "no type"}, {"type": "tool_use", "id": "c1", "name": "Read", "input": {"file_path": "/a/b.py"}},
    {"type": "tool_result", "tool_use_id": "c1", "content": [{"type": "text", "text": "ok"}]},
    {"type": "tool_result", "tool_use_id": "c2", "content": None, "is_error": True},
    {"type": "thinking", "thinking": "hm", "signature": "x"}, {"type": "redacted_thinking", "data": "y"},
    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}, "extra": 1},
    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "not base64!"}},
    {"type": "image", "source": {"type": "base64", "media_type": 7, "data": PNG}},
    {"type": "image", "source": {"type": "url", "url": "https://x"}}, {"type": "image"},
    {"type": "tool_reference", "tool_name": "Grep"}, {"type": "unknown-kind", "x": [1, {"y": None}]},
]


def _lines(records: list[dict[str, object]]) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def _odd_session() -> bytes:
    out: list[dict[str, object]] = []
    parent = None
    for i, block in enumerate(ODD_BLOCKS):
        for role, content in (("user", [block]), ("assistant", [block, {"type": "text", "text": f"r{i}"}])):
            uid = f"u{i}{role}"
            line: dict[str, object] = {"type": role, "uuid": uid, "parentUuid": parent, "sessionId": "s",
                                       "timestamp": "2026-01-01T00:00:00Z",
                                       "message": {"role": role, "id": f"m{i}", "model": "x", "content": content}}
            if i % 5 == 0:
                line["isMeta"] = True
            if i % 7 == 0:
                line["isCompactSummary"] = True
            out.append(line)
            parent = uid
    out.append({"type": "user", "uuid": "dup", "parentUuid": parent, "message": {"content": "first prompt"}})
    out.append({"type": "user", "uuid": "dup", "parentUuid": "dup", "message": {"content": "same id"}})
    out.append({"type": "user", "message": {"content": "no uuid"}, "isSidechain": True})
    return _lines(out)


def _same(text: str) -> None:
    lines = parse_lines(text)
    active = set(active_chain(lines))
    models = [m for m in iter_transcript(lines, "ctx", active) if isinstance(m, Message)]
    fast = list(iter_messages_json(lines, "ctx", active))
    assert [compact_json(m) for m in fast] == [compact_json(m.to_json_dict()) for m in models]
    counts = [Counts(), Counts()]
    summaries = [SummaryBuilder(), SummaryBuilder()]
    titles: list[list[str | None]] = [[], []]
    for side, messages in enumerate(([*models], [MessageView(m) for m in fast])):
        for m in messages:
            counts[side].add(m)
            titles[side].append(prompt_title(m))
            if m.p2pd.get("active", True):
                summaries[side].add(m)
    assert counts[0] == counts[1]
    assert titles[0] == titles[1]
    assert summaries[0].finish("", None) == summaries[1].finish("", None)


@pytest.mark.parametrize("path", claude_code_files(), ids=file_id)
def test_corpus_messages_are_the_model_messages(path: Path) -> None:
    _same(read_text(path))


def test_odd_blocks_are_the_model_parts() -> None:
    _same(_odd_session().decode())
