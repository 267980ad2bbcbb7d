"""A title and a bounded summary for any conversation: deterministic, local, no model and no network.

- **title**: the session's own title when it has one (Claude Code title lines), else its first real request,
  on one line, at most ``TITLE_MAX`` characters.
- **summary** (at most ``SUMMARY_MAX`` characters), four labelled sentences:
  ``Asked:`` the first request; ``Done:`` tools used with counts and files touched; ``Ended:`` where it stands at
  the end (the last agent words, or a request still waiting); ``Open:`` what is unfinished (unanswered tool
  calls, todo items and team tasks not completed), when anything is.

Only the active branch is read. The result goes into ``doc.title``/``doc.summary``; ``p2pd sessions``,
``p2pd show`` and the receiving side's offer prompt print them.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from p2pd.conversation.model import ConversationDocument, Message, Role
from p2pd.conversation.neutral import Text, ToolCall, ToolResult, message_items

TITLE_MAX = 80
SUMMARY_MAX = 600
_PART_MAX = 160
_FILE_KEYS = ("file_path", "notebook_path", "path", "absolute_path", "filePath")
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", re.MULTILINE)
_TAG = re.compile(r"</?[A-Za-z][\w-]*(?:\s[^<>]*)?>")
_NOT_A_REQUEST = ("<", "Caveat:", "[Request interrupted", "This session is being continued")


def clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def is_request(m: Message) -> bool:
    if m.role is not Role.USER or m.p2pd.get("kind", "prompt") != "prompt":
        return False
    text = _text(m)
    return bool(text) and not text.startswith(_NOT_A_REQUEST)


def _text(m: Message) -> str:
    return "\n".join(i.text for i in message_items(m) if isinstance(i, Text)).strip()


def files_of(call: ToolCall) -> list[str]:
    out: list[str] = []
    args = call.input
    if isinstance(args, dict):
        for key in _FILE_KEYS:
            v = args.get(key)
            if isinstance(v, str) and v and "\n" not in v:
                out.append(v)
        patch = args.get("input") or args.get("patch")
        if isinstance(patch, str):
            out.extend(_PATCH_FILE.findall(patch))
    elif isinstance(args, str):
        out.extend(_PATCH_FILE.findall(args))
    return out


def _open_todos(calls: list[ToolCall]) -> list[str]:
    last: list[Any] | None = None
    for c in calls:
        if c.name == "TodoWrite" and isinstance(c.input, dict) and isinstance(c.input.get("todos"), list):
            last = c.input["todos"]
    if not last:
        return []
    return [str(t.get("content", "")) for t in last if isinstance(t, dict) and t.get("status") != "completed"]


def _open_team_tasks(doc: ConversationDocument) -> list[str]:
    teams = (doc.metadata or {}).get("teams")
    tasks = teams.get("tasks") if isinstance(teams, dict) else None
    if not isinstance(tasks, dict):
        return []
    return [str(t.get("subject") or tid) for tid, t in tasks.items()
            if isinstance(t, dict) and t.get("status") not in ("completed", "deleted")]


def _title(active: list[Message], requests: list[Message]) -> str:
    if requests:
        return clip(_text(requests[0]), TITLE_MAX)
    for m in active:  # no plain request: the first prompt with its markup tags taken out
        if m.role is Role.USER and m.p2pd.get("kind", "prompt") == "prompt":
            text = _TAG.sub(" ", _text(m)).strip()
            if text:
                return clip(text, TITLE_MAX)
    return ""


def summarize(doc: ConversationDocument) -> tuple[str, str]:
    """Set and return ``(doc.title, doc.summary)``."""
    active = doc.active_messages()
    requests = [m for m in active if is_request(m)]
    if not doc.title or doc.title.startswith(_NOT_A_REQUEST[1:]):
        doc.title = _title(active, requests)
    calls: list[ToolCall] = []
    answered: set[str] = set()
    for m in active:
        for item in message_items(m):
            if isinstance(item, ToolCall):
                calls.append(item)
            elif isinstance(item, ToolResult):
                answered.add(item.id)
    sentences: list[str] = []
    if requests:
        sentences.append(f"Asked: {clip(_text(requests[0]), _PART_MAX)}")
    elif doc.title:
        sentences.append(f"Asked: {doc.title}")
    if calls:
        tools = Counter(c.name for c in calls)
        used = ", ".join(f"{name}×{n}" if n > 1 else name for name, n in tools.most_common(6))
        if len(tools) > 6:
            used += f" and {len(tools) - 6} more tools"
        files: list[str] = []
        for c in calls:
            for f in files_of(c):
                if f not in files:
                    files.append(f)
        done = f"Done: {len(calls)} tool call{'s' if len(calls) != 1 else ''} ({used})"
        if files:
            shown = ", ".join(f.rsplit("/", 1)[-1] for f in files[:5])
            done += f"; files touched: {shown}" + (f" and {len(files) - 5} more" if len(files) > 5 else "")
        sentences.append(done)
    else:
        sentences.append("Done: no tool calls")
    last = active[-1] if active else None
    if last is not None and is_request(last):
        sentences.append(f"Ended: waiting for an answer to: {clip(_text(last), _PART_MAX)}")
    elif last is not None and last.p2pd.get("kind") in ("info", "error", "warning") and _text(last):
        sentences.append(f"Ended with a notice: {clip(_text(last), _PART_MAX)}")
    else:
        last_words = next((t for m in reversed(active) if m.role is Role.AGENT
                           and m.p2pd.get("kind", "response") == "response" and (t := _text(m))), "")
        if last_words:
            sentences.append(f"Ended: {clip(last_words, _PART_MAX)}")
    open_items: list[str] = []
    unanswered = [c for c in calls if c.id and c.id not in answered]
    if unanswered:
        open_items.append(f"{len(unanswered)} tool call(s) without a result ({unanswered[-1].name})")
    todos = _open_todos(calls)
    if todos:
        open_items.append(f"{len(todos)} todo item(s) not done: " + "; ".join(clip(t, 60) for t in todos[:3]))
    tasks = _open_team_tasks(doc)
    if tasks:
        open_items.append(f"{len(tasks)} team task(s) open: " + "; ".join(clip(t, 60) for t in tasks[:3]))
    if open_items:
        sentences.append("Open: " + "; ".join(open_items))
    doc.summary = clip(" ".join(s if s.endswith((".", "?", "!", "…")) else s + "." for s in sentences),
                       SUMMARY_MAX)
    return doc.title, doc.summary


def offer_text(doc: ConversationDocument) -> str:
    """What the receiving side shows when it is offered a conversation: who, what, and the summary."""
    if doc.summary is None:
        summarize(doc)
    o = doc.origin
    where = f" in {o.cwd}" if o.cwd else ""
    head = f"{doc.title or '(untitled)'} — {o.platform} conversation{where}, {doc.counts.messages} messages"
    return f"{head}\n{doc.summary}"
