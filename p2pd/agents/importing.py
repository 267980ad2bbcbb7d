"""Import a conversation document into the agent the user names (Claude Code by default, or Codex)."""

from __future__ import annotations

import os
from typing import Any

from p2pd.conversation.model import ConversationDocument
from p2pd.errors import InvalidInputError

TARGETS = ("claude-code", "codex")


def import_document(doc: ConversationDocument, *, to: str = "claude-code", cwd: str | os.PathLike[str] | None = None,
                    same_account: bool = False, dry_run: bool = False) -> Any:
    """Returns the target's import result (``session_id``, ``path``, ``lines``, ``warnings``, ``resume_command``)."""
    if to == "codex":
        from p2pd.agents.codex.importer import import_to_codex

        return import_to_codex(doc, cwd=cwd, same_account=same_account, dry_run=dry_run)
    if to == "claude-code":
        from p2pd.agents.crossagent import import_into_claude_code

        return import_into_claude_code(doc, cwd=cwd, same_account=same_account, dry_run=dry_run)
    raise InvalidInputError(f"unknown import target {to!r} (choose from {', '.join(TARGETS)})")


def target_name(to: str) -> str:
    return {"codex": "Codex", "claude-code": "Claude Code"}.get(to, to)
