"""Import a conversation document into the agent the user names (Claude Code by default): a document in memory
(:func:`import_document`), or a file read as a stream (:func:`import_file`)."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from p2pd.agents import registry
from p2pd.agents.spec import ImportResultLike
from p2pd.conversation.model import ConversationDocument
from p2pd.errors import InvalidInputError, NotFoundError, TooLargeError

if TYPE_CHECKING:
    from p2pd.agents.spooled import SpooledSource

DEFAULT_TARGET = registry.CLAUDE_CODE.name


def import_document(doc: ConversationDocument, *, to: str = DEFAULT_TARGET,
                    cwd: str | os.PathLike[str] | None = None, same_account: bool = False,
                    dry_run: bool = False) -> ImportResultLike:
    """Returns the target's import result (``session_id``, ``path``, ``lines``, ``warnings``, ``resume_command``)."""
    agent = registry.find(to)
    if agent is None or agent.import_to is None:
        raise InvalidInputError(f"unknown import target {to!r} (choose from {', '.join(registry.import_targets())})")
    source = registry.find(doc.origin.platform)
    foreign = source is not None and source is not agent
    return agent.import_to(doc, foreign=foreign, cwd=os.fspath(cwd) if cwd is not None else None,
                           same_account=same_account, dry_run=dry_run)


def target_name(to: str) -> str:
    return registry.display_name(to)


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


Folder = str | os.PathLike[str] | None


def is_document_file(path: str | os.PathLike[str]) -> bool:
    """A conversation document (``.a2a.json``, a blob), not an agent's session file."""
    return registry.detect_agent(Path(path)) is None


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


def import_file(path: str | os.PathLike[str], *, to: str = DEFAULT_TARGET,
                cwd: Folder | Callable[[ConversationDocument], Folder] = None, same_account: bool = False,
                dry_run: bool = False,
                spool_dir: str | os.PathLike[str] | None = None) -> tuple[ImportResultLike, ConversationDocument]:
    """Import a file: a conversation document (``.a2a.json``, a blob) is read as a stream into a spool on disk
    (in ``spool_dir``, else the system's temporary folder) and imported from there, so memory does not grow with
    the session; an agent's session file is converted into that spool first as it is read (Claude Code, Codex:
    the agent's ``write_streamed``), else in memory. Returns the result and the document's envelope (title,
    origin, counts). ``cwd`` may be a function of the envelope, called once it is read."""
    p = Path(path)
    if not p.is_file():
        raise NotFoundError(f"file not found: {p}")
    source_agent = registry.detect_agent(p)
    if source_agent is not None and source_agent.write_streamed is None:
        return _import_whole(p, to=to, cwd=cwd, same_account=same_account, dry_run=dry_run)
    agent = registry.find(to)
    if agent is None or agent.import_source is None or agent.restore_lines is None:
        raise InvalidInputError(f"unknown import target {to!r} (choose from {', '.join(registry.import_targets())})")
    from p2pd.agents.spec import NotStreamable
    from p2pd.agents.spooled import spool_document
    from p2pd.support.gcpause import bulk_work

    spool_at = Path(tempfile.mkdtemp(prefix=".p2pd-import-spool-", dir=spool_dir))
    try:
        document = p
        if source_agent is not None and source_agent.write_streamed is not None:
            document = spool_at / "converted.a2a.json"
            try:
                with bulk_work(), document.open("wb") as fh:
                    source_agent.write_streamed(p, fh.write, spool_dir=spool_at)
            except NotStreamable:  # (agent-team state: the session is read whole)
                return _import_whole(p, to=to, cwd=cwd, same_account=same_account, dry_run=dry_run)
        with bulk_work():
            src = spool_document(document_pieces(document), spool_at / "elements", agent.restore_lines,
                                 source=str(p))
        try:
            folder = cwd(src.document) if callable(cwd) else cwd
            return _import_spooled(src, agent, cwd=folder, same_account=same_account, dry_run=dry_run), src.document
        finally:
            src.close()
    finally:
        shutil.rmtree(spool_at, ignore_errors=True)


def _import_whole(p: Path, *, to: str, cwd: Folder | Callable[[ConversationDocument], Folder], same_account: bool,
                  dry_run: bool) -> tuple[ImportResultLike, ConversationDocument]:
    """A session file converted in memory, then imported (a Gemini session, an agent-team session)."""
    from p2pd.agents.sources import load_file

    doc = load_file(p)
    folder = cwd(doc) if callable(cwd) else cwd
    return import_document(doc, to=to, cwd=folder, same_account=same_account, dry_run=dry_run), doc


def _import_spooled(src: SpooledSource, agent: Any, **kwargs: Any) -> ImportResultLike:
    doc = src.document
    source = registry.find(doc.origin.platform)
    foreign = source is not None and source is not agent
    cwd = kwargs.pop("cwd")
    return agent.import_source(src, foreign=foreign, cwd=os.fspath(cwd) if cwd is not None else None, **kwargs)
