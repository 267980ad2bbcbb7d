"""Redaction as a stream (p2pd/conversation/redact_stream.py) makes the document the whole-document redaction makes
— title and summary made again or kept by the same rules, records kept as bytes masked, subagents and tool results
— with the same counts by kind."""

from __future__ import annotations

import base64
import json
import random
from pathlib import Path

import pytest

from p2pd.agents.sources import load_file
from p2pd.conversation.document_io import dumps
from p2pd.conversation.model import ConversationDocument, Part
from p2pd.conversation.redact import redact_document
from p2pd.conversation.redact_stream import redact_stream
from tests.agents.claude_code.helpers import Session
from tests.conversation.test_redact import SECRETS, _cc_session_with_secrets
from tests.corpus import claude_code_files, file_id


def streamed(doc: ConversationDocument, tmp_path: Path, piece: int = 4096) -> tuple[bytes, dict[str, int]]:
    data = dumps(doc, pretty=False)
    out: list[bytes] = []
    report = redact_stream((data[i:i + piece] for i in range(0, len(data), piece)), out.append, tmp_path,
                           title=doc.title)
    return b"".join(out), dict(report.counts)


def same_as_whole(doc: ConversationDocument, tmp_path: Path) -> dict[str, int]:
    red, report = redact_document(doc.model_copy(deep=True))
    data, counts = streamed(doc, tmp_path)
    assert json.loads(data) == red.to_json_dict()
    assert counts == dict(report.counts)
    assert all(line.startswith((b"{", b",", b"]")) for line in data.splitlines())  # the line layout
    return counts


def test_secrets_in_prompts_tool_input_and_output_and_a_title_made_again(tmp_path: Path) -> None:
    s, secrets = _cc_session_with_secrets()
    doc = load_file(s.write(tmp_path / "src"))
    counts = same_as_whole(doc, tmp_path)
    data, _ = streamed(doc, tmp_path)
    assert not any(secret.encode() in data for secret in secrets)
    assert sum(counts.values()) >= 3 * len(SECRETS)


def test_a_sessions_own_title_is_kept_and_a_clean_session_is_unchanged(tmp_path: Path) -> None:
    text, _ = SECRETS["openai-key"]
    s = Session()
    s.user(f"use {text} for the deploy")
    s.assistant([{"type": "text", "text": "ok"}])
    s.add({"type": "custom-title", "customTitle": "Deploy pipeline fix", "sessionId": s.session_id})
    doc = load_file(s.write(tmp_path / "src"))
    assert same_as_whole(doc, tmp_path)
    clean = Session()
    clean.user("nothing secret here")
    clean.assistant([{"type": "text", "text": "fine"}])
    plain = load_file(clean.write(tmp_path / "clean"))
    assert same_as_whole(plain, tmp_path) == {}


def test_a_line_kept_as_bytes_is_masked(tmp_path: Path) -> None:
    text, secret = SECRETS["github-token"]
    s = Session()
    s.user("hello")
    s.assistant([{"type": "text", "text": "hi"}])
    src = s.write(tmp_path / "src")
    with src.open("ab") as fh:
        fh.write(('{"type":"user","message":{"content":"' + text + ' é').encode()[:-1])
    doc = load_file(src)
    same_as_whole(doc, tmp_path)
    data, _ = streamed(doc, tmp_path)
    kept = base64.b64decode(json.loads(data)["records"][-1]["raw"])
    assert secret.encode() not in kept


@pytest.mark.parametrize("path", claude_code_files()[:12], ids=file_id)
def test_corpus_sessions_with_planted_secrets(path: Path, tmp_path: Path) -> None:
    """Corpus sessions (subagents, tool results) with secrets planted in random messages, main and subagents'."""
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    rng = random.Random(seed)
    doc = load_file(path)
    holders = [doc, *doc.subagents]
    for _ in range(5):
        holder = rng.choice(holders)
        if holder.messages:
            text, _ = rng.choice(list(SECRETS.values()))
            rng.choice(holder.messages).parts.append(Part(text=text))
    same_as_whole(doc, tmp_path)
