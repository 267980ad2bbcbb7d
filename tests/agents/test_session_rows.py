"""``p2pd sessions``' rows (p2pd/agents/sessions.py): a session its agent converts as it is written is listed from
that stream, read back as it is written — the same row as the whole reading gives, for every corpus session and
generated and odd ones — and is never loaded whole (a 50 MB Claude Code session took 434 MiB to list; now 66 MiB:
tests/bench/process_rss.py). What its agent declines to stream (a Gemini CLI JSON session with two ``messages``
arrays) is still read whole."""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

import pytest

from p2pd.agents import registry
from p2pd.agents.sessions import info_from_document, list_sessions, session_info
from tests.agents.helpers import LEFT_WHOLE_GEMINI_JSON
from tests.agents.test_codex_streamed import odd_rollout
from tests.agents.test_gemini_streamed import odd_recording
from tests.corpus import claude_code_files, codex_files, file_id, gemini_files
from tests.transfer.gen import generate_conversation, generate_recording, generate_rollout

GENERATED = {"claude-code.jsonl": lambda: generate_conversation(2_000_000, seed=1),
             "rollout-gen.jsonl": lambda: generate_rollout(1_500_000, seed=2),
             "session-gen.jsonl": lambda: generate_recording(1_500_000, seed=3),
             "session-odd.jsonl": lambda: odd_recording(as_found=True),
             "rollout-odd.jsonl": odd_rollout}


def _whole_row(path: Path) -> dict:
    agent = registry.detect_agent(path)
    assert agent is not None
    return info_from_document(agent.name, path, agent.export(path)).to_json()


@pytest.mark.parametrize("path", claude_code_files(include_subagents=False) + codex_files() + gemini_files(),
                         ids=file_id)
def test_a_corpus_session_is_listed_as_the_whole_reading_lists_it(path: Path) -> None:
    agent = registry.detect_agent(path)
    assert agent is not None
    assert session_info(agent, path).to_json() == _whole_row(path)


@pytest.mark.parametrize("name", list(GENERATED))
def test_generated_and_odd_sessions_are_listed_as_the_whole_reading_lists_them(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_bytes(GENERATED[name]())
    agent = registry.detect_agent(path)
    assert agent is not None and agent.write_streamed is not None, name
    row = session_info(agent, path).to_json()
    assert row == _whole_row(path)
    assert row["messages"] > 3 and row["title"]


def test_a_streamable_session_is_never_loaded_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each agent's whole reading refuses to run: the streamable sessions are listed all the same (the spools are
    gone afterwards), the corpus's Gemini CLI JSON session among them; a JSON session only the whole reading takes
    is listed unreadable."""
    claude, codex, gemini = tmp_path / "claude", tmp_path / "codex", tmp_path / "gemini"
    project = claude / "projects" / "-w"
    project.mkdir(parents=True)
    (project / "0b7c8d9e-1111-2222-3333-444444444444.jsonl").write_bytes(generate_conversation(1_000_000, seed=5))
    day = codex / "sessions" / "2026" / "01" / "23"
    day.mkdir(parents=True)
    (day / "rollout-2026-01-23T06-00-00-0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl").write_bytes(
        generate_rollout(500_000, seed=6))
    chats = gemini / "tmp" / ("ab" * 32) / "chats"
    chats.mkdir(parents=True)
    (chats / "session-2026-03-24T15-43-aaaa1111.jsonl").write_bytes(generate_recording(500_000, seed=7))
    json_session = next(p for p in gemini_files() if p.suffix == ".json")
    (chats / "session-2026-03-24T16-00-bbbb2222.json").write_bytes(json_session.read_bytes())
    (chats / "session-2026-03-24T17-00-cccc3333.json").write_bytes(LEFT_WHOLE_GEMINI_JSON)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    monkeypatch.setenv("CODEX_HOME", str(codex))
    monkeypatch.setenv("GEMINI_DIR", str(gemini))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", None)  # (gettempdir reads $TMPDIR again)

    def refused(path: Path) -> object:
        from p2pd.errors import InvalidInputError

        raise InvalidInputError(f"loaded whole: {path.name}")

    monkeypatch.setattr(registry, "AGENTS", type(registry.AGENTS)(replace(a, export=refused) for a in registry.AGENTS))
    rows = {r.platform + ":" + Path(r.path).name[-10:]: r for r in list_sessions()}
    assert set(rows) == {"claude-code:4444.jsonl", "codex:4a5b.jsonl", "gemini:1111.jsonl", "gemini:b2222.json",
                         "gemini:c3333.json"}, rows
    for key in ("claude-code:4444.jsonl", "codex:4a5b.jsonl", "gemini:1111.jsonl", "gemini:b2222.json"):
        assert rows[key].messages > 3 and not rows[key].title.startswith("[unreadable"), rows[key]
    assert rows["gemini:c3333.json"].title.startswith("[unreadable: loaded whole"), rows["gemini:c3333.json"]
    assert list((tmp_path / "tmp").iterdir()) == []
