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
from typing import TYPE_CHECKING, Any

from p2pd.conversation.neutral import Text, ToolCall, ToolResult, message_items
from p2pd.conversation.shapes import MessageLike, Role

if TYPE_CHECKING:
    from p2pd.conversation.model import ConversationDocument

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


def is_request(m: MessageLike) -> bool:
    if m.role is not Role.USER or m.p2pd.get("kind", "prompt") != "prompt":
        return False
    text = _text(m)
    return bool(text) and not text.startswith(_NOT_A_REQUEST)


def _text(m: MessageLike) -> str:
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


def _open_todos(last: list[Any] | None) -> list[str]:
    if not last:
        return []
    return [str(t.get("content", "")) for t in last if isinstance(t, dict) and t.get("status") != "completed"]


def _open_team_tasks(metadata: dict[str, Any] | None) -> list[str]:
    teams = (metadata or {}).get("teams")
    tasks = teams.get("tasks") if isinstance(teams, dict) else None
    if not isinstance(tasks, dict):
        return []
    return [str(t.get("subject") or tid) for tid, t in tasks.items()
            if isinstance(t, dict) and t.get("status") not in ("completed", "deleted")]


class SummaryBuilder:
    """The title and summary built from the active messages one at a time (``add`` each, then ``finish``):
    what it keeps is small (counts, ids, file names, the last todo list), not the messages."""

    def __init__(self) -> None:
        self.first_request: str | None = None
        self.first_prompt: str | None = None
        self.tools: Counter[str] = Counter()
        self.n_calls = 0
        self.calls: list[tuple[str, str]] = []  # (id, name) of calls with an id, in order
        self.answered: set[str] = set()
        self.files: dict[str, None] = {}
        self.todos: list[Any] | None = None
        self.ending: str | None = None  # the sentence the last message ends on, when it is a request/notice
        self.last_words = ""

    def add(self, m: MessageLike) -> None:
        items = message_items(m)  # (read once: a message's parts are read for its text and its tool calls)
        text = "\n".join(i.text for i in items if isinstance(i, Text)).strip()
        request = (m.role is Role.USER and m.p2pd.get("kind", "prompt") == "prompt" and bool(text)
                   and not text.startswith(_NOT_A_REQUEST))
        if request and self.first_request is None:
            self.first_request = text
        if self.first_prompt is None and m.role is Role.USER and m.p2pd.get("kind", "prompt") == "prompt":
            tagless = _TAG.sub(" ", text).strip()
            if tagless:
                self.first_prompt = tagless
        for item in items:
            if isinstance(item, ToolCall):
                self.n_calls += 1
                self.tools[item.name] += 1
                if item.id:
                    self.calls.append((item.id, item.name))
                for f in files_of(item):
                    self.files.setdefault(f)
                if item.name == "TodoWrite" and isinstance(item.input, dict) and isinstance(
                        item.input.get("todos"), list):
                    self.todos = item.input["todos"]
            elif isinstance(item, ToolResult):
                self.answered.add(item.id)
        if request:
            self.ending = f"Ended: waiting for an answer to: {clip(text, _PART_MAX)}"
        elif m.p2pd.get("kind") in ("info", "error", "warning") and text:
            self.ending = f"Ended with a notice: {clip(text, _PART_MAX)}"
        else:
            self.ending = None
        if m.role is Role.AGENT and m.p2pd.get("kind", "response") == "response" and text:
            self.last_words = text

    def title(self) -> str:
        if self.first_request is not None:
            return clip(self.first_request, TITLE_MAX)
        return clip(self.first_prompt, TITLE_MAX) if self.first_prompt else ""

    def settled_title(self, title: str | None) -> str | None:
        """The title :meth:`finish` will give for ``title`` (the session's own title line, else its first prompt's
        title: None while there is none), when the messages still to come cannot change it; else None. A
        streamed writer offers the conversation under it before the last message is read."""
        if title and not title.startswith(_NOT_A_REQUEST[1:]):
            return title
        if title is not None and self.first_request is not None:
            return self.title()
        return None

    def finish(self, title: str, metadata: dict[str, Any] | None) -> tuple[str, str]:
        """``(title, summary)``: ``title`` is kept unless it is empty or not a real request."""
        if not title or title.startswith(_NOT_A_REQUEST[1:]):
            title = self.title()
        sentences: list[str] = []
        if self.first_request is not None:
            sentences.append(f"Asked: {clip(self.first_request, _PART_MAX)}")
        elif title:
            sentences.append(f"Asked: {title}")
        if self.n_calls:
            used = ", ".join(f"{name}×{n}" if n > 1 else name for name, n in self.tools.most_common(6))
            if len(self.tools) > 6:
                used += f" and {len(self.tools) - 6} more tools"
            files = list(self.files)
            done = f"Done: {self.n_calls} tool call{'s' if self.n_calls != 1 else ''} ({used})"
            if files:
                shown = ", ".join(f.rsplit("/", 1)[-1] for f in files[:5])
                done += f"; files touched: {shown}" + (f" and {len(files) - 5} more" if len(files) > 5 else "")
            sentences.append(done)
        else:
            sentences.append("Done: no tool calls")
        if self.ending is not None:
            sentences.append(self.ending)
        elif self.last_words:
            sentences.append(f"Ended: {clip(self.last_words, _PART_MAX)}")
        open_items: list[str] = []
        unanswered = [name for cid, name in self.calls if cid not in self.answered]
        if unanswered:
            open_items.append(f"{len(unanswered)} tool call(s) without a result ({unanswered[-1]})")
        todos = _open_todos(self.todos)
        if todos:
            open_items.append(f"{len(todos)} todo item(s) not done: " + "; ".join(clip(t, 60) for t in todos[:3]))
        tasks = _open_team_tasks(metadata)
        if tasks:
            open_items.append(f"{len(tasks)} team task(s) open: " + "; ".join(clip(t, 60) for t in tasks[:3]))
        if open_items:
            sentences.append("Open: " + "; ".join(open_items))
        return title, clip(" ".join(s if s.endswith((".", "?", "!", "…")) else s + "." for s in sentences),
                           SUMMARY_MAX)


def summarize(doc: ConversationDocument) -> tuple[str, str]:
    """Set and return ``(doc.title, doc.summary)``."""
    builder = SummaryBuilder()
    for m in doc.active_messages():
        builder.add(m)
    doc.title, doc.summary = builder.finish(doc.title, doc.metadata)
    return doc.title, doc.summary


def offer_text(doc: ConversationDocument) -> str:
    """What the receiving side shows when it is offered a conversation: who, what, and the summary."""
    if doc.summary is None:
        summarize(doc)
    o = doc.origin
    where = f" in {o.cwd}" if o.cwd else ""
    head = f"{doc.title or '(untitled)'} — {o.platform} conversation{where}, {doc.counts.messages} messages"
    return f"{head}\n{doc.summary}"
