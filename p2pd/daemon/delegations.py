"""A delegation's lifecycle (seed 002: an agent forks its conversation into a new local session) — pure, no I/O.

    created ──start──▶ running ──▶ exited (exit code)
       │                  ▲           │
       └──▶ failed ───────┴───────────┘   (started again)

- created: the conversation was forked into a new session (a folder or a new git worktree); nobody started it
  through p2pd (it can be resumed by hand with its resume command);
- running: the daemon started the configured agent command (``delegate_command``) on it;
- exited: that process ended (its exit code is kept; a daemon that stopped while it ran records no code);
- failed: the command could not be started (the reason is kept).

``exited`` and ``failed`` are not final: the delegation may be started again. Every move is checked by the store
(:meth:`p2pd.daemon.session_tables.SessionStore.move_delegation`).
"""

from __future__ import annotations

from p2pd.errors import ConflictError, InvalidInputError

STATES: tuple[str, ...] = ("created", "running", "exited", "failed")
TRANSITIONS: dict[str, frozenset[str]] = {
    "created": frozenset({"running", "failed"}),
    "running": frozenset({"exited", "failed"}),
    "exited": frozenset({"running", "failed"}),
    "failed": frozenset({"running", "failed"}),
}


def check_state(state: str) -> None:
    if state not in STATES:
        raise InvalidInputError(f"unknown delegation state {state!r} (one of {', '.join(STATES)})")


def check_transition(current: str, new: str, *, what: str = "the delegation") -> None:
    check_state(new)
    if new not in TRANSITIONS.get(current, frozenset()):
        raise ConflictError(f"{what} is {current}; it cannot become {new}")
