"""Where Codex CLI keeps its rollouts, and finding one by id, prefix or path.

``$CODEX_HOME`` (default ``~/.codex``) holds ``sessions/YYYY/MM/DD/rollout-<YYYY-MM-DDThh-mm-ss>-<uuid>.jsonl``
(optionally ``.jsonl.zst``) and ``archived_sessions/``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from p2pd.errors import InvalidInputError, NotFoundError

ROLLOUT_RE = re.compile(r"^rollout-(?P<stamp>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2})-(?P<id>.+?)\.jsonl(\.zst)?$")
SUFFIXES = (".jsonl", ".jsonl.zst")


def codex_home() -> Path:
    """``$CODEX_HOME``, else ``~/.codex``."""
    env = os.environ.get("CODEX_HOME")
    return Path(env).expanduser() if env else Path.home() / ".codex"


def sessions_dir(home: Path | None = None) -> Path:
    return (home or codex_home()) / "sessions"


def is_rollout_name(name: str) -> bool:
    return ROLLOUT_RE.match(name) is not None


def rollout_id(path: Path) -> str:
    """The session id in a rollout's file name (the uuid after the time stamp), else the name itself."""
    m = ROLLOUT_RE.match(path.name)
    return m.group("id") if m else path.name.split(".", 1)[0]


@dataclass(frozen=True)
class RolloutFile:
    path: Path
    session_id: str

    @property
    def mtime(self) -> float:
        return self.path.stat().st_mtime


def find_rollouts(home: Path | None = None) -> list[RolloutFile]:
    """Every rollout under ``sessions/`` (archived ones excluded), newest first."""
    root = sessions_dir(home)
    if not root.is_dir():
        return []
    found = [RolloutFile(p, rollout_id(p)) for p in root.rglob("rollout-*") if p.is_file()
             and is_rollout_name(p.name)]
    found.sort(key=lambda r: r.mtime, reverse=True)
    return found


def resolve_rollout(ref: str, home: Path | None = None) -> Path | None:
    """A rollout by full id or unique id prefix; None when no Codex rollout matches."""
    rollouts = find_rollouts(home)
    exact = [r for r in rollouts if r.session_id == ref]
    if exact:
        return exact[0].path
    matches = [r for r in rollouts if r.session_id.startswith(ref)]
    if len(matches) == 1:
        return matches[0].path
    if len(matches) > 1:
        ids = ", ".join(r.session_id for r in matches[:5])
        raise InvalidInputError(f"Codex session prefix {ref!r} is ambiguous: {len(matches)} match ({ids}…)")
    return None


def require_rollout(ref: str, home: Path | None = None) -> Path:
    found = resolve_rollout(ref, home)
    if found is None:
        raise NotFoundError(f"no Codex session matches {ref!r} under {sessions_dir(home)}")
    return found
