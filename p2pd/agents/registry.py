"""The agents p2pd reads and writes, each described once (see :mod:`p2pd.agents.spec`): listing, resolving,
detecting, exporting, importing and restoring go through here instead of branching on agent names.

Order matters where several agents could answer: sessions are resolved and listed Claude Code first, then Codex,
then Gemini; files are detected by each agent's ``detect_rank`` (a catch-all detector ranks last).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal, get_args

from p2pd.agents.claude_code.agent import AGENT as CLAUDE_CODE
from p2pd.agents.codex.agent import AGENT as CODEX
from p2pd.agents.gemini.agent import AGENT as GEMINI
from p2pd.agents.spec import Agent
from p2pd.errors import InvalidInputError

AGENTS: tuple[Agent, ...] = (CLAUDE_CODE, CODEX, GEMINI)
# The same names as types, for signatures that list them (the daemon's API and MCP tools); checked against AGENTS.
AgentName = Literal["claude-code", "codex", "gemini"]
ImportTarget = Literal["claude-code", "codex"]
DOCUMENT = "document"  # what :func:`detect` says of a file no agent wrote (a conversation document)
_SNIFF = 1 << 20


def names() -> tuple[str, ...]:
    return tuple(a.name for a in AGENTS)


def import_targets() -> tuple[str, ...]:
    """The agents a document can be imported into."""
    return tuple(a.name for a in AGENTS if a.import_source is not None)


def restore_targets() -> tuple[str, ...]:
    """The agents whose own session files a document can be turned back into."""
    return tuple(a.name for a in AGENTS if a.restore is not None)


if get_args(AgentName) != names() or get_args(ImportTarget) != import_targets():  # pragma: no cover
    raise AssertionError("AgentName/ImportTarget do not list the agents in AGENTS")


def find(name: str | None) -> Agent | None:
    for a in AGENTS:
        if name == a.name or name in a.aliases:
            return a
    return None


def get(name: str) -> Agent:
    agent = find(name)
    if agent is None:
        raise InvalidInputError(f"unknown agent {name!r} (one of {', '.join(names())})")
    return agent


def display_name(name: str) -> str:
    agent = find(name)
    return agent.display if agent is not None else name


def _first_json_line(path: Path) -> Any:
    with path.open("rb") as fh:
        for _ in range(50):
            raw = fh.readline(_SNIFF)
            if not raw:
                return None
            if raw.strip():
                try:
                    return json.loads(raw)
                except (ValueError, RecursionError):
                    return None
    return None


def detect_agent(path: str | os.PathLike[str]) -> Agent | None:
    """The agent that wrote the file, or None for anything else (a conversation document)."""
    p = Path(path)
    cache: list[Any] = []

    def first() -> Any:
        if not cache:
            cache.append(_first_json_line(p) if p.name.endswith(".jsonl") else None)
        return cache[0]

    for agent in sorted(AGENTS, key=lambda a: a.detect_rank):
        if agent.detect(p, first):
            return agent
    return None


def detect(path: str | os.PathLike[str]) -> str:
    """The agent's name, or ``"document"``."""
    agent = detect_agent(path)
    return agent.name if agent is not None else DOCUMENT
