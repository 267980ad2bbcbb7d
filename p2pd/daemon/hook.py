"""The agent hooks: editing Claude Code's ``settings.json`` and recording a starting session. The
``p2pd hook install|uninstall|status|session-start|prompt-submit|stop|session-end`` command that drives them is
:mod:`p2pd.cli.hook`; what the last three do is :mod:`p2pd.daemon.session_hooks`. Codex CLI's ``hooks.json`` has the
same layout: :mod:`p2pd.daemon.codex_hooks` installs into it with :func:`install` and records Codex's trust.

``install`` adds one entry to each of ``hooks.SessionStart``, ``hooks.UserPromptSubmit``, ``hooks.Stop`` and
``hooks.SessionEnd`` in Claude Code's ``settings.json`` (``--settings PATH``, else
``$CLAUDE_CONFIG_DIR/settings.json``, else ``~/.claude/settings.json``) running ``p2pd hook <action>``. It is
idempotent (a missing entry is added, an existing one kept or pointed at the current p2pd), keeps every other
setting and hook, and refuses (touching nothing) a file that is not valid JSON or whose ``hooks`` are not shaped
as Claude Code expects. ``uninstall`` removes only p2pd's entries.

``session-start`` is what Claude Code (or Codex) runs: it reads the hook input on stdin (``session_id``,
``transcript_path``, ``cwd``, ``source``), records it with the daemon (``POST /hooks/session-start``) or, when no
daemon runs, in the store directly; prints ``hookSpecificOutput.additionalContext`` telling the agent the daemon's
URL and its own session id — and, for a session that continues a handoff this machine received, the handoff's goal,
summary, notes and files and how to report the work (:func:`p2pd.daemon.handoff_work.session_context`), and what
waits for the session (:func:`p2pd.daemon.session_hooks.session_context`: its delegation, messages, links); and
appends ``P2PD_URL``/``P2PD_SESSION_ID`` to ``$CLAUDE_ENV_FILE`` (or ``$CODEX_ENV_FILE``) when the agent provides
one.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

from p2pd.daemon.home import Home
from p2pd.daemon.hook_input import EVENTS, parse
from p2pd.errors import InvalidInputError, P2pdError
from p2pd.support.atomic import atomic_write_bytes

MARKER = "hook session-start"
EVENT = "SessionStart"
MAX_INPUT = 1 << 20  # the most hook input (JSON on stdin) read


def settings_path(explicit: str | None = None) -> Path:
    if explicit:
        return Path(explicit).expanduser()
    env = os.environ.get("CLAUDE_CONFIG_DIR", "").strip()
    return (Path(env).expanduser() if env else Path.home() / ".claude") / "settings.json"


def hook_command(action: str = "session-start") -> str:
    """How Claude Code should run us: the installed ``p2pd`` by absolute path, else this Python with ``-m p2pd``."""
    exe = shutil.which("p2pd")
    if exe:
        return f"{shlex.quote(str(Path(exe).resolve()))} hook {action}"
    return f"{shlex.quote(sys.executable)} -m p2pd hook {action}"


def is_ours(hook: Any, action: str) -> bool:
    return isinstance(hook, dict) and isinstance(hook.get("command"), str) and "p2pd" in hook["command"] \
        and hook["command"].rstrip().endswith(f"hook {action}")


def load(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"cannot read {path}: {exc}") from None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InvalidInputError(f"{path} is not valid JSON ({exc}); fix it first — it was not changed") from None
    if not isinstance(data, dict):
        raise InvalidInputError(f"{path} must hold a JSON object; it was not changed")
    return data


def entries(data: dict[str, Any], path: Path, event: str = EVENT) -> list[Any]:
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict):
        raise InvalidInputError(f"'hooks' in {path} is not an object; it was not changed")
    entries = hooks.get(event, [])
    if not isinstance(entries, list):
        raise InvalidInputError(f"'hooks.{event}' in {path} is not a list; it was not changed")
    return entries


def _save(path: Path, data: dict[str, Any]) -> None:
    atomic_write_bytes(path, (json.dumps(data, ensure_ascii=False, indent=2) + "\n").encode("utf-8"))


def _install_one(data: dict[str, Any], path: Path, event: str, action: str, timeout: int = 15) -> bool:
    listed = entries(data, path, event)
    command = hook_command(action)
    for entry in listed:
        for hook in (entry.get("hooks") or []) if isinstance(entry, dict) else []:
            if is_ours(hook, action):
                if hook["command"] == command:
                    return False
                hook["command"] = command  # p2pd moved: point at the current one
                return True
    listed.append({"hooks": [{"type": "command", "command": command, "timeout": timeout}]})
    data.setdefault("hooks", {})[event] = listed
    return True


def install(path: Path, timeouts: dict[str, int] | None = None) -> bool:
    """Add our hooks (SessionStart, UserPromptSubmit, Stop, SessionEnd), keeping every other one; returns False
    when all were already there (same commands). Every event is checked before anything is written. The same
    layout serves Claude Code's ``settings.json`` and Codex's ``hooks.json``; ``timeouts`` (seconds, by event)
    override the default 15."""
    data = load(path)
    for event in EVENTS:
        entries(data, path, event)
    changed = [_install_one(data, path, event, action, (timeouts or {}).get(event, 15))
               for event, action in EVENTS.items()]
    if any(changed):
        _save(path, data)
    return any(changed)


def uninstall(path: Path) -> int:
    """Remove our hook entries (only ours); returns how many were removed."""
    if not path.exists():
        return 0
    data = load(path)
    for event in EVENTS:
        entries(data, path, event)
    removed = 0
    for event, action in EVENTS.items():
        kept: list[Any] = []
        mine_here = 0
        for entry in entries(data, path, event):
            if isinstance(entry, dict) and isinstance(entry.get("hooks"), list):
                mine = [h for h in entry["hooks"] if is_ours(h, action)]
                mine_here += len(mine)
                if mine:
                    rest = [h for h in entry["hooks"] if not is_ours(h, action)]
                    if not rest:
                        continue
                    entry = {**entry, "hooks": rest}
            kept.append(entry)
        if mine_here:
            removed += mine_here
            if kept:
                data["hooks"][event] = kept
            else:
                del data["hooks"][event]
    if removed:
        if not data["hooks"]:
            del data["hooks"]
        _save(path, data)
    return removed


def installed(path: Path) -> list[str]:
    data = load(path)
    return [h["command"] for event, action in EVENTS.items() for e in entries(data, path, event)
            if isinstance(e, dict) for h in (e.get("hooks") or []) if is_ours(h, action)]


def daemon_url(home: Home) -> str:
    info = home.read_daemon_info()
    if info is not None:
        return str(info["url"])
    from p2pd.config import daemon_settings
    from p2pd.daemon.serve import url_for

    s = daemon_settings()
    return url_for(s.host, s.port)


def session_start(raw: str, home: Home, env_file: str | None) -> dict[str, Any]:
    """Record the session (daemon, else the store) and build the hook's JSON output."""
    from p2pd.daemon.client import DaemonClient

    given = parse(raw, "session-start").record
    record: dict[str, Any] = {k: given.get(k) for k in ("session_id", "transcript_path", "cwd", "source")}
    client = DaemonClient.find(home)
    running, recorded, context, sessions = client is not None, False, None, None
    if client is not None:
        with client:
            try:
                answer = client.post("/hooks/session-start", record, timeout=5)
                recorded = True
                context = answer.get("handoff_context") if isinstance(answer, dict) else None
                sessions = answer.get("session_context") if isinstance(answer, dict) else None
            except P2pdError:
                pass  # recorded in the store below; the session must start anyway
    if not recorded:
        from p2pd.daemon.handoff_work import session_context
        from p2pd.daemon.session_hooks import local_desk
        from p2pd.daemon.session_hooks import session_context as agent_session_context
        from p2pd.daemon.store import Store

        home.ensure()
        store = Store(home.db_path)
        store.record_hook_session(**record)
        context = session_context(store, record["session_id"], record["transcript_path"])
        sessions = agent_session_context(local_desk(home), record["session_id"])
    url = daemon_url(home)
    sid = record["session_id"]
    lines = [f"p2pd is available: P2PD_URL={url} (MCP endpoint {url}/mcp); your session id is P2PD_SESSION_ID={sid}.",
             "To hand this work to another machine use the p2pd `handoff` MCP tool with session_id set to that id "
             "(summary, goal, relevant files, notes)."]
    if not running:
        lines.append("The p2pd daemon is not running right now; start it with `p2pd serve`.")
    for extra in (context, sessions):
        if isinstance(extra, str) and extra:
            lines.append("\n" + extra)
    if env_file:
        with open(env_file, "a", encoding="utf-8") as fh:
            fh.write(f"export P2PD_URL={shlex.quote(url)}\nexport P2PD_SESSION_ID={shlex.quote(sid)}\n")
    return {"hookSpecificOutput": {"hookEventName": EVENT, "additionalContext": " ".join(lines)}}
