"""Importing a document file as a stream (spooled on disk) writes the same session as importing the document in
memory: the same lines (new ids aside), subagent files and tool results, for every corpus session, from a pretty
.a2a.json, from a blob, and from the session file itself (converted into the spool as it is read); into Codex
too."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest

from p2pd.agents.importing import import_document, import_file
from p2pd.agents.sources import detect, load_file
from p2pd.conversation.document_io import write_document
from tests.agents.test_gemini_streamed import odd_recording
from tests.corpus import claude_code_files, codex_files, file_id, gemini_files
from tests.transfer.gen import generate_recording

SESSIONS = claude_code_files(include_subagents=False) + codex_files() + gemini_files()
_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|msg_p2pd_[0-9a-f]{24}|"
                 r"toolu_p2pd_[0-9a-f]{20}")
_NOW = re.compile(r"2\d{3}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")  # (made from the clock on import)


def _numbered(text: str) -> str:
    seen: dict[str, str] = {}
    return _ID.sub(lambda m: seen.setdefault(m.group(), f"<{len(seen)}>"), text)


def _tree(root: Path) -> dict[str, object]:
    """Every file under ``root`` by relative path, with fresh ids and times numbered in order of appearance."""
    out: dict[str, object] = {}
    for f in sorted(p for p in root.rglob("*") if p.is_file()):
        text = _numbered(f.read_text("utf-8", "replace"))
        text = _NOW.sub("<time>", text)
        rel = re.sub(r"rollout-.*\.jsonl$", "rollout.jsonl", str(f.relative_to(root)))
        rel = re.sub(r"sessions/\d+/\d+/\d+/", "sessions/", _ID.sub("<id>", rel))
        out[rel] = [orjson.loads(line) if line.startswith("{") else line for line in text.splitlines()]
    return out


@pytest.mark.parametrize("path", SESSIONS, ids=file_id)
@pytest.mark.parametrize("to", ["claude-code", "codex"])
def test_streamed_import_writes_what_the_in_memory_import_writes(path, to, tmp_path, monkeypatch):
    _same_imports(path, to, tmp_path, monkeypatch)


@pytest.mark.parametrize("kind", ["odd", "generated"])
@pytest.mark.parametrize("to", ["claude-code", "codex"])
def test_a_gemini_jsonl_recording_imports_as_its_document_does(kind, to, tmp_path, monkeypatch):
    """A Gemini CLI JSONL recording is converted into the spool as it is read (the corpus holds JSON ones)."""
    path = tmp_path / "session-2026-03-24T15-43-rec.jsonl"
    path.write_bytes(odd_recording(as_found=True) if kind == "odd" else generate_recording(1_500_000, seed=11))
    assert detect(path) == "gemini"
    _same_imports(path, to, tmp_path, monkeypatch)


def _same_imports(path, to, tmp_path, monkeypatch):
    doc = load_file(path)
    pretty, packed = tmp_path / "doc.a2a.json", tmp_path / "doc.a2a.p2pd"
    write_document(doc, pretty, pretty=True)
    write_document(doc, packed, compressed=True)
    trees = []
    for i, source in enumerate([None, pretty, packed, path]):  # (the session file itself: converted into the
        # spool as it is read, for Claude Code, Codex and a Gemini JSONL recording; a Gemini JSON one is read whole)
        home = tmp_path / f"home{i}"
        monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home))
        monkeypatch.setenv("CODEX_HOME", str(home))
        if source is None:
            result = import_document(doc, to=to, cwd=tmp_path)
        else:
            result, envelope = import_file(source, to=to, cwd=tmp_path, spool_dir=tmp_path)
            assert envelope.context_id == doc.context_id
        notes = [_ID.sub("<id>", str(w)).replace(str(home), "<home>") for w in result.warnings]
        trees.append((_tree(home), result.lines, notes))
    assert trees[1] == trees[0]
    assert trees[2] == trees[0]
    assert trees[3] == trees[0]
    assert not list(tmp_path.glob(".p2pd-import-spool-*"))  # the spool is gone
