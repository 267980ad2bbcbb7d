"""A Gemini CLI session written as a conversation document a message at a time: the document
:func:`~p2pd.agents.gemini.export.export_gemini` builds, byte for byte in the line layout (a test holds it),
without holding the session in memory — a JSONL recording read a line at a time, or a session in the older JSON
format (one object holding every message) read a message at a time
(:class:`~p2pd.agents.gemini.json_session.JsonSession`).

A message's kept version may come long after its place (the recorder writes a message again as its tool calls
finish; a rewind marks those after it inactive), so it takes four steps, each reading one line at a time:

1. the lines are read for what they are and how the conversation changes (:mod:`~p2pd.agents.gemini.timeline`):
   the session's metadata, each message's place, id and state, the replaced versions, the issues, the times;
2. they are read again: records (the metadata, the updates, the replaced versions, unreadable lines) are
   spooled in line order, the kept messages converted and spooled where they stand, in the order they come;
3. the messages are read back in their places' order for the counts, the title and the summary;
4. the document is written: its envelope, the messages (from the spool, in order) and the records.

A JSON session takes the same steps over its ``messages`` (each known by its index, as the whole reading numbers
them). Memory holds a few numbers per message (its place and where its version is spooled) and the issues. A JSON
session this reading could read otherwise than the whole one (see ``json_session``) is left to it:
:class:`~p2pd.agents.spec.NotStreamable`, before anything is written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from p2pd.agents.gemini.export import (
    UNTYPED,
    gemini_envelope,
    kept_message,
    session_id_of,
    superseded_record,
    typed,
)
from p2pd.agents.gemini.json_session import JsonSession
from p2pd.agents.gemini.timeline import NEITHER, Kind, LineKinds, Timeline
from p2pd.agents.jsonl import iter_lines, require_lines, verbatim_json
from p2pd.agents.spec import NotStreamable
from p2pd.conversation.json_text import compact_json, loads
from p2pd.conversation.layout import ElementSpool, Write, envelope_lines
from p2pd.conversation.message_view import MessageView
from p2pd.conversation.model import Counts, LineIssue
from p2pd.conversation.summary import SummaryBuilder
from p2pd.support.gcpause import bulk_work

__all__ = ["write_recording"]


def write_recording(path: Path, write: Write, *, spool_dir: Path,
                    on_head: Callable[[dict[str, Any]], object] | None = None) -> dict[str, Any]:
    """Write the Gemini CLI session at ``path`` (a JSONL recording, or a JSON session) as a conversation document
    in the line layout through ``write``; returns the document's envelope (``to_json_dict()`` with its arrays
    empty). ``on_head`` hears what a transfer offers it under (title, contextId, origin, counts.messages) before
    anything is written. Nothing is written when the file holds no session (the error
    :func:`~p2pd.agents.gemini.export.export_gemini` gives), nor for a JSON session the whole reading must read
    (NotStreamable)."""
    path = Path(path)
    session = None if path.name.endswith(".jsonl") else JsonSession(path)
    with bulk_work():
        plan = _Plan.of_lines(path) if session is None else _Plan.of_json(session)
    session_id = session_id_of(plan.meta, path)
    records = ElementSpool(spool_dir / "records.spool")
    messages = _PlacedSpool(spool_dir / "messages.spool", len(plan.timeline.places))
    try:
        with bulk_work():
            n_records = _spool(path, plan, session_id, messages, records) if session is None else \
                _spool_json(session, plan, session_id, messages, records)
            counts = Counts()
            summary = SummaryBuilder()
            for item in messages.items():
                view = MessageView(loads(item))
                counts.add(view)
                if view.p2pd.get("active", True):
                    summary.add(view)
            counts.source_lines = plan.lines
            counts.records = n_records
            counts.malformed_lines = len(plan.issues)
            doc = gemini_envelope(path, plan.meta, session_id=session_id, stamps=plan.stamps,
                                  superseded=len(plan.timeline.superseded), rewound=plan.timeline.rewound,
                                  issues=plan.issues, line_count=plan.lines, counts=counts)
            doc.title, doc.summary = summary.finish(doc.title, doc.metadata)
            envelope = doc.to_json_dict()
            if on_head is not None:
                on_head({"title": envelope["title"], "contextId": envelope["contextId"],
                         "origin": envelope["origin"], "counts": {"messages": counts.messages}})
            envelope_lines(write, envelope, messages.items(), records.items())
    finally:
        messages.close()
        records.close()
    return envelope


class _Plan:
    """Step 1: the session's metadata, the messages' places, the issues, the times and the number of lines (of
    a JSON session: of its messages)."""

    def __init__(self) -> None:
        self.meta: dict[str, Any] = {}
        self.timeline = Timeline()
        self.issues: list[LineIssue] = []
        self.stamps: set[str] = set()
        self.lines = 0

    @classmethod
    def of_lines(cls, path: Path) -> _Plan:
        plan, kinds = cls(), LineKinds()
        any_object = False
        for line in iter_lines(path, keep_text=False):
            plan.lines += 1
            obj = line.obj
            kind = kinds.kind(obj)
            if obj is not None:
                any_object = True
            if kind is Kind.UNREADABLE:
                plan.issues.append(LineIssue(line=line.n, reason=line.error or "unreadable"))
            elif kind is Kind.OTHER:
                plan.issues.append(LineIssue(line=line.n, reason=NEITHER))
            elif kind in (Kind.UPDATE, Kind.MESSAGE):
                assert obj is not None
                plan.entry(line.n, obj)
        if not any_object:  # no session in it: the error the whole way gives, from the same lines
            require_lines(list(iter_lines(path)), path)
        plan.meta = kinds.meta
        return plan

    @classmethod
    def of_json(cls, session: JsonSession) -> _Plan:
        """As :func:`~p2pd.agents.gemini.export.export_gemini` reads a JSON session's ``messages``: every object
        is an entry of the timeline (one without a string ``type`` is a record and an issue too)."""
        plan = cls()
        for i, value in session.messages():
            plan.lines += 1
            if isinstance(value, dict):
                plan.entry(i, value)
            if not typed(value):
                plan.issues.append(LineIssue(line=i, reason=UNTYPED))
        plan.meta = session.meta
        return plan

    def entry(self, where: int, obj: dict[str, Any]) -> None:
        stamp = obj.get("timestamp")
        if isinstance(stamp, str):
            self.stamps.add(stamp)
        self.timeline.entry(where, obj)


def _spool(path: Path, plan: _Plan, session_id: str, messages: _PlacedSpool, records: ElementSpool) -> int:
    """Step 2: the records in line order, the kept messages where they stand. Returns how many records."""
    kept = plan.timeline.kept()
    places = plan.timeline.places
    superseded = plan.timeline.superseded
    kinds = LineKinds()  # (read again the same way: the same kinds)
    n_records = 0
    for line in iter_lines(path, keep_text=False):
        kind = kinds.kind(line.obj)
        n_records += kind is not Kind.MESSAGE or line.n in superseded
        if kind is Kind.UNREADABLE:
            records.add(verbatim_json(line))
        elif kind is not Kind.MESSAGE:
            records.add({"line": line.n, "value": line.obj})
        elif line.n in superseded:
            records.add(superseded_record(line.n, superseded[line.n], line.obj).to_json_dict())
        else:
            assert line.obj is not None
            at = kept[line.n]
            messages.put(at, compact_json(kept_message(line.obj, places[at], session_id).to_json_dict()))
    return n_records


def _spool_json(session: JsonSession, plan: _Plan, session_id: str, messages: _PlacedSpool,
                records: ElementSpool) -> int:
    """Step 2 for a JSON session: its messages read again, the records (the objects without a string ``type``
    and the replaced versions) in order, the kept messages where they stand; a message the timeline took as no
    message (an update's keys with a ``type``) is dropped, as the whole reading drops it. Returns how many
    records."""
    kept = plan.timeline.kept()
    places = plan.timeline.places
    superseded = plan.timeline.superseded
    n_records = read = 0
    for i, value in session.messages():
        read += 1
        if not typed(value):
            records.add({"line": i, "value": value})  # (a null value too, as the whole document writes it)
            n_records += 1
        elif i in superseded:
            records.add(superseded_record(i, superseded[i], value).to_json_dict())
            n_records += 1
        elif i in kept:
            messages.put(kept[i], compact_json(kept_message(value, places[kept[i]], session_id).to_json_dict()))
    if read != plan.lines:  # (rewritten by the CLI between the readings: nothing is written yet)
        raise NotStreamable(session.path)
    return n_records


class _PlacedSpool:
    """Encoded messages written in the order they come and read back in their places' order."""

    def __init__(self, path: Path, places: int) -> None:
        self.path = path
        self._fh: IO[bytes] = path.open("w+b")
        self._at: list[tuple[int, int]] = [(0, 0)] * places  # place → (offset, length)
        self._end = 0

    def put(self, place: int, item: bytes) -> None:
        self._fh.write(item)
        self._at[place] = (self._end, len(item))
        self._end += len(item)

    def items(self) -> Iterator[bytes]:
        self._fh.flush()
        fh = self._fh
        for offset, length in self._at:
            fh.seek(offset)
            yield fh.read(length)

    def close(self) -> None:
        self._fh.close()
        self.path.unlink(missing_ok=True)
