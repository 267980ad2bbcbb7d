"""Cross-agent import in both directions, with what cannot be carried said as warnings."""

from __future__ import annotations

import itertools
import json

import pytest

from p2pd.agents.codex.export import export_rollout
from p2pd.agents.codex.importer import import_to_codex
from p2pd.agents.codex.paths import find_rollouts
from p2pd.agents.crossagent import import_into_claude_code
from p2pd.agents.sources import load_file
from p2pd.cli.main import main
from tests.agents.claude_code.helpers import rich_session
from tests.agents.helpers import every_kind_rollout
from tests.corpus import CORPUS


def _jsonl(path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def _cc_texts(lines) -> str:
    out = []
    for line in lines:
        content = line["message"]["content"]
        out.append(content if isinstance(content, str) else json.dumps(content))
    return "\n".join(out)


@pytest.fixture
def project(tmp_path):
    p = tmp_path / "proj"
    p.mkdir()
    return p


def test_claude_code_into_codex(tmp_path, project):
    doc = load_file(rich_session().write(tmp_path / "src"))
    home = tmp_path / "codex"
    r = import_to_codex(doc, cwd=project, home=home)
    assert r.path.parent.parent.parent.parent == home / "sessions"
    assert r.path.name.startswith("rollout-") and r.path.name.endswith(f"-{r.session_id}.jsonl")
    lines = _jsonl(r.path)
    assert lines[0]["type"] == "session_meta" and lines[0]["payload"]["id"] == r.session_id
    assert lines[0]["payload"]["cwd"] == str(project.resolve())
    assert all(set(x) == {"timestamp", "type", "payload"} for x in lines)
    items = [x["payload"] for x in lines if x["type"] == "response_item"]
    user_text = items[0]["content"][0]["text"]
    assert "screenshot" in user_text and items[0]["content"][1]["image_url"].startswith("data:image/png;base64,")
    agent = "\n".join(c["text"] for i in items if i["role"] == "assistant" for c in i["content"])
    assert "[claude-code tool call: Read" in agent and "/home/dev/proj/app.py" in agent
    assert "print('hi')" in agent and "[error of Bash" in agent and "Done: the bug is fixed." in agent
    assert {x["payload"]["type"] for x in lines if x["type"] == "event_msg"} == {"user_message", "agent_message"}
    # what could not be carried is said, with counts
    notes = "\n".join(r.warnings)
    assert "dropped 2 reasoning blocks (2 signed or encrypted" in notes
    assert "3 tool calls and 3 results were written as text" in notes
    assert "1 images" in notes  # the screenshot inside a tool result
    assert f"codex exec resume {r.session_id}" in notes and "experimental_resume" not in notes
    assert lines[0]["payload"]["model_provider"] == "openai"
    # Codex (and p2pd) can read the written rollout back
    back = export_rollout(r.path)
    assert back.origin.platform == "codex" and back.counts.messages == len(items)
    assert find_rollouts(home)[0].session_id == r.session_id


def test_codex_into_claude_code(tmp_path, project):
    src = every_kind_rollout().write(tmp_path / "src")
    doc = load_file(src)
    config = tmp_path / "claude"
    r = import_into_claude_code(doc, foreign=True, cwd=project, config=config)
    lines = _jsonl(r.path)
    assert lines[0]["parentUuid"] is None
    assert all(b["parentUuid"] == a["uuid"] for a, b in itertools.pairwise(lines))
    assert lines[0]["type"] == "user" and lines[-1]["type"] == "assistant"
    text = _cc_texts(lines)
    assert "fix the bug in app.py" in text
    assert "[codex tool call: shell (id call_1)]" in text and "cat app.py" in text
    assert "[codex tool call: apply_patch" in text and "Success. Updated app.py" in text
    assert "Fixed: app.py now prints hello." in text and "Summary: fixed app.py" in text
    assert "environment_context" not in text and "[perms]" not in text
    assert '"type": "image"' in text  # the user's inline image
    notes = "\n".join(r.warnings)
    assert "dropped 1 reasoning block (1 signed or encrypted" in notes
    assert "4 tool calls and 3 results were written as text" in notes
    assert "2 meta" in notes
    assert r.resume_command.endswith(f"claude --resume {r.session_id}")


def test_codex_corpus_into_claude_code(tmp_path, project):
    doc = load_file(CORPUS / "codex" / "unleash" / "codex-sample.jsonl")
    r = import_into_claude_code(doc, foreign=True, cwd=project, config=tmp_path / "claude")
    text = _cc_texts(_jsonl(r.path))
    assert "say hello" in text and "exec_command" in text and "Process exited with code 0" in text


def test_codex_into_codex_keeps_lines_and_drops_encrypted_reasoning(tmp_path, project):
    doc = load_file(every_kind_rollout().write(tmp_path / "src"))
    r = import_to_codex(doc, cwd=project, home=tmp_path / "c1")
    lines = _jsonl(r.path)
    assert lines[0]["payload"]["id"] == r.session_id
    assert not any(x["payload"].get("type") == "reasoning" for x in lines if x["type"] == "response_item")
    assert r.dropped_reasoning == 1 and any("--same-account" in w for w in r.warnings)
    assert r.dropped_malformed == 3 and any("3 malformed" in w for w in r.warnings)
    kept = import_to_codex(doc, cwd=project, home=tmp_path / "c2", same_account=True)
    assert any(x["payload"].get("encrypted_content") == "gAAAAB-opaque" for x in _jsonl(kept.path)
               if x["type"] == "response_item")


def test_gemini_into_both(tmp_path, project):
    doc = load_file(CORPUS / "gemini" / "unleash" / "gemini-sample.json")
    r1 = import_to_codex(doc, cwd=project, home=tmp_path / "codex")
    agent = json.dumps(_jsonl(r1.path))
    assert "[gemini tool call: run_shell_command" in agent and "tmux-tool" in agent
    assert any("1 info" in w for w in r1.warnings)
    r2 = import_into_claude_code(doc, foreign=True, cwd=project, config=tmp_path / "claude")
    assert "run_shell_command" in _cc_texts(_jsonl(r2.path))


def test_cli_import_to_codex(tmp_path, project, capsys, monkeypatch):
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    src = rich_session().write(tmp_path / "src")
    assert main(["import", str(src), "--agent", "codex", "--cwd", str(project)]) == 0
    out = capsys.readouterr()
    assert "codex resume" in out.out and "reasoning block" in out.err
    assert len(find_rollouts(tmp_path / "codex")) == 1
    assert main(["import", str(src), "--agent", "codex", "--cwd", str(project), "--dry-run"]) == 0
    assert len(find_rollouts(tmp_path / "codex")) == 1


def _one_long_run():
    """One prompt, then an agent run of 40 tool calls with results of ~12 KB each, an image the agent showed in
    the middle, and the user's next prompt."""
    from tests.agents.claude_code.helpers import PNG_B64, Session

    s = Session()
    s.user("Port the whole module, and do not stop to ask")
    for i in range(40):
        s.tool_call("Bash", {"command": f"make step-{i}"}, f"step {i} output\n" + f"line {i}\n" * 1500)
        if i == 20:
            s.assistant([{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}}])
    s.assistant([{"type": "text", "text": "All 40 steps done."}])
    s.user("Thanks. Now the docs.")
    return s


