"""Gemini CLI as p2pd sees it: read only (p2pd writes no Gemini sessions); a JSONL recording or a JSON session is
converted as it is read (:mod:`p2pd.agents.gemini.streamed`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

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


def _write_streamed(path: Path, write: Callable[[bytes], object], *, spool_dir: Path,
                    on_head: Callable[[dict[str, Any]], object] | None = None) -> object:
    from p2pd.agents.gemini.streamed import write_recording

    return write_recording(path, write, spool_dir=spool_dir, on_head=on_head)


AGENT = Agent(
    name=NAME, display="Gemini CLI", aliases=("gemini-cli",), find_sessions=find_gemini_sessions, detect=_detect,
    export=_export, detect_rank=20, write_streamed=_write_streamed,
    no_restore_reason="p2pd cannot write Gemini CLI sessions: no exact restore exists for Gemini; import the "
                      "conversation into Claude Code or Codex instead (`p2pd import --to …`)")
