"""Import for resume: one test per rule of p2pd/claude_code/importer.py."""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

import pytest

from p2pd.agents.claude_code.export import export_session
from p2pd.agents.claude_code.importer import MISSING_RESULT, import_to_claude_code
from p2pd.agents.claude_code.paths import encode_project_dir
from p2pd.conversation.document_io import parse_document
from p2pd.errors import ConflictError, InvalidInputError
from tests.agents.claude_code.helpers import Session, rich_session
from tests.corpus import claude_code_files


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


@pytest.fixture
def home(tmp_path):
    return tmp_path / "claude-home"


@pytest.fixture
def project(tmp_path):
    p = tmp_path / "my_project.v2"
    p.mkdir()
    return p


def _corpus_doc(name: str = "4d5611e5"):
    return export_session(next(f for f in claude_code_files(include_subagents=False) if f.name.startswith(name)))


def test_rule1_location_and_cwd(home, project, monkeypatch):
    monkeypatch.chdir(project)
    r = import_to_claude_code(_corpus_doc(), config=home)  # cwd defaults to the current directory
    real = os.path.realpath(project)
    assert r.path == home / "projects" / encode_project_dir(real) / f"{r.session_id}.jsonl"
    assert "-my-project-v2" in r.path.parent.name
    assert all(line["cwd"] == real for line in _lines(r.path))


def test_a_folder_that_does_not_exist_here_is_noted(home, project, tmp_path):
    from p2pd.agents.codex.importer import import_to_codex
    from p2pd.agents.spec import NoteKind

    elsewhere = tmp_path / "not" / "here"
    for result in (import_to_claude_code(_corpus_doc(), cwd=elsewhere, config=home),
                   import_to_codex(_corpus_doc(), cwd=elsewhere, home=tmp_path / "codex")):
        notes = [w for w in result.warnings if w.startswith(f"{elsewhere} is not a folder on this machine")]
        assert len(notes) == 1 and notes[0].kind is NoteKind.LOCATION, result.warnings
    assert not any("is not a folder" in w for w in import_to_claude_code(_corpus_doc(), cwd=project,
                                                                         config=home).warnings)


def test_rule2_session_id_is_file_name_everywhere(home, project):
    r = import_to_claude_code(_corpus_doc("fa812bfe"), cwd=project, config=home)
    import uuid

    uuid.UUID(r.session_id)
    assert r.path.stem == r.session_id
    assert {line["sessionId"] for line in _lines(r.path)} == {r.session_id}
    for sub in r.subagent_files:
        assert {line["sessionId"] for line in _lines(sub) if "sessionId" in line} == {r.session_id}


@pytest.mark.parametrize("name", ["4d5611e5", "fa812bfe", "short", "tool_heavy", "subagent", "edge_cases"])
def test_rule3_strictly_linear_chain(home, project, name):
    r = import_to_claude_code(_corpus_doc(name), cwd=project, config=home)
    lines = _lines(r.path)
    uuids = [line["uuid"] for line in lines]
    assert len(set(uuids)) == len(uuids)
    assert lines[0]["parentUuid"] is None
    for prev, line in itertools.pairwise(lines):
        if line.get("subtype") == "compact_boundary":
            assert line["parentUuid"] is None and line["logicalParentUuid"] == prev["uuid"]
        else:
            assert line["parentUuid"] == prev["uuid"]
    assert {line["type"] for line in lines} <= {"user", "assistant", "system"}


def test_rule3_side_branches_are_left_out(home, project):
    s = Session()
    root = s.user("start")
    s.assistant([{"type": "text", "text": "abandoned"}])
    s.user("retry", parent=root["uuid"])
    s.assistant([{"type": "text", "text": "kept"}])
    doc = export_session(s.write(project / "src"))
    r = import_to_claude_code(doc, cwd=project, config=home)
    texts = [json.dumps(line["message"]["content"]) for line in _lines(r.path)]
    assert not any("abandoned" in t for t in texts) and any("kept" in t for t in texts)


