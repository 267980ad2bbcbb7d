"""Reading Claude Code transcripts: features the corpus lacks, built in the test."""

from __future__ import annotations

import json

from a2a.types import Message as SdkMessage
from google.protobuf import json_format

from p2pd.agents.claude_code.export import convert_transcript, export_session
from p2pd.agents.claude_code.restore import restored_objects
from p2pd.agents.claude_code.transcript import active_chain
from p2pd.agents.jsonl import parse_lines
from p2pd.conversation import media_types as mt
from tests.agents.claude_code.helpers import PNG_B64, Session, rich_session


def test_images_thinking_and_tools_map_to_documented_parts(tmp_path):
    s = rich_session()
    doc = export_session(s.write(tmp_path))
    first = doc.messages[0]
    assert [p.kind for p in first.parts] == ["text", "raw"]
    assert first.parts[1].raw == PNG_B64 and first.parts[1].media_type == "image/png"
    media = [p.media_type for m in doc.messages for p in m.parts]
    for kind in (mt.THINKING, mt.REDACTED_THINKING, mt.TOOL_USE, mt.TOOL_RESULT):
        assert kind in media
    # the image inside a tool_result is kept inside the result's data
    results = [p.data_value for m in doc.messages for p in m.parts if p.media_type == mt.TOOL_RESULT]
    assert any(isinstance(r["content"], list) and r["content"][1]["source"]["data"] == PNG_B64 for r in results)
    # the split response (thinking, redacted thinking, text, tool_use with one message.id) is one message
    agent = doc.messages[1]
    assert [p.media_type for p in agent.parts] == [mt.THINKING, mt.REDACTED_THINKING, mt.TEXT, mt.TOOL_USE]
    for m in doc.to_json_dict()["messages"]:
        json_format.ParseDict(m, SdkMessage())
    assert restored_objects(doc.main_transcript()) == s.lines


def test_unknown_line_types_and_fields_are_kept(tmp_path):
    s = Session()
    s.user("hello", futureField={"nested": [1, 2.5, None]})
    s.raw({"type": "brand-new-line-type", "payload": {"n": 2**60}})
    s.assistant([{"type": "brand_new_block", "x": 1}, {"type": "text", "text": "hi", "extra": True}])
    t = convert_transcript(parse_lines(s.text()), "c")
    assert not t.issues
    back = restored_objects(t)
    assert back == s.lines
    assert back[1]["payload"]["n"] == 2**60 and isinstance(back[1]["payload"]["n"], int)


def test_malformed_lines_are_counted_with_line_number_and_reason():
    s = Session()
    s.user("first")
    s.raw('{"type": "user", "message": {"role": "user", "content": "cut off')
    s.raw("[1, 2]")
    s.raw({"type": "user", "message": "not an object"})
    s.raw({"no_type": True})
    s.assistant([{"type": "text", "text": "still here"}])
    text = s.text() + '{"type":"assistant","trunc'  # a file that ends mid-line
    lines = parse_lines(text)
    t = convert_transcript(lines, "c")
    reasons = {i.line: i.reason for i in t.issues}
    assert set(reasons) == {2, 3, 4, 5, 7}
    assert "not valid JSON" in reasons[2]
    assert "not a JSON object" in reasons[3]
    assert "without a message" in reasons[4]
    assert "'type'" in reasons[5]
    assert reasons[7].startswith("truncated")
    assert len(t.messages) == 2  # the good lines still convert
    back = restored_objects(t)
    assert back[1] == s.lines[1] and back[6] == '{"type":"assistant","trunc'


def test_active_chain_prefers_newest_leaf_and_keeps_side_branches():
    s = Session()
    root = s.user("start")
    s.assistant([{"type": "text", "text": "answer A"}])
    # the user rewinds: a new prompt hangs off the root again
    s.user("second try", parent=root["uuid"])
    s.assistant([{"type": "text", "text": "answer B"}])
    t = convert_transcript(parse_lines(s.text()), "c")
    active = [m.parts[0].text for m in t.messages if m.p2pd["active"]]
    side = [m.parts[0].text for m in t.messages if not m.p2pd["active"]]
    assert active == ["start", "second try", "answer B"]
    assert side == ["answer A"]


