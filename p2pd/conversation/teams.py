"""Claude Code agent teams: recognizing the team tool calls and deriving the team state from them.

Team tools (Claude Code's agent-teams feature): ``TeamCreate {team_name, description}``, ``TeamDelete``,
``Task`` **with both** ``team_name`` and ``name`` (spawns a teammate; a plain subagent ``Task`` is not a team call),
``TaskCreate {subject, description}``, ``TaskUpdate {taskId, status, owner, addBlockedBy, addBlocks, …}``,
``TaskList``, ``TaskGet {taskId}``, and ``SendMessage {type, recipient, content, summary, request_id, approve}``
with types ``message``, ``broadcast``, ``shutdown_request``, ``shutdown_response``, ``plan_approval_request`` and
``plan_approval_response``. Teammates also report to the lead in user turns such as
``<teammate-message teammate_id="…">{"type": "idle_notification", …}</teammate-message>``.

Each tool_use is paired with its tool_result (by id). :func:`reduce` is a pure reducer over these events:

- a call whose result is an error, or that has no result, changes nothing;
- replaying a call (same tool_use id) changes nothing, and lists (blockedBy, blocks) never hold duplicates;
- a call naming an unknown task or member never fails: it is noted in ``ignored``.

The state (see :func:`empty_state`) goes into ``doc.metadata["teams"]``; ``p2pd show`` renders the roster, the
task board and the message timeline.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from p2pd.conversation.shapes import MessageLike, Role

if TYPE_CHECKING:
    from p2pd.conversation.model import ConversationDocument
from p2pd.conversation.neutral import Text, ToolCall, ToolResult, message_items

TEAM_TOOLS = {"TeamCreate", "TeamDelete", "TaskCreate", "TaskUpdate", "TaskList", "TaskGet", "SendMessage"}
MESSAGE_TYPES = {"message", "broadcast", "shutdown_request", "shutdown_response", "plan_approval_request",
                 "plan_approval_response"}
TASK_STATUSES = {"pending", "in_progress", "completed", "deleted"}
LEAD = "team-lead"
_TASK_ID = re.compile(r"#\s*([A-Za-z0-9_-]+)|\btask(?:Id| id)?[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9_-]+)", re.I)
_TEAMMATE_MSG = re.compile(r'<teammate-message\s+teammate_id="([^"]+)"[^>]*>(.*?)</teammate-message>', re.S)
_CLIP = 300
NOTICE = "teammate-message"  # the tool name of a teammate's notice to the lead (no tool call)


@dataclass(frozen=True)
class TeamEvent:
    """One team tool call with its result (or a teammate notice), in conversation order."""

    call_id: str
    tool: str
    input: dict[str, Any]
    result: str
    actor: str = LEAD
    timestamp: str | None = None
    is_error: bool = False
    answered: bool = True


def is_team_call(call: ToolCall) -> bool:
    if call.name in TEAM_TOOLS:
        return True
    if call.name in ("Task", "Agent") and isinstance(call.input, dict):
        return bool(call.input.get("team_name")) and bool(call.input.get("name"))
    return False


class TeamMessage(MessageLike, Protocol):
    """What the team events read of a message: a model's ``Message``, or a view of its JSON."""

    @property
    def message_id(self) -> str: ...


class EventCollector:
    """The team events of messages heard one at a time (:meth:`add` each, in order, then :meth:`events`): what
    :func:`events_from_messages` makes of them all, holding the team calls and teammate notices (few and small),
    the first result of each team call, and the id of every result heard while no call of its id had been (so
    every other tool result's id: ~50,000 short strings in a 200 MB session) — not the messages, so a streamed
    writer can derive the team state of a session of any size.

    Each call takes the first result of its id in the whole conversation. A result heard before its call (no agent
    writes that; a damaged or edited transcript can) is only known by its id when the call comes: ``again`` reads
    the messages a second time for those results, and only then."""

    def __init__(self, actor: str = LEAD) -> None:
        self.actor = actor
        self._slots: list[TeamEvent] = []  # in conversation order; a call's result is filled in by events()
        self._calls: set[str] = set()
        self._results: dict[str, ToolResult] = {}  # the first result of a call heard after the call
        self._early: set[str] = set()  # the ids of results heard while no call of theirs had been

    def add(self, m: TeamMessage) -> None:
        items = message_items(m)
        stamp = m.p2pd.get("timestamp")
        ts = stamp if isinstance(stamp, str) else None
        calls, early, results = self._calls, self._early, self._results
        for item in items:  # (the calls first: a result in its call's own message is no early one)
            if isinstance(item, ToolCall):
                if is_team_call(item):
                    calls.add(item.id)
                    self._slots.append(TeamEvent(call_id=item.id, tool=item.name,
                                                 input=item.input if isinstance(item.input, dict) else {},
                                                 result="", actor=self.actor, timestamp=ts, answered=False))
            elif isinstance(item, Text) and m.role is Role.USER and "<teammate-message" in item.text:
                for n, (who, body) in enumerate(_TEAMMATE_MSG.findall(item.text)):
                    self._slots.append(TeamEvent(call_id=f"{m.message_id}#tm{n}", tool=NOTICE,
                                                 input={"from": who, "body": body.strip()}, result="", actor=who,
                                                 timestamp=ts))
        for item in items:
            if isinstance(item, ToolResult) and item.id:
                if item.id not in calls:
                    early.add(item.id)
                elif item.id not in early:
                    results.setdefault(item.id, item)

    def events(self, again: Callable[[], Iterable[TeamMessage]]) -> list[TeamEvent]:
        """The events, in conversation order, each call with its first result (``again``: the same messages
        once more, read only when a result came before its call)."""
        results = self._results
        late = self._calls & self._early
        if late:
            results = dict(results)
            for m in again():
                for item in message_items(m):
                    if isinstance(item, ToolResult) and item.id in late and item.id not in results:
                        results[item.id] = item
        out: list[TeamEvent] = []
        for event in self._slots:
            if event.tool != NOTICE:
                res = results.get(event.call_id)
                event = dataclasses.replace(event, result=res.text if res else "",
                                            is_error=bool(res and res.is_error), answered=res is not None)
            out.append(event)
        return out


