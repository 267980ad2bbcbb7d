"""Handoffs offered to this daemon by paired devices — the receiving side's lifecycle (pure: no I/O).

    offered ──claim──▶ claiming ──granted──▶ claimed ──▶ started ──▶ completed (result)
       │                  │ ╲                   │          │
       │                  │  ╰─refused─▶ taken  │          ╰──▶ failed (reason)
       │                  ╰──no answer──▶ offered
       └──────────────────┴─────────────────────┴──────────────▶ cancelled (the sender withdrew it)

- offered: a paired device offered it; listed (``p2pd handoffs offered``, ``GET /offers``, MCP
  ``list_offered_handoffs``) whatever ``accept_handoffs`` says. With ``accept_handoffs = true`` the daemon claims
  it at once (mode ``auto``: it imports the conversation and reports completed with the resume command); with
  ``false`` it waits for a person or an agent to claim it (mode ``worker``: the worker reports started, then
  completed with its result or failed with a reason);
- claiming: the claim went to the sender; its answer decides (exactly one claimer is granted);
- claimed: granted — the conversation is on its way, or here (``inbox_id``, ``package``, ``resume_command``);
- taken (another device got it, or the sender refused), cancelled (the sender withdrew it), completed, failed:
  final.

The import is this side's commit point (``OfferDesk.import_begins``): a sender's cancel that comes while an import
runs waits for it — in mode ``auto`` the handoff then completes, and the cancel came too late (in mode ``worker``
it is cancelled once the import ended: the worker had not begun) — and one that comes before cancels it here for
good; a sender that speaks ``cancel-ask`` is answered either way (DAEMON.md, "One commit point").

Only a conversation tagged with a handoff this daemon holds as claimed or started, sent by the device that offered
it, is treated as that handoff (imported, reported); any other tag is ignored and the conversation is an ordinary
one in the inbox.
"""

from __future__ import annotations

from typing import Literal, get_args

from p2pd.errors import ConflictError, InvalidInputError

OfferState = Literal["offered", "claiming", "claimed", "started", "completed", "failed", "cancelled", "taken"]
STATES: tuple[str, ...] = get_args(OfferState)
FINAL: frozenset[str] = frozenset({"completed", "failed", "cancelled", "taken"})
HELD: frozenset[str] = frozenset({"claimed", "started"})  # granted to this daemon and not finished

TRANSITIONS: dict[str, frozenset[str]] = {
    "offered": frozenset({"claiming", "cancelled", "taken"}),
    "claiming": frozenset({"claimed", "offered", "taken", "cancelled"}),
    "claimed": frozenset({"started", "completed", "failed", "cancelled"}),
    "started": frozenset({"completed", "failed", "cancelled"}),
    "completed": frozenset(),
    "failed": frozenset(),
    "cancelled": frozenset(),
    "taken": frozenset(),
}


def check_state(state: str) -> str:
    if state not in STATES:
        raise InvalidInputError(f"unknown offered-handoff state {state!r} (one of {', '.join(STATES)})")
    return state


def check_transition(current: str, new: str, *, what: str) -> None:
    check_state(new)
    if new not in TRANSITIONS.get(current, frozenset()):
        if current in FINAL:
            raise ConflictError(f"{what} is already {current}")
        raise ConflictError(f"{what} is {current}; it cannot become {new}")


__all__ = ["FINAL", "HELD", "STATES", "TRANSITIONS", "check_state", "check_transition"]
