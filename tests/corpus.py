"""Where the shared transcript corpus lives, and the lists of its files by platform.

The corpus sits in ``shared/corpus`` beside the repository checkout (``../shared/corpus``). ``P2PD_CORPUS``
overrides the location.
"""

from __future__ import annotations

import os
from pathlib import Path

_HERE = Path(__file__).resolve().parent


def corpus_root() -> Path | None:
    env = os.environ.get("P2PD_CORPUS")
    if env:
        return Path(env)
    for parent in [_HERE, *_HERE.parents]:
        candidate = parent / "shared" / "corpus"
        if candidate.is_dir():
            return candidate
    fallback = Path("/work/shared/corpus")
    return fallback if fallback.is_dir() else None


CORPUS = corpus_root()


def claude_code_files(include_subagents: bool = True) -> list[Path]:
    """Every Claude Code JSONL in the corpus (main sessions, and subagent files when asked)."""
    if CORPUS is None:
        return []
    files = sorted((CORPUS / "claude-code").rglob("*.jsonl"))
    if not include_subagents:
        files = [f for f in files if "subagents" not in f.parts]
    return files


def codex_files() -> list[Path]:
    return sorted((CORPUS / "codex").rglob("*.jsonl")) if CORPUS else []


def gemini_files() -> list[Path]:
    return sorted((CORPUS / "gemini").rglob("*.json*")) if CORPUS else []


def file_id(path: Path) -> str:
    """A short test id for a corpus file: its path below the corpus root."""
    return str(path.relative_to(CORPUS)) if CORPUS else path.name