def test_rule4_every_tool_use_is_followed_by_its_result(home, project):
    s = Session()
    s.user("go")
    s.tool_call("Bash", {"command": "ls"}, "a b")
    s.assistant([{"type": "tool_use", "id": "t_lost", "name": "Bash", "input": {}}])  # interrupted: no result
    s.user("[Request interrupted by user]")
    s.user([{"type": "tool_result", "tool_use_id": "t_unknown", "content": "orphan"}])
    s.assistant([{"type": "text", "text": "ok"}])
    doc = export_session(s.write(project / "src"))
    r = import_to_claude_code(doc, cwd=project, config=home)
    lines = _lines(r.path)
    _check_tool_pairing(lines)
    results = [b for line in lines if isinstance(line["message"]["content"], list)
               for b in line["message"]["content"] if b.get("type") == "tool_result"]
    assert any(b["tool_use_id"] == "t_lost" and b["content"] == MISSING_RESULT and b["is_error"] for b in results)
    assert not any(b["tool_use_id"] == "t_unknown" for b in results)
    assert r.synthesized_results == 1 and r.dropped_orphan_results == 1


def _check_tool_pairing(lines):
    pending: set[str] = set()
    last_id = None
    for line in lines:
        content = line.get("message", {}).get("content")
        if not isinstance(content, list):
            assert not pending, "a plain prompt arrived while tool calls were unanswered"
            continue
        if line["type"] == "assistant":
            mid = line["message"]["id"]
            assert not pending or mid == last_id, "a new assistant turn before the tool results"
            last_id = mid
            pending |= {b["id"] for b in content if b.get("type") == "tool_use"}
        else:
            got = {b["tool_use_id"] for b in content if b.get("type") == "tool_result"}
            assert got <= pending, "a tool_result without its tool_use"
            pending -= got
    assert not pending


@pytest.mark.parametrize("name", ["4d5611e5", "fa812bfe", "subagent"])
def test_rule4_corpus_sessions_pair_every_call(home, project, name):
    r = import_to_claude_code(_corpus_doc(name), cwd=project, config=home)
    _check_tool_pairing(_lines(r.path))


def test_rule5_thinking_dropped_unless_same_account(home, project):
    doc = export_session(rich_session().write(project / "src"))
    r = import_to_claude_code(doc, cwd=project, config=home)
    kinds = {b.get("type") for line in _lines(r.path) if isinstance(line["message"]["content"], list)
             for b in line["message"]["content"]}
    assert not kinds & {"thinking", "redacted_thinking"}
    assert r.dropped_thinking == 2 and any("thinking" in w for w in r.warnings)
    r2 = import_to_claude_code(doc, cwd=project, config=home, same_account=True)
    kinds2 = {b.get("type") for line in _lines(r2.path) if isinstance(line["message"]["content"], list)
              for b in line["message"]["content"]}
    assert {"thinking", "redacted_thinking"} <= kinds2


def test_rule6_subagents_and_tool_results_copied_beside(home, project):
    doc = _corpus_doc("fa812bfe")
    r = import_to_claude_code(doc, cwd=project, config=home)
    folder = r.path.with_suffix("") / "subagents"
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.jsonl")) == \
        sorted(s.file_name for s in doc.subagents)
    for sub in doc.subagents:
        assert len(_lines(folder / sub.file_name)) == sub.line_count


def test_rule7_never_overwrite(home, project):
    doc = _corpus_doc("short")
    r = import_to_claude_code(doc, cwd=project, config=home)
    before = r.path.read_bytes()
    with pytest.raises(ConflictError, match="already exists"):
        import_to_claude_code(doc, cwd=project, config=home, session_id=r.session_id)
    assert r.path.read_bytes() == before


def test_rule7_never_outside_projects(home, project):
    data = _corpus_doc("fa812bfe").to_json_dict()
    data["subagents"][0]["fileName"] = "../../../../escape.jsonl"
    doc = parse_document(json.dumps(data).encode())
    with pytest.raises(InvalidInputError, match="unsafe file name"):
        import_to_claude_code(doc, cwd=project, config=home)
    assert not (home / "projects").exists() or not any((home / "projects").rglob("*.jsonl"))
    assert not list(home.parent.rglob("escape.jsonl"))


