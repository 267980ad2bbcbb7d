"""Any conversation file — a document (``.a2a.json``, a blob) or an agent's session file — as a
:class:`~p2pd.agents.spooled.DocumentSource` that importers, ``convert`` and ``show`` read one element at a time.

A document is read as a stream into a spool on disk (:func:`~p2pd.agents.spooled.spool_document`: every element
checked, within the reader's limits). A session its agent converts as it is written (Claude Code, Codex,
a Gemini CLI JSONL recording: ``Agent.write_streamed``) is converted into the spool's folder first, then spooled
the same way. Anything else — a session its agent declines to stream (NotStreamable: a Gemini CLI JSON session
with two ``messages`` arrays, or text after its object…) — is loaded whole (a
:class:`~p2pd.agents.spooled.MemorySource`).
Memory is then one element and the spool's compact index, not the session; the spool is removed on leaving.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from pathlib import Path

import msgspec

from p2pd.agents import registry
from p2pd.agents.spec import Agent
from p2pd.agents.spooled import DocumentSource, LineRestorer, MemorySource, SpooledSource
from p2pd.conversation.model import ConversationDocument
from p2pd.conversation.shapes import FORMAT_NAME
from p2pd.errors import NotFoundError, TooLargeError, writing
from p2pd.support import workroom


def document_pieces(path: Path, *, max_size: int | None = None) -> Iterator[bytes]:
    """A conversation document file's JSON in pieces: a blob decompressed as it is read (its checksum checked),
    else the file as it is; over the size cap is refused before anything is read."""
    from p2pd.blob import container as blob
    from p2pd.blob.stream import check_file, iter_raw
    from p2pd.conversation.document_io import DEFAULT_MAX_SIZE

    cap = DEFAULT_MAX_SIZE if max_size is None else max_size
    with path.open("rb") as fh:
        head = fh.read(len(blob.MAGIC))
    if blob.is_blob(head):
        check_file(path, max_raw_size=cap)
        yield from iter_raw(path, max_raw_size=cap)
        return
    size = path.stat().st_size
    if size > cap:
        raise TooLargeError(f"{path} is {size} bytes, over the {cap}-byte limit")
    with path.open("rb") as fh:
        while piece := fh.read(1 << 20):
            yield piece


def document_envelope(path: str | os.PathLike[str], *, copy_to: Path | None = None) -> ConversationDocument:
    """A document file read as a stream (each element checked, within the reader's limits): its envelope, with
    the counts of what it holds. ``copy_to``: a file that gets the document's JSON as it is read (decompressed
    from a blob), removed if the document turns out invalid."""
    from p2pd.conversation.stream_reader import DocumentReader

    p = Path(path)
    if not p.is_file():
        raise NotFoundError(f"file not found: {p}")
    reader = DocumentReader(source=str(p))
    try:
        with open(copy_to, "xb") if copy_to is not None else contextlib.nullcontext() as out:
            for piece in document_pieces(p):
                reader.feed(piece)
                if out is not None:
                    out.write(piece)
        summary = reader.finish()
    except BaseException:
        if copy_to is not None:
            copy_to.unlink(missing_ok=True)
        raise
    doc = summary.document
    doc.counts = summary.counts
    return doc


def origin_platform(path: Path) -> str:
    """The agent a file's conversation came from: the agent that wrote a session file, else the ``origin`` of
    the document (read as a stream, each element checked)."""
    agent = registry.detect_agent(path)
    return agent.name if agent is not None else document_envelope(path).origin.platform


HEAD_BYTES = 1 << 20  # how far into a document its envelope is looked for (said_platform)
_FIRST_ARRAY = re.compile(rb',\s*"[A-Za-z]+"\s*:\s*\[')  # where the envelope ends: ``,"records":[``


def said_platform(path: Path) -> str | None:
    """The origin platform that a document p2pd wrote names in its envelope (compact or indented, the envelope
    comes before its first element array), reading no further than HEAD_BYTES: a guess made before the file is
    read and checked, which the caller holds against the document it then reads (:func:`origin_platform` reads it
    whole). None: a blob, another writer's layout, or not said there."""
    try:
        if not path.is_file():  # (a folder, a pipe…: the whole reading says what it is)
            return None
        with path.open("rb") as fh:
            start = fh.read(HEAD_BYTES)
    except OSError:
        return None
    end = _FIRST_ARRAY.search(start)
    if end is None or not start.lstrip().startswith(b"{"):
        return None
    try:
        head = msgspec.json.decode(start[:end.start()] + b"}")
    except msgspec.DecodeError:
        return None
    origin = head.get("origin") if isinstance(head, dict) and head.get("format") == FORMAT_NAME else None
    platform = origin.get("platform") if isinstance(origin, dict) else None
    return platform if isinstance(platform, str) else None


def no_lines(message: object) -> None:
    """A restorer that keeps no source lines (a reader of the messages only: ``show``)."""
    return None


@contextlib.contextmanager
def file_source(path: str | os.PathLike[str], restore: LineRestorer, *,
                spool_dir: str | os.PathLike[str] | None = None) -> Iterator[DocumentSource]:
    """The conversation in the file at ``path``, its messages' source lines kept as ``restore`` gives them (an
    agent's ``restore_lines``); the spool goes in ``spool_dir`` (else :func:`p2pd.support.workroom.work_root`:
    the temporary folder unless it lives in RAM)."""
    p = Path(path)
    if not p.is_file():
        raise NotFoundError(f"file not found: {p}")
    source_agent = registry.detect_agent(p)
    if source_agent is not None and source_agent.write_streamed is None:
        yield _whole(p, restore)
        return
    if spool_dir is None:
        workroom.sweep_stale_work()  # (what killed runs left)
    with workroom.held_folder(workroom.SPOOL, spool_dir) as spool_at:
        with writing(f"the spool of {p.name} in {spool_at.parent}", reading=p):  # (a full disk: a typed error)
            spooled = _spooled(p, source_agent, spool_at, restore)
        if spooled is None:  # (declined by its agent's streamed writer: read whole)
            yield _whole(p, restore)
            return
        try:
            yield spooled
        finally:
            spooled.close()


def _spooled(p: Path, source_agent: Agent | None, spool_at: Path, restore: LineRestorer) -> SpooledSource | None:
    """The file read into a spool in ``spool_at``: a session converted into it first (None: its agent reads it
    whole)."""
    from p2pd.agents.spec import NotStreamable
    from p2pd.agents.spooled import spool_document
    from p2pd.support.gcpause import bulk_work

    document = p
    if source_agent is not None and source_agent.write_streamed is not None:
        document = spool_at / "converted.a2a.json"
        try:
            with bulk_work(), document.open("wb") as fh:
                source_agent.write_streamed(p, fh.write, spool_dir=spool_at)
        except NotStreamable:
            return None
    with bulk_work():
        return spool_document(document_pieces(document), spool_at / "elements", restore, source=str(p))


def _whole(p: Path, restore: LineRestorer) -> MemorySource:
    """A session file converted in memory (one its agent declines to stream)."""
    from p2pd.agents.sources import load_file

    return MemorySource(load_file(p), restore)
