"""Local agent sessions, listed across platforms (``p2pd sessions``) and resolved by id, prefix or path."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .claude_code import paths as cc_paths
from .claude_code.export import convert_transcript, session_title
from .claude_code.transcript import parse_lines, read_text

PLATFORMS = ("claude-code",)


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

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def claude_code_info(path: Path) -> SessionInfo:
    lines = parse_lines(read_text(path))
    transcript = convert_transcript(lines, path.stem)
    cwd = next((ln.obj["cwd"] for ln in lines if ln.obj and isinstance(ln.obj.get("cwd"), str)), None)
    stat = path.stat()
    return SessionInfo(
        platform="claude-code", session_id=path.stem, cwd=cwd, title=session_title(lines, transcript.messages),
        messages=len(transcript.messages), size=stat.st_size,
        last_activity=datetime.fromtimestamp(stat.st_mtime, UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        path=str(path),
    )


def list_sessions(platform: str | None = None, *, limit: int | None = None) -> list[SessionInfo]:
    infos: list[SessionInfo] = []
    if platform in (None, "claude-code"):
        for s in cc_paths.find_sessions()[:limit]:
            infos.append(claude_code_info(s.path))
    infos.sort(key=lambda i: i.last_activity, reverse=True)
    return infos[:limit] if limit else infos
