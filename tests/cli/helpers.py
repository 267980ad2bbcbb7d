"""Running ``p2pd`` for the CLI tests: as a real process (exit codes, stderr as a user sees it) or in-process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.corpus import claude_code_files

SHORT = next(f for f in claude_code_files(include_subagents=False) if f.name == "short.jsonl")


def run(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
        input: str | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m p2pd ARGS`` with ``env`` added to this environment."""
    return subprocess.run([sys.executable, "-m", "p2pd", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})}, cwd=cwd, input=input)
