"""A Claude Code session written as a conversation document in the line layout, a line at a time.

The same document :func:`p2pd.agents.claude_code.export.export_session` builds (the same keys and values, byte for
byte per value where the transcript is compact JSON, modulo the line layout's newlines and its key order; a test
holds it), without holding the session in memory, and starting to write before the transcript is fully read:

1. an index pass reads every line and keeps only what the active chain, the title, the times, the origin and the
   number of messages need (ids, parent links, a few strings: :mod:`~p2pd.agents.claude_code.line_index`) —
   small next to the session — and which lines are message lines; on the way it makes the records (the lines
   that are no messages) and spools them;
2. the subagents are converted and spooled, one at a time (their agent-team events kept);
3. the first messages are converted ahead until they settle the title (usually the first prompt): what a
   transfer offers (``on_head``: title, message count) is known now;
4. the document is written: its envelope (``format`` first), ``records`` (copied from their spool),
   ``messages`` (a pass over the message lines, each written as soon as it is converted), the issues,
   the subagents, the spilled tool results, then what is known only now: the agent-team state (``metadata``,
   when the session and its subagents hold one: :class:`~p2pd.conversation.teams.EventCollector` hears each
   message as it is written), and ``title``, ``summary`` and ``counts`` last (JSON objects are unordered:
   SPEC.md says readers take any key order).

Messages and records are made straight into their JSON, without the pydantic models (the same bytes: a test holds
it, :mod:`~p2pd.agents.claude_code.message_json`): a record is the line's own bytes under its number (read whole
when the line is odd), a message is built from its lines' dicts, and the counts, summary and title read it
through a view.

So the payload is produced, sent and checked while the transcript is still read, with nothing left for the end
but the last messages. Memory holds the index, one message, one subagent and one tool result at a time, and the
team calls (few and small next to the session).
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import msgspec

from p2pd.agents.claude_code.export import (
    PLATFORM,
    Group,
    first_str,
    iter_tool_results_json,
    last_str,
    line_title,
    message_count,
    prompt_title,
    subagent_files,
    units,
)
from p2pd.agents.claude_code.line_index import index_lines_raw, message_line
from p2pd.agents.claude_code.line_index import light_line as light_line  # (the importer reads it here)
from p2pd.agents.claude_code.message_json import group_json, iter_messages_json
from p2pd.agents.claude_code.transcript import MESSAGE_TYPES, active_chain, message_problem
from p2pd.agents.jsonl import (
    SourceLine,
    exact_line,
    iter_lines,
    line_stamps,
    parse_lines,
    read_text,
    require_lines,
    session_time,
    verbatim_json,
)
from p2pd.conversation.json_text import DECODE_REFUSED, compact_json
from p2pd.conversation.layout import ElementSpool, SubagentLines, Write, write_document
from p2pd.conversation.message_view import MessageView
from p2pd.conversation.shapes import A2A_PROTOCOL_VERSION, FORMAT_NAME, FORMAT_VERSION, Tally
from p2pd.conversation.summary import SummaryBuilder
from p2pd.conversation.teams import (
    EventCollector,
    TeamEvent,
    events_from_messages,
    in_time_order,
    subagent_name,
    team_state,
)
from p2pd.support.gcpause import bulk_work


@dataclass
class StreamedSession:
    """What was written: the document's header fields (title, counts …) for offers and file names."""

    context_id: str
    title: str
    platform: str
    session_id: str
    counts: Tally
    summary: str


Head = Callable[[dict[str, Any]], object]  # hears the offer's fields (title, contextId, origin, counts.messages)
OFFER_KEYS = ("title", "summary", "counts")  # written last: known once the last message is read


