"""What p2pd knows about one agent, in one place: each agent subpackage describes itself with an :class:`Agent`
in its ``agent.py``, and :mod:`p2pd.agents.registry` collects them. Nothing else spells out agent names."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from p2pd.agents.spooled import DocumentSource, LineRestorer
    from p2pd.conversation.model import ConversationDocument



class FirstLine(Protocol):
    """The first JSON value of a ``.jsonl`` file (read once, on demand), or None."""

    def __call__(self) -> Any: ...


class ImportResultLike(Protocol):
    session_id: str
    path: Path
    lines: int
    warnings: list[str]
    dry_run: bool

    @property
    def resume_command(self) -> str: ...


class SourceImporter(Protocol):
    """Write the conversation read from ``src`` one element at a time (a spool of a stream, or a document in
    memory) as a session this agent resumes: memory holds an element, not the session. ``src`` was read with the
    agent's ``restore_lines``."""

    def __call__(self, src: DocumentSource, *, foreign: bool, cwd: str | None, same_account: bool,
                 dry_run: bool) -> ImportResultLike: ...


class Restorer(Protocol):
    """The agent's own session file back from ``src`` (read with the agent's ``restore_lines``), one line at a time
    through ``write``; InvalidInputError when the conversation did not come from this agent."""

    def __call__(self, src: DocumentSource, write: Callable[[bytes], object], *, keep_ids: bool) -> None: ...


class StreamWriter(Protocol):
    """A session file written as a conversation document in the line layout through ``write`` while it is read
    (memory bounded by a line or a message, not the session; spool files go into ``spool_dir``): ``on_head``
    hears, once, what a transfer offers it under (title, contextId, origin, counts.messages). Raises
    :class:`NotStreamable`, having written nothing, for a session that must be converted whole."""

    def __call__(self, path: Path, write: Callable[[bytes], object], *, spool_dir: Path,
                 on_head: Callable[[dict[str, Any]], object] | None = None) -> object: ...


class NotStreamable(Exception):
    """The session is left to its agent's whole reading (a Gemini CLI JSON session a message-at-a-time reading
    could read otherwise: see :mod:`p2pd.agents.gemini.json_session`); nothing was written."""


@dataclass(frozen=True)
class Agent:
    name: str  # the platform name in documents and on the command line: "claude-code"
    display: str  # "Claude Code"
    find_sessions: Callable[[], list[Path]]  # this machine's session files, newest first
    detect: Callable[[Path, FirstLine], bool]  # whether this agent wrote the file
    export: Callable[[Path], ConversationDocument]  # a session file → document
    aliases: tuple[str, ...] = ()
    detect_rank: int = 50  # detectors run in this order; a catch-all (any .jsonl) ranks last
    resolve: Callable[[str], Path | None] | None = None  # a session by id / unique prefix / ``latest``
    enrich: Callable[[ConversationDocument], None] | None = None  # after export: state kept beside the session
    import_source: SourceImporter | None = None  # write a conversation as a session this agent resumes
    restore_lines: LineRestorer | None = None  # a message's source lines here (None: it has none): what the spool
    # of a document keeps for ``import_source``
    restore: Restorer | None = None  # the original session file back, when the document came from here
    write_streamed: StreamWriter | None = None  # the session converted as it is written (else: loaded whole)
    no_restore_reason: str = ""  # said plainly when ``restore`` is None


class NoteKind(StrEnum):
    """What an import warning is about; code decides on the kind, never on the wording."""

    REBUILT = "rebuilt"  # the turns came from another agent and were rebuilt
    CARRIED = "carried"  # something of another agent's turns was carried as text or left out
    DROPPED = "dropped"  # account-bound data (thinking, encrypted reasoning) left out
    REPAIRED = "repaired"  # the chain was repaired (a missing tool result answered, a malformed line left out)
    LOCATION = "location"  # where the session is found or what it still points to


class Note(str):
    """An import warning: the text shown to the user, with its :class:`NoteKind`."""

    kind: NoteKind

    def __new__(cls, kind: NoteKind, text: str) -> Note:
        note = super().__new__(cls, text)
        note.kind = kind
        return note


def missing_folder_note(cwd: str) -> Note | None:
    """The note for a session imported to work in ``cwd`` when that folder does not exist here (the resume
    command starts there), else None."""
    import os

    if os.path.isdir(cwd):
        return None
    return Note(NoteKind.LOCATION, f"{cwd} is not a folder on this machine: create it (or import again with --cwd) "
                                   "before resuming, since the resume command starts there")


def moved_images_note(n: int) -> str:
    """The text put before images moved out of an agent turn into the user turn that follows."""
    return (f"[{n} image(s) shown in the agent's previous turn, moved here: model APIs take images only in user "
            "turns]")
