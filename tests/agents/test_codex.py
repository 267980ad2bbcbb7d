"""Codex rollouts: every corpus file and every item kind round-trips exactly; .zst; listing; errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import zstandard
from a2a.types import Message as SdkMessage
from google.protobuf import json_format

from p2pd.agents.codex.export import export_rollout
from p2pd.agents.codex.restore import restored_values, to_jsonl
from p2pd.agents.jsonl import parse_lines
from p2pd.agents.sessions import list_sessions
from p2pd.agents.sources import detect, load_conversation
from p2pd.conversation import media_types as mt
from p2pd.conversation.document_io import dumps, parse_document
from p2pd.conversation.neutral import Reasoning, ToolCall, ToolResult, message_items
from p2pd.errors import CodecError
from tests.agents.helpers import every_kind_rollout
from tests.corpus import codex_files, file_id

FILES = codex_files()


def _source(text: str) -> list:
    return [ln.value if ln.obj is not None else ln.text for ln in parse_lines(text)]


def _types_equal(a, b) -> None:
    assert type(a) is type(b), (a, b)
    if isinstance(a, dict):
        assert set(a) == set(b)
        for k in a:
            _types_equal(a[k], b[k])
    elif isinstance(a, list):
        for x, y in zip(a, b, strict=True):
            _types_equal(x, y)


def test_corpus_has_codex_files():
    assert len(FILES) >= 3


@pytest.mark.parametrize("path", FILES, ids=file_id)
def test_corpus_rollout_round_trips_exactly(path):
    doc = export_rollout(path)
    placed = [m.metadata["codex"]["line"] for m in doc.messages] + [r.line for r in doc.records]
    assert sorted(placed) == list(range(1, doc.line_count + 1))
    back = restored_values(parse_document(dumps(doc)).main_transcript())
    _types_equal(back, _source(path.read_text()))
    assert doc.origin.platform == "codex" and doc.counts.messages > 0


@pytest.mark.parametrize("path", FILES, ids=file_id)
def test_corpus_messages_parse_with_a2a_sdk(path):
    for m in export_rollout(path).to_json_dict()["messages"]:
        parsed = json_format.ParseDict(m, SdkMessage())
        assert parsed.message_id == m["messageId"] and len(parsed.parts) == len(m["parts"])


def test_every_item_kind_round_trips(tmp_path):
    r = every_kind_rollout()
    path = r.write(tmp_path)
    doc = export_rollout(path)
    back = restored_values(parse_document(dumps(doc, pretty=False)).main_transcript())
    _types_equal(back, _source(r.text()))
    assert json.loads(to_jsonl(doc.main_transcript()).splitlines()[0]) == r.lines[0]
    # malformed lines are reported with their numbers, and kept
    assert {i.line for i in doc.issues} == {19, 21, 22}
    assert doc.origin.session_id == r.session_id and doc.origin.git_branch == "main"


def test_item_mapping(tmp_path):
    doc = export_rollout(every_kind_rollout().write(tmp_path))
    kinds = [(m.role.value, m.p2pd["kind"]) for m in doc.messages]
    assert kinds[0] == ("ROLE_USER", "meta") and kinds[1] == ("ROLE_USER", "meta")  # developer, environment
    prompt = doc.messages[2]
    assert prompt.p2pd["kind"] == "prompt"
    assert [p.kind for p in prompt.parts] == ["text", "raw", "url", "data"]
    assert prompt.parts[1].media_type == "image/png"
    items = [i for m in doc.messages for i in message_items(m)]
    reasoning = [i for i in items if isinstance(i, Reasoning)]
    assert reasoning[0].text == "Looking at app.py" and reasoning[0].opaque  # encrypted content kept, flagged
    thinking = next(p for m in doc.messages for p in m.parts if p.media_type == mt.THINKING)
    assert thinking.data_value["encrypted_content"] == "gAAAAB-opaque"
    calls = {c.id: c for c in items if isinstance(c, ToolCall)}
    assert calls["call_1"].input == {"command": ["bash", "-lc", "cat app.py"], "timeout_ms": 1000}
    assert calls["call_1"].raw_arguments is not None and isinstance(calls["call_1"].raw_arguments, str)
    assert calls["call_2"].name == "local_shell" and calls["call_3"].name == "apply_patch"
    results = {r.id: r for r in items if isinstance(r, ToolResult)}
    assert results["call_2"].text == "app.py" and results["call_3"].text.startswith("Success")
    assert any(m.p2pd["kind"] == "compact-summary" for m in doc.messages)
    assert doc.counts.tool_calls == 4 and doc.counts.tool_results == 3
    assert all(m.p2pd["model"] == "gpt-5-codex" for m in doc.messages if m.role.value == "ROLE_AGENT")


def test_zstd_rollout(tmp_path):
    src = FILES[-1]
    target = tmp_path / f"rollout-2026-01-23T06-11-59-{'1' * 8}-2222-3333-4444-555555555555.jsonl.zst"
    target.write_bytes(zstandard.ZstdCompressor().compress(src.read_bytes()))
    assert detect(target) == "codex"
    doc = load_conversation(str(target))
    assert restored_values(doc.main_transcript()) == _source(src.read_text())


def test_corrupt_zstd_is_one_clear_error(tmp_path):
    bad = tmp_path / "rollout-2026-01-23T06-11-59-x.jsonl.zst"
    bad.write_bytes(b"\x28\xb5\x2f\xfd garbage")
    with pytest.raises(CodecError, match="zstd"):
        export_rollout(bad)


def test_sessions_lists_codex(tmp_path, monkeypatch):
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    monkeypatch.setenv("GEMINI_DIR", str(tmp_path / "gemini"))
    r = every_kind_rollout()
    r.write(tmp_path / "codex")
    infos = list_sessions()
    assert [(i.platform, i.session_id) for i in infos] == [("codex", r.session_id)]
    assert infos[0].title == "fix the bug in app.py" and infos[0].cwd == "/home/dev/proj"
    assert "apply_patch" in infos[0].summary
    assert load_conversation(r.session_id[:8]).origin.platform == "codex"


def test_a_provider_the_receiving_codex_does_not_configure_is_replaced_with_a_warning(tmp_path: Path) -> None:
    """Found by the real Codex 0.169: a rollout made with provider 'local' resumes only where 'local' is
    configured; elsewhere Codex refuses it ('no longer configured'). Configured providers are kept."""
    from p2pd.agents.codex.importer import import_to_codex
    from p2pd.agents.sources import load_file
    from p2pd.agents.spec import NoteKind

    source = tmp_path / "rollout.jsonl"
    rollout = every_kind_rollout()
    rollout.lines[0]["payload"]["model_provider"] = "local"
    source.write_text("".join(json.dumps(v) + "\n" for v in rollout.lines))
    doc = load_file(str(source))

    def provider_after_import(home: Path) -> tuple[str, list[str]]:
        result = import_to_codex(doc, cwd=tmp_path, home=home)
        meta = json.loads(Path(result.path).read_text().splitlines()[0])["payload"]
        return meta["model_provider"], [w for w in result.warnings if getattr(w, "kind", None) == NoteKind.CARRIED]

    plain = tmp_path / "plain"
    provider, notes = provider_after_import(plain)
    assert provider == "openai" and len(notes) == 1
    configured = tmp_path / "configured"
    configured.mkdir()
    (configured / "config.toml").write_text('[model_providers.local]\nname = "local"\nbase_url = "http://x"\n')
    assert provider_after_import(configured) == ("local", [])


def test_codex_import_refuses_a_symlinked_year_folder_pointing_outside_codex_home(tmp_path: Path) -> None:
    """Red-team finding: a symlinked $CODEX_HOME/sessions/YYYY made the import write outside $CODEX_HOME (the
    Claude Code importer refuses the same case). Nothing may be written outside."""
    from datetime import UTC, datetime

    from p2pd.agents.codex.importer import import_to_codex, rollout_path
    from p2pd.agents.sources import load_file
    from p2pd.errors import InvalidInputError

    source = tmp_path / "rollout.jsonl"
    source.write_text("".join(json.dumps(v) + "\n" for v in every_kind_rollout().lines))
    doc = load_file(str(source))
    home = tmp_path / "home"
    outside = tmp_path / "outside"
    outside.mkdir()
    year = rollout_path(home, "x", datetime.now(UTC)).parents[2]
    year.parent.mkdir(parents=True)
    year.symlink_to(outside, target_is_directory=True)
    with pytest.raises(InvalidInputError):
        import_to_codex(doc, cwd=tmp_path, home=home)
    assert list(outside.rglob("*")) == []
    # a symlink that stays inside the sessions tree is still followed
    year.unlink()
    inside = home / "sessions" / "elsewhere"
    inside.mkdir()
    year.symlink_to(inside, target_is_directory=True)
    result = import_to_codex(doc, cwd=tmp_path, home=home)
    assert Path(result.path).resolve().is_relative_to(inside)
