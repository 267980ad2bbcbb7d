"""Gemini CLI as p2pd sees it: read only (p2pd writes no Gemini sessions)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from p2pd.agents.gemini.paths import find_gemini_sessions, is_gemini_json, is_gemini_meta
from p2pd.agents.spec import Agent, FirstLine

if TYPE_CHECKING:
    from p2pd.conversation.model import ConversationDocument

from p2pd.agents.gemini import NAME


def _detect(path: Path, first: FirstLine) -> bool:
    if path.name.endswith(".jsonl"):
        return is_gemini_meta(first())
    return is_gemini_json(path)


def _export(path: Path) -> ConversationDocument:
    from p2pd.agents.gemini.export import export_gemini

    return export_gemini(path)


AGENT = Agent(
    name=NAME, display="Gemini CLI", aliases=("gemini-cli",), find_sessions=find_gemini_sessions, detect=_detect,
    export=_export, detect_rank=20,
    no_restore_reason="p2pd cannot write Gemini CLI sessions: no exact restore exists for Gemini; import the "
                      "conversation into Claude Code or Codex instead (`p2pd import --to …`)")
