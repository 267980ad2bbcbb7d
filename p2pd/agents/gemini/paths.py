"""Where Gemini CLI keeps sessions: ``$GEMINI_DIR`` or ``~/.gemini`` ``/tmp/<project hash>/chats/session-*``, and
how its session files are told apart from other JSON(L)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def gemini_dir() -> Path:
    env = os.environ.get("GEMINI_DIR")
    return Path(env).expanduser() if env else Path.home() / ".gemini"


def find_gemini_sessions(root: Path | None = None) -> list[Path]:
    """Every session file, newest first."""
    tmp = (root or gemini_dir()) / "tmp"
    if not tmp.is_dir():
        return []
    found = [p for p in tmp.glob("*/chats/session-*") if p.is_file() and p.name.endswith((".json", ".jsonl"))]
    found.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    return found


def is_gemini_meta(value: Any) -> bool:
    """The first line of a JSONL session: ``sessionId`` with ``projectHash`` or ``startTime``, no ``type``."""
    return (isinstance(value, dict) and "type" not in value and isinstance(value.get("sessionId"), str)
            and ("projectHash" in value or "startTime" in value))


def is_gemini_json(path: Path) -> bool:
    """An older whole-file session: ``*.json`` holding ``sessionId`` without p2pd's ``format``."""
    if not path.name.endswith(".json") or path.name.endswith(".a2a.json"):
        return False
    try:
        with path.open("rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    return b'"format"' not in head and b'"sessionId"' in head
