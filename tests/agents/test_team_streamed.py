"""Claude Code agent-team sessions converted as they are written (``p2pd/agents/claude_code/streamed.py``): the team
state the loaded reading derives (``metadata.teams``, and the summary's open team tasks), from the session's
active messages and its teammates' subagent files, without the session in memory. They used to be loaded whole
(13-15 MiB per transcript MB)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from p2pd.agents.claude_code import streamed
from p2pd.agents.sources import load_file
from p2pd.conversation import media_types as mt
from p2pd.conversation import teams
from p2pd.conversation.neutral import ToolCall, ToolResult, message_items
from p2pd.conversation.shapes import Role
from p2pd.conversation.teams import EventCollector, TeamEvent, events_from_messages
from tests.agents.claude_code.helpers import Session
from tests.agents.test_streamed import assert_same_document, stream
from tests.conversation.test_teams import team_session
from tests.seeds import seeded


def _teammate(folder: Path, agent_id: str, name: str, session_id: str) -> None:
    """A teammate's own transcript under ``subagents/``, its name in its meta file: it claims a task, finishes
    it and reports to the lead."""
    s = Session(session_id=session_id)
    s.t = 600  # (its lines' times after the lead's: the events are applied in time order)
    s.user("You are " + name)
    s.tool_call("TaskUpdate", {"taskId": "2", "status": "in_progress"}, "Updated task #2")
    s.tool_call("SendMessage", {"type": "message", "recipient": "team-lead", "content": "tests written",
                                "summary": "done"}, "Message sent")
    s.tool_call("TaskUpdate", {"taskId": "2", "status": "completed"}, "Updated task #2")
    sub = folder / "subagents"
    s.write(sub, f"agent-{agent_id}.jsonl")
    (sub / f"agent-{agent_id}.meta.json").write_text(json.dumps({"agentType": "general-purpose", "name": name}))


def _streams_as_it_loads(path: Path, tmp_path: Path) -> dict[str, Any]:
    spool = tmp_path / "spool"
    spool.mkdir(exist_ok=True)
    data, heads, info = stream(path, spool)
    doc = load_file(path)
    assert doc.metadata and "teams" in doc.metadata  # (the loaded reading does see a team)
    assert_same_document(data, doc, path)
    assert (info.title, info.summary) == (doc.title, doc.summary)
    assert [h["title"] for h in heads] == [doc.title]
    assert list(spool.iterdir()) == []
    out: dict[str, Any] = json.loads(data)
    return out


def test_a_team_session_with_its_teammates_streams_as_it_loads(tmp_path):
    s = team_session()
    path = s.write(tmp_path / "proj")
    _teammate(path.with_suffix(""), "b1", "bob", s.session_id)
    got = _streams_as_it_loads(path, tmp_path)
    state = got["metadata"]["teams"]
    assert state["tasks"]["2"]["status"] == "completed" and state["tasks"]["2"]["owner"] == "bob"
    assert any(e["from"] == "bob" and e["content"] == "tests written" for e in state["timeline"])
    assert "team task(s) open" not in got["summary"]  # (bob finished the last open task in his own file)


def test_open_team_tasks_reach_the_summary(tmp_path):
    got = _streams_as_it_loads(team_session().write(tmp_path / "proj"), tmp_path)
    assert got["summary"].endswith("Open: 1 team task(s) open: Write tests.")


def test_a_result_written_before_its_call_is_found_by_reading_again(tmp_path, monkeypatch):
    """A damaged or edited transcript can hold a team call's result before the call: the collector only knows the
    result's id then, and the writer reads the messages again for it (only then). Without that second reading
    the call would count as unanswered and change nothing."""
    s = Session()
    s.user("make a team")
    s.tool_call("TeamCreate", {"team_name": "t"}, "Team t created")
    s.tool_call("TaskCreate", {"subject": "Port it"}, "Task #7 created successfully: Port it")
    call = len(s.lines) - 2  # (the call's line, then its result's)
    s.assistant([{"type": "text", "text": "ok"}])
    s.lines[call], s.lines[call + 1] = s.lines[call + 1], s.lines[call]  # the result's line first, links kept
    path = s.write(tmp_path / "proj")
    passes: list[int] = []
    real = streamed.iter_messages_json

    def counted(*args: Any, **kw: Any) -> Any:
        passes.append(1)
        return real(*args, **kw)

    monkeypatch.setattr(streamed, "iter_messages_json", counted)
    got = _streams_as_it_loads(path, tmp_path)
    assert got["metadata"]["teams"]["tasks"]["7"]["subject"] == "Port it"  # its id read from its result
    assert len(passes) == 3  # the title's peek, the writing pass, and the second reading for the early result
    passes.clear()
    _streams_as_it_loads(team_session().write(tmp_path / "other"), tmp_path)
    assert len(passes) == 2  # (no early result: no second reading)


def test_a_session_of_thousands_of_team_messages_converts_in_linear_time(tmp_path):
    """Each team event deep-copied the whole state before: 4,000 messages sent took 52 s to reduce. Counted in
    copies, not timed: the state is copied once whatever the number of events."""
    copies: list[int] = []
    real = teams.copy.deepcopy

    def counted(value: Any, *args: Any) -> Any:
        copies.append(1)
        return real(value, *args)

    events = [TeamEvent("c0", "TeamCreate", {"team_name": "t"}, "ok")]
    events += [TeamEvent(f"c{i}", "SendMessage", {"type": "message", "recipient": "bob", "content": str(i)}, "ok")
               for i in range(1, 4000)]
    teams.copy.deepcopy = counted  # type: ignore[assignment]
    try:
        state = teams.reduce(events, teams.empty_state())
    finally:
        teams.copy.deepcopy = real  # type: ignore[assignment]
    assert len(state["timeline"]) == 3999 and len(state["applied"]) == 4000
    assert len(copies) == 1
    one_at_a_time = teams.empty_state()
    for e in events[:300]:
        one_at_a_time = teams.apply(one_at_a_time, e)  # (apply stays pure: a new state each time)
    assert one_at_a_time == teams.reduce(events[:300])


# ---- the collector against the rule it implements, on seeded random conversations ----------------------------


class _Msg:
    """A message as the collector reads it (role, ``p2pd``, parts): a Claude Code block list."""

    def __init__(self, n: int, role: Role, blocks: list[dict[str, Any]]) -> None:
        from p2pd.conversation.message_view import PartView

        self.message_id = f"m{n}"
        self.role = role
        self.p2pd: dict[str, Any] = {"timestamp": f"2026-01-01T00:00:{n % 60:02d}Z"}
        kinds = {"tool_use": mt.TOOL_USE, "tool_result": mt.TOOL_RESULT}
        self.parts = [PartView({"mediaType": kinds[b["type"]], "data": b}) for b in blocks]


def _reference(msgs: list[Any]) -> list[TeamEvent]:
    """The rule, read off the loaded way's two passes: every call takes the first result of its id anywhere in
    the conversation, before or after it."""
    results: dict[str, ToolResult] = {}
    for m in msgs:
        for item in message_items(m):
            if isinstance(item, ToolResult) and item.id:
                results.setdefault(item.id, item)
    out = []
    for m in msgs:
        for item in message_items(m):
            if isinstance(item, ToolCall) and teams.is_team_call(item):
                res = results.get(item.id)
                out.append((item.id, item.name, res.text if res else None, bool(res and res.is_error)))
    return out  # type: ignore[return-value]


def _collected(msgs: list[Any]) -> tuple[list[TeamEvent], bool]:
    """The collector's events for ``msgs`` heard one at a time, and whether it read them again."""
    collector = EventCollector()
    for m in msgs:
        collector.add(m)
    again: list[int] = []

    def read_again() -> list[Any]:
        again.append(1)
        return msgs

    return collector.events(read_again), bool(again)