def test_rule8_resume_command(home, project):
    r = import_to_claude_code(_corpus_doc("short"), cwd=project, config=home)
    assert r.resume_command == f"cd {os.path.realpath(project)} && claude --resume {r.session_id}"


def test_dry_run_writes_nothing(home, project):
    r = import_to_claude_code(_corpus_doc("short"), cwd=project, config=home, dry_run=True)
    assert r.lines > 0 and not r.path.exists() and not home.exists()


def test_plain_a2a_conversation_imports_as_text(home, project):
    msgs = [{"kind": "message", "messageId": "1", "role": "user", "parts": [{"kind": "text", "text": "hi"}]},
            {"kind": "message", "messageId": "2", "role": "agent", "parts": [{"kind": "text", "text": "hello"}]}]
    doc = parse_document(json.dumps(msgs).encode())
    r = import_to_claude_code(doc, cwd=project, config=home)
    lines = _lines(r.path)
    assert [line["type"] for line in lines] == ["user", "assistant"]
    assert lines[1]["message"]["content"][0]["text"] == "hello"


def _session_with_subagents():
    from p2pd.agents.claude_code.export import export_session
    from tests.corpus import claude_code_files

    mains = [f for f in claude_code_files(include_subagents=False) if (f.with_suffix("") / "subagents").is_dir()]
    doc = export_session(mains[0])
    assert doc.subagents
    return doc


def test_a_too_long_subagent_name_is_a_storage_error_and_leaves_nothing(tmp_path):
    """Red-team finding: 'unexpected OSError', exit 1, and empty folders left behind."""
    from p2pd.agents.claude_code.importer import import_to_claude_code
    from p2pd.errors import Cause, P2pdError

    doc = _session_with_subagents()
    doc.subagents[-1].file_name = "a" * 300 + ".jsonl"
    config = tmp_path / "claude"
    config.mkdir()
    with pytest.raises(P2pdError) as info:
        import_to_claude_code(doc, cwd=tmp_path, config=config)
    assert info.value.cause is Cause.STORAGE and "\n" not in str(info.value)
    assert [p for p in config.rglob("*") if p.name != "projects"] == []


def test_an_import_cut_off_midway_leaves_no_half_session(tmp_path, monkeypatch):
    """Red-team finding: a kill during import left the main session with part of its subagents. The whole tree is
    staged; until the last step nothing is where Claude Code looks."""
    import errno
    import os

    from p2pd.agents.claude_code import importer
    from p2pd.errors import P2pdError

    doc = _session_with_subagents()
    config = tmp_path / "claude"
    config.mkdir()
    calls = {"n": 0}
    real_fsync = os.fsync

    def fail_late(fd: int) -> None:
        calls["n"] += 1
        if calls["n"] == len(doc.subagents):
            raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(importer.os, "fsync", fail_late)
    with pytest.raises(P2pdError):
        importer.import_to_claude_code(doc, cwd=tmp_path, config=config)
    assert [p for p in config.rglob("*") if p.name != "projects"] == []
    monkeypatch.setattr(importer.os, "fsync", real_fsync)
    result = importer.import_to_claude_code(doc, cwd=tmp_path, config=config)
    assert result.path.exists() and all(p.exists() for p in result.subagent_files)
    assert len(result.subagent_files) == len(doc.subagents)
    assert not [p for p in result.path.parent.iterdir() if p.name.startswith(".p2pd-import")]


@pytest.mark.parametrize("value", [
    {"type": "user", "message": {"content": "é日 \u2028 \x00 \"q\" 🙂"}},
    {"type": "user", "message": {"content": "cut emoji \ud83d", "n": [1.5, 10**30, None]}},
    ["\udfff", {"k\ud800": "v"}],
])
def test_written_lines_are_dumps_line_in_utf8(value):
    """The importer's lines (a fast path for lines without lone surrogates) are exactly ``dumps_line``'s."""
    from p2pd.agents.jsonl import dumps_line, jsonl_line

    assert jsonl_line(value) == (dumps_line(value) + "\n").encode("utf-8", errors="surrogateescape")
    assert json.loads(jsonl_line(value)) == value
