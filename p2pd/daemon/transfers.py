"""Transfer lifecycle (pure: no I/O): the states a transfer row goes through, which moves are allowed, and what a
failure means for it.

    queued ──▶ running ──▶ done                     (in)  running ──▶ verified ──▶ done | failed
      │   ╲       │  ╲                             (out) queued | running | interrupted ──▶ cancelling
      │    ╲      │   ╰──▶ failed | cancelled                   cancelling ──▶ cancelled | done
      │     ▼     ▼
      │    interrupted ──▶ running (sent again; the receiver keeps what it had, so it resumes)
      │          │
      └──────────┴──▶ failed | cancelled

- queued: waiting for its device (or, for a code transfer, about to start);
- running: pairing, connecting or moving bytes;
- interrupted: cut off — the peer went away, the connection could not be made, the peer stopped answering, the
  receiver was still busy with an older attempt, or the daemon stopped. A device transfer in this state is sent
  again when its device is back;
- verified (receiving side only): the commit point. The payload is verified and in place and the receiver has
  decided to file it — written *before* it tells the sender DONE, and refused by the store once the row is
  cancelled. A verified row is always filed (at once, or at the next start), never cancelled; while this
  machine refuses the filing (a full disk) it stays verified and the filing is tried again (refiling.py);
- cancelling (sending side only): a cancel of a device transfer that may have reached its receiver is a request.
  The receiver decides (``transfer-cancel`` → ``transfer-outcome``, DEVICES.md): ``cancelled`` when it had not
  committed (it then never files it), ``done`` when it had (the cancel came too late: the row says so in
  ``detail.cancel_too_late``). The request is asked again on every contact until the answer arrives;
- done, failed (``error`` and ``cause`` say why), cancelled: final, never left.

The store enforces :data:`TRANSITIONS` (:func:`check_transition`); writing the state a row already has is always
allowed (it only changes the other fields).

What a failure means is decided on the error's :class:`~p2pd.errors.Cause` and class, never on its text
(:func:`outgoing_ending`, :func:`incoming_ending`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Literal, get_args

from p2pd.errors import Cause, ConflictError, DeclinedError, InvalidInputError, cause_of
from p2pd.support.text import visible


class TransferState(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"
    VERIFIED = "verified"
    CANCELLING = "cancelling"


# The states by name, for signatures that list them (the API's and MCP tools' filters); the same set as the enum.
TransferStateName = Literal["queued", "running", "done", "failed", "cancelled", "interrupted", "verified",
                            "cancelling"]
S = TransferState
STATES: tuple[str, ...] = tuple(s.value for s in TransferState)
if set(get_args(TransferStateName)) != set(STATES):  # pragma: no cover - a state added to one and not the other
    raise AssertionError("TransferStateName and TransferState list different states")
FINAL: frozenset[TransferState] = frozenset({S.DONE, S.FAILED, S.CANCELLED})
# Where a transfer left unfinished (queued or running) goes when the daemon that ran it is gone.
UNFINISHED: frozenset[TransferState] = frozenset({S.QUEUED, S.RUNNING})

TRANSITIONS: dict[TransferState, frozenset[TransferState]] = {
    S.QUEUED: frozenset({S.RUNNING, S.INTERRUPTED, S.FAILED, S.CANCELLED, S.CANCELLING}),
    S.RUNNING: frozenset({S.DONE, S.INTERRUPTED, S.FAILED, S.CANCELLED, S.VERIFIED, S.CANCELLING}),
    # (interrupted → verified: a blob verified and in place whose commit a stop cut off is filed at the next start)
    S.INTERRUPTED: frozenset({S.RUNNING, S.FAILED, S.CANCELLED, S.VERIFIED, S.CANCELLING}),
    S.VERIFIED: frozenset({S.DONE, S.FAILED}),  # filed, or filing failed for good (disk): never cancelled
    S.CANCELLING: frozenset({S.CANCELLED, S.DONE}),  # the receiver's answer
    S.DONE: frozenset(),
    S.FAILED: frozenset(),
    S.CANCELLED: frozenset(),
}

# Moving into these states clears the reason and cause of an earlier failure (a resumed, then done transfer is
# not shown with the timeout that interrupted it).
CLEARS_ERROR: frozenset[str] = frozenset({S.RUNNING, S.DONE})

# Causes after which a device transfer is worth sending again: the receiver may be back in a moment and keeps
# what it had received.
RETRYABLE: frozenset[Cause] = frozenset({
    Cause.PEER_GONE, Cause.CONNECTION_FAILED, Cause.TIMEOUT, Cause.NO_PEER, Cause.SIGNALING_UNREACHABLE,
    Cause.SIGNALING_LOST, Cause.DEVICE_OFFLINE, Cause.BUSY,
})


def check_state(state: str) -> TransferState:
    try:
        return TransferState(state)
    except ValueError:
        raise InvalidInputError(f"unknown transfer state {state!r} (one of {', '.join(STATES)})") from None


def allowed(current: str, new: str) -> bool:
    """Whether ``current → new`` is a legal move (staying put always is)."""
    cur, nxt = check_state(current), check_state(new)
    return cur is nxt or nxt in TRANSITIONS[cur]


def check_transition(current: str, new: str, *, what: str = "the transfer") -> None:
    """Raise ConflictError when ``current → new`` is not allowed."""
    if not allowed(current, new):
        if check_state(current) in FINAL:
            raise ConflictError(f"{what} is already {current}")
        raise ConflictError(f"{what} is {current}; it cannot become {new}")


def is_final(state: str) -> bool:
    return check_state(state) in FINAL


@dataclass(frozen=True)
class Ending:
    """How a transfer that stopped with an error ends: its new state, the reason and cause to record, and what
    follows (a pause before the device's next send, the handoff it carries)."""

    state: TransferState
    reason: str
    cause: Cause
    backoff: int = 0  # > 0: pause (jittered backoff for this many failures) before the device's next send
    retry_later: bool = False  # the receiver's disk refused it: this transfer is sent again after a delay
    handoff: str | None = None  # "failed" | "cancelled": what happens to the handoff the transfer carries
    handoff_reason: str = ""


def outgoing_ending(exc: BaseException, *, cancelled: str | None, device_online: bool,
                    device_name: str) -> Ending:
    """A device transfer this daemon sent stopped with ``exc``. ``cancelled`` is the reason when this side
    cancelled it; ``device_online`` whether the control channel to the device is up right now."""
    cause = cause_of(exc)
    text = str(exc)
    if cause is Cause.BUSY:  # the receiver still holds an older attempt of the same blob: try again soon
        return Ending(S.INTERRUPTED, text, cause, backoff=2)
    if isinstance(exc, ConflictError):  # e.g. the device left the link meanwhile
        return Ending(S.CANCELLED, text, cause)
    if isinstance(exc, DeclinedError):
        said = f" (it said: “{visible(exc.peer_text)}”)" if exc.peer_text else ""  # its words, shown, not read
        return Ending(S.FAILED, f"declined by {device_name}: {text}{said}", cause, handoff="failed",
                      handoff_reason=f"declined by {device_name}")
    if cancelled is not None:
        return Ending(S.CANCELLED, cancelled, Cause.CANCELLED, handoff="cancelled", handoff_reason=cancelled)
    if cause is Cause.PEER_STORAGE:  # a full disk there is fixed there: sent again later (device_transfers.py)
        return Ending(S.INTERRUPTED, text, cause, retry_later=True)
    if not device_online or cause in RETRYABLE:
        return Ending(S.INTERRUPTED, text, cause, backoff=1)  # sent again when the device is back
    return Ending(S.FAILED, text, cause, handoff="failed", handoff_reason=text)


def incoming_ending(exc: BaseException, *, cancelled: bool, superseded: bool = False) -> Ending:
    """A device transfer this daemon received stopped with ``exc``. The sender resends what was cut off (the
    partial file waits here), so a handoff is reported failed only when the failure is not worth a retry.
    ``superseded``: this side stopped it because the sender started it again (it restarted): interrupted, and the
    new attempt takes the same row over."""
    if superseded:
        return Ending(S.INTERRUPTED, "the sender started it again", Cause.INTERRUPTED)
    cause = Cause.CANCELLED if cancelled else cause_of(exc)
    cancelled = cancelled or cause is Cause.CANCELLED  # the sender's CANCEL frame: the cancel won here
    # (a write this machine refused: the sender sends it again later, after its failure said it was the disk)
    worth_retry = not cancelled and (cause in RETRYABLE or cause is Cause.STORAGE)
    # cut off: interrupted, and the sender's next attempt takes the row over (or its transfer-closed ends it)
    state = S.CANCELLED if cancelled else S.INTERRUPTED if worth_retry else S.FAILED
    # (a cancelled one leaves its handoff to the sender, whose handoff-closed says how it ended)
    return Ending(state, str(exc), cause, handoff=None if worth_retry or cancelled else "failed",
                  handoff_reason=str(exc))


__all__ = ["CLEARS_ERROR", "FINAL", "RETRYABLE", "STATES", "TRANSITIONS", "UNFINISHED", "Ending", "TransferState",
           "allowed", "check_state", "check_transition", "incoming_ending", "is_final", "outgoing_ending"]
