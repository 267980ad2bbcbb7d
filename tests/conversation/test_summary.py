"""Titles and bounded summaries: deterministic, local, and saying what was asked, done, and left open."""

from __future__ import annotations

import copy

from p2pd.agents.claude_code.export import export_session
from p2pd.agents.sources import load_file
from p2pd.cli.main import main
from p2pd.conversation.summary import SUMMARY_MAX, TITLE_MAX, offer_text, summarize
from tests.agents.claude_code.helpers import Session
from tests.agents.helpers import every_kind_rollout


def _session() -> Session:
    s = Session()
    s.user("<command-name>/clear</command-name>")
    s.user("Please fix the login bug in auth.py and add a test")
    s.tool_call("Read", {"file_path": "/home/dev/proj/auth.py"}, "code")
    s.tool_call("Edit", {"file_path": "/home/dev/proj/auth.py", "old_string": "a", "new_string": "b"}, "ok")
    s.tool_call("Write", {"file_path": "/home/dev/proj/test_auth.py", "content": "def test(): pass"}, "ok")
    s.tool_call("Bash", {"command": "pytest"}, "1 passed")
    s.tool_call("Bash", {"command": "git diff"}, "diff")
    s.tool_call("TodoWrite", {"todos": [{"content": "fix bug", "status": "completed"},
                                        {"content": "update changelog", "status": "pending"}]}, "ok")
    s.assistant([{"type": "tool_use", "id": "t_open", "name": "Bash", "input": {"command": "git push"}}])
    s.assistant([{"type": "text", "text": "The bug is fixed and tested; pushing now."}])
    return s


def test_summary_says_what_was_asked_done_and_open(tmp_path):
    doc = export_session(_session().write(tmp_path))
    doc.title = ""
    title, summary = summarize(doc)
    assert title == "Please fix the login bug in auth.py and add a test"
    assert summary.startswith("Asked: Please fix the login bug")
    assert "Done: 7 tool calls (Bash×3, Read, Edit, Write, TodoWrite)" in summary
    assert "files touched: auth.py, test_auth.py" in summary
    assert "Ended: The bug is fixed and tested; pushing now." in summary
    assert "1 tool call(s) without a result (Bash)" in summary
    assert "1 todo item(s) not done: update changelog" in summary


def test_deterministic_and_bounded(tmp_path):
    s = Session()
    s.user("x" * 5000 + " the end")
    for i in range(40):
        s.tool_call(f"Tool{i}", {"file_path": f"/p/file{i}.py"}, "ok")
    s.assistant([{"type": "text", "text": "y " * 3000}])
    doc = export_session(s.write(tmp_path))
    doc.title = ""
    twin = copy.deepcopy(doc)
    assert summarize(doc) == summarize(twin)
    assert len(doc.title) <= TITLE_MAX and len(doc.summary) <= SUMMARY_MAX
    assert "and 34 more tools" in doc.summary and "and 35 more" in doc.summary


def test_waiting_request_and_titles_of_every_platform(tmp_path):
    s = Session()
    s.user("first question")
    s.assistant([{"type": "text", "text": "answer"}])
    s.user("second question")
    doc = load_file(s.write(tmp_path))
    assert doc.summary.endswith("Ended: waiting for an answer to: second question.")
    codex = load_file(every_kind_rollout().write(tmp_path / "codex"))
    assert codex.title == "fix the bug in app.py" and "files touched: app.py" in codex.summary
    offer = offer_text(codex)
    assert offer.splitlines()[0].startswith("fix the bug in app.py — codex conversation in /home/dev/proj")
    assert offer.splitlines()[1] == codex.summary


def test_session_title_line_wins(tmp_path):
    s = _session()
    s.raw({"type": "custom-title", "customTitle": "Login fix", "sessionId": s.session_id})
    doc = load_file(s.write(tmp_path))
    assert doc.title == "Login fix" and doc.summary.startswith("Asked: Please fix")


def test_sessions_and_show_print_them(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    monkeypatch.setenv("GEMINI_DIR", str(tmp_path / "gemini"))
    every_kind_rollout().write(tmp_path / "codex")
    assert main(["sessions", "--summary"]) == 0
    out = capsys.readouterr().out
    assert "fix the bug in app.py" in out and "Asked: fix the bug" in out
    path = _session().write(tmp_path / "proj")
    assert main(["show", str(path)]) == 0
    assert "Asked: Please fix the login bug" in capsys.readouterr().out
