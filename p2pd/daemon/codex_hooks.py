"""The Codex CLI hooks: p2pd's entries in Codex's ``hooks.json`` and Codex's trust in them.

Codex (0.169) reads ``$CODEX_HOME/hooks.json`` (default ``~/.codex``) — the layout of Claude Code's ``hooks`` —
and runs SessionStart, UserPromptSubmit, Stop and SessionEnd command hooks, also under ``codex exec``. It runs a
user-level hook only once it is trusted: ``[hooks.state."<hooks.json path>:<event>:<group>:<handler>"]`` in
``$CODEX_HOME/config.toml`` holds ``trusted_hash``, the SHA-256 of the hook's normalized definition (the ``/hooks``
screen of the interactive Codex writes it when a person approves; ``--dangerously-bypass-hook-trust`` skips the
check for one run). How this was established is in ``p2pd/daemon/DAEMON.md`` ("Codex CLI hooks").

``install`` adds p2pd's four entries with :func:`p2pd.daemon.hook.install` (idempotent, others' hooks kept, staged
and moved atomically) and, unless told not to, records Codex's trust in p2pd's own entries: running
``p2pd hook install --agent codex`` is the person's approval. Each trust table p2pd writes carries ``# p2pd`` on
its header so ``uninstall`` removes exactly those; a table the person made for the same hook is never touched. A
``config.toml`` that is not valid TOML, or that cannot take the tables, is refused untouched.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from p2pd.agents.codex.paths import codex_home
from p2pd.daemon.hook import entries, install, is_ours, load, uninstall
from p2pd.daemon.hook_input import EVENTS
from p2pd.errors import InvalidInputError
from p2pd.support.atomic import atomic_writer

LABELS = {"SessionStart": "session_start", "UserPromptSubmit": "user_prompt_submit", "Stop": "stop",
          "SessionEnd": "session_end"}  # Codex's event key labels (in trust keys and hashes)
TIMEOUTS = {"SessionEnd": 3}  # Codex cuts SessionEnd hooks to 3 s and warns at every start when given more
DEFAULT_TIMEOUT = 600  # Codex's, for a hook without one
MARK = "# p2pd"
_OURS = re.compile(r'\n?^\[hooks\.state\.(?P<key>"(?:[^"\\]|\\.)*")\][ \t]*# p2pd[ \t]*\n'
                   r'trusted_hash = "sha256:[0-9a-f]{64}"[ \t]*\n?', re.M)


@dataclass(frozen=True)
class OurHook:
    """One of p2pd's entries in ``hooks.json``: its Codex trust key and the hash Codex expects for it."""

    event: str
    command: str
    key: str
    hash: str


def hooks_path(explicit: str | None = None) -> Path:
    return Path(explicit).expanduser() if explicit else codex_home() / "hooks.json"


def config_path(hooks: Path) -> Path:
    """The ``config.toml`` of the same Codex configuration layer (where Codex keeps hook trust)."""
    return hooks.parent / "config.toml"


def trust_hash(event: str, matcher: Any, handler: dict[str, Any]) -> str:
    """Codex's ``trusted_hash`` for one command hook: SHA-256 over the canonical JSON (sorted keys, compact) of the
    normalized definition — the event's label, the group's matcher (SessionStart only; Codex drops it for the
    others), and the one handler with its defaults filled in and unset options left out."""
    timeout = handler.get("timeout")
    norm: dict[str, Any] = {"type": "command", "command": handler["command"],
                            "timeout": max(1, timeout if isinstance(timeout, int) else DEFAULT_TIMEOUT),
                            "async": handler.get("async") is True}
    if isinstance(handler.get("statusMessage"), str):
        norm["statusMessage"] = handler["statusMessage"]
    identity: dict[str, Any] = {"event_name": LABELS[event], "hooks": [norm]}
    if event == "SessionStart" and isinstance(matcher, str):
        identity["matcher"] = matcher
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def our_hooks(path: Path) -> list[OurHook]:
    """p2pd's entries in ``hooks.json`` at ``path``, with their trust keys (positional, as Codex makes them)."""
    data = load(path)
    where = os.path.abspath(path)
    found = []
    for event, action in EVENTS.items():
        for g, group in enumerate(entries(data, path, event)):
            handlers = group.get("hooks") if isinstance(group, dict) else None
            for h, handler in enumerate(handlers if isinstance(handlers, list) else []):
                if is_ours(handler, action):
                    found.append(OurHook(event, handler["command"], f"{where}:{LABELS[event]}:{g}:{h}",
                                         trust_hash(event, group.get("matcher"), handler)))
    return found


