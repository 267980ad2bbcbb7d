"""Agent teams: recognizer and reducer, on Claude Code sessions built with the team tool calls."""

from __future__ import annotations

import io

from rich.console import Console

from p2pd.agents.claude_code.export import export_session
from p2pd.agents.sources import load_file
from p2pd.conversation.render import render
from p2pd.conversation.teams import TeamEvent, apply, document_events, reduce
from tests.agents.claude_code.helpers import Session


def team_session() -> Session:
    """The full lifecycle: create → members → tasks → claim → complete → shutdown → delete."""
    s = Session()
    s.user("Build the feature with a team")
    s.tool_call("TeamCreate", {"team_name": "feat", "description": "feature team"}, "Team feat created")
    s.tool_call("Task", {"team_name": "feat", "name": "alice", "subagent_type": "general-purpose",
                         "prompt": "You are alice"}, "Spawned alice")
    s.tool_call("Task", {"team_name": "feat", "name": "bob", "subagent_type": "general-purpose",
                         "prompt": "You are bob"}, "Spawned bob")
    s.tool_call("Task", {"description": "plain subagent", "prompt": "look around",
                         "subagent_type": "Explore"}, "found things")  # not a team call
    s.tool_call("TaskCreate", {"subject": "Write parser", "description": "parse it"},
                "Task #1 created successfully: Write parser")
    s.tool_call("TaskCreate", {"subject": "Write tests", "description": "test it"},
                "Task #2 created successfully: Write tests")
    s.tool_call("TaskUpdate", {"taskId": "2", "addBlockedBy": ["1"]}, "Updated task #2")
    s.tool_call("TaskUpdate", {"taskId": "1", "owner": "alice", "status": "in_progress"}, "Updated task #1")
    s.tool_call("SendMessage", {"type": "message", "recipient": "alice", "content": "Start on the parser",
                                "summary": "parser go"}, "Message sent")
    s.tool_call("TaskList", {}, "#1 [in_progress] Write parser (alice)\n#2 [pending] Write tests")
    s.tool_call("TaskGet", {"taskId": "1"}, "Task #1: Write parser")
    s.user('<teammate-message teammate_id="bob" color="blue">{"type":"idle_notification","from":"bob"}'
           "</teammate-message>")
    s.tool_call("TaskUpdate", {"taskId": "1", "status": "completed"}, "Updated task #1")
    s.tool_call("SendMessage", {"type": "broadcast", "content": "Parser done", "summary": "done"}, "Broadcast sent")
    s.tool_call("SendMessage", {"type": "plan_approval_response", "recipient": "bob", "request_id": "p1",
                                "approve": True}, "sent")
    s.tool_call("SendMessage", {"type": "shutdown_request", "recipient": "alice", "content": "wrap up"}, "sent")
    s.user('<teammate-message teammate_id="alice">{"type":"shutdown_approved","requestId":"r1"}'
           "</teammate-message>")
    s.tool_call("TeamDelete", {}, "Team feat deleted")
    s.assistant([{"type": "text", "text": "All done."}])
    return s


def test_full_lifecycle(tmp_path):
    doc = load_file(team_session().write(tmp_path))
    state = doc.metadata["teams"]
    assert state["teams"]["feat"]["status"] == "deleted"
    assert set(state["members"]) == {"alice", "bob"}  # the plain subagent Task is not a member
    assert state["members"]["alice"]["status"] == "shutdown" and state["members"]["bob"]["status"] == "shutdown"
    t1, t2 = state["tasks"]["1"], state["tasks"]["2"]
    assert (t1["subject"], t1["status"], t1["owner"]) == ("Write parser", "completed", "alice")
    assert t1["blocks"] == ["2"] and t2["blockedBy"] == ["1"] and t2["status"] == "pending"
    types = [e["type"] for e in state["timeline"]]
    assert types == ["message", "idle_notification", "broadcast", "plan_approval_response", "shutdown_request",
                     "shutdown_approved"]
    assert state["timeline"][0]["to"] == "alice" and state["timeline"][2]["to"] == "*"
    assert state["ignored"] == []
    assert "1 team task(s) open: Write tests" in doc.summary