def events_from_messages(messages: Iterable[TeamMessage], actor: str = LEAD) -> list[TeamEvent]:
    msgs = list(messages)
    collector = EventCollector(actor)
    for m in msgs:
        collector.add(m)
    return collector.events(lambda: msgs)


def in_time_order(events: Iterable[TeamEvent]) -> list[TeamEvent]:
    """The events of a conversation and its subagents (each in conversation order) in time order: stable, so
    events of the same or no time keep their order."""
    return sorted(events, key=lambda e: e.timestamp or "")


def document_events(doc: ConversationDocument) -> list[TeamEvent]:
    events = events_from_messages(doc.active_messages())
    for sub in doc.subagents:
        events.extend(events_from_messages(sub.messages, actor=subagent_name(sub.meta, sub.agent_id)))
    return in_time_order(events)


def subagent_name(meta: dict[str, Any] | None, agent_id: str) -> str:
    """The name a subagent acts under in the team state: its meta's ``name`` or ``agentName``, else its id."""
    return str((meta or {}).get("name") or (meta or {}).get("agentName") or agent_id)


def empty_state() -> dict[str, Any]:
    return {"teams": {}, "members": {}, "tasks": {}, "timeline": [], "ignored": [], "applied": []}


def _add_unique(target: list[Any], values: Any) -> None:
    for v in values if isinstance(values, list) else [values]:
        v = str(v)
        if v not in target:
            target.append(v)


def _task_id(event: TeamEvent, state: dict[str, Any]) -> str:
    m = _TASK_ID.search(event.result)
    if m:
        return m.group(1) or m.group(2)
    n = len(state["tasks"]) + 1
    while str(n) in state["tasks"]:
        n += 1
    return str(n)


def _member(state: dict[str, Any], name: str) -> dict[str, Any] | None:
    return state["members"].get(name)


def _set_member_status(state: dict[str, Any], name: str, status: str, event: TeamEvent) -> None:
    member = _member(state, name)
    if member is None:
        if name != LEAD:
            state["ignored"].append({"call": event.call_id, "reason": f"unknown member {name!r}"})
        return
    if member["status"] != "shutdown" or status == "shutdown":
        member["status"] = status


def apply(state: dict[str, Any], event: TeamEvent) -> dict[str, Any]:
    """The state after one event (a new dict; ``state`` is not changed)."""
    if not _applies(event) or event.call_id in state["applied"]:
        return state
    s = copy.deepcopy(state)
    _apply(s, event)
    return s


def _applies(event: TeamEvent) -> bool:
    return event.answered and not event.is_error