def _read_config(cfg: Path) -> tuple[str, dict[str, Any]]:
    try:
        text = cfg.read_text(encoding="utf-8") if cfg.exists() else ""
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"cannot read {cfg}: {exc}") from None
    try:
        return text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInputError(f"{cfg} is not valid TOML ({exc}); fix it first — it was not changed") from None


def _states(config: dict[str, Any]) -> dict[str, Any]:
    hooks = config.get("hooks")
    states = hooks.get("state") if isinstance(hooks, dict) else None
    return states if isinstance(states, dict) else {}


def _without_ours(text: str, prefix: str) -> str:
    """``text`` without the trust tables p2pd wrote for hooks in the ``hooks.json`` named by ``prefix``."""
    def drop(m: re.Match[str]) -> str:
        try:
            key = json.loads(m.group("key"))
        except ValueError:
            return m.group(0)
        return "" if isinstance(key, str) and key.startswith(prefix) else m.group(0)
    return _OURS.sub(drop, text)


def _write_config(cfg: Path, old: str, new: str) -> None:
    if new == old:
        return
    mode = cfg.stat().st_mode & 0o777 if cfg.exists() else 0o600
    with atomic_writer(cfg, mode=mode) as fh:
        fh.write(new.encode("utf-8"))


def trust(path: Path) -> int:
    """Record Codex's trust in p2pd's entries of ``hooks.json`` at ``path``; returns how many tables were written
    (0 when the file already said so). Entries the person already has a table for are left to it."""
    cfg = config_path(path)
    text, _ = _read_config(cfg)
    prefix = f"{os.path.abspath(path)}:"
    base = _without_ours(text, prefix)
    states = _states(tomllib.loads(base))
    add = [h for h in our_hooks(path) if h.key not in states]
    blocks = "".join(f"\n[hooks.state.{json.dumps(h.key, ensure_ascii=False)}] {MARK}\ntrusted_hash = \"{h.hash}\"\n"
                     for h in add)
    new = (base.rstrip("\n") + "\n" if base.strip() else "") + blocks if blocks else base
    try:
        written = _states(tomllib.loads(new))
    except tomllib.TOMLDecodeError:
        written = {}
    if any(not isinstance(written.get(h.key), dict) or written[h.key].get("trusted_hash") != h.hash for h in add):
        raise InvalidInputError(f"cannot record the hooks' trust in {cfg} (its [hooks] are laid out otherwise); it "
                                "was not changed — approve the p2pd hooks in Codex's /hooks screen instead")
    _write_config(cfg, text, new)
    return len(add) if new != text else 0


def untrust(path: Path) -> int:
    """Remove the trust tables p2pd wrote for ``hooks.json`` at ``path``; returns how many."""
    cfg = config_path(path)
    if not cfg.exists():
        return 0
    text, _ = _read_config(cfg)
    new = _without_ours(text, f"{os.path.abspath(path)}:")
    _write_config(cfg, text, new)
    return len(_OURS.findall(text)) - len(_OURS.findall(new))


def install_codex(path: Path, *, record_trust: bool = True) -> tuple[bool, int]:
    """Add p2pd's hooks to Codex's ``hooks.json`` (and trust them); returns (hooks.json changed, tables written).
    The ``config.toml`` is checked before ``hooks.json`` is touched."""
    if record_trust:
        _read_config(config_path(path))
    changed = install(path, TIMEOUTS)
    return changed, trust(path) if record_trust else 0


def uninstall_codex(path: Path) -> int:
    """Remove p2pd's entries from ``hooks.json`` and the trust tables p2pd wrote for them."""
    untrust(path)
    return uninstall(path)


def status(path: Path) -> list[tuple[OurHook, str]]:
    """p2pd's entries with Codex's view of each: ``trusted``, ``untrusted``, ``modified`` (trusted before, changed
    since) or ``hooks disabled`` (Codex's ``[features] hooks = false``)."""
    _, config = _read_config(config_path(path))
    features = config.get("features")
    off = isinstance(features, dict) and (features.get("hooks") is False or features.get("codex_hooks") is False)
    states = _states(config)
    out = []
    for h in our_hooks(path):
        state = states.get(h.key)
        given = state.get("trusted_hash") if isinstance(state, dict) else None
        out.append((h, "hooks disabled" if off else "trusted" if given == h.hash else
                    "modified" if given else "untrusted"))
    return out
