"""The agent registry: each agent described once, and every cross-agent step (detect, list, import, restore)
going through it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from p2pd.agents import registry
from p2pd.agents.crossagent import import_into_claude_code
from p2pd.agents.importing import import_document, target_name
from p2pd.agents.sources import load_file
from p2pd.agents.spec import Note, NoteKind
from p2pd.errors import InvalidInputError
from tests.corpus import claude_code_files, codex_files, gemini_files


def test_each_agent_detects_its_own_corpus_files():
    cases = [(claude_code_files(include_subagents=False)[:3], "claude-code"), (codex_files()[:3], "codex"),
             (gemini_files()[:3], "gemini")]
    for files, name in cases:
        assert files, f"no corpus files for {name}"
        for f in files:
            assert registry.detect(f) == name, f


def test_names_aliases_and_targets():
    assert registry.names() == ("claude-code", "codex", "gemini")
    assert registry.get("claude") is registry.CLAUDE_CODE and registry.get("codex-cli") is registry.CODEX
    assert registry.import_targets() == ("claude-code", "codex")
    assert registry.restore_targets() == ("claude-code", "codex")
    assert target_name("codex") == "Codex" and target_name("nope") == "nope"
    with pytest.raises(InvalidInputError):
        registry.get("cursor")


def test_import_to_an_agent_that_cannot_take_imports_is_refused(tmp_path):
    doc = load_file(codex_files()[0])
    with pytest.raises(InvalidInputError):
        import_document(doc, to="gemini", cwd=tmp_path, dry_run=True)


def test_import_warnings_are_typed_and_the_rebuilt_note_is_replaced_by_kind(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    project = tmp_path / "p"
    project.mkdir()
    doc = load_file(codex_files()[0])
    r = import_document(doc, to="claude-code", cwd=project)
    assert r.warnings and all(isinstance(w, Note) for w in r.warnings)
    kinds = [w.kind for w in r.warnings if isinstance(w, Note)]
    assert NoteKind.CARRIED in kinds and NoteKind.REBUILT not in kinds
    # the same document imported as if it were not foreign keeps the importer's own REBUILT note
    r2 = import_into_claude_code(doc, foreign=False, cwd=project, config=tmp_path / "claude2")
    assert NoteKind.REBUILT in [w.kind for w in r2.warnings if isinstance(w, Note)]


def _cli(*args: str, cwd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "p2pd", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=120)


@pytest.mark.parametrize("rollout", codex_files()[:2], ids=lambda p: p.name)
def test_convert_goes_back_to_codex_exactly(tmp_path, rollout):
    doc_path = tmp_path / "doc.a2a.json"
    assert _cli("convert", str(rollout), str(doc_path), cwd=str(tmp_path)).returncode == 0
    back = tmp_path / "back.jsonl"
    r = _cli("convert", str(doc_path), str(back), "--to", "codex", cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    # line for line the same JSON values (Codex's own spacing is not kept: values, not bytes, are the contract)
    original = [json.loads(line) for line in rollout.read_text().splitlines()]
    assert [json.loads(line) for line in back.read_text().splitlines()] == original


def test_convert_to_gemini_says_plainly_there_is_no_restore(tmp_path):
    r = _cli("convert", str(gemini_files()[0]), str(tmp_path / "x.json"), "--to", "gemini", cwd=str(tmp_path))
    assert r.returncode != 0 and "no exact restore exists for Gemini" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "x.json").exists()


def test_convert_codex_document_to_claude_code_is_refused(tmp_path):
    r = _cli("convert", str(codex_files()[0]), str(tmp_path / "x.jsonl"), "--to", "claude-code", cwd=str(tmp_path))
    assert r.returncode != 0 and "did not come from Claude Code" in r.stderr


def test_convert_to_jsonl_defaults_to_the_agent_the_document_came_from(tmp_path):
    rollout = codex_files()[0]
    doc_path = tmp_path / "doc.a2a.json"
    assert _cli("convert", str(rollout), str(doc_path), cwd=str(tmp_path)).returncode == 0
    r = _cli("convert", str(doc_path), str(tmp_path / "back.jsonl"), cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert [json.loads(x) for x in (tmp_path / "back.jsonl").read_text().splitlines()] == \
        [json.loads(x) for x in rollout.read_text().splitlines()]