def _agent_texts(lines) -> list[str]:
    items = [x["payload"] for x in lines if x["type"] == "response_item"]
    return [c["text"] for i in items if i["role"] == "assistant" for c in i["content"]]


def test_a_long_agent_run_goes_on_in_several_agent_messages(tmp_path, project, monkeypatch):
    """An autonomous run is one agent turn; past TURN_TEXT it goes on in the next agent message (it was one
    message, held whole: 10 MB and 204 MiB for a 49 MB single-prompt session). Nothing is lost or reordered, and
    the agent's image still moves to the user turn that follows the whole run."""
    from p2pd.agents import crossagent

    doc = load_file(_one_long_run().write(tmp_path / "src"))
    whole = import_to_codex(doc, cwd=project, home=tmp_path / "whole")  # the default budget: one message
    [one] = _agent_texts(_jsonl(whole.path))
    assert len(one) > 400_000 and one.count("[claude-code tool call: Bash") == 40
    monkeypatch.setattr(crossagent, "TURN_TEXT", 50_000)
    split = import_to_codex(doc, cwd=project, home=tmp_path / "split")
    lines = _jsonl(split.path)
    parts = _agent_texts(lines)
    assert len(parts) > 5
    assert "\n\n".join(parts) == one  # the same text, in order, cut between messages only
    biggest_message = max(len(p) for p in one.split("\n\n[claude-code tool call"))  # (a call and its result)
    assert all(len(p) <= 50_000 + biggest_message for p in parts)
    roles = [x["payload"]["role"] for x in lines if x["type"] == "response_item"]
    assert roles == ["user", *["assistant"] * len(parts), "user"]
    last_user = [x["payload"] for x in lines if x["type"] == "response_item"][-1]
    assert last_user["content"][-1]["image_url"].startswith("data:image/png;base64,")  # moved past the whole run
    foreign = import_into_claude_code(load_file(split.path), foreign=True, cwd=project, config=tmp_path / "cc2")
    texts = [ln["message"]["content"] for ln in _jsonl(foreign.path) if ln["type"] == "assistant"]
    assert len(texts) > 5 and all(len(json.dumps(t)) < 3 * 50_000 + biggest_message for t in texts)
