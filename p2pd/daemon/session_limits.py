"""What one paired device may push into session links here — the limits and the meters, pure (no I/O, the time
passed in).

The limits (``[session_links]`` in the config file, declared with their defaults in
:class:`p2pd.config_file.SessionLinksTable`):

- ``rate_per_minute``: session-link messages (link updates and turns) a device may send per minute, metered by a
  token bucket of that size refilled over a minute (a burst of a minute's worth, then the steady rate);
- ``backlog_per_session`` / ``backlog_per_device``: undelivered turn output a device may have waiting here, for one
  session and in all; over either, that device's **oldest** undelivered message is dropped (never another device's:
  a flood pushes out only its own, and a turn's newest output is the one worth reading);
- ``links_per_device``: links introduced by a device kept here; over it, its oldest link that is no longer live is
  dropped, and when all are live the new one is refused (``limit_reached``);
- ``queue_max_messages`` / ``queue_max_age_hours``: what waits here for an offline device (pruned by the
  housekeeping; a link update dropped there is no loss: a device that reconnects is sent every link it is in);
- ``delivered_max_age_hours``: how long messages a hook gave their session are kept for reading back (housekeeping).

:class:`Refusals` decides when a refusal is answered on the control channel and when it is logged: the first of a
kind at once, then once per :data:`WINDOW` with how many were refused meanwhile — a flood never turns into a flood
of answers (which the signaling server would meter on *our* connection) or of log lines.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from p2pd.errors import Cause

WINDOW = 60.0  # seconds: a refusal of one kind from one device is answered and logged at most once per window


@dataclass(frozen=True)
class LinkLimits:
    rate_per_minute: int = 60
    backlog_per_session: int = 50
    backlog_per_device: int = 500
    links_per_device: int = 64
    queue_max_messages: int = 1000
    queue_max_age_hours: float = 168.0
    delivered_max_age_hours: float = 168.0

    @classmethod
    def configured(cls) -> LinkLimits:
        """The ``[session_links]`` table of the config file (checked by :func:`p2pd.config_file.validate`)."""
        from p2pd.config import load_config
        from p2pd.config_file import SessionLinksTable

        table = load_config().get("session_links") or {}
        return cls(**SessionLinksTable.model_validate(table).model_dump())

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Bucket:
    """A token bucket: ``size`` tokens, refilled at ``size`` per minute."""

    size: float
    tokens: float
    at: float

    def take(self, now: float) -> bool:
        self.tokens = min(self.size, self.tokens + (now - self.at) * self.size / 60.0)
        self.at = now
        if self.tokens < 1.0:
            return False
        self.tokens -= 1.0
        return True


@dataclass
class DeviceCounts:
    """What one device pushed and what became of it (shown by ``p2pd session-links limits``)."""

    received: int = 0  # session-link messages that passed the meter and the size check
    filed: int = 0  # turn output filed for sessions here
    dropped: int = 0  # its oldest undelivered messages dropped for its newer ones (backlog)
    links_dropped: int = 0  # its links no longer live dropped for a newer one
    refused: dict[str, int] = field(default_factory=dict)  # its messages refused here, by cause
    theirs: dict[str, int] = field(default_factory=dict)  # ours it said it refused, by cause
    last_refused: str | None = None  # the cause of the last refusal


@dataclass
class _Window:
    opened: float
    pending: int = 0  # refused since the last answer / log line


class Refusals:
    """Per device and cause: counts every refusal, and says when one is to be answered and logged."""

    def __init__(self, window: float = WINDOW) -> None:
        self.window = window
        self._answers: dict[tuple[str, str], _Window] = {}

    def refuse(self, device: str, kind: str, now: float) -> int:
        """One more refusal of ``kind``; returns how many to report (this one and those held back) when it is time
        to answer and log, else 0."""
        w = self._answers.get((device, kind))
        if w is None or now - w.opened >= self.window:
            pending = (w.pending if w is not None else 0) + 1
            self._answers[(device, kind)] = _Window(opened=now)
            return pending
        w.pending += 1
        return 0


class Meter:
    """The rate meter and counters of every paired device."""

    def __init__(self, limits: LinkLimits) -> None:
        self.limits = limits
        self.buckets: dict[str, Bucket] = {}
        self.counts: dict[str, DeviceCounts] = {}
        self.refusals = Refusals()

    def count(self, device: str) -> DeviceCounts:
        return self.counts.setdefault(device, DeviceCounts())

    def admit(self, device: str, now: float) -> bool:
        """One more message from ``device``: within its rate?"""
        size = float(self.limits.rate_per_minute)
        bucket = self.buckets.setdefault(device, Bucket(size=size, tokens=size, at=now))
        return bucket.take(now)

    def refused(self, device: str, cause: Cause, now: float) -> int:
        """Count a refusal; how many to answer and log now (0: not yet, see :class:`Refusals`)."""
        c = self.count(device)
        c.refused[cause.value] = c.refused.get(cause.value, 0) + 1
        c.last_refused = cause.value
        return self.refusals.refuse(device, cause.value, now)

    def view(self) -> dict[str, Any]:
        return {"limits": self.limits.to_json(), "devices": {d: asdict(c) for d, c in sorted(self.counts.items())}}


__all__ = ["WINDOW", "Bucket", "DeviceCounts", "LinkLimits", "Meter", "Refusals"]
