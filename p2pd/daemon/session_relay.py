"""Session links across paired devices: what the device network sends and takes for them.

Changes to a session link and linked sessions' turn output for members on other devices wait in the store's
``session_outbox`` (queued by :class:`~p2pd.daemon.session_desk.SessionDesk`, in the daemon or in a hook process);
:meth:`SessionRelay.flush` sends them in order over each online device's sealed control channel and removes each
once sent — at once when queued, and whenever a device (re)connects. What devices send is checked and merged by the
desk: a device speaks only for its own sessions, and only the creator's device introduces or closes a link. Before
that, :class:`~p2pd.daemon.session_guard.SessionGuard` bounds what each device may push in (rate, size, backlog,
links, sessions that exist here) and answers what it refuses.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Protocol

from p2pd.daemon.device_session import DeviceSession
from p2pd.daemon.peer_protocol import SessionLinkUpdate, SessionRefusal, SessionTurn, parse_control
from p2pd.daemon.session_desk import SessionDesk
from p2pd.daemon.session_guard import SessionGuard
from p2pd.daemon.session_limits import LinkLimits
from p2pd.errors import P2pdError

log = logging.getLogger("p2pd.sessions")


class RelayOwner(Protocol):
    """What the relay needs from the device network: its device sessions."""

    sessions: dict[str, DeviceSession]


class SessionRelay:
    def __init__(self, net: RelayOwner, desk: SessionDesk, limits: LinkLimits | None = None) -> None:
        self.net = net
        self.desk = desk
        self.guard = SessionGuard(desk, limits)
        self._locks: dict[str, asyncio.Lock] = {}

    def flush(self) -> None:
        """Send what waits for every online device (in the background)."""
        for session in self.net.sessions.values():
            if session.online:
                session.spawn(self.flush_device(session))

    async def flush_device(self, session: DeviceSession) -> None:
        device_id = session.device.device_id
        lock = self._locks.setdefault(device_id, asyncio.Lock())
        async with lock:
            while True:
                batch = await asyncio.to_thread(self.desk.store.outgoing, device_id)
                if not batch:
                    return
                for row_id, message in batch:
                    try:
                        await session.send(parse_control(message))
                    except P2pdError as exc:  # gone again: the rest waits for the next connection
                        log.info("session link messages for %s wait: %s", session.device.name, exc)
                        return
                    await asyncio.to_thread(self.desk.store.sent, row_id)

    async def greet(self, session: DeviceSession) -> None:
        """A device (re)connected: it gets our view of every session link it is in, then what waits for it."""
        device_id = session.device.device_id
        for view in await asyncio.to_thread(self.desk.store.list_links):
            if any(m.device == device_id for m in view.members) and any(m.device == self.desk.own
                                                                        for m in view.members):
                await session.send(SessionLinkUpdate(link=view))
        await self.flush_device(session)

    async def on_update(self, session: DeviceSession, message: SessionLinkUpdate) -> None:
        await self.guard.on_update(session, message)

    async def on_turn(self, session: DeviceSession, message: SessionTurn) -> None:
        await self.guard.on_turn(session, message)

    async def on_refusal(self, session: DeviceSession, message: SessionRefusal) -> None:
        await self.guard.on_refusal(session, message)

    def view(self) -> dict[str, Any]:
        """The limits, what each device pushed (counters) and what waits for each (``p2pd session-links limits``)."""
        names = {d: s.device.name for d, s in self.net.sessions.items()}
        meter = self.guard.meter.view()
        queued = self.desk.store.queued()
        devices = sorted(set(meter["devices"]) | set(queued) | set(names))
        return {"limits": meter["limits"],
                "devices": [{"device": d, "name": names.get(d, d), "queued": queued.get(d, 0),
                             **meter["devices"].get(d, {})} for d in devices]}
