"""Local agent sessions, listed across platforms (``p2pd sessions``) and resolved by id, prefix or path.

Claude Code: ``$CLAUDE_CONFIG_DIR`` or ``~/.claude`` ``/projects/*/*.jsonl``; Codex: ``$CODEX_HOME`` or ``~/.codex``
``/sessions/YYYY/MM/DD/rollout-*.jsonl[.zst]``; Gemini CLI: ``$GEMINI_DIR`` or ``~/.gemini`` ``/tmp/*/chats/session-*``.
A file that cannot be read is listed with its error as title rather than hiding the others.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from p2pd.agents.claude_code import paths as cc_paths
from p2pd.agents.codex import paths as codex_paths
from p2pd.conversation.model import ConversationDocument
from p2pd.errors import P2pdError

PLATFORMS = ("claude-code", "codex", "gemini")


@dataclass
class SessionInfo:
    platform: str
    session_id: str
    cwd: str | None
    title: str
    messages: int
    size: int
    last_activity: str
    path: str
    summary: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _mtime(path: Path) -> str:
    return datetime.fromtimestamp(path.stat().st_mtime, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def info_from_document(platform: str, path: Path, doc: ConversationDocument) -> SessionInfo:
    from p2pd.conversation.summary import summarize

    summarize(doc)
    return SessionInfo(platform=platform, session_id=doc.origin.session_id or doc.context_id, cwd=doc.origin.cwd,
                       title=doc.title, messages=len(doc.messages), size=path.stat().st_size,
                       last_activity=_mtime(path), path=str(path), summary=doc.summary or "")


def _info(platform: str, path: Path, load: Callable[[Path], ConversationDocument]) -> SessionInfo:
    try:
        return info_from_document(platform, path, load(path))
    except P2pdError as exc:
        return SessionInfo(platform=platform, session_id=path.stem, cwd=None, title=f"[unreadable: {exc}]",
                           messages=0, size=path.stat().st_size, last_activity=_mtime(path), path=str(path))


def claude_code_info(path: Path) -> SessionInfo:
    from p2pd.agents.claude_code.export import export_session

    return _info("claude-code", path, export_session)


def codex_info(path: Path) -> SessionInfo:
    from p2pd.agents.codex.export import export_rollout

    return _info("codex", path, export_rollout)


def gemini_info(path: Path) -> SessionInfo:
    from p2pd.agents.gemini.export import export_gemini

    return _info("gemini", path, export_gemini)


def gemini_dir() -> Path:
    env = os.environ.get("GEMINI_DIR")
    return Path(env).expanduser() if env else Path.home() / ".gemini"


def find_gemini_sessions(root: Path | None = None) -> list[Path]:
    tmp = (root or gemini_dir()) / "tmp"
    if not tmp.is_dir():
        return []
    found = [p for p in tmp.glob("*/chats/session-*") if p.is_file() and p.name.endswith((".json", ".jsonl"))]
    found.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    return found


def list_sessions(platform: str | None = None, *, limit: int | None = None) -> list[SessionInfo]:
    infos: list[SessionInfo] = []
    if platform in (None, "claude-code"):
        infos.extend(claude_code_info(s.path) for s in cc_paths.find_sessions()[:limit])
    if platform in (None, "codex"):
        infos.extend(codex_info(r.path) for r in codex_paths.find_rollouts()[:limit])
    if platform in (None, "gemini"):
        infos.extend(gemini_info(p) for p in find_gemini_sessions()[:limit])
    infos.sort(key=lambda i: i.last_activity, reverse=True)
    return infos[:limit] if limit else infos
