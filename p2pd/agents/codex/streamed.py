"""A Codex rollout written as a conversation document a line at a time: the document
:func:`~p2pd.agents.codex.export.export_rollout` builds, byte for byte in the line layout (a test holds it), without
holding the rollout in memory.

Every line converts on its own (:func:`~p2pd.agents.codex.export.rollout_units`: a message or a record), so one
pass reads the rollout (a ``.jsonl.zst`` decompressed as it is read), converts each line and spools it, encoded, to
one of two files beside the output, counting and summarizing the messages as they go by. The envelope — title,
summary, counts, the issues — is known when the last line is read; the document is then written as the whole way
writes it (:func:`~p2pd.conversation.layout.envelope_lines`), its elements copied from the spools. Memory holds
one line, the message ids seen (duplicates are renamed), the issues and the distinct timestamps.

The session's id, which every message carries, comes from the first ``session_meta`` line: a first pass finds it
(usually line 1: the pass stops there).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from p2pd.agents.codex.export import _meta, meta_session_id, rollout_origin, rollout_units
from p2pd.agents.codex.rollout import iter_rollout
from p2pd.agents.jsonl import require_lines, session_time
from p2pd.conversation.layout import ElementSpool, Write, envelope_lines
from p2pd.conversation.model import ConversationDocument, Counts, LineIssue, Message
from p2pd.conversation.summary import SummaryBuilder
from p2pd.support.gcpause import bulk_work

__all__ = ["write_rollout"]


def write_rollout(path: Path, write: Write, *, spool_dir: Path,
                  on_head: Callable[[dict[str, Any]], object] | None = None) -> dict[str, Any]:
    """Write the rollout at ``path`` as a conversation document in the line layout through ``write``; returns the
    document's envelope (``to_json_dict()`` with its arrays empty). ``on_head`` hears what a transfer offers it
    under (title, contextId, origin, counts.messages) once the last line is converted, before anything is
    written. Nothing is written when the file holds no session (the error
    :func:`~p2pd.agents.codex.export.export_rollout` gives)."""
    path = Path(path)
    meta = _meta(line for line in iter_rollout(path) if line.obj is not None and line.obj.get("type") == "session_meta")
    session_id = meta_session_id(meta, path)
    messages, records = ElementSpool(spool_dir / "messages.spool"), ElementSpool(spool_dir / "records.spool")
    try:
        with bulk_work():
            envelope = _convert(path, session_id, meta, messages, records)
            if on_head is not None:
                on_head({"title": envelope["title"], "contextId": envelope["contextId"], "origin": envelope["origin"],
                         "counts": {"messages": envelope["counts"]["messages"]}})
            envelope_lines(write, envelope, messages.items(), records.items())
    finally:
        messages.close()
        records.close()
    return envelope


def _convert(path: Path, session_id: str, meta: dict[str, Any], messages: ElementSpool,
             records: ElementSpool) -> dict[str, Any]:
    counts = Counts()
    summary = SummaryBuilder()
    issues: list[LineIssue] = []
    stamps: set[str] = set()
    lines = 0
    any_object = False

    def counted() -> Any:
        nonlocal lines, any_object
        for line in iter_rollout(path):
            lines += 1
            if line.obj is not None:
                any_object = True
                stamp = line.obj.get("timestamp")
                if isinstance(stamp, str):
                    stamps.add(stamp)
            yield line

    n_records = 0
    for unit in rollout_units(counted(), session_id):
        if isinstance(unit, Message):
            messages.add(unit.to_json_dict())
            counts.add(unit)
            if unit.p2pd.get("active", True):
                summary.add(unit)
        elif isinstance(unit, LineIssue):
            issues.append(unit)
        else:
            records.add(unit.to_json_dict())
            n_records += 1
    if not any_object:  # no session in it: the error the whole way gives, from the same lines
        require_lines(list(iter_rollout(path)), path)
    counts.source_lines = lines
    counts.records = n_records
    counts.malformed_lines = len(issues)
    doc = ConversationDocument(context_id=session_id, created_at=session_time(stamps, path),
                               origin=rollout_origin(meta, path), issues=issues, line_count=lines, counts=counts)
    doc.title, doc.summary = summary.finish(doc.title, doc.metadata)
    return doc.to_json_dict()

