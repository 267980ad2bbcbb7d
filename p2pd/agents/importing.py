"""Import a conversation document into the agent the user names (Claude Code by default)."""

from __future__ import annotations

import os

from p2pd.agents import registry
from p2pd.agents.spec import ImportResultLike
from p2pd.conversation.model import ConversationDocument
from p2pd.errors import InvalidInputError

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