def write_session(path: Path, write: Write, *, spool_dir: Path, on_head: Head | None = None) -> StreamedSession:
    """Write the session at ``path`` as a conversation document in the line layout through ``write``.

    The messages are written as they are converted; ``title``, ``summary`` and ``counts`` come last. ``on_head``
    hears, once, what a transfer offers the conversation under — ``title``, ``contextId``, ``origin`` and
    ``counts.messages`` (counted from the line index) — as soon as the title is settled: usually at the first
    prompt, long before the last line is read."""
    path = Path(path)
    issues: list[dict[str, Any]] = []
    record_spool = _RecordSpool(spool_dir / "records.spool")
    try:
        with bulk_work():
            indexed = _index_and_records(path, record_spool, issues)
        return _write(path, *indexed, record_spool, issues, write, spool_dir=spool_dir, on_head=on_head)
    finally:
        record_spool.close()


def _write(path: Path, index: list[SourceLine], in_messages: list[SourceLine], record_spool: _RecordSpool,
           issues: list[dict[str, Any]], write: Write, *, spool_dir: Path, on_head: Head | None) -> StreamedSession:
    if all(ln.obj is None for ln in index):  # no JSON object line (the index keeps no text): say why as the
        # loaded reading does, from the file's first line that is not blank
        require_lines([next((ln for ln in iter_lines(path) if ln.text.strip()), exact_line(1, b""))], path)
    session_id = first_str(index, "sessionId") or path.stem
    active = set(active_chain(index))
    title = line_title(index)
    created = session_time(line_stamps(index), path)
    origin = {"platform": PLATFORM, "sessionId": session_id, "cwd": first_str(index, "cwd"),
              "gitBranch": last_str(index, "gitBranch"), "clientVersion": last_str(index, "version"),
              "transcriptPath": str(path.resolve()), "hostname": socket.gethostname()}
    line_count = len(index)
    # (the lines that are no message lines never start, continue or end a message: counted without them)
    n_messages = message_count(in_messages)
    message_lines = {line.n for line in in_messages}
    del in_messages
    del index
    counts = Tally()
    counts.records = record_spool.count
    summary = SummaryBuilder()
    team = EventCollector()
    spools: list[_SubagentSpool] = []
    # The envelope (``ConversationDocument.to_json_dict()``'s keys before ``messages``, in order, unset ones left
    # out: a test holds it), without the model.
    head = {"format": FORMAT_NAME, "formatVersion": FORMAT_VERSION, "a2aVersion": A2A_PROTOCOL_VERSION,
            "contextId": session_id, "createdAt": created,
            "origin": {k: v for k, v in origin.items() if v is not None}}
    offer: dict[str, Any] = {"contextId": session_id, "origin": head["origin"], "counts": {"messages": n_messages}}
    heard = on_head is None
    if on_head is not None and (early := _peek_title(path, message_lines, session_id, active, title)) is not None:
        heard = True
        on_head({"title": early, **offer})

    def converted() -> Iterator[dict[str, Any]]:
        return iter_messages_json(iter_lines(path, keep_text=False, only=message_lines), session_id, active)

    def active_again() -> Iterator[MessageView]:  # (read again only for a team result written before its call)
        return (v for v in map(MessageView, converted()) if v.p2pd.get("active", True))

    def messages() -> Iterator[bytes]:
        nonlocal title, heard
        for message in converted():
            item = MessageView(message)
            counts.add(item)
            if title is None:
                title = prompt_title(item)
            if item.p2pd.get("active", True):
                summary.add(item)
                team.add(item)
            yield compact_json(message)
            if not heard and (settled := summary.settled_title(title)) is not None:
                heard = True
                assert on_head is not None
                on_head({"title": settled, **offer})

    text = ""

    def tail() -> dict[str, Any]:
        nonlocal title, text
        counts.source_lines = line_count
        counts.malformed_lines = len(issues) + subagents.issues
        counts.subagents = len(subagents.shape)
        # (as the loaded reading's document_events: the active messages', then each subagent's, in time order)
        state = team_state(in_time_order([*team.events(active_again),
                                          *subagents.team_events]))
        metadata = {"teams": state} if state is not None else None
        title, text = summary.finish(title or "", metadata)
        return {**({"metadata": metadata} if metadata else {}),
                "title": title, "summary": text, "counts": counts.to_json_dict()}

    try:
        # The subagents first (spooled): they come after the messages, which are written as they are made.
        subagents = _SubagentSpool(path, session_id, spool_dir / "subagents.spool")
        spools.append(subagents)
        with bulk_work():
            write_document(write, head, messages(), record_spool.chunks(),
                           lambda: {"issues": issues, "lineCount": line_count}, subagents.items(),
                           (compact_json(t) for t in iter_tool_results_json(path)), tail,
                           records_first=True)
        if not heard:
            assert on_head is not None
            on_head({"title": title, **offer})
    finally:
        for spool in spools:
            spool.close()
    return StreamedSession(context_id=session_id, title=str(title), platform=PLATFORM, session_id=session_id,
                           counts=counts, summary=text)


