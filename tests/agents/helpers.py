"""Builders of small Codex rollouts and Gemini sessions for tests (the corpus lacks most item kinds)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class Rollout:
    """Appends Codex rollout lines ``{"timestamp", "type", "payload"}``."""

    def __init__(self, session_id: str = "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", cwd: str = "/home/dev/proj") -> None:
        self.session_id = session_id
        self.t = 0
        self.lines: list[Any] = []
        self.line("session_meta", {"id": session_id, "timestamp": self._ts(), "cwd": cwd,
                                   "originator": "codex_cli_rs", "cli_version": "0.89.0", "source": "cli",
                                   "git": {"branch": "main"}})

    def _ts(self) -> str:
        self.t += 1
        return f"2026-01-23T06:{self.t // 60:02d}:{self.t % 60:02d}.123Z"

    def line(self, ltype: str, payload: Any, **extra: Any) -> dict[str, Any]:
        obj = {"timestamp": self._ts(), "type": ltype, "payload": payload, **extra}
        self.lines.append(obj)
        return obj

    def item(self, payload: dict[str, Any]) -> dict[str, Any]:
        return self.line("response_item", payload)

    def user(self, text: str) -> None:
        self.item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
        self.line("event_msg", {"type": "user_message", "message": text, "images": []})

    def assistant(self, text: str) -> None:
        self.item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]})

    def call(self, name: str, args: dict[str, Any], output: str, call_id: str) -> None:
        self.item({"type": "function_call", "name": name, "arguments": json.dumps(args), "call_id": call_id})
        self.item({"type": "function_call_output", "call_id": call_id, "output": output})

    def raw(self, text: str) -> None:
        self.lines.append(text)

    def text(self) -> str:
        return "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in self.lines)

    def write(self, folder: Path) -> Path:
        day = folder / "sessions" / "2026" / "01" / "23"
        day.mkdir(parents=True, exist_ok=True)
        path = day / f"rollout-2026-01-23T06-11-59-{self.session_id}.jsonl"
        path.write_text(self.text(), encoding="utf-8")
        return path


PNG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


def every_kind_rollout() -> Rollout:
    """A rollout with every line type and response item kind p2pd maps."""
    r = Rollout()
    r.line("turn_context", {"cwd": "/home/dev/proj", "approval_policy": "on-request",
                            "sandbox_policy": {"type": "workspace-write"}, "model": "gpt-5-codex", "summary": "auto"})
    r.item({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "[perms]"}]})
    r.item({"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "<environment_context>\n  <cwd>/home/dev/proj</cwd>\n</environment_context>"}]})
    r.item({"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "fix the bug in app.py"},
        {"type": "input_image", "image_url": f"data:image/png;base64,{PNG_B64}"},
        {"type": "input_image", "image_url": "https://example.com/a.png", "detail": "high"},
        {"type": "mystery_content", "x": 1}]})
    r.item({"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Looking at app.py"}],
            "content": None, "encrypted_content": "gAAAAB-opaque"})
    r.call("shell", {"command": ["bash", "-lc", "cat app.py"], "timeout_ms": 1000}, "print('hi')\n", "call_1")
    r.item({"type": "local_shell_call", "id": "lsc_1", "call_id": "call_2", "status": "completed",
            "action": {"type": "exec", "command": ["ls"], "working_directory": "/home/dev/proj", "timeout_ms": 5}})
    r.item({"type": "function_call_output", "call_id": "call_2",
            "output": [{"type": "input_text", "text": "app.py"}]})
    r.item({"type": "custom_tool_call", "id": "ctc_1", "status": "completed", "call_id": "call_3",
            "name": "apply_patch", "input": "*** Begin Patch\n*** Update File: app.py\n-print('hi')\n+print('hello')\n"
            "*** End Patch"})
    r.item({"type": "custom_tool_call_output", "call_id": "call_3", "output": "Success. Updated app.py"})
    r.item({"type": "web_search_call", "id": "ws_1", "status": "completed",
            "action": {"type": "search", "query": "python print"}})
    r.item({"type": "ghost_snapshot", "ghost_commit": {"id": "abc"}})
    r.line("event_msg", {"type": "token_count", "info": {"total_token_usage": {"input_tokens": 1234567890123}},
                         "rate_limits": None})
    r.assistant("Fixed: app.py now prints hello.")
    r.line("compacted", {"message": "Summary: fixed app.py", "replacement_history": [{"type": "message"}]})
    r.line("world_state", {"anything": [1, 2.5, None, True]}, ordinal=7)
    r.raw('{"timestamp": "2026-01-23T06:59:00Z", "type": "response_item", "payload": ')
    r.item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "after"}],
            "end_turn": True})
    r.lines.append({"timestamp": "x", "type": "response_item", "payload": "not an object"})
    r.lines.append([1, 2])
    return r


# A Gemini CLI JSON session only the whole reading takes (two ``messages`` arrays: json keeps the last, read after
# the first was streamed; tests/agents/test_gemini_json_streamed.py has the others).
LEFT_WHOLE_GEMINI_JSON = (b'{"sessionId": "left-whole", "startTime": "2026-03-24T15:43:17Z", "messages": [], '
                          b'"messages": [{"id": "u1", "type": "user", "content": "hello"}]}')


def declined_unwritten(writer: Any, path: Path, spool: Path) -> None:
    """The streamed ``writer`` declines ``path`` (NotStreamable), having written nothing; its spools are gone."""
    import io

    import pytest

    from p2pd.agents.spec import NotStreamable

    spool.mkdir()
    out = io.BytesIO()
    with pytest.raises(NotStreamable):
        writer(path, out.write, spool_dir=spool)
    assert out.getvalue() == b"" and list(spool.iterdir()) == []


def packed_in_process(path: Path, work: Path) -> tuple[bytes, dict[str, Any] | None]:
    """The document the real packing process (``p2pd.exchange.producer``) sends for the session at ``path``, and
    the head it offers it under."""
    from p2pd.blob.stream import iter_raw
    from p2pd.exchange.producing import Production

    work.mkdir()
    prod = Production.start(path, work)
    try:
        return b"".join(iter_raw(prod.wait_complete())), prod.head
    finally:
        prod.close()


def offer_of(doc: Any) -> dict[str, Any]:
    """What a transfer offers a conversation document under."""
    return {"title": doc.title, "contextId": doc.context_id, "origin": doc.origin.to_json_dict(),
            "counts": {"messages": doc.counts.messages}}


def line_layout(doc: Any) -> bytes:
    """A whole document in the line layout, as the whole way writes it."""
    import io

    from p2pd.conversation.layout import document_lines

    out = io.BytesIO()
    document_lines(doc.to_json_dict(), out.write)
    return out.getvalue()


def written_as_stream(writer: Any, path: Path, spool: Path) -> tuple[bytes, dict[str, Any]]:
    """What a streamed writer (``write_rollout``, ``write_recording``…) writes for ``path``, and the head it says
    once; its spools gone afterwards."""
    import io

    spool.mkdir(exist_ok=True)
    out = io.BytesIO()
    heads: list[dict[str, Any]] = []
    writer(path, out.write, spool_dir=spool, on_head=heads.append)
    assert len(heads) == 1 and list(spool.iterdir()) == []  # said once; the spools are gone
    return out.getvalue(), heads[0]


def refused_alike(export: Any, writer: Any, path: Path, spool: Path) -> Exception:
    """The error the whole way (``export``) gives for ``path``, which the streamed ``writer`` gives too, word for
    word, having written nothing; returned."""
    import io

    import pytest

    from p2pd.errors import P2pdError

    with pytest.raises(P2pdError) as expected:
        export(path)
    out = io.BytesIO()
    with pytest.raises(type(expected.value)) as got:
        writer(path, out.write, spool_dir=spool)
    assert str(got.value) == str(expected.value) and out.getvalue() == b"", path
    return expected.value
