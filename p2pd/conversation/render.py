"""A readable rendering of a conversation document for the terminal (``p2pd show``)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from p2pd.conversation import media_types as mt
from p2pd.conversation import neutral
from p2pd.conversation.model import ConversationDocument, Message, Part, Role
from p2pd.support.text import visible, visible_lines

FOLD = 100


def _safe(value: object) -> str:
    """A document's text as shown: every control, bidi and invisible character visible as an escape (it came from
    a transcript or a peer: an escape sequence must not act on the terminal), then rich markup escaped."""
    return escape(visible(str(value), None))


def _one_line(text: str, limit: int = FOLD) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _tool_use_line(data: Any) -> str:
    if not isinstance(data, dict):
        return "tool call"
    name = data.get("name", "tool")
    args = data.get("input", data.get("arguments"))
    if isinstance(args, dict):
        preview = args.get("command") or args.get("file_path") or args.get("pattern") or args.get("description")
        if not isinstance(preview, str):
            preview = json.dumps(args, ensure_ascii=False)
    else:
        preview = str(args) if args is not None else ""
    return f"{name}({_one_line(preview, 80)})"


def _result_text(data: Any) -> str:
    content = data.get("content", data.get("output")) if isinstance(data, dict) else data
    if isinstance(content, list):
        return " ".join(b.get("text", "[image]" if b.get("type") == "image" else "") for b in content
                        if isinstance(b, dict))
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


def part_summary(part: Part, full: bool = False) -> str:
    media = part.media_type or ""
    if part.text is not None:
        return escape(visible_lines(part.text)) if full else _safe(_one_line(part.text, 400))
    if part.raw is not None:
        return f"[dim]🖼  {_safe(media or 'file')} ({len(part.raw) * 3 // 4} bytes)[/dim]"
    if part.url is not None:
        return f"[dim]🔗 {_safe(part.url)}[/dim]"
    data = part.data_value
    if media == mt.TOOL_USE:
        call = neutral.tool_call(data)
        line = _tool_use_line({"name": call.name, "input": call.input} if call else data)
        return f"[cyan]▸ {_safe(line)}[/cyan]"
    if media == mt.TOOL_RESULT:
        res = neutral.tool_result(data)
        text = res.text if res else _result_text(data)
        err = res.is_error if res else isinstance(data, dict) and data.get("is_error")
        lines = text.count("\n") + 1 if text else 0
        body = escape(visible_lines(text)) if full else _safe(_one_line(text, 120))
        return f"[{'red' if err else 'green'}]◂ result ({lines} lines)[/] [dim]{body}[/dim]"
    if media in mt.THINKING_KINDS:
        size = len(json.dumps(data)) if data is not None else 0
        return f"[dim italic]💭 thinking (folded, {size} chars)[/dim italic]"
    return f"[dim]{_safe(media or 'data')}: {_safe(_one_line(json.dumps(data, ensure_ascii=False), 100))}[/dim]"


def render_message(console: Console, m: Message, full: bool = False) -> None:
    who = "[bold blue]user[/]" if m.role is Role.USER else "[bold magenta]agent[/]"
    kind = m.p2pd.get("kind")
    if kind and kind not in ("prompt", "response"):
        who += f" [dim]({_safe(kind)})[/dim]"
    ts = m.p2pd.get("timestamp")
    console.print(f"{who} [dim]{_safe(ts or '')}[/dim]")
    for p in m.parts:
        console.print("  " + part_summary(p, full), soft_wrap=not full)


def render_header(console: Console, doc: ConversationDocument) -> None:
    o = doc.origin
    table = Table.grid(padding=(0, 2))
    table.add_row("[bold]title[/]", _safe(doc.title or "(untitled)"))
    table.add_row("[bold]origin[/]", _safe(f"{o.platform} session {o.session_id or '?'}"
                                           f" (client {o.client_version or '?'})"))
    if o.cwd:
        table.add_row("[bold]cwd[/]", _safe(o.cwd + (f"  [branch {o.git_branch}]" if o.git_branch else "")))
    c = doc.counts
    table.add_row("[bold]messages[/]", f"{c.messages} ({c.user_messages} user, {c.agent_messages} agent; "
                  f"{c.active_messages} on the active branch, {c.side_branch_messages} on side branches)")
    table.add_row("[bold]tools[/]", f"{c.tool_calls} calls, {c.tool_results} results")
    if c.subagents:
        table.add_row("[bold]subagents[/]", str(c.subagents))
    if c.malformed_lines:
        table.add_row("[bold yellow]malformed[/]", f"{c.malformed_lines} source lines kept but unreadable")
    if doc.summary:
        table.add_row("[bold]summary[/]", _safe(doc.summary))
    console.print(table)


def render_teams(console: Console, state: dict[str, Any], *, full: bool = False) -> None:
    """Roster, task board and message timeline of the agent team(s) in ``doc.metadata["teams"]``."""
    teams = state.get("teams") or {}
    title = ", ".join(f"{_safe(t.get('name', '?'))} ({_safe(t.get('status', '?'))})" for t in teams.values()) or "team"
    console.print(f"[bold]Agent team[/]: {title}")
    members = state.get("members") or {}
    if members:
        roster = Table(title="roster", title_justify="left")
        for col in ("member", "team", "type", "status"):
            roster.add_column(col)
        colors = {"active": "green", "idle": "yellow", "shutdown": "dim"}
        for m in members.values():
            status = str(m.get("status", "?"))
            roster.add_row(_safe(m.get("name")), _safe(m.get("team", "")), _safe(m.get("agentType", "")),
                           f"[{colors.get(status, 'white')}]{_safe(status)}[/]")
        console.print(roster)
    tasks = state.get("tasks") or {}
    if tasks:
        board = Table(title="task board", title_justify="left")
        for col in ("#", "subject", "status", "owner", "blocked by", "blocks"):
            board.add_column(col)
        for t in tasks.values():
            board.add_row(_safe(t.get("id")), _safe(_one_line(str(t.get("subject", "")), 60)),
                          _safe(t.get("status")), _safe(t.get("owner") or "—"),
                          _safe(", ".join(map(str, t.get("blockedBy") or [])) or "—"),
                          _safe(", ".join(map(str, t.get("blocks") or [])) or "—"))
        console.print(board)
    timeline = state.get("timeline") or []
    if timeline:
        console.print("[bold]messages[/]")
        limit = None if full else 20
        for e in timeline[-limit:] if limit else timeline:
            text = e.get("summary") or e.get("content") or ""
            console.print(f"  [dim]{_safe(e.get('at') or '')}[/dim] {_safe(e.get('from'))} → "
                          f"{_safe(e.get('to') or '*')} [cyan]{_safe(e.get('type'))}[/cyan] "
                          f"{_safe(_one_line(str(text), 100))}")
        if limit and len(timeline) > limit:
            console.print(f"  [dim]({len(timeline) - limit} earlier messages; --full shows all)[/dim]")
    ignored = state.get("ignored") or []
    if ignored:
        console.print(f"[dim]{len(ignored)} team calls named an unknown task or member and were ignored[/dim]")


def render(console: Console, doc: ConversationDocument, *, full: bool = False, all_branches: bool = False,
           messages: Iterable[Message] | None = None) -> int:
    """Print the document; returns the number of messages shown. ``messages``: its messages, when they are not in
    ``doc`` (read from a spool one at a time)."""
    render_header(console, doc)
    teams = (doc.metadata or {}).get("teams")
    if isinstance(teams, dict):
        console.rule()
        render_teams(console, teams, full=full)
    console.rule()
    shown = 0
    for m in doc.messages if messages is None else messages:
        if not all_branches and not m.p2pd.get("active", True):
            continue
        render_message(console, m, full)
        shown += 1
    console.rule()
    console.print(f"[dim]{shown} messages shown{'' if all_branches else ' (active branch; --all for every branch)'}"
                  "[/dim]")
    return shown
