"""Builders of small Claude Code transcripts for tests (the corpus lacks images, redacted thinking, teams…)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

PNG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


class Session:
    """Appends linked Claude Code lines: each line's parentUuid is the previous line's uuid."""

    def __init__(self, session_id: str | None = None, cwd: str = "/home/dev/proj") -> None:
        self.session_id = session_id or str(uuid.uuid4())
        self.cwd = cwd
        self.lines: list[dict[str, Any]] = []
        self.last: str | None = None
        self.t = 0

    def _base(self, ltype: str, parent: str | bool | None = True) -> dict[str, Any]:
        self.t += 1
        u = str(uuid.uuid4())
        par = self.last if parent is True else (None if parent is False else parent)
        return {"parentUuid": par, "isSidechain": False, "userType": "external", "cwd": self.cwd,
                "sessionId": self.session_id, "version": "2.1.39", "gitBranch": "main", "type": ltype,
                "uuid": u, "timestamp": f"2026-02-12T10:{self.t // 60:02d}:{self.t % 60:02d}.000Z"}

    def add(self, line: dict[str, Any]) -> dict[str, Any]:
        self.lines.append(line)
        if "uuid" in line:
            self.last = line["uuid"]
        return line

    def user(self, content: Any, parent: str | bool | None = True, **extra: Any) -> dict[str, Any]:
        line = self._base("user", parent)
        line["message"] = {"role": "user", "content": content}
        line.update(extra)
        return self.add(line)

    def assistant(self, blocks: list[Any], msg_id: str | None = None, parent: str | bool | None = True,
                  **extra: Any) -> dict[str, Any]:
        line = self._base("assistant", parent)
        line["requestId"] = "req_1"
        line["message"] = {"model": "claude-opus-4-6", "id": msg_id or f"msg_{uuid.uuid4().hex[:20]}",
                           "type": "message", "role": "assistant", "content": blocks, "stop_reason": None,
                           "stop_sequence": None, "usage": {"input_tokens": 3, "output_tokens": 9,
                                                            "cache_read_input_tokens": 11442}}
        line.update(extra)
        return self.add(line)

    def tool_call(self, name: str, tool_input: dict[str, Any], result: Any, msg_id: str | None = None,
                  is_error: bool = False) -> str:
        tid = f"toolu_{uuid.uuid4().hex[:20]}"
        self.assistant([{"type": "tool_use", "id": tid, "name": name, "input": tool_input}], msg_id=msg_id)
        block: dict[str, Any] = {"tool_use_id": tid, "type": "tool_result", "content": result}
        if is_error:
            block["is_error"] = True
        self.user([block], toolUseResult={"stdout": "x"})
        return tid

    def progress(self, **data: Any) -> dict[str, Any]:
        line = self._base("progress")
        line["data"] = {"type": "hook_progress", **data}
        line["toolUseID"] = "toolu_x"
        return self.add(line)

    def raw(self, obj: Any) -> None:
        self.lines.append(obj)

    def text(self) -> str:
        return "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in self.lines)

    def write(self, folder: Path, name: str | None = None) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / (name or f"{self.session_id}.jsonl")
        path.write_text(self.text(), encoding="utf-8")
        return path


def rich_session() -> Session:
    """A session with everything the corpus lacks: images, redacted thinking, split responses, errors."""
    s = Session()
    s.user([{"type": "text", "text": "Look at this screenshot and fix the bug"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}}])
    mid = "msg_split_1"
    s.assistant([{"type": "thinking", "thinking": "Let me look.", "signature": "sig=="}], msg_id=mid)
    s.assistant([{"type": "redacted_thinking", "data": "EncryptedBlob=="}], msg_id=mid)
    s.assistant([{"type": "text", "text": "I'll read the file."}], msg_id=mid)
    s.tool_call("Read", {"file_path": "/home/dev/proj/app.py"}, "1→print('hi')", msg_id=mid)
    s.tool_call("Screenshot", {}, [{"type": "text", "text": "captured"},
                                   {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                                "data": PNG_B64}}])
    s.tool_call("Bash", {"command": "false"}, "exit 1", is_error=True)
    s.assistant([{"type": "text", "text": "Done: the bug is fixed.", "citations": None}])
    return s
