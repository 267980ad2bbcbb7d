"""The gate of session links on the control channel: what a paired device sends for them is checked here before
anything is stored, whatever that device is (paired, but misbehaving or with a stolen key). Limits and meters:
:mod:`p2pd.daemon.session_limits`.

Every session-link message of a device passes its rate meter (``rate_per_minute``, else ``rate_limited``); then:

- a turn (:class:`SessionTurn`) longer than the sender-side cap (:data:`TURN_MAX`) is refused (``too_large``); one
  for a link this machine does not hold is refused (``not_found``); one filed keeps that device's undelivered
  backlog bounded per session and in all (its oldest dropped);
- a link this machine does not hold yet (an introduction, :class:`SessionLinkUpdate`) must name only sessions this
  machine knows (recorded by a SessionStart hook or made by a delegation), else ``not_found``; and the device may
  keep at most ``links_per_device`` links here: its oldest link that is no longer live makes room, and when all
  are live the new one is refused (``limit_reached``);
- a refusal from the device (:class:`SessionRefusal`) is never answered; ``not_found`` for a link means the
  device's sessions are not in it: they are marked as having left it here (the device speaks for its own sessions
  only, as in any update).

Each refusal is counted; it is answered on the control channel and logged at most once per window per device and
cause, with how many were refused since (:class:`~p2pd.daemon.session_limits.Refusals`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import cast

from p2pd.daemon import session_links as rules
from p2pd.daemon.device_session import DeviceSession
from p2pd.daemon.peer_protocol import (
    TURN_MAX,
    RefusalCause,
    SessionLinkUpdate,
    SessionLinkView,
    SessionRefusal,
    SessionTurn,
)
from p2pd.daemon.session_desk import SessionDesk
from p2pd.daemon.session_limits import LinkLimits, Meter
from p2pd.errors import Cause, P2pdError

log = logging.getLogger("p2pd.sessions")


class SessionGuard:
    def __init__(self, desk: SessionDesk, limits: LinkLimits | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.desk = desk
        self.store = desk.store
        self.meter = Meter(limits if limits is not None else LinkLimits.configured())
        self.clock = clock

    @property
    def limits(self) -> LinkLimits:
        return self.meter.limits

    # ---- what comes in ---------------------------------------------------------------------------------------

    async def on_update(self, session: DeviceSession, message: SessionLinkUpdate) -> None:
        device = session.device.device_id
        view = message.link
        if not self.meter.admit(device, self.clock()):
            return await self.refuse(session, Cause.RATE_LIMITED, ref=view.id, link=view.id)
        cause = await asyncio.to_thread(self._introduction, view, device)
        if cause is not None:
            return await self.refuse(session, cause, ref=view.id, link=view.id)
        self.meter.count(device).received += 1
        await asyncio.to_thread(self.desk.merge_remote, view, device)

    async def on_turn(self, session: DeviceSession, message: SessionTurn) -> None:
        device = session.device.device_id
        if not self.meter.admit(device, self.clock()):
            return await self.refuse(session, Cause.RATE_LIMITED, ref=message.id, link=message.link)
        if len(message.text) > TURN_MAX:
            return await self.refuse(session, Cause.TOO_LARGE, ref=message.id, link=message.link)
        if await asyncio.to_thread(self.store.find_link, message.link) is None:
            return await self.refuse(session, Cause.NOT_FOUND, ref=message.id, link=message.link)
        counts = self.meter.count(device)
        counts.received += 1
        delivered, dropped = await asyncio.to_thread(self.desk.file_turn, message, device,
                                                     self.limits.backlog_per_session, self.limits.backlog_per_device)
        counts.filed += len(delivered)
        counts.dropped += dropped
        if delivered:
            log.debug("turn output of %s (%s) filed for %d linked sessions", message.sender.session,
                      session.device.name, len(delivered))

    async def on_refusal(self, session: DeviceSession, message: SessionRefusal) -> None:
        """The device refused what we sent: noted (logged once per window); a link it does not take is left by
        its sessions here."""
        device = session.device.device_id
        counts = self.meter.count(device)
        if not self.meter.admit(device, self.clock()):
            counts.refused[Cause.RATE_LIMITED.value] = counts.refused.get(Cause.RATE_LIMITED.value, 0) + 1
            return  # never answered
        counts.received += 1
        counts.theirs[message.cause] = counts.theirs.get(message.cause, 0) + message.refused
        if self.meter.refusals.refuse(device, "their refusal", self.clock()):
            log.warning("device %s refused %d session-link messages of this machine (%s, last %s)",
                        session.device.name, message.refused, message.cause, message.ref or "-")
        if message.cause == Cause.NOT_FOUND.value and message.link is not None:
            await asyncio.to_thread(self._left_by, message.link, device)

    # ---- refusals --------------------------------------------------------------------------------------------

    async def refuse(self, session: DeviceSession, cause: Cause, *, ref: str | None, link: str | None) -> None:
        device = session.device
        report = self.meter.refused(device.device_id, cause, self.clock())
        if not report:
            return
        log.warning("refused %d session-link messages from %s (%s): %s (last %s); more are counted, not logged, "
                    "for %.0f s", report, device.name, device.device_id, cause.value, ref or "-",
                    self.meter.refusals.window)
        with contextlib.suppress(P2pdError):  # gone: it learns nothing, and nothing was stored
            await session.send(SessionRefusal(cause=cast(RefusalCause, cause.value), ref=ref, link=link,
                                              refused=report))

    # ---- on the store (in a thread) -----------------------------------------------------------------------------

    def _introduction(self, view: SessionLinkView, device: str) -> Cause | None:
        """A link this machine does not hold yet, introduced by ``device``: may it be stored?"""
        if self.store.find_link(view.id) is not None or view.created_by.device != device:
            return None  # an update of a link held here, or not an introduction (the merge ignores it)
        own = [m.session for m in view.members if m.device == self.desk.own]
        if not own:
            return None  # not for this machine: the merge ignores it
        if not all(self.store.known_session(s) for s in own):
            return Cause.NOT_FOUND
        held = self.store.links_from(device)
        if len(held) < self.limits.links_per_device:
            return None
        spare = [v for v in held if not rules.live(v)]
        if len(held) - len(spare) >= self.limits.links_per_device:
            return Cause.LIMIT_REACHED
        for old in spare[:len(held) - self.limits.links_per_device + 1]:
            self.store.drop_link(old.id)
            self.meter.count(device).links_dropped += 1
        return None

    def _left_by(self, link_id: str, device: str) -> None:
        view = self.store.find_link(link_id)
        if view is None or device not in {m.device for m in view.members}:
            return
        gone = [m for m in view.members if m.device == device and m not in view.left]
        if gone:
            self.store.change_link(link_id, lambda v: v.model_copy(update={"left": [*v.left, *gone]}))


__all__ = ["SessionGuard"]
