"""Device-session lifecycle (pure: no I/O): the state of the control channel to one paired device, and what the
connection loop does after each attempt.

    offline ──▶ connecting ──▶ online
       ▲            │   ╲         │
       └────────────┘    ╲        │ (the channel ended)
       ▲                  ▼       │
       └──────────────── refused ◀┘ (the device could not prove its pinned key, or no longer shares the pairing)

- offline: also while this daemon waits alone in the pair's room — a stopped device shows offline (since when it
  went), never "connecting" for ever;
- connecting: the device is in the room too; CPace and the key proofs are under way;
- online: CPace done and the device proved its pinned key; the sealed control channel is up;
- offline: the server could not be reached, the device is away, or the channel ended (``cause`` says which);
- refused: the device presented another key than the pinned one, or the pair secret no longer matches. The
  session stays refused (retrying slowly) until the device proves its key again.

Decisions are made on the error's :class:`~p2pd.errors.Cause` and class, never on its text (:func:`after_failure`).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from p2pd.errors import Cause, DeviceKeyChangedError, P2pdError, WrongCodeError

BACKOFF_FIRST = 0.5
BACKOFF_MAX = 30.0
REFUSED_RETRY = 60.0


class DeviceState(StrEnum):
    OFFLINE = "offline"
    CONNECTING = "connecting"
    ONLINE = "online"
    REFUSED = "refused"


def backoff(failures: int, rng: random.Random | None = None) -> float:
    """Full-jitter exponential backoff after ``failures`` failed attempts."""
    return (rng or random).uniform(0, min(BACKOFF_MAX, BACKOFF_FIRST * 2 ** min(failures, 10)))


@dataclass
class Presence:
    """What a device session shows: its state, since when, and the last error (text for people, cause as data)."""

    state: DeviceState = DeviceState.OFFLINE
    error: str | None = None
    cause: Cause | None = None
    since: float = field(default_factory=time.time)
    failures: int = 0  # failed attempts in a row (for the backoff)

    @property
    def online(self) -> bool:
        return self.state is DeviceState.ONLINE

    def set(self, state: DeviceState, error: str | None = None, cause: Cause | None = None) -> bool:
        """Move to ``state``; returns whether the state changed."""
        changed = state is not self.state
        if changed:
            self.since = time.time()
        self.state, self.error, self.cause = state, error, cause
        return changed

    def attempt(self) -> None:
        """A new connection attempt begins (joining the room): the state stays what it was — the device is not
        known to be there yet."""

    def peer_arrived(self) -> None:
        """The device joined the room: connecting (a refused device stays marked so until it proves its key)."""
        if self.state is not DeviceState.REFUSED:
            self.set(DeviceState.CONNECTING, self.error, self.cause)

    def came_online(self) -> None:
        self.failures = 0
        self.set(DeviceState.ONLINE)

    def unreachable(self, exc: BaseException) -> float:
        """The signaling server could not be reached: offline; returns the seconds to wait before trying again."""
        self.failures += 1
        cause = exc.cause if isinstance(exc, P2pdError) else Cause.SIGNALING_UNREACHABLE  # (an OSError)
        self.set(DeviceState.OFFLINE, str(exc), cause)
        return backoff(self.failures)

    def after_failure(self, exc: P2pdError, device_name: str) -> float:
        """The attempt (or the channel) ended with ``exc``: the new state; returns the seconds to wait before
        joining the room again."""
        if isinstance(exc, DeviceKeyChangedError):
            self.set(DeviceState.REFUSED, str(exc), exc.cause)
            return REFUSED_RETRY
        if isinstance(exc, WrongCodeError):
            self.set(DeviceState.REFUSED, f"device {device_name!r} no longer shares this pairing (it removed this "
                     "device or paired again): run `p2pd pair` on both", exc.cause)
            return REFUSED_RETRY
        was_online = self.online
        self.set(DeviceState.OFFLINE, str(exc), exc.cause)
        if not was_online:
            self.failures += 1
        if exc.cause is Cause.NO_PEER:  # the device is simply away: the room expires, join it again at once
            return 0.0
        return backoff(max(self.failures, 1))

    def ended(self) -> None:
        """The control channel closed without an error."""
        if self.online:
            self.set(DeviceState.OFFLINE, "connection ended", Cause.PEER_GONE)

    def view(self) -> dict[str, Any]:
        return {"online": self.online, "state": self.state.value, "error": self.error,
                "cause": self.cause.value if self.cause is not None else None, "since": self.since}


__all__ = ["BACKOFF_FIRST", "BACKOFF_MAX", "REFUSED_RETRY", "DeviceState", "Presence", "backoff"]