PEEK = 200  # messages converted ahead for the title at most (usually it is settled at the first prompt)


def _peek_title(path: Path, message_lines: set[int], session_id: str, active: set[int],
                title: str | None) -> str | None:
    """The title, when the first messages (at most PEEK) settle it: so the offer need not wait for the records,
    which are written first. The same rule as the writing pass (:meth:`SummaryBuilder.settled_title`)."""
    summary = SummaryBuilder()
    if (settled := summary.settled_title(title)) is not None:
        return settled
    with bulk_work():
        lines = iter_lines(path, keep_text=False, only=message_lines)
        for n, message in enumerate(iter_messages_json(lines, session_id, active)):
            if n >= PEEK:
                break
            item = MessageView(message)
            if title is None:
                title = prompt_title(item)
            if item.p2pd.get("active", True):
                summary.add(item)
            if (settled := summary.settled_title(title)) is not None:
                return settled
    return None


class _RecordSpool:
    """The records, made during the index pass and kept in a file beside the output until the document reaches
    them: in chunks of about CHUNK bytes, each its records joined by ``\n,`` (what the line layout writes
    between elements), so the writer copies a chunk at a time."""

    CHUNK = 1 << 20

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh: IO[bytes] = path.open("w+b")
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self._sizes: list[int] = []
        self.count = 0

    def add(self, element: bytes) -> None:
        self._pending.append(element)
        self._pending_bytes += len(element)
        self.count += 1
        if self._pending_bytes >= self.CHUNK:
            self._flush()

    def _flush(self) -> None:
        if self._pending:
            chunk = b"\n,".join(self._pending)
            self._fh.write(chunk)
            self._sizes.append(len(chunk))
            self._pending.clear()
            self._pending_bytes = 0

    def chunks(self) -> Iterator[bytes]:
        self._flush()
        self._fh.flush()
        self._fh.seek(0)
        for size in self._sizes:
            yield self._fh.read(size)

    def close(self) -> None:
        self._fh.close()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


_WHITESPACE = b" \t\r\n"


def _index_and_records(path: Path, spool: _RecordSpool, issues: list[dict[str, Any]]
                       ) -> tuple[list[SourceLine], list[SourceLine]]:
    """The line index (:func:`~p2pd.agents.claude_code.line_index.read_index`) and its message lines, with the
    records made on the way into ``spool`` (their issues into ``issues``), in line order.

    An ordinary record — a line the index read the fast way (one well-formed JSON object, UTF-8 throughout), of a
    string ``type`` that is no message type — is the line's own bytes under its number: the same value as the
    parsed way writes, spelled as the transcript spells it (Claude Code writes compact JSON, so the same bytes
    too). Any other line that is no message line is read whole, as :func:`_record` says."""
    index: list[SourceLine] = []
    in_messages: list[SourceLine] = []
    add, message_types = spool.add, MESSAGE_TYPES
    for line, raw, fast in index_lines_raw(path):
        index.append(line)
        if message_line(line):
            in_messages.append(line)
            continue
        kind = line.type
        if fast and kind is not None and kind not in message_types:
            add(b'{"line":%d,"value":%b}' % (line.n, raw.rstrip(_WHITESPACE)))
        else:
            for element in _record(line.n, raw, issues):
                add(element)
    return index, in_messages