def test_member_status_before_shutdown(tmp_path):
    s = team_session()
    cut = next(i for i, line in enumerate(s.lines) if "shutdown_request" in str(line))
    s.lines = s.lines[:cut]
    state = load_file(s.write(tmp_path)).metadata["teams"]
    assert state["members"]["alice"]["status"] == "active"
    assert state["members"]["bob"]["status"] == "idle"
    assert state["teams"]["feat"]["status"] == "active"


def test_replay_changes_nothing(tmp_path):
    events = document_events(export_session(team_session().write(tmp_path)))
    once = reduce(events)
    assert reduce(events, once) == once  # the same calls again
    assert reduce(events + events) == once
    # the same update a second time under another id changes nothing either (lists stay duplicate-free)
    again = TeamEvent(call_id="other", tool="TaskUpdate", input={"taskId": "2", "addBlockedBy": ["1"]},
                      result="ok")
    twice = apply(once, again)
    assert twice["tasks"] == once["tasks"]


def test_unknown_task_and_member_never_fail():
    state = reduce([
        TeamEvent("a", "TaskUpdate", {"taskId": "99", "status": "completed"}, "ok"),
        TeamEvent("b", "SendMessage", {"type": "shutdown_request", "recipient": "ghost"}, "ok"),
        TeamEvent("c", "TeamDelete", {"team_name": "nope"}, "ok"),
        TeamEvent("d", "teammate-message", {"from": "ghost", "body": '{"type":"idle_notification"}'}, "",
                  actor="ghost"),
        TeamEvent("e", "SendMessage", {"type": "weird_new_type", "recipient": "x"}, "ok"),
    ])
    assert state["tasks"] == {} and state["members"] == {}
    reasons = [i["reason"] for i in state["ignored"]]
    assert reasons == ["unknown task '99'", "unknown member 'ghost'", "unknown team 'nope'", "unknown member 'ghost'"]
    assert state["timeline"][-1].get("unknownType") is True


def test_error_and_unanswered_results_are_ignored(tmp_path):
    s = Session()
    s.user("go")
    s.tool_call("TeamCreate", {"team_name": "t"}, "Team t created")
    s.tool_call("TaskCreate", {"subject": "A"}, "Task #1 created")
    s.tool_call("TaskUpdate", {"taskId": "1", "status": "completed"}, "Error: not allowed", is_error=True)
    s.tool_call("Task", {"team_name": "t", "name": "eve"}, "spawn failed", is_error=True)
    s.assistant([{"type": "tool_use", "id": "t_lost", "name": "TaskUpdate",
                  "input": {"taskId": "1", "status": "deleted"}}])  # never answered
    state = load_file(s.write(tmp_path)).metadata["teams"]
    assert state["tasks"]["1"]["status"] == "pending"
    assert state["members"] == {}


def test_plain_subagent_session_has_no_team_state(tmp_path):
    s = Session()
    s.user("look")
    s.tool_call("Task", {"description": "explore", "prompt": "p", "subagent_type": "Explore"}, "ok")
    s.tool_call("Task", {"team_name": "t", "prompt": "p"}, "ok")  # team_name without name: not a team call
    doc = load_file(s.write(tmp_path))
    assert "teams" not in (doc.metadata or {})


def test_show_renders_roster_board_and_timeline(tmp_path):
    doc = load_file(team_session().write(tmp_path))
    buf = io.StringIO()
    render(Console(file=buf, width=160, color_system=None), doc)
    out = buf.getvalue()
    assert "roster" in out and "task board" in out and "messages" in out
    assert "alice" in out and "Write parser" in out and "shutdown_request" in out
    assert "feat (deleted)" in out
