"""Field-grade conversion of real Claude Code sessions (issue 12): each test pins one root cause on the corpus file
that showed it, or on a minimal real-shaped case."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from p2pd.agents.claude_code.export import export_session
from p2pd.agents.claude_code.importer import import_to_claude_code
from p2pd.agents.claude_code.paths import encode_project_dir
from p2pd.agents.claude_code.transcript import active_chain
from p2pd.agents.codex.importer import import_to_codex
from p2pd.agents.jsonl import parse_lines, read_text
from p2pd.conversation.document_io import dumps
from tests.corpus import claude_code_files

FA812 = "fa812bfe"


def _corpus(name: str) -> Path:
    return next(f for f in claude_code_files(include_subagents=False) if f.name.startswith(name))


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def _tool_ids(lines: list[dict], block_type: str, key: str) -> list[str]:
    return [b[key] for line in lines if isinstance(line.get("message"), dict)
            and isinstance(line["message"].get("content"), list)
            for b in line["message"]["content"] if isinstance(b, dict) and b.get("type") == block_type]


def test_parallel_call_hanging_off_a_hook_progress_row_is_in_the_active_chain():
    lines = parse_lines(read_text(_corpus(FA812)))
    chain = set(active_chain(lines))
    by_id = {b["id"]: ln.n for ln in lines if ln.type == "assistant"
             for b in ln.obj["message"]["content"] if isinstance(b, dict) and b.get("type") == "tool_use"}
    call = by_id["toolu_01AAQc1PRRFCtC2gzJhHPRn4"]  # a Write whose parent is a PreToolUse hook_progress row
    assert lines[call - 1].type == "assistant" and call in chain
    parent = lines[call - 1].obj["parentUuid"]
    assert next(ln for ln in lines if ln.obj and ln.obj.get("uuid") == parent).type == "progress"
    missing = [n for n in by_id.values() if n not in chain]
    assert missing == [], f"tool calls left out of the active chain at lines {missing}"


@pytest.mark.parametrize("src", claude_code_files(include_subagents=False), ids=lambda p: p.name[:12])
def test_every_tool_call_of_the_active_chain_is_imported_with_its_result(tmp_path, src):
    name = src.name
    lines = parse_lines(read_text(src))
    chain = [lines[n - 1].obj for n in active_chain(lines)]
    calls = set(_tool_ids([o for o in chain if o and o.get("type") == "assistant"], "tool_use", "id"))
    answered = set(_tool_ids([o for o in chain if o and o.get("type") == "user"], "tool_result", "tool_use_id"))
    project = tmp_path / "p"
    project.mkdir()
    r = import_to_claude_code(export_session(src), cwd=project, config=tmp_path / "home")
    written = _jsonl(r.path)
    assert set(_tool_ids(written, "tool_use", "id")) == calls
    assert set(_tool_ids(written, "tool_result", "tool_use_id")) == calls
    assert r.synthesized_results == len(calls - answered)
    if name.startswith(FA812):
        assert "toolu_01AAQc1PRRFCtC2gzJhHPRn4" in calls and r.synthesized_results == 0


@pytest.mark.parametrize("src", claude_code_files(include_subagents=False), ids=lambda p: p.name[:12])
def test_codex_import_carries_every_call_with_its_result(tmp_path, src):
    lines = parse_lines(read_text(src))
    chain = [lines[n - 1].obj for n in active_chain(lines)]
    unanswered = (set(_tool_ids([o for o in chain if o and o.get("type") == "assistant"], "tool_use", "id"))
                  - set(_tool_ids([o for o in chain if o and o.get("type") == "user"], "tool_result", "tool_use_id")))
    project = tmp_path / "p"
    project.mkdir()
    r = import_to_codex(export_session(src), cwd=project, home=tmp_path / "codex")
    text = "\n".join(c.get("text", "") for line in _jsonl(r.path) if line["type"] == "response_item"
                     for c in line["payload"].get("content", []))
    calls = re.findall(r"\[claude-code tool call: [\w-]+ \(id ([\w-]+)\)\]", text)
    results = re.findall(r"\[(?:result|error) of [\w-]+ \(id ([\w-]+)\)\]", text)
    assert set(calls) - set(results) == unanswered and set(results) <= set(calls)
    if src.name.startswith(FA812):
        assert "toolu_01AAQc1PRRFCtC2gzJhHPRn4" in calls and "toolu_01AAQc1PRRFCtC2gzJhHPRn4" in results


def test_a_line_without_message_content_stays_in_the_document_but_not_in_the_written_chain(tmp_path):
    src = next(f for f in claude_code_files() if f.name == "edge_cases.jsonl")
    doc = export_session(src)
    raw = [json.loads(x) for x in src.read_text().splitlines() if x.strip().startswith("{")]
    broken = next(o for o in raw if isinstance(o.get("message"), dict) and "content" not in o["message"])
    assert broken["message"]["contenst"][0]["content"] in dumps(doc).decode()  # nothing is lost
    project = tmp_path / "p"
    project.mkdir()
    r = import_to_claude_code(doc, cwd=project, config=tmp_path / "home")
    written = _jsonl(r.path)
    assert all(isinstance(line["message"].get("content"), (str, list)) for line in written if "message" in line)
    assert r.dropped_malformed >= 1 and any(w.kind == "repaired" for w in r.warnings)


@pytest.mark.parametrize(("cwd", "folder"), [
    ("/x/emoji😀dir", "-x-emoji--dir"),  # one character, two UTF-16 code units, two dashes
    ("/x/cafe\u0301", "-x-cafe-"),  # decomposed é: the combining mark is a unit of its own, not normalised away
    ("/x/caf\u00e9", "-x-caf-"),  # composed é: one unit
    ("/home/dev/my_project.v2", "-home-dev-my-project-v2"),
    ("/x/Ünïcödé", "-x--n-c-d-"),
])
def test_project_folder_name_replaces_each_utf16_code_unit(cwd, folder):
    assert encode_project_dir(cwd) == folder


def test_long_project_folder_gets_a_hash_of_the_utf16_units():
    long = "/p/" + "😀" * 150  # 300 code units: cut at 200, hashed over the code units as JavaScript does
    name = encode_project_dir(long)
    assert name.startswith("-p-" + "-" * 197 + "-") and len(name) > 201
    h = 0
    data = long.encode("utf-16-le")
    for i in range(0, len(data), 2):
        h = (h * 31 + int.from_bytes(data[i:i + 2], "little")) % 2**32
    h = abs(h - 2**32 if h >= 2**31 else h)
    digits, out = "0123456789abcdefghijklmnopqrstuvwxyz", ""
    while True:
        h, r = divmod(h, 36)
        out = digits[r] + out
        if h == 0:
            break
    assert name == "-p-" + "-" * 197 + "-" + out
