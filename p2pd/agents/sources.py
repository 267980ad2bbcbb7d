"""Which agent wrote a file, and loading any supported session or conversation file into a document.

- ``*.jsonl.zst``, or ``*.jsonl`` whose first line is ``{"type", "payload", …}``: Codex;
- ``*.jsonl`` whose first line is Gemini's session metadata (``sessionId`` with ``projectHash`` or ``startTime``,
  no ``type``): Gemini; ``*.json`` holding ``sessionId`` without p2pd's ``format``: Gemini (older format);
- any other ``*.jsonl``: Claude Code;
- anything else (``.a2a.json``, an ``.a2a.p2pd`` blob): a conversation document.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from p2pd.conversation.model import ConversationDocument
from p2pd.errors import NotFoundError

_SNIFF = 1 << 20


def _first_json_line(path: Path) -> Any:
    with path.open("rb") as fh:
        for _ in range(50):
            raw = fh.readline(_SNIFF)
            if not raw:
                return None
            if raw.strip():
                try:
                    return json.loads(raw)
                except (ValueError, RecursionError):
                    return None
    return None


def is_gemini_meta(value: Any) -> bool:
    return (isinstance(value, dict) and "type" not in value and isinstance(value.get("sessionId"), str)
            and ("projectHash" in value or "startTime" in value))


def detect(path: str | os.PathLike[str]) -> str:
    p = Path(path)
    name = p.name
    if name.endswith(".jsonl.zst"):
        return "codex"
    if name.endswith(".jsonl"):
        first = _first_json_line(p)
        if isinstance(first, dict) and "payload" in first and isinstance(first.get("type"), str):
            return "codex"
        if is_gemini_meta(first):
            return "gemini"
        return "claude-code"
    if name.endswith(".json") and not name.endswith(".a2a.json"):
        try:
            with p.open("rb") as fh:
                head = fh.read(4096)
        except OSError:
            return "document"
        if b'"format"' not in head and b'"sessionId"' in head:
            return "gemini"
    return "document"


def load_file(path: str | os.PathLike[str]) -> ConversationDocument:
    """Any session file or conversation document → ConversationDocument, with its title, summary and (for
    Claude Code) agent-team state."""
    from p2pd.conversation.summary import summarize
    from p2pd.conversation.teams import attach_team_state

    doc = _load(Path(path))
    if doc.origin.platform == "claude-code" and "teams" not in (doc.metadata or {}):
        attach_team_state(doc)
    if doc.summary is None or "teams" in (doc.metadata or {}):
        summarize(doc)
    return doc


def _load(p: Path) -> ConversationDocument:
    if not p.is_file():
        raise NotFoundError(f"file not found: {p}")
    kind = detect(p)
    if kind == "codex":
        from p2pd.agents.codex.export import export_rollout

        return export_rollout(p)
    if kind == "gemini":
        from p2pd.agents.gemini.export import export_gemini

        return export_gemini(p)
    if kind == "claude-code":
        from p2pd.agents.claude_code.export import export_session

        return export_session(p)
    from p2pd.conversation.document_io import read_document

    return read_document(p)


def load_conversation(ref: str) -> ConversationDocument:
    """A file path, or a session id / unique prefix / ``latest`` (Claude Code first, then Codex)."""
    p = Path(ref).expanduser()
    if p.is_file():
        return load_file(p)
    from p2pd.agents.claude_code.paths import resolve_session
    from p2pd.agents.codex.paths import resolve_rollout

    if os.sep not in ref and not ref.endswith((".jsonl", ".json", ".zst", ".p2pd")) and ref != "latest":
        codex = resolve_rollout(ref)
        if codex is not None:
            try:
                cc = resolve_session(ref)
            except NotFoundError:
                return load_file(codex)
            return load_file(cc)
    return load_file(resolve_session(ref))