def _record(n: int, raw: bytes, issues: list[dict[str, Any]]) -> Iterator[bytes]:
    """The record of line ``n`` (no message line) read whole: its issue, if it has one, into ``issues``."""
    try:
        value = msgspec.json.decode(raw)
    except DECODE_REFUSED:
        value = None
    if value.__class__ is not dict:  # malformed, or odd (NaN, a lone surrogate…): the exact way
        yield from _odd_record(exact_line(n, raw), issues)
        return
    kind = value.get("type")
    if kind.__class__ is not str:
        issues.append({"line": n, "reason": "JSON object without a 'type' field"})
    elif kind in MESSAGE_TYPES:  # (a user/assistant line that is no message line has a problem)
        issues.append({"line": n, "reason": message_problem(value)})
    yield compact_json({"line": n, "value": value})  # (an integer past 64 bits, read exactly: json writes it)


def _odd_record(line: SourceLine, issues: list[dict[str, Any]]) -> Iterator[bytes]:
    """A record line msgspec does not take, read the exact way: as :func:`~p2pd.agents.claude_code.export.
    iter_transcript` makes its issue and record (``LineIssue``/``Record.to_json_dict()``), without the models."""
    for unit in units([line]):
        if isinstance(unit, Group):  # (never: a line that makes a message is no record line)
            continue
        reason = unit[1]
        if line.obj is None:  # not JSON, not an object, blank: reported, and kept byte for byte
            issues.append({"line": line.n, "reason": reason or "unreadable"})
            yield compact_json(verbatim_json(line))
            continue
        if reason is not None:
            issues.append({"line": line.n, "reason": reason})
        yield compact_json({"line": line.n, "value": line.obj})


class _SubagentSpool:
    """The subagents converted once, one at a time, and spooled encoded (their issues and number go into the
    header, written before them): per subagent its other fields, then one line per message and per record."""

    def __init__(self, path: Path, session_id: str, spool: Path) -> None:
        self.shape: list[tuple[int, int, dict[str, Any]]] = []  # (messages, records, other fields)
        self.issues = 0
        self.team_events: list[TeamEvent] = []  # (each subagent's, in its conversation order)
        self.spool = ElementSpool(spool)
        try:
            self._convert(path, session_id)
        except BaseException:
            self.spool.close()
            raise

    def _convert(self, path: Path, session_id: str) -> None:
        """Each subagent as ``iter_subagents`` makes it (``Subagent.to_json_dict()``), without the models."""
        for file, rel, meta in subagent_files(path):
            agent_id = file.stem.removeprefix("agent-")
            lines = parse_lines(read_text(file))
            active = set(active_chain(lines))
            messages: list[dict[str, Any]] = []
            records: list[dict[str, Any]] = []
            issues: list[dict[str, Any]] = []
            used_ids: set[str] = set()
            for unit in units(lines):
                if isinstance(unit, Group):
                    messages.append(group_json(unit, session_id, active, used_ids))
                    continue
                line, reason = unit
                if reason is not None or line.obj is None:
                    issues.append({"line": line.n, "reason": reason or "unreadable"})
                records.append(verbatim_json(line) if line.obj is None else {"line": line.n, "value": line.obj})
            self.team_events += events_from_messages([MessageView(m) for m in messages],
                                                     actor=subagent_name(meta, agent_id))
            self.issues += len(issues)
            rest: dict[str, Any] = {"issues": issues, "lineCount": len(lines), "agentId": agent_id, "fileName": rel}
            if meta is not None:
                rest["meta"] = meta
            self.shape.append((len(messages), len(records), rest))
            for m in messages:
                self.spool.add(m)
            for r in records:
                self.spool.add(r)

    def items(self) -> Iterator[SubagentLines]:
        lines = self.spool.items()
        for n_messages, n_records, rest in self.shape:
            yield SubagentLines(messages=[next(lines) for _ in range(n_messages)],
                                records=[next(lines) for _ in range(n_records)], rest=rest)

    def close(self) -> None:
        self.spool.close()
