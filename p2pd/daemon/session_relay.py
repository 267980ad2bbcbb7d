"""Session links across paired devices: what the device network sends and takes for them.

Changes to a session link and linked sessions' turn output for members on other devices wait in the store's
``session_outbox`` (queued by :class:`~p2pd.daemon.session_desk.SessionDesk`, in the daemon or in a hook process);
:meth:`SessionRelay.flush` sends them in order over each online device's sealed control channel and removes each
once sent — at once when queued, and whenever a device (re)connects. What devices send is checked and merged by the
desk: a device speaks only for its own sessions, and only the creator's device introduces or closes a link.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from p2pd.daemon.device_session import DeviceSession
from p2pd.daemon.peer_protocol import SessionLinkUpdate, SessionTurn, parse_control
from p2pd.daemon.session_desk import SessionDesk
from p2pd.errors import P2pdError

log = logging.getLogger("p2pd.sessions")


class RelayOwner(Protocol):
    """What the relay needs from the device network: its device sessions."""

    sessions: dict[str, DeviceSession]


class SessionRelay:
    def __init__(self, net: RelayOwner, desk: SessionDesk) -> None:
        self.net = net
        self.desk = desk
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
        await asyncio.to_thread(self.desk.merge_remote, message.link, session.device.device_id)

    async def on_turn(self, session: DeviceSession, message: SessionTurn) -> None:
        delivered = await asyncio.to_thread(self.desk.receive_turn, message, session.device.device_id)
        if delivered:
            log.info("turn output of %s (%s) filed for %d linked sessions", message.sender.session,
                     session.device.name, len(delivered))
