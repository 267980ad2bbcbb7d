"""Where Claude Code keeps sessions, and how a session is named on the command line."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from p2pd.errors import InvalidInputError, NotFoundError

_ALNUM = re.compile(r"[a-zA-Z0-9]")
_MAX_NAME = 200
UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def config_dir() -> Path:
    """``$CLAUDE_CONFIG_DIR``, else ``~/.claude``."""
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(env).expanduser() if env else Path.home() / ".claude"


def projects_dir(config: Path | None = None) -> Path:
    return (config or config_dir()) / "projects"


def _utf16_units(text: str) -> list[int]:
    """The string as JavaScript sees it: UTF-16 code units (a character beyond U+FFFF is two)."""
    data = text.encode("utf-16-le", errors="surrogatepass")
    return [int.from_bytes(data[i:i + 2], "little") for i in range(0, len(data), 2)]


def _js_hash(text: str) -> str:
    """32-bit string hash in base 36, as Claude Code uses to disambiguate very long project paths."""
    h = 0
    for unit in _utf16_units(text):
        h = ((h << 5) - h + unit) & 0xFFFFFFFF
    if h & 0x80000000:
        h = -((~h + 1) & 0xFFFFFFFF)
    h = abs(h)
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        h, r = divmod(h, 36)
        out = digits[r] + out
        if h == 0:
            return out


def encode_project_dir(cwd: str) -> str:
    """The folder name Claude Code uses for a working directory: every UTF-16 code unit that is not
    ``[a-zA-Z0-9]`` becomes '-', with no Unicode normalisation (``😀`` is two units, so two dashes; a decomposed
    accent keeps its combining mark as a dash of its own)."""
    s = "".join(chr(u) if u < 0x80 and _ALNUM.match(chr(u)) else "-" for u in _utf16_units(cwd))
    return s if len(s) <= _MAX_NAME else f"{s[:_MAX_NAME]}-{_js_hash(cwd)}"


def project_dir_for(cwd: str | os.PathLike[str], config: Path | None = None) -> Path:
    real = os.path.realpath(os.fspath(cwd))
    return projects_dir(config) / encode_project_dir(real)


@dataclass(frozen=True)
class SessionFile:
    path: Path
    session_id: str
    project_dir: Path

    @property
    def mtime(self) -> float:
        return self.path.stat().st_mtime

    @property
    def size(self) -> int:
        return self.path.stat().st_size


def find_sessions(config: Path | None = None) -> list[SessionFile]:
    """Every main session file under ``projects/``, newest first (subagent files excluded)."""
    root = projects_dir(config)
    if not root.is_dir():
        return []
    found = []
    for proj in root.iterdir():
        if not proj.is_dir():
            continue
        for f in proj.glob("*.jsonl"):
            if f.is_file() and not f.name.startswith("agent-"):
                found.append(SessionFile(f, f.stem, proj))
    found.sort(key=lambda s: s.mtime, reverse=True)
    return found


def resolve_session(ref: str, config: Path | None = None) -> Path:
    """A session by path, full id, unique id prefix, or ``latest``."""
    candidate = Path(ref).expanduser()
    if candidate.suffix == ".jsonl" or os.sep in ref or candidate.is_file():
        if candidate.is_file():
            return candidate
        raise NotFoundError(f"transcript not found: {candidate}")
    sessions = find_sessions(config)
    where = projects_dir(config)
    if not sessions:
        raise NotFoundError(f"no Claude Code sessions under {where}")
    if ref == "latest":
        return sessions[0].path
    exact = [s for s in sessions if s.session_id == ref]
    if exact:
        return exact[0].path
    matches = [s for s in sessions if s.session_id.startswith(ref)]
    if len(matches) == 1:
        return matches[0].path
    if not matches:
        raise NotFoundError(f"no session matches {ref!r} under {where}")
    ids = ", ".join(s.session_id for s in matches[:5])
    raise InvalidInputError(f"session prefix {ref!r} is ambiguous: {len(matches)} sessions match ({ids}…)")
