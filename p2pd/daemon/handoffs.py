"""Handoff lifecycle (pure: no I/O) and the context package that travels with the conversation.

    pending ──claim──▶ claimed ──▶ started ──▶ completed
       │                  │           │
       └──────────────────┴───────────┴──▶ failed | cancelled
                          ╰───────────┴──▶ cancelling ──▶ cancelled | completed | failed

- pending: created, waiting for a device (a named one, or ``any``);
- claimed: exactly one device claimed it (an atomic compare-and-set in the store);
- started: the conversation is on its way to the claimer;
- completed: the claimer received it, verified the SHA-256 and imported it (``output`` = the resume command);
- cancelling: the sender cancelled a handoff a paired device holds (claimed or started). The claimer imports it,
  so it decides: ``cancelled`` if it had not begun importing (it never will), else it completes (or fails) it and
  the cancel came too late. Asked with ``handoff-closed`` (cancelled) on every contact until it answers
  (``p2pd/daemon/cancels.py``); a claimer that cannot answer (an older daemon) is told as before and the handoff
  ends ``cancelled`` here;
- failed (``reason``), cancelled (by the sender, before completion). The last three are final.

A claimed or started handoff whose claimer gives up may go back to pending (``release``), so another device can
take it; the store records who claimed it each time.

The package (summary, goal, files, notes, cwd, project path) is stored in the conversation document itself, in
``doc.metadata["p2pd_handoff"]``, so the SHA-256 of the transfer covers it.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from p2pd.conversation.model import ConversationDocument
from p2pd.errors import ConflictError, InvalidInputError

State = Literal["pending", "claimed", "started", "completed", "failed", "cancelled", "cancelling"]
STATES: tuple[State, ...] = get_args(State)
FINAL: frozenset[str] = frozenset({"completed", "failed", "cancelled"})

TRANSITIONS: dict[str, frozenset[str]] = {
    "pending": frozenset({"claimed", "failed", "cancelled"}),
    "claimed": frozenset({"started", "pending", "failed", "cancelled", "cancelling"}),
    "started": frozenset({"completed", "pending", "failed", "cancelled", "cancelling"}),
    "cancelling": frozenset({"cancelled", "completed", "failed"}),  # the claimer's answer
    "completed": frozenset(),
    "failed": frozenset(),
    "cancelled": frozenset(),
}

METADATA_KEY = "p2pd_handoff"
MAX_FILE_CONTENT = 1 << 20  # 1 MiB of inline content per file
MAX_FILES = 200


def check_state(state: str) -> State:
    if state not in STATES:
        raise InvalidInputError(f"unknown handoff state {state!r} (one of {', '.join(STATES)})")
    return state


def check_transition(current: str, new: str) -> None:
    """Raise ConflictError when ``current → new`` is not allowed."""
    check_state(new)
    if new not in TRANSITIONS.get(current, frozenset()):
        if current in FINAL:
            raise ConflictError(f"the handoff is already {current}")
        raise ConflictError(f"a {current} handoff cannot become {new}")


class HandoffFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field(min_length=1, max_length=4096, description="file path, relative to project_path if possible")
    summary: str = Field(default="", max_length=8192, description="why this file matters")
    content: str | None = Field(default=None, max_length=MAX_FILE_CONTENT,
                                description="the file's text, when the other machine may not have it")


class HandoffPackage(BaseModel):
    """What the agent hands over besides the conversation itself."""

    model_config = ConfigDict(extra="forbid")

    summary: str = Field(default="", max_length=65536, description="what was done so far")
    goal: str = Field(default="", max_length=16384, description="the current goal, what to do next")
    files: list[HandoffFile] = Field(default_factory=list, max_length=MAX_FILES)
    notes: str = Field(default="", max_length=65536)
    cwd: str | None = Field(default=None, max_length=4096, description="working directory on the sending machine")
    project_path: str | None = Field(default=None, max_length=4096, description="the project's root folder")


def package_metadata(package: HandoffPackage, *, handoff_id: str) -> dict[str, Any]:
    """What the package adds to the document's ``metadata``, so it travels under the SHA-256 (the packing process
    adds it: :mod:`p2pd.daemon.packer`)."""
    return {METADATA_KEY: {"id": handoff_id, **package.model_dump(mode="json")}}


def attach_package(doc: ConversationDocument, package: HandoffPackage, *, handoff_id: str) -> None:
    """Put the package into a document in memory (``metadata.p2pd_handoff``)."""
    doc.metadata = {**(doc.metadata or {}), **package_metadata(package, handoff_id=handoff_id)}


def package_of(doc: ConversationDocument) -> dict[str, Any] | None:
    value = (doc.metadata or {}).get(METADATA_KEY)
    return value if isinstance(value, dict) else None
