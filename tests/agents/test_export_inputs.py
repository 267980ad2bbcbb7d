"""Export of real-but-bad inputs (issue 12): one clear error or a warning, never a traceback or an empty document;
and the same session exports to the same bytes."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from p2pd.agents.claude_code.restore import to_jsonl
from p2pd.agents.codex.export import export_rollout
from p2pd.agents.sources import document_file_name, load_file
from p2pd.conversation.document_io import dumps, to_blob
from p2pd.errors import InvalidInputError
from tests.agents.claude_code.helpers import Session
from tests.corpus import claude_code_files, codex_files, gemini_files


def _edge_cases() -> Path:
    return next(f for f in claude_code_files() if f.name == "edge_cases.jsonl")


def test_last_line_cut_inside_a_multibyte_character_is_a_warning_and_round_trips(tmp_path):
    good = b"".join(_edge_cases().read_bytes().splitlines(keepends=True)[:3])
    last = json.dumps({"type": "user", "message": {"role": "user", "content": "中文"}}, ensure_ascii=False).encode()
    cut = last[:last.index("中".encode()) + 2]  # two of the three bytes of 中
    src = tmp_path / "cut.jsonl"
    src.write_bytes(good + cut)
    doc = load_file(src)
    assert [i.line for i in doc.issues] == [4] and "truncated" in doc.issues[0].reason
    data = dumps(doc)  # no UnicodeEncodeError: the cut line travels as base64
    assert doc.records[-1].raw is not None and doc.records[-1].text is None
    back = load_file_from_bytes(tmp_path, data)
    restored = to_jsonl(back.main_transcript()).encode("utf-8", errors="surrogateescape")
    assert restored.endswith(b"\n" + cut + b"\n")  # the cut line comes back byte for byte


def load_file_from_bytes(tmp_path: Path, data: bytes):
    p = tmp_path / "doc.a2a.json"
    p.write_bytes(data)
    return load_file(p)


@pytest.mark.parametrize("content", [b"", b"\n\n", b'[{"type": "user", "message": {"content": "hi"}}]',
                                     b"not json at all\n"], ids=["empty", "blank", "array", "text"])
def test_a_file_that_is_not_json_lines_is_one_clear_error(tmp_path, content):
    for name in ("x.jsonl", "rollout-2026-01-01T00-00-00-1.jsonl"):
        src = tmp_path / name
        src.write_bytes(content)
        with pytest.raises(InvalidInputError):
            load_file(src)
    with pytest.raises(InvalidInputError):
        export_rollout(src)


def test_an_a2a_v03_document_exports_with_its_real_counts(tmp_path):
    messages = [
        {"kind": "message", "messageId": "m1", "contextId": "c1", "role": "user",
         "parts": [{"kind": "text", "text": "hello"}]},
        {"kind": "message", "messageId": "m2", "contextId": "c1", "role": "agent",
         "parts": [{"kind": "text", "text": "hi"}, {"kind": "file", "file": {"uri": "https://e.x/a.png",
                                                                             "mimeType": "image/png"}}]},
    ]
    src = tmp_path / "v03.a2a.json"
    src.write_text(json.dumps(messages))
    doc = load_file(src)
    assert (doc.counts.messages, doc.counts.user_messages, doc.counts.agent_messages) == (2, 1, 1)


def test_the_same_session_exports_to_the_same_bytes():
    sources = [claude_code_files(include_subagents=False)[0], codex_files()[0], gemini_files()[0]]
    first = [load_file(src) for src in sources]
    time.sleep(1.05)  # createdAt has one-second resolution: a clock-stamped export would differ now
    for src, doc in zip(sources, first, strict=True):
        again = load_file(src)
        assert dumps(doc) == dumps(again) and to_blob(doc) == to_blob(again), src


def test_created_at_is_the_sessions_last_recorded_time():
    src = next(f for f in claude_code_files(include_subagents=False) if f.name.startswith("fa812bfe"))
    stamps = [json.loads(x).get("timestamp") for x in src.read_text().splitlines()]
    latest = max(s for s in stamps if isinstance(s, str))
    assert load_file(src).created_at == latest[:19] + "Z"


@pytest.mark.parametrize(("session_id", "name"), [
    ("../../x", "-..-x.a2a.json"), ("/etc/passwd", "-etc-passwd.a2a.json"), ("..", "conversation.a2a.json"),
    ("a/b\\c", "a-b-c.a2a.json"), ("ünï", "-n-.a2a.json"), (".hidden", "hidden.a2a.json"),
])
def test_document_file_name_stays_in_the_folder(session_id, name):
    doc = load_file(claude_code_files(include_subagents=False)[0])
    doc.context_id = session_id
    assert document_file_name(doc, ".a2a.json") == name


def test_cli_export_without_output_writes_only_into_the_current_folder(tmp_path):
    s = Session(session_id="../../x")
    s.user("hello")
    s.assistant([{"type": "text", "text": "hi"}])
    src = s.write(tmp_path / "src", name="s.jsonl")
    here = tmp_path / "a" / "b" / "c"
    here.mkdir(parents=True)
    before = sorted(p for p in tmp_path.rglob("*"))
    r = subprocess.run([sys.executable, "-m", "p2pd", "export", str(src)], cwd=here, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    created = sorted(set(tmp_path.rglob("*")) - set(before))
    assert created == [here / "-..-x.a2a.json"]


def test_a_string_cut_inside_an_emoji_exports_imports_and_restores(tmp_path):
    """JavaScript writes a lone UTF-16 surrogate as an escape (``\\ud83d``): a tool output cut inside an emoji."""
    lines = [
        '{"type":"user","message":{"role":"user","content":"cut emoji \\ud83d here"},"uuid":"a","parentUuid":null,'
        '"sessionId":"s1","timestamp":"2026-01-01T00:00:00Z"}',
        '{"type":"assistant","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"ok \\ude00"}]},'
        '"uuid":"b","parentUuid":"a","sessionId":"s1","timestamp":"2026-01-01T00:00:01Z"}',
    ]
    src = tmp_path / "lone.jsonl"
    src.write_text("\n".join(lines) + "\n")
    doc = load_file(src)
    data = dumps(doc)
    data.decode("utf-8")  # valid UTF-8
    back = load_file_from_bytes(tmp_path, data)
    assert back.messages[0].parts[0].text == "cut emoji \ud83d here"
    restored = to_jsonl(back.main_transcript())
    assert [json.loads(x) for x in restored.splitlines()] == [json.loads(x) for x in lines]
    from p2pd.agents.claude_code.importer import import_to_claude_code
    from p2pd.agents.codex.importer import import_to_codex

    project = tmp_path / "p"
    project.mkdir()
    r = import_to_claude_code(doc, cwd=project, config=tmp_path / "claude")
    assert "\\ud83d" in r.path.read_text(encoding="utf-8")
    r2 = import_to_codex(doc, cwd=project, home=tmp_path / "codex")
    assert "\\ud83d" in r2.path.read_text(encoding="utf-8")
