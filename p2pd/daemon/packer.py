"""The daemon's packing process: ``python -m p2pd.daemon.packer JOB`` (JOB: JSON, see :class:`Job`).

A conversation the daemon sends, exports or hands off is made here, in a child process, and written to a file —
never built in the daemon's memory. A Claude Code session (agent teams included), a Codex rollout or a Gemini CLI
JSONL recording is converted as it is written (its agent's ``write_streamed``: memory bounded by a message);
redacted, it is written to a spool file first and masked as a stream from there
(:mod:`p2pd.conversation.redact_stream`). A document p2pd wrote, neither masked nor given
metadata, is checked, then written as it is (:mod:`p2pd.exchange.document_file`). Anything else — a Gemini
JSON session its writer declines, another document — is loaded whole, but in this process, which ends when the file
is written. The daemon keeps its own size. ``p2pd export`` calls :func:`run` in its own process.

What is written (``kind``): a blob (``lz4`` or ``zstd``, :mod:`p2pd.blob`) or the document's JSON (``json``, the
line layout; ``pretty``: written in the line layout to the spool, then indented as a stream,
:mod:`p2pd.conversation.indented`). ``metadata``: fields added to the document's
``metadata`` (a handoff's package), under the blob's SHA-256 like the rest. The file appears complete at ``out``
or not at all. On standard output, one JSON object (:mod:`p2pd.daemon.children`): ``{"head": …}`` (the document's
fields before its messages: title, origin, counts …), ``"masked"`` (secrets masked, by kind) and, for a blob,
``"sha256"`` (its payload's); or ``{"error": …}`` as :meth:`~p2pd.errors.P2pdError.to_wire` gives it, with exit
status 2.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ARRAY_OPEN = b":[\n"  # how the writer's first write ends: the first array's key opened (layout.write_document)


@dataclass
class Job:
    """What to pack. ``source``: a session file, or a session id / prefix / ``latest`` resolved here."""

    source: str
    out: str
    kind: str = "lz4"  # lz4 | zstd | json
    redact: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)
    pretty: bool = False

    def to_arg(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_arg(cls, arg: str) -> Job:
        return cls(**json.loads(arg))


class _Document:
    """The write function handed to the document's writer (:func:`p2pd.conversation.layout.write_document`):
    reads the envelope fields off the first write (those before the first array) and holds back the last write
    (``]`` and the fields after ``toolResults`` — a streamed writer's ``title``, ``summary`` and ``counts``), so
    ``metadata`` can be added at the document's end. ``head``: every envelope field but the arrays, once
    finished."""

    def __init__(self, write: Callable[[bytes], object], metadata: dict[str, Any]) -> None:
        self._write = write
        self.metadata = metadata
        self.head: dict[str, Any] | None = None
        self._held: bytes | None = None

    def __call__(self, data: bytes) -> None:
        if self.head is None:
            cut = data.rfind(b',"') if data.endswith(ARRAY_OPEN) else -1
            self.head = json.loads(data[:cut] + b"}") if cut > 0 else {}
        if self._held is not None:
            self._write(self._held)
        self._held = data

    def finish(self) -> None:
        held = self._held or b""
        if not (held.startswith(b"]") and held.endswith(b"}\n")):
            raise RuntimeError("the document does not end with the fields after its toolResults")
        tail: dict[str, Any] = json.loads(b"{" + held[2:]) if held.startswith(b"],") else {}
        if self.metadata:
            from p2pd.conversation.document_io import compact_json

            tail["metadata"] = {**(tail.get("metadata") or {}), **self.metadata}
            held = b"]," + compact_json(tail)[1:-1] + b"}\n"
        if self.head is not None:
            self.head.update(tail)
        self._write(held)


def _whole(job: Job, masked: Counter[str]) -> Any:
    from p2pd.agents.sources import load_conversation

    doc = load_conversation(job.source)
    if job.redact:
        from p2pd.conversation.redact import redact_document

        doc, report = redact_document(doc)
        masked.update(report.counts)
    if job.metadata:
        doc.metadata = {**(doc.metadata or {}), **job.metadata}
    return doc


def _streamed(job: Job, session: Path, write: Callable[[bytes], object], spool: Path,
              masked: Counter[str]) -> dict[str, Any]:
    """A session converted as it is written (Claude Code, Codex, a Gemini CLI JSONL recording: its agent's
    ``write_streamed``; raises NotStreamable before it writes anything); when redacting, written first to a spool
    file, then masked as a stream (:mod:`p2pd.conversation.redact_stream`)."""
    from p2pd.agents.sources import stream_writer

    write_session = stream_writer(session)
    assert write_session is not None
    out = _Document(write, job.metadata)
    if not job.redact:
        write_session(session, out, spool_dir=spool)
    else:
        from p2pd.conversation.redact_stream import redact_stream

        plain = spool / "plain.a2a.json"
        with plain.open("wb") as fh:
            first = _Document(fh.write, {})
            write_session(session, first, spool_dir=spool)
            first.finish()
        assert first.head is not None
        with plain.open("rb") as fh:
            report = redact_stream(iter(lambda: fh.read(1 << 20), b""), out, spool,
                                   title=str(first.head.get("title") or ""), source=str(session))
        plain.unlink()
        masked.update(report.counts)
    out.finish()
    assert out.head is not None
    return out.head


def write_conversation(job: Job, write: Callable[[bytes], object], spool: Path,
                       masked: Counter[str] | None = None) -> dict[str, Any]:
    """The document of ``job`` through ``write`` in the line layout; returns its head. ``masked``: counts of the
    secrets masked, by kind."""
    from p2pd.agents.sources import document_file, streamable_session
    from p2pd.conversation.layout import document_lines
    from p2pd.support.gcpause import bulk_work

    masked = Counter() if masked is None else masked
    if not job.redact and not job.metadata and (document := document_file(job.source)) is not None:
        from p2pd.exchange.document_file import pass_through

        checked = pass_through(document, write)
        if checked.as_is:  # a document p2pd wrote: as it is, once checked (memory: one element)
            return checked.head()
    session = streamable_session(job.source)
    if session is not None:
        from p2pd.agents.spec import NotStreamable

        try:
            return _streamed(job, session, write, spool, masked)
        except NotStreamable:
            pass
    doc = _whole(job, masked)
    whole = _Document(write, {})
    with bulk_work():
        document_lines(doc.to_json_dict(), whole)
    whole.finish()
    assert whole.head is not None
    return whole.head


def run(job: Job) -> dict[str, Any]:
    """Write ``job``'s file; returns ``{"head", "masked"}`` (the secrets masked, by kind) and a blob's
    ``"sha256"``."""
    from p2pd.support.atomic import atomic_writer

    out = Path(job.out)
    masked: Counter[str] = Counter()
    with tempfile.TemporaryDirectory(prefix=".p2pd-pack-", dir=out.parent) as spool:
        if job.kind == "json" and job.pretty:  # the line layout into the spool, then indented as a stream
            from p2pd.conversation.indented import write_indented

            compact = Path(spool) / "compact.a2a.json"
            with compact.open("wb") as fh:
                head = write_conversation(job, fh.write, Path(spool), masked)
            with atomic_writer(out) as fh:
                write_indented(compact, fh.write)
            return {"head": head, "masked": dict(masked)}
        if job.kind == "json":
            with atomic_writer(out) as fh:
                head = write_conversation(job, fh.write, Path(spool), masked)
            return {"head": head, "masked": dict(masked)}
        from p2pd.blob.stream import BlobWriter

        with BlobWriter(out, job.kind) as w:
            head = write_conversation(job, w.write, Path(spool), masked)
        assert w.header is not None
        return {"head": head, "sha256": w.header.sha256.hex(), "masked": dict(masked)}


def _run_for_daemon(arg: str) -> dict[str, Any]:
    """The daemon's job: a write this machine refuses comes back as a storage error naming the file."""
    from p2pd.errors import writing

    job = Job.from_arg(arg)
    with writing(job.out, reading=job.source):
        return run(job)


def main(argv: list[str]) -> int:
    from p2pd.daemon.children import child_main

    return child_main(_run_for_daemon, argv)


if __name__ == "__main__":
    os._exit(main(sys.argv))
