"""What the agent-session hooks do, on the store (the daemon runs the same code when the hook reaches it). The
hooks are Claude Code's or Codex CLI's (the same events and input shape, :mod:`p2pd.daemon.hook_input`):

- ``session-start`` and ``prompt-submit`` (SessionStart and UserPromptSubmit): the context the
  session is given — where a delegated session came from, the messages waiting in its inbox (a linked session's
  turn output, its parent's messages), the links it is in;
- ``stop`` (Stop): the turn's output (``last_assistant_message`` when the agent passes it, else the end of the
  transcript, Claude Code's or Codex's rollout; bounded, redacted when redaction is on) goes to the other members of
  the session's live links;
- ``session-end`` (SessionEnd): the session leaves every link it is in.
"""

from __future__ import annotations

from typing import Any

from p2pd.daemon.delegating import delegation_context
from p2pd.daemon.home import Home
from p2pd.daemon.hook_input import EVENTS, parse
from p2pd.daemon.session_desk import SessionDesk
from p2pd.daemon.session_tables import SessionStore
from p2pd.daemon.turn_output import last_turn
from p2pd.errors import InvalidInputError


def local_desk(home: Home) -> SessionDesk:
    """The desk on the store itself, for a hook when no daemon runs."""
    from p2pd.daemon.identity import load_identity

    home.ensure()
    return SessionDesk(home.root, SessionStore(home.db_path), load_identity(home.root).device_id)


def session_context(desk: SessionDesk, session_id: str, *, start: bool = True) -> str:
    """At session start: where a delegated session came from, its messages, its links; at a prompt: its new
    messages only."""
    parts = (delegation_context(desk.store, session_id) if start else "", desk.context(session_id, links=start))
    return "\n\n".join(part for part in parts if part)


def on_event(action: str, record: dict[str, Any], desk: SessionDesk, *, redact: bool) -> dict[str, Any]:
    """Handle one hook event for the session ``record["session_id"]``; returns what it did."""
    sid = record.get("session_id")
    if not isinstance(sid, str) or not sid:
        raise InvalidInputError("the hook input has no session_id")
    if action in ("session-start", "prompt-submit"):
        return {"session_context": session_context(desk, sid, start=action == "session-start")}
    if action == "stop":
        text = record.get("last_assistant_message")
        if not isinstance(text, str) or not text.strip():
            path = record.get("transcript_path")
            text = last_turn(path) if isinstance(path, str) and path else ""
        return {"delivered": desk.turn(sid, text, redact=redact)}
    if action == "session-end":
        return {"left": [v.id for v in desk.end_session(sid)]}
    raise InvalidInputError(f"unknown hook event {action!r} (one of {', '.join(EVENTS.values())})")


def run_hook(action: str, raw: str, home: Home) -> dict[str, Any]:
    """``p2pd hook prompt-submit|stop|session-end``: the hook input (JSON) handled by the daemon, else on the store
    (what concerns paired devices then waits for the daemon). Returns the JSON the agent (Claude Code or Codex)
    reads: the added context for a prompt, nothing for the others (a Stop hook never blocks)."""
    from p2pd.daemon.client import DaemonClient
    from p2pd.errors import P2pdError

    record: dict[str, Any] = dict(parse(raw, action).record)
    out: dict[str, Any] | None = None
    client = DaemonClient.find(home)
    if client is not None:
        with client:
            try:
                answer = client.post(f"/hooks/{action}", record, timeout=10)
                out = answer if isinstance(answer, dict) else {}
            except P2pdError:
                out = None  # done on the store below; the session must go on anyway
    if out is None:
        from p2pd.config import redact_default

        out = on_event(action, record, local_desk(home), redact=redact_default())
    context = out.get("session_context")
    if action == "prompt-submit" and isinstance(context, str) and context:
        return {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": context}}
    return {}