def _apply(s: dict[str, Any], event: TeamEvent) -> None:
    """Apply one event that applies and was not applied yet to ``s``, in place."""
    s["applied"].append(event.call_id)
    inp = event.input
    tool = event.tool
    if tool == "TeamCreate":
        name = str(inp.get("team_name") or "team")
        s["teams"].setdefault(name, {"name": name, "description": str(inp.get("description") or ""),
                                     "status": "active", "createdAt": event.timestamp})
        s["teams"][name]["status"] = "active"
    elif tool == "TeamDelete":
        names = [str(inp["team_name"])] if inp.get("team_name") else list(s["teams"])
        for name in names:
            if name in s["teams"]:
                s["teams"][name]["status"] = "deleted"
            else:
                s["ignored"].append({"call": event.call_id, "reason": f"unknown team {name!r}"})
        for member in s["members"].values():
            if member["team"] in names:
                member["status"] = "shutdown"
    elif tool in ("Task", "Agent"):
        name = str(inp["name"])
        member = s["members"].setdefault(name, {"name": name, "team": str(inp["team_name"]),
                                                "agentType": str(inp.get("subagent_type") or ""),
                                                "status": "active", "joinedAt": event.timestamp})
        member["status"] = "active"
    elif tool == "TaskCreate":
        tid = _task_id(event, s)
        s["tasks"].setdefault(tid, {"id": tid, "subject": str(inp.get("subject") or ""),
                                    "description": str(inp.get("description") or ""), "status": "pending",
                                    "owner": None, "blockedBy": [], "blocks": []})
    elif tool == "TaskUpdate":
        tid = str(inp.get("taskId") or inp.get("task_id") or "")
        task = s["tasks"].get(tid)
        if task is None:
            s["ignored"].append({"call": event.call_id, "reason": f"unknown task {tid!r}"})
            return
        status = inp.get("status")
        if isinstance(status, str) and status in TASK_STATUSES:
            task["status"] = status
        for key in ("subject", "description"):
            if isinstance(inp.get(key), str):
                task[key] = inp[key]
        if "owner" in inp:
            task["owner"] = inp["owner"] if isinstance(inp["owner"], str) and inp["owner"] else None
        elif status == "in_progress" and task["owner"] is None and event.actor != LEAD:
            task["owner"] = event.actor  # a teammate claiming a task
        _add_unique(task["blockedBy"], inp.get("addBlockedBy") or [])
        _add_unique(task["blocks"], inp.get("addBlocks") or [])
        for other_id in [str(x) for x in (inp.get("addBlocks") or [])]:  # keep both sides consistent
            if other_id in s["tasks"]:
                _add_unique(s["tasks"][other_id]["blockedBy"], tid)
        for other_id in [str(x) for x in (inp.get("addBlockedBy") or [])]:
            if other_id in s["tasks"]:
                _add_unique(s["tasks"][other_id]["blocks"], tid)
        if task["owner"] and status == "in_progress":
            _set_member_status(s, task["owner"], "active", event)
    elif tool == "SendMessage":
        mtype = str(inp.get("type") or "message")
        entry = {"at": event.timestamp, "from": event.actor, "to": inp.get("recipient") or (
            "*" if mtype == "broadcast" else None), "type": mtype,
            "summary": str(inp.get("summary") or ""), "content": _clip(inp.get("content"))}
        if mtype not in MESSAGE_TYPES:
            entry["unknownType"] = True
        s["timeline"].append(entry)
        if mtype == "shutdown_request" and isinstance(inp.get("recipient"), str):
            member = _member(s, inp["recipient"])
            if member is None:
                s["ignored"].append({"call": event.call_id, "reason": f"unknown member {inp['recipient']!r}"})
            else:
                member["shutdownRequested"] = True
        elif mtype == "shutdown_response" and inp.get("approve") is True:
            _set_member_status(s, event.actor, "shutdown", event)
    elif tool == NOTICE:
        body = str(inp.get("body") or "")
        kind = _notice_type(body)
        s["timeline"].append({"at": event.timestamp, "from": event.actor, "to": LEAD, "type": kind,
                              "summary": "", "content": _clip(body)})
        if kind == "idle_notification":
            _set_member_status(s, event.actor, "idle", event)
        elif kind in ("shutdown_approved", "shutdown_response"):
            _set_member_status(s, event.actor, "shutdown", event)
    # TaskList and TaskGet read the state; they change nothing but are recognized


def _notice_type(body: str) -> str:
    try:
        value = json.loads(body)
    except ValueError:
        return "message"
    return str(value.get("type") or "message") if isinstance(value, dict) else "message"


def _clip(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False) if value is not None else ""
    return text if len(text) <= _CLIP else text[: _CLIP - 1] + "…"


def reduce(events: Iterable[TeamEvent], state: dict[str, Any] | None = None) -> dict[str, Any]:
    """The state after ``events``, from ``state`` (not changed) or the empty one: as :func:`apply` one event after
    the other, in one copy changed in place (a copy per event made a session's events cost quadratic time: 52 s
    for 4,000 messages sent)."""
    out = copy.deepcopy(state) if state is not None else empty_state()
    applied = set(out["applied"])
    for e in events:
        if _applies(e) and e.call_id not in applied:
            applied.add(e.call_id)
            _apply(out, e)
    return out


def team_state(events: list[TeamEvent]) -> dict[str, Any] | None:
    """The team state ``events`` (in time order) make, or None when they make no team."""
    if not events:
        return None
    state = reduce(events)
    if not (state["teams"] or state["members"] or state["tasks"] or state["timeline"]):
        return None
    return state


def attach_team_state(doc: ConversationDocument) -> dict[str, Any] | None:
    """Derive the team state and store it in ``doc.metadata["teams"]``; None when the conversation has no team."""
    state = team_state(document_events(doc))
    if state is None:
        return None
    doc.metadata = {**(doc.metadata or {}), "teams": state}
    return state