def test_the_collector_keeps_the_first_result_of_each_call_wherever_it_is():
    seed, rng = seeded()
    shapes = 0
    for _ in range(300):
        ids = [f"t{k}" for k in range(rng.randint(1, 6))]
        msgs: list[Any] = []
        for n in range(rng.randint(1, 14)):
            blocks: list[dict[str, Any]] = []
            for _ in range(rng.randint(1, 3)):
                tid = rng.choice([*ids, ""])
                if rng.random() < 0.5:
                    blocks.append({"type": "tool_use", "id": tid, "input": {"team_name": "x", "name": "y"},
                                   "name": rng.choice(["TaskCreate", "SendMessage", "Bash", "Task"])})
                else:
                    blocks.append({"type": "tool_result", "tool_use_id": tid, "is_error": rng.random() < 0.2,
                                   "content": f"#{rng.randint(1, 9)} from message {n}"})
            msgs.append(_Msg(n, rng.choice([Role.USER, Role.AGENT]), blocks))
        got, read_again = _collected(msgs)
        expected = _reference(msgs)
        assert [(e.call_id, e.tool, e.result if e.answered else None, e.is_error) for e in got] == expected, seed
        assert got == events_from_messages(msgs)
        shapes += read_again
    assert shapes  # (some conversations had a result before its call, and were read again)


def test_a_generated_real_shaped_team_session_streams_as_it_loads(tmp_path):
    """Corpus lines with agent-team exchanges in the chain (``tests/transfer/gen.py``): tasks made, claimed and
    finished, messages and teammates' notices, between real tool calls and results."""
    from tests.transfer.gen import generate_conversation

    path = tmp_path / "team.jsonl"
    path.write_bytes(generate_conversation(2_000_000, seed=11, team_every=8))
    got = _streams_as_it_loads(path, tmp_path)
    state = got["metadata"]["teams"]
    assert set(state["members"]) == {"alice", "bob", "carol"} and len(state["tasks"]) > 10
    assert any(e["type"] == "idle_notification" for e in state["timeline"])
