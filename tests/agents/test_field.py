"""Field-grade cross-agent import (issue 12): what the real Codex and Claude Code programs need of an import,
each pinned on a minimal real-shaped session."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from p2pd.agents.claude_code.importer import import_to_claude_code
from p2pd.agents.codex.importer import import_to_codex
from p2pd.agents.crossagent import import_into_claude_code
from p2pd.agents.sources import load_file
from tests.agents.claude_code.helpers import PNG_B64
from tests.agents.helpers import every_kind_rollout


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def gemini_session_with_an_image_reply(path: Path) -> Path:
    """A Gemini CLI session (older JSON format) whose model reply holds an inline image, as image models do."""
    session = {"sessionId": "5b0c6c53-2a55-4f4e-9d55-3d1f3c1c2a01", "projectHash": "ab" * 32,
               "startTime": "2026-03-01T10:00:00.000Z", "lastUpdated": "2026-03-01T10:01:00.000Z",
               "messages": [
                   {"id": "m1", "timestamp": "2026-03-01T10:00:00.000Z", "type": "user",
                    "content": "draw me a dot"},
                   {"id": "m2", "timestamp": "2026-03-01T10:00:30.000Z", "type": "gemini", "model": "gemini-2.5-pro",
                    "content": [{"text": "Here is the dot."},
                                {"inlineData": {"mimeType": "image/png", "data": PNG_B64}}]},
                   {"id": "m3", "timestamp": "2026-03-01T10:01:00.000Z", "type": "user", "content": "thanks"},
                   {"id": "m4", "timestamp": "2026-03-01T10:01:00.000Z", "type": "gemini", "model": "gemini-2.5-pro",
                    "content": "You're welcome."}]}
    path.mkdir(parents=True, exist_ok=True)
    f = path / "session-2026-03-01T10-00-5b0c6c53.json"
    f.write_text(json.dumps(session))
    return f


@pytest.fixture
def project(tmp_path):
    p = tmp_path / "proj"
    p.mkdir()
    return p


def _cc_images(lines: list[dict], role: str) -> int:
    return sum(1 for line in lines if line.get("type") == role and isinstance(line["message"]["content"], list)
               for b in line["message"]["content"] if b.get("type") == "image")


def test_agent_images_move_to_the_next_user_turn_in_claude_code(tmp_path, project):
    doc = load_file(gemini_session_with_an_image_reply(tmp_path / "g"))
    for r in (import_into_claude_code(doc, foreign=True, cwd=project, config=tmp_path / "c1"),
              import_to_claude_code(doc, cwd=project, config=tmp_path / "c2")):  # the plain-A2A path too
        lines = _jsonl(r.path)
        assert _cc_images(lines, "assistant") == 0 and _cc_images(lines, "user") == 1
        carrier = next(line for line in lines if line["type"] == "user" and _cc_images([line], "user"))
        assert "moved here" in json.dumps(carrier["message"]["content"])
        assert all(line["message"]["model"] == "<synthetic>" for line in lines if line["type"] == "assistant")


def test_agent_images_move_to_the_next_user_turn_in_codex(tmp_path, project):
    doc = load_file(gemini_session_with_an_image_reply(tmp_path / "g"))
    r = import_to_codex(doc, cwd=project, home=tmp_path / "codex")
    items = [x["payload"] for x in _jsonl(r.path) if x["type"] == "response_item"]
    images = [(i["role"], c) for i in items for c in i["content"] if c["type"] == "input_image"]
    assert [role for role, _ in images] == ["user"]
    assert images[0][1]["image_url"] == f"data:image/png;base64,{PNG_B64}"
    assert not any("images" in w and "not carried" in w for w in r.warnings)


def test_codex_meta_names_a_model_provider_and_the_commands_are_ones_codex_honours(tmp_path, project):
    for doc in (load_file(gemini_session_with_an_image_reply(tmp_path / "g")),
                load_file(every_kind_rollout().write(tmp_path / "src"))):
        r = import_to_codex(doc, cwd=project, home=tmp_path / "codex")
        meta = _jsonl(r.path)[0]
        assert meta["type"] == "session_meta" and meta["payload"]["model_provider"] == "openai"
        assert r.resume_command.endswith(f"codex resume {r.session_id}")
        assert f"codex exec resume {r.session_id}" in r.exec_command
        assert "experimental_resume" not in " ".join(r.warnings)
