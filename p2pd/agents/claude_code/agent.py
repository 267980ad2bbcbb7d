"""Claude Code as p2pd sees it: transcripts under ``<config>/projects``, exported, imported and restored."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from p2pd.agents.claude_code import paths
from p2pd.agents.spec import Agent, FirstLine, ImportResultLike
from p2pd.errors import InvalidInputError, NotFoundError

if TYPE_CHECKING:
    from p2pd.agents.spooled import DocumentSource
    from p2pd.conversation.model import ConversationDocument, Message

from p2pd.agents.claude_code import NAME


def _find() -> list[Path]:
    return [s.path for s in paths.find_sessions()]


def _resolve(ref: str) -> Path | None:
    try:
        return paths.resolve_session(ref)
    except NotFoundError:
        return None


def _detect(path: Path, first: FirstLine) -> bool:
    return path.name.endswith(".jsonl")  # the catch-all for JSONL: ranked after the agents that sniff


def _export(path: Path) -> ConversationDocument:
    from p2pd.agents.claude_code.export import export_session

    return export_session(path)


def _write_streamed(path: Path, write: Callable[[bytes], object], *, spool_dir: Path,
                    on_head: Callable[[dict[str, Any]], object] | None = None) -> object:
    from p2pd.agents.claude_code.streamed import write_session

    return write_session(path, write, spool_dir=spool_dir, on_head=on_head)


def _enrich(doc: ConversationDocument) -> None:
    from p2pd.conversation.teams import attach_team_state

    if "teams" not in (doc.metadata or {}):
        attach_team_state(doc)


def _import_source(src: DocumentSource, *, foreign: bool, cwd: str | None, same_account: bool,
                   dry_run: bool) -> ImportResultLike:
    if not foreign:
        from p2pd.agents.claude_code.importer import import_source

        return import_source(src, cwd=cwd, same_account=same_account, dry_run=dry_run)
    # another agent's conversation, rebuilt as readable turns made one at a time from its messages read one at a
    # time, as the importer writes them
    from p2pd.agents.crossagent import import_into_claude_code

    active = (m for m in src.messages() if m.p2pd.get("active", True))
    return import_into_claude_code(src.document, foreign=True, active=active, bound=src.message_count(), cwd=cwd,
                                   same_account=same_account, dry_run=dry_run)


def _restore_lines(message: Message) -> list[tuple[int, dict[str, Any]]] | None:
    from p2pd.agents.claude_code.importer import restore_lines

    return restore_lines(message)


def _restore(src: DocumentSource, write: Callable[[bytes], object], *, keep_ids: bool) -> None:
    """The transcript as Claude Code wrote it (``keep_ids``), else its active chain under a new session id, one
    line at a time."""
    from p2pd.agents.claude_code.importer import chain_lines, linearize_chain
    from p2pd.agents.jsonl import jsonl_bytes

    if not src.restored:
        raise InvalidInputError("this conversation did not come from Claude Code; use `p2pd import` to rebuild "
                                "it as a session")
    if keep_ids:
        lines: Iterable[Any] = (v for _, v in src.main_lines())
    else:
        lines = linearize_chain(chain_lines(src), str(uuid.uuid4()), src.document.origin.cwd or os.getcwd(),
                                keep_thinking=True)
    for data in jsonl_bytes(lines):
        write(data)


AGENT = Agent(name=NAME, display="Claude Code", aliases=("claude",), find_sessions=_find, detect=_detect,
              export=_export, detect_rank=90, resolve=_resolve, enrich=_enrich,
              restore=_restore, write_streamed=_write_streamed, import_source=_import_source,
              restore_lines=_restore_lines)