def test_sidechain_leaf_is_not_preferred():
    s = Session()
    s.user("main prompt")
    main_leaf = s.assistant([{"type": "text", "text": "main answer"}])
    s.user("sidechain prompt", parent=False, isSidechain=True)
    s.assistant([{"type": "text", "text": "side answer"}], isSidechain=True)
    chain = active_chain(parse_lines(s.text()))
    assert chain[-1] == 2 and s.lines[1] is main_leaf


def test_parallel_tool_results_on_forks_stay_in_the_conversation():
    s = Session()
    s.user("run two things")
    a1 = s.assistant([{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "a"}}], msg_id="m1")
    a2 = s.assistant([{"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "b"}}], msg_id="m1")
    s.user([{"type": "tool_result", "tool_use_id": "t1", "content": "A"}], parent=a1["uuid"])
    s.user([{"type": "tool_result", "tool_use_id": "t2", "content": "B"}], parent=a2["uuid"])
    s.assistant([{"type": "text", "text": "both ran"}])
    t = convert_transcript(parse_lines(s.text()), "c")
    assert all(m.p2pd["active"] for m in t.messages)


def test_subagents_meta_and_tool_results_are_read(tmp_path):
    s = rich_session()
    path = s.write(tmp_path)
    sub_dir = tmp_path / s.session_id / "subagents"
    sub = Session(session_id=s.session_id)
    sub.user("explore", isSidechain=True, agentId="a1")
    sub.assistant([{"type": "text", "text": "found it"}], isSidechain=True, agentId="a1")
    sub.write(sub_dir, "agent-a1.jsonl")
    (sub_dir / "agent-a1.meta.json").write_text(json.dumps({"agentType": "Explore", "toolUseId": "toolu_1"}))
    (tmp_path / s.session_id / "tool-results").mkdir()
    (tmp_path / s.session_id / "tool-results" / "toolu_1.txt").write_text("big output")
    doc = export_session(path)
    assert [(a.agent_id, a.file_name, a.meta["agentType"]) for a in doc.subagents] == \
        [("a1", "agent-a1.jsonl", "Explore")]
    assert restored_objects(doc.subagents[0]) == sub.lines
    assert doc.tool_results[0].name == "toolu_1.txt" and doc.tool_results[0].text == "big output"
    assert doc.counts.subagents == 1


def _boundary(s: Session, logical: str) -> dict:
    """A compaction boundary as Claude Code writes it: no parent, its logical parent the last line before."""
    line = s._base("system", parent=False)
    line.update(subtype="compact_boundary", content="Conversation compacted", logicalParentUuid=logical)
    return s.add(line)


def test_the_walk_crosses_a_compaction_boundary_to_the_history_before_it():
    s = Session()
    s.user("before")
    before = s.assistant([{"type": "text", "text": "old answer"}])
    _boundary(s, before["uuid"])
    s.user("after")
    s.assistant([{"type": "text", "text": "new answer"}])
    assert active_chain(parse_lines(s.text())) == [1, 2, 3, 4, 5]


def test_a_boundary_whose_logical_parent_is_gone_continues_with_the_newest_leaf_before_it():
    s = Session()
    s.user("first")
    s.assistant([{"type": "text", "text": "first answer"}])
    s.user("rewound", parent=s.lines[0]["uuid"])  # a side branch: line 2 is a leaf before the boundary
    s.assistant([{"type": "text", "text": "rewound answer"}])  # the newest leaf before it: line 4
    _boundary(s, "trimmed-away")
    s.user("after")
    assert active_chain(parse_lines(s.text())) == [1, 3, 4, 5, 6]


def test_a_parent_cycle_ends_the_walk():
    s = Session()
    first = s.user("a")
    s.assistant([{"type": "text", "text": "b"}])
    first["parentUuid"] = s.lines[1]["uuid"]  # line 1 and 2 each other's parent: no root
    s.user("c")
    assert active_chain(parse_lines(s.text())) == [1, 2, 3]
