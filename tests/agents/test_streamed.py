"""A Claude Code session converted as it is written: the same document load_file builds, byte for byte
(modulo the line layout's newlines)."""

from __future__ import annotations

import io

import pytest

from p2pd.agents.claude_code.streamed import NotStreamable, write_session
from p2pd.agents.sources import load_file, streamable_session
from p2pd.conversation.document_io import dumps
from tests.corpus import claude_code_files, codex_files, file_id


@pytest.mark.parametrize("path", claude_code_files(include_subagents=False), ids=file_id)
def test_streamed_session_is_the_loaded_document(path, tmp_path):
    out = io.BytesIO()
    try:
        info = write_session(path, out.write, spool_dir=tmp_path)
    except NotStreamable:
        pytest.skip("agent-team session: built in memory")
    doc = load_file(path)
    assert out.getvalue().replace(b"\n", b"") == dumps(doc, pretty=False)
    assert (info.title, info.summary, info.counts) == (doc.title, doc.summary, doc.counts)
    assert list(tmp_path.iterdir()) == []  # the spools are gone


def test_generated_session_with_odd_lines_streams_the_same(tmp_path):
    from tests.transfer.gen import generate_conversation

    path = tmp_path / "s.jsonl"
    path.write_bytes(generate_conversation(2_000_000, seed=7) + b'{"type":"user","message":{"content":"cut')
    out = io.BytesIO()
    spool = tmp_path / "spool"
    spool.mkdir()
    write_session(path, out.write, spool_dir=spool)
    assert out.getvalue().replace(b"\n", b"") == dumps(load_file(path), pretty=False)


def test_only_claude_code_sessions_are_streamable():
    assert streamable_session(str(claude_code_files(include_subagents=False)[0])) is not None
    assert streamable_session(str(codex_files()[0])) is None
