"""Import a conversation document into the agent the user names (Claude Code by default): a document in memory
(:func:`import_document`), or a file read as a stream (:func:`import_file`)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from p2pd.agents import registry
from p2pd.agents.spec import ImportResultLike
from p2pd.conversation.model import ConversationDocument
from p2pd.errors import InvalidInputError, NotFoundError

if TYPE_CHECKING:
    from p2pd.agents.spooled import DocumentSource

DEFAULT_TARGET = registry.CLAUDE_CODE.name


def import_document(doc: ConversationDocument, *, to: str = DEFAULT_TARGET,
                    cwd: str | os.PathLike[str] | None = None, same_account: bool = False,
                    dry_run: bool = False) -> ImportResultLike:
    """Returns the target's import result (``session_id``, ``path``, ``lines``, ``warnings``, ``resume_command``)."""
    from p2pd.agents.spooled import MemorySource

    agent = _target(to)
    return _import_from(MemorySource(doc, agent.restore_lines), agent, cwd=cwd, same_account=same_account,
                           dry_run=dry_run)


def target_name(to: str) -> str:
    return registry.display_name(to)


Folder = str | os.PathLike[str] | None


def is_document_file(path: str | os.PathLike[str]) -> bool:
    """A conversation document (``.a2a.json``, a blob), not an agent's session file."""
    return registry.detect_agent(Path(path)) is None


def import_file(path: str | os.PathLike[str], *, to: str = DEFAULT_TARGET,
                cwd: Folder | Callable[[ConversationDocument], Folder] = None, same_account: bool = False,
                dry_run: bool = False,
                spool_dir: str | os.PathLike[str] | None = None) -> tuple[ImportResultLike, ConversationDocument]:
    """Import a file: a conversation document (``.a2a.json``, a blob) is read as a stream into a spool on disk
    (in ``spool_dir``, else the system's temporary folder) and imported from there, so memory does not grow with
    the session; an agent's session file is converted into that spool first as it is read (Claude Code, Codex,
    a Gemini CLI JSONL recording: the agent's ``write_streamed``), else in memory
    (:mod:`p2pd.agents.file_source`). Returns the result and the document's envelope (title, origin, counts).
    ``cwd`` may be a function of the envelope, called once it is read."""
    from p2pd.agents.file_source import file_source

    p = Path(path)
    if not p.is_file():
        raise NotFoundError(f"file not found: {p}")
    agent = _target(to)
    with file_source(p, agent.restore_lines, spool_dir=spool_dir) as src:
        folder = cwd(src.document) if callable(cwd) else cwd
        return _import_from(src, agent, cwd=folder, same_account=same_account, dry_run=dry_run), src.document


def _target(to: str) -> Any:
    """The agent ``to`` names, when it can be imported into."""
    agent = registry.find(to)
    if agent is None or agent.import_source is None or agent.restore_lines is None:
        raise InvalidInputError(f"unknown import target {to!r} (choose from {', '.join(registry.import_targets())})")
    return agent


def _import_from(src: DocumentSource, agent: Any, **kwargs: Any) -> ImportResultLike:
    doc = src.document
    source = registry.find(doc.origin.platform)
    foreign = source is not None and source is not agent
    cwd = kwargs.pop("cwd")
    return agent.import_source(src, foreign=foreign, cwd=os.fspath(cwd) if cwd is not None else None, **kwargs)
