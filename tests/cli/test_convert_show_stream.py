"""``p2pd convert`` and ``p2pd show`` read a conversation one element at a time (a spool on disk, the packing
process's way), and still write what the whole document in memory gives: for every corpus session, back to the
agent's session file (ids kept, or the active chain under a new id), to a document, shown as text and as JSON.
(Their memory at 50 and 200 MB: tests/bench/process_rss.py.)"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from p2pd.agents import registry
from p2pd.agents.claude_code.importer import linearize_chain
from p2pd.agents.claude_code.restore import restore_transcript
from p2pd.agents.claude_code.transcript import active_chain
from p2pd.agents.jsonl import SourceLine, dumps_line
from p2pd.agents.sources import load_file
from p2pd.agents.spooled import DocumentSource
from p2pd.conversation.document_io import write_document
from p2pd.conversation.render import render
from p2pd.errors import InvalidInputError
from tests.cli.helpers import run
from tests.corpus import claude_code_files, codex_files, file_id, gemini_files

SESSIONS = claude_code_files(include_subagents=False) + codex_files()
_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _numbered(text: str) -> str:
    seen: dict[str, str] = {}
    return _ID.sub(lambda m: seen.setdefault(m.group(), f"<{len(seen)}>"), text)


def _restored_in_memory(path: Path, *, keep_ids: bool) -> str:
    """What convert wrote when it loaded the document whole (the agents' in-memory restore)."""
    doc = load_file(path)
    main = doc.main_transcript()
    if doc.origin.platform == "codex":
        from p2pd.agents.codex.restore import to_jsonl as codex_jsonl

        return codex_jsonl(main)
    from p2pd.agents.claude_code.restore import to_jsonl

    if keep_ids:
        return to_jsonl(main)
    # the whole way: every source line indexed, the active chain walked from it (what convert did before)
    by_n = {n: SourceLine(n, "", value=v) for n, v in restore_transcript(main) if isinstance(v, dict)}
    chain = (by_n[n].obj for n in active_chain(list(by_n.values())) if n in by_n)
    lines = linearize_chain((o for o in chain if o is not None), "00000000-0000-0000-0000-000000000000",
                            doc.origin.cwd or "/", keep_thinking=True)
    return "".join(dumps_line(v) + "\n" for v in lines)


@pytest.mark.parametrize("path", SESSIONS, ids=file_id)
def test_convert_back_writes_what_the_whole_document_gives(path: Path, tmp_path: Path) -> None:
    doc = tmp_path / "doc.a2a.json"
    assert run("convert", str(path), str(doc)).returncode == 0
    whole = load_file(path).to_json_dict()
    written = json.loads(doc.read_bytes())
    for d in (whole, written):
        d.pop("exportedAt", None)
    assert written == whole
    for keep_ids in (True, False):
        back = tmp_path / f"back-{keep_ids}.jsonl"
        r = run("convert", str(doc), str(back), *(["--keep-ids"] if keep_ids else []))
        assert r.returncode == 0, r.stderr
        expected = _restored_in_memory(doc, keep_ids=keep_ids)
        assert _numbered(back.read_text("utf-8", "surrogateescape")) == _numbered(expected)
    assert not list(tmp_path.glob(".p2pd-*"))  # no spool or staging file left


@pytest.mark.parametrize("path", SESSIONS + gemini_files(), ids=file_id)
def test_show_prints_what_the_whole_document_gives(path: Path, tmp_path: Path) -> None:
    doc = load_file(path)
    for extra in ([], ["--all", "--full"]):
        console = Console(file=io.StringIO(), width=100, color_system=None, force_terminal=False)
        render(console, doc, full=bool(extra), all_branches=bool(extra))
        r = run("show", str(path), "--no-pager", *extra, env={"COLUMNS": "100"})
        assert r.returncode == 0, r.stderr
        assert r.stdout == console.file.getvalue()
    r = run("show", str(path), "--json")
    assert r.returncode == 0, r.stderr
    shown, whole = json.loads(r.stdout), doc.to_json_dict()
    for d in (shown, whole):
        d.pop("exportedAt", None)
    assert shown == whole


class _Watched(DocumentSource):
    """A conversation whose lines can be watched as the restorer reads them."""

    def __init__(self, lines: list[dict], seen: list[int]) -> None:
        self.document = load_file(claude_code_files()[0])
        self.subagents = []
        self.restored = True
        self._lines = lines
        self._seen = seen

    def main_lines(self):
        for n, line in enumerate(self._lines):
            self._seen.append(n)
            yield n, line


@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_each_line_is_written_as_it_is_read(agent: str) -> None:
    seen: list[int] = []
    lines = [{"type": "x", "n": i} for i in range(100)]
    written: list[tuple[int, bytes]] = []
    registry.get(agent).restore(_Watched(lines, seen), lambda data: written.append((len(seen), data)),
                                keep_ids=True)
    assert [json.loads(data) for _, data in written] == lines
    assert [read for read, _ in written] == list(range(1, 101))  # line n written before line n+1 was read


@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_a_conversation_from_another_agent_is_refused_before_anything_is_written(agent: str, tmp_path) -> None:
    source = _Watched([], [])
    source.restored = False
    written: list[bytes] = []
    with pytest.raises(InvalidInputError):
        registry.get(agent).restore(source, written.append, keep_ids=True)
    assert written == []


def test_a_refused_conversion_leaves_no_file(tmp_path: Path) -> None:
    doc = tmp_path / "doc.a2a.json"
    write_document(load_file(codex_files()[0]), doc)
    back = tmp_path / "back.jsonl"
    r = run("convert", str(doc), str(back), "--format", "claude-code")
    assert r.returncode != 0 and "did not come from Claude Code" in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["doc.a2a.json"]


@pytest.mark.parametrize("path", [claude_code_files(include_subagents=False)[0], codex_files()[0]], ids=file_id)
def test_a_documents_envelope_says_its_origin_and_only_the_envelope_is_read(path: Path, tmp_path: Path) -> None:
    from p2pd.agents.file_source import HEAD_BYTES, origin_platform, said_platform

    pretty, compact = tmp_path / "pretty.a2a.json", tmp_path / "compact.a2a.json"
    assert run("convert", str(path), str(pretty)).returncode == 0  # (indented)
    assert run("export", str(path), "-o", str(compact)).returncode == 0  # (the line layout)
    platform = load_file(path).origin.platform
    for doc in (pretty, compact):
        assert said_platform(doc) == origin_platform(doc) == platform, doc.name
        head = doc.read_bytes()[:HEAD_BYTES // 4]
        cut = tmp_path / "cut.a2a.json"
        cut.write_bytes(head + b"x" * HEAD_BYTES)  # (not a document past its envelope)
        assert said_platform(cut) == platform, doc.name
    blob = tmp_path / "doc.a2a.p2pd"
    assert run("convert", str(path), str(blob)).returncode == 0
    jsonl = tmp_path / "session.jsonl"
    jsonl.write_bytes(path.read_bytes())
    far = tmp_path / "far.a2a.json"  # (an envelope that does not end within HEAD_BYTES)
    far.write_bytes(b'{"format":"p2pd.conversation","pad":"' + b"x" * HEAD_BYTES + b'","origin":{"platform":"codex"}'
                    b',"messages":[]}')
    for other in (blob, jsonl, far):
        assert said_platform(other) is None, other.name


def test_an_envelope_that_names_another_origin_than_the_document_read_is_read_again(tmp_path: Path) -> None:
    """A later ``origin`` key wins when the document is read: convert goes back to the agent it names, as it did
    when it read the whole document to choose."""
    from p2pd.agents.file_source import origin_platform, said_platform

    doc = tmp_path / "doc.a2a.json"
    assert run("export", str(claude_code_files(include_subagents=False)[0]), "-o", str(doc)).returncode == 0
    raw = doc.read_bytes().rstrip()
    head = json.loads(raw.split(b"\n", 1)[0].rsplit(b",", 1)[0] + b"}")
    said = {**head["origin"], "platform": "codex"}
    odd = tmp_path / "odd.a2a.json"  # the envelope says codex; the origin read last says claude-code
    odd.write_bytes(raw.replace(json.dumps(head["origin"], separators=(",", ":")).encode(),
                                json.dumps(said, separators=(",", ":")).encode(), 1)[:-1]
                    + b',"origin":' + json.dumps(head["origin"]).encode() + b"}\n")
    assert (said_platform(odd), origin_platform(odd)) == ("codex", "claude-code")
    for name, source in (("back.jsonl", doc), ("odd-back.jsonl", odd)):
        r = run("convert", str(source), str(tmp_path / name))
        assert r.returncode == 0, r.stderr
        assert "Claude Code session file" in r.stderr
    assert _numbered((tmp_path / "odd-back.jsonl").read_text()) == _numbered((tmp_path / "back.jsonl").read_text())
