"""Cross-agent import: a conversation from one agent rebuilt so another agent can read it and carry on.

What each direction keeps and what it cannot carry is written down in ``CROSSAGENT.md`` beside this file; the
same facts are the warnings :func:`carry_warnings` returns, which ``p2pd import`` prints.

The conversation is read through :mod:`p2pd.conversation.neutral`. The receiving agent gets the earlier turns as
plain messages: the user's words (and images) as user messages; the agent's words, its tool calls and their
results as readable text in agent messages. Tool calls are not replayed as structured calls: the other agent's
tools do not exist on the receiving side, and a structured call to an unknown tool is either refused by the
model API or invites the model to call it again.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from p2pd.agents.spec import Note, NoteKind, moved_images_note
from p2pd.agents.spooled import DocumentSource
from p2pd.conversation import media_types as mt
from p2pd.conversation.model import ConversationDocument, Message, Part, Role, SidecarFile
from p2pd.conversation.neutral import Image, Other, Reasoning, Text, ToolCall, ToolResult, message_items
from p2pd.support.text import counted

SKIPPED_KINDS = {"meta", "info", "warning", "error"}  # injected context and UI notices, not conversation
# An agent turn's text at most before it goes on in the next agent message (past it only by one message's text):
# an autonomous run of hours is one turn, tens of MB of calls and results — held whole and written as one message,
# it took a 49 MB single-prompt session's import into Codex to 204 MiB (a 10 MB message).
TURN_TEXT = 512 * 1024


@dataclass
class Turn:
    role: Role
    texts: list[str] = field(default_factory=list)
    images: list[Image] = field(default_factory=list)
    timestamp: str | None = None
    model: str | None = None


@dataclass
class CarryReport:
    """What was turned into text or left out, counted, for the warnings."""

    source: str
    target: str
    reasoning_dropped: int = 0
    opaque_reasoning_dropped: int = 0
    tool_calls_as_text: int = 0
    tool_results_as_text: int = 0
    images_dropped: int = 0
    skipped: Counter[str] = field(default_factory=Counter)


def _fence(text: str) -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}\n{text}\n{ticks}"


def call_text(call: ToolCall, platform: str) -> str:
    args = call.input if isinstance(call.input, str) else json.dumps(call.input, ensure_ascii=False, indent=1)
    return f"[{platform} tool call: {call.name}" + (f" (id {call.id})" if call.id else "") + f"]\n{_fence(args)}"


def result_text(result: ToolResult, names: dict[str, str]) -> str:
    name = result.name or names.get(result.id, "tool")
    status = "error" if result.is_error else "result"
    images = f"\n[{len(result.images)} image(s) in this result were not carried]" if result.images else ""
    return f"[{status} of {name}" + (f" (id {result.id})" if result.id else "") + f"]\n{_fence(result.text)}{images}"


def iter_turns(doc: ConversationDocument, report: CarryReport,
               messages: Iterable[Message] | None = None) -> Iterator[Turn]:
    """The active conversation as readable turns, one at a time (a turn is given once the next message cannot join
    it; an agent turn past TURN_TEXT goes on in the next agent turn), each agent turn's images moved on to the user
    turn that follows (the model APIs accept images in user turns only): read from a spool, only the turn at hand
    is held. ``messages``: its active messages, when they are not in ``doc``."""
    return _images_forward(_merged_turns(doc.origin.platform, report,
                                         doc.active_messages() if messages is None else messages))


def _merged_turns(platform: str, report: CarryReport, messages: Iterable[Message]) -> Iterator[Turn]:
    names: dict[str, str] = {}
    last: Turn | None = None
    held = 0  # the characters of text in ``last``
    for m in messages:
        kind = str(m.p2pd.get("kind", "prompt" if m.role is Role.USER else "response"))
        if kind in SKIPPED_KINDS:
            report.skipped[kind] += 1
            continue
        texts: list[str] = []
        images: list[Image] = []
        for item in message_items(m):
            if isinstance(item, Text):
                if item.text.strip():
                    texts.append(item.text)
            elif isinstance(item, Image):
                images.append(item)
            elif isinstance(item, ToolCall):
                names[item.id] = item.name
                texts.append(call_text(item, platform))
                report.tool_calls_as_text += 1
            elif isinstance(item, ToolResult):
                texts.append(result_text(item, names))
                report.tool_results_as_text += 1
                report.images_dropped += len(item.images)
            elif isinstance(item, Reasoning):
                report.reasoning_dropped += 1
                report.opaque_reasoning_dropped += int(item.opaque)
            elif isinstance(item, Other):
                texts.append(f"[{item.media_type or 'data'}]\n{_fence(json.dumps(item.data, ensure_ascii=False))}")
        if not texts and not images:
            continue
        # tool results travel with the agent's turn: they are what its calls produced, not the user speaking
        role = Role.AGENT if kind == "tool-result" else m.role
        size = sum(map(len, texts))
        if last is not None and last.role is role and (role is Role.AGENT or kind == "tool-result") \
                and (held + size <= TURN_TEXT or not last.texts):
            last.texts.extend(texts)
            last.images.extend(images)
            held += size
            continue
        if last is not None:
            yield last
        last = Turn(role, texts, images, _str(m.p2pd.get("timestamp")), _str(m.p2pd.get("model")))
        held = size
    if last is not None:
        yield last


def _images_forward(turns: Iterable[Turn]) -> Iterator[Turn]:
    """Images of agent turns move to the user turn that follows (a new one when none does), after a note saying
    so."""
    carried: list[Image] = []
    last: Turn | None = None
    for t in turns:
        if t.role is Role.USER and carried:
            t.texts.insert(0, moved_images_note(len(carried)))
            t.images[:0] = carried
            carried = []
        if t.role is Role.AGENT and t.images:
            carried.extend(t.images)
            t.images = []
        last = t
        yield t
    if carried:
        assert last is not None
        yield Turn(Role.USER, [moved_images_note(len(carried))], carried, last.timestamp)


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) and v else None


def plain_envelope(doc: ConversationDocument) -> ConversationDocument:
    return ConversationDocument(context_id=doc.context_id, title=doc.title, summary=doc.summary,
                                created_at=doc.created_at, origin=doc.origin)


def plain_messages(doc: ConversationDocument, report: CarryReport,
                   active: Iterable[Message] | None = None) -> Iterator[Message]:
    """The conversation as plain A2A text/image messages (what the Claude Code synthesizer takes), one at a time;
    ``active``: its active messages, when they are not in ``doc``."""
    for i, t in enumerate(iter_turns(doc, report, active)):
        parts = [Part(text="\n\n".join(t.texts), media_type=mt.TEXT)] if t.texts else []
        for img in t.images:
            if img.data is not None and img.media_type.startswith("image/"):
                parts.append(Part(raw=img.data, media_type=img.media_type))
            else:
                report.images_dropped += 1
        if not parts:
            continue
        neutral: dict[str, Any] = {"active": True, "kind": "prompt" if t.role is Role.USER else "response"}
        if t.model:
            neutral["model"] = t.model
        yield Message(message_id=f"turn-{i}", context_id=doc.context_id, role=t.role, parts=parts,
                      metadata={"p2pd": neutral})


class PlainSource(DocumentSource):
    """Another agent's conversation as the Claude Code importer reads it (:func:`import_source`): its readable
    turns made one at a time as the importer asks for them. ``bound``: how many messages there are at most (the
    source's message count: a turn is made of one or more of them), which the synthesized times are spaced
    over."""

    def __init__(self, doc: ConversationDocument, messages: Iterator[Message], bound: int) -> None:
        self.document = plain_envelope(doc)
        self.subagents = []
        self.restored = False
        self._messages = messages
        self._bound = bound

    def messages(self) -> Iterator[Message]:
        return self._messages

    def message_count(self) -> int:
        return self._bound

    def tool_results(self) -> Iterator[SidecarFile]:
        return iter(())


def carry_warnings(report: CarryReport) -> list[str]:
    return [Note(NoteKind.CARRIED, text) for text in _carry_texts(report)]


def _carry_texts(report: CarryReport) -> list[str]:
    out = [f"this conversation comes from {report.source}; {report.target} gets its turns as readable messages "
           "(see what cannot be carried in p2pd/agents/CROSSAGENT.md)"]
    if report.tool_calls_as_text or report.tool_results_as_text:
        out.append(f"{report.tool_calls_as_text} tool calls and {report.tool_results_as_text} results were written "
                   f"as text: {report.target} can read them but not replay them, and the tools may not exist there")
    if report.reasoning_dropped:
        why = []
        if report.opaque_reasoning_dropped:
            why.append(f"{report.opaque_reasoning_dropped} signed or encrypted (only the original provider and "
                       "account can verify them)")
        blocks = counted(report.reasoning_dropped, "reasoning block")
        out.append(f"dropped {blocks}" + (f" ({', '.join(why)})" if why else "")
                   + "; the receiving model cannot use another model's reasoning")
    if report.images_dropped:
        out.append(f"{report.images_dropped} images (inside tool results, or not inline) were not carried")
    if report.skipped:
        what = ", ".join(f"{n} {k}" for k, n in sorted(report.skipped.items()))
        out.append(f"left out injected context and UI notices ({what}); the receiving agent adds its own")
    return out


def import_into_claude_code(doc: ConversationDocument, *, foreign: bool, active: Iterable[Message] | None = None,
                            bound: int | None = None, **kwargs: Any) -> Any:
    """Import into Claude Code: exactly when it came from Claude Code (or is a plain A2A conversation), as readable
    turns when it came from another agent (``foreign``), made one at a time as they are written. ``active``: its
    active messages, when they are not in ``doc`` but read from a spool one at a time; ``bound``: then how many
    messages it holds (else ``doc``'s)."""
    from p2pd.agents.claude_code.importer import import_source, import_to_claude_code

    if not foreign:
        return import_to_claude_code(doc, **kwargs)
    report = CarryReport(source=doc.origin.platform, target="Claude Code")
    src = PlainSource(doc, plain_messages(doc, report, active), len(doc.messages) if bound is None else bound)
    result = import_source(src, **kwargs)
    # the carry warnings say how the turns were rebuilt, in more detail than the importer's own note
    result.warnings = carry_warnings(report) + [w for w in result.warnings
                                                if not (isinstance(w, Note) and w.kind is NoteKind.REBUILT)]
    return result
