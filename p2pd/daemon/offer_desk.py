"""The receiving side of handoffs between daemons: what paired devices offer is recorded (listed whatever
``accept_handoffs`` says), claimed by the daemon itself (``accept_handoffs = true``) or by a person or an agent, and
the worker's progress is reported back to the sender. The lifecycle is :mod:`p2pd.daemon.offers`; the rows live in
the store's ``offers`` table; the messages are :mod:`p2pd.daemon.peer_protocol`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Protocol

from p2pd.daemon.offers import FINAL, HELD
from p2pd.daemon.peer_protocol import (
    CANCEL_ASK,
    HandoffClaim,
    HandoffClaimResult,
    HandoffClosed,
    HandoffOffer,
    HandoffState,
)
from p2pd.daemon.store import OfferRow, Store
from p2pd.errors import ConflictError, DeviceOfflineError, P2pdError, PeerTimeoutError
from p2pd.support.text import visible

if TYPE_CHECKING:
    from p2pd.daemon.device_session import DeviceSession
    from p2pd.daemon.devices import Device

log = logging.getLogger("p2pd.network")

CLAIM_WAIT = 20.0  # seconds a claim waits for the sender's answer
MAX_REPORT = 4000  # characters of a result, reason or output that fit in a control message


class DeskOwner(Protocol):
    store: Store
    sessions: dict[str, DeviceSession]

    def should_claim(self, device: Device, offer: HandoffOffer) -> bool: ...


class OfferDesk:
    def __init__(self, owner: DeskOwner) -> None:
        self.owner = owner
        self.store = owner.store
        self._answers: dict[tuple[str, str], asyncio.Future[HandoffClaimResult]] = {}
        # The claimer's commit point for a handoff: its import. One decision at a time between "import it" and
        # the sender's cancel; a cancel that comes while an import runs waits for it (``deferred``).
        self.lock = asyncio.Lock()
        self.importing: set[str] = set()
        self.deferred: dict[str, tuple[DeviceSession, HandoffClosed]] = {}

    async def _move(self, row: OfferRow, state: str, **fields: object) -> OfferRow:
        return await asyncio.to_thread(self.store.move_offer, row.id, row.from_device, state, **fields)

    # ---- what the sender says ------------------------------------------------------------------------------

    async def offered(self, session: DeviceSession, offer: HandoffOffer) -> None:
        row = await asyncio.to_thread(self.store.offer_received, offer.hid, session.device.device_id,
                                      title=offer.title, summary=offer.summary, messages=offer.messages)
        if row.state == "claiming":  # offered again: the claim was never answered (the channel broke)
            row = await self._move(row, "offered")
        if row.state == "offered" and self.owner.should_claim(session.device, offer):
            try:
                await self.claim(row.id, mode="auto", wait=0)
            except P2pdError as exc:
                log.warning("could not claim handoff %s from %s: %s", row.id, session.device.name, exc)

    async def claim_result(self, session: DeviceSession, message: HandoffClaimResult) -> None:
        key = (message.hid, session.device.device_id)
        row = await asyncio.to_thread(self.store.find_offer, *key)
        if row is not None and row.state == "claiming":
            await self._move(row, "claimed" if message.granted else "taken",
                             reason=None if message.granted else message.reason or "refused by the sender")
        log.info("handoff %s %s by %s%s", message.hid, "granted" if message.granted else "refused",
                 session.device.name, f": {visible(message.reason)}" if message.reason else "")
        answer = self._answers.pop(key, None)
        if answer is not None and not answer.done():
            answer.set_result(message)

    async def closed(self, session: DeviceSession, message: HandoffClosed) -> None:
        """Another device took it, or the sender cancelled it. A sender that speaks ``cancel-ask`` only asks: once
        this daemon began importing it, it completes (the cancel came too late); else it is cancelled here and
        the sender is told so (``handoff-state`` cancelled) — asked again, answered again."""
        async with self.lock:
            row = await asyncio.to_thread(self.store.find_offer, message.hid, session.device.device_id)
            if row is not None and row.state not in FINAL:
                if message.state == "cancelled" and row.id in self.importing:
                    self.deferred[row.id] = (session, message)  # answered when the import has ended
                    return
                row = await self._move(row, message.state, reason=message.reason or None)
        if message.state != "cancelled" or CANCEL_ASK not in (session.features or ()):
            return
        if row is None or row.state in ("cancelled", "taken"):
            self.report(session.device.device_id, HandoffState(hid=message.hid, state="cancelled"))
        elif row.state == "completed":
            self.report(row.from_device, HandoffState(hid=row.id, state="completed", result=(row.result or "")[
                :MAX_REPORT], output=(row.resume_command or "")[:MAX_REPORT]))
        elif row.state == "failed":
            self.report(row.from_device, HandoffState(hid=row.id, state="failed", reason=(row.reason or "")[
                :MAX_REPORT]))

    async def import_begins(self, hid: str | None, device_id: str) -> str | None:
        """The commit point of a handoff's import: ``hid`` if it is still this daemon's to import (then marked
        importing until :meth:`import_ended`), else None (an ordinary conversation)."""
        if hid is None:
            return None
        async with self.lock:
            if await asyncio.to_thread(self.honoured, hid, device_id) is None:
                return None
            self.importing.add(hid)
        return hid

    async def import_ended(self, hid: str | None) -> None:
        """A cancel that came during the import is answered now (from the offer's state)."""
        if hid is None:
            return
        self.importing.discard(hid)
        waiting = self.deferred.pop(hid, None)
        if waiting is not None:
            await self.closed(*waiting)

    def honoured(self, hid: str | None, device_id: str) -> str | None:
        """``hid`` when it names a handoff this daemon was granted by ``device_id`` and has not finished, else
        None (the tag is ignored). Call in a thread."""
        if hid is None:
            return None
        row = self.store.find_offer(hid, device_id)
        return hid if row is not None and row.state in HELD else None

    # ---- what this side does -------------------------------------------------------------------------------

    async def claim(self, hid: str, *, mode: str = "worker", wait: float = CLAIM_WAIT) -> OfferRow:
        """Ask the device that offered ``hid`` for it. ``wait`` > 0 waits for the answer: the claimed row, or
        ConflictError when another claimer won; PeerTimeoutError without an answer (the offer stays open)."""
        row = await asyncio.to_thread(self.store.get_offer, hid)
        if row.state in HELD:
            return row
        session = self.owner.sessions.get(row.from_device)
        if session is None or not session.online:
            name = session.device.name if session is not None else row.from_device
            raise DeviceOfflineError(f"device {name!r}, which offered handoff {hid}, is not connected; claim it "
                                     "when it is back")
        row = await self._move(row, "claiming", mode=mode)
        key = (row.id, row.from_device)
        answer: asyncio.Future[HandoffClaimResult] = asyncio.get_running_loop().create_future()
        self._answers[key] = answer
        try:
            await session.send(HandoffClaim(hid=hid))
            if wait <= 0:
                return row
            try:
                await asyncio.wait_for(asyncio.shield(answer), wait)
            except TimeoutError:
                with contextlib.suppress(P2pdError):
                    await self._move(row, "offered")
                raise PeerTimeoutError(f"device {session.device.name!r} did not answer the claim of {hid} within "
                                       f"{wait:g} s; it is still offered") from None
        except P2pdError:
            if not answer.done():
                with contextlib.suppress(P2pdError):
                    await self._move(row, "offered")
            raise
        finally:
            if wait > 0:
                self._answers.pop(key, None)
        row = await asyncio.to_thread(self.store.get_offer, hid)
        if row.state == "taken":
            raise ConflictError(f"handoff {hid} went to another claimer ({visible(row.reason or 'refused')})")
        return row

    async def start(self, hid: str) -> OfferRow:
        row = await asyncio.to_thread(self.store.get_offer, hid)
        row = await self._move(row, "started")
        self.report(row.from_device, HandoffState(hid=hid, state="started"))
        return row

    async def complete(self, hid: str, result: str, *, output: str | None = None) -> OfferRow:
        row = await asyncio.to_thread(self.store.get_offer, hid)
        if row.state == "claimed":  # the sender's lifecycle goes through started
            self.report(row.from_device, HandoffState(hid=hid, state="started"))
        row = await self._move(row, "completed", result=result)
        self.report(row.from_device, HandoffState(hid=hid, state="completed", result=result[:MAX_REPORT],
                                                  output=(output or row.resume_command or "")[:MAX_REPORT]))
        return row

    async def fail(self, hid: str, reason: str) -> OfferRow:
        row = await asyncio.to_thread(self.store.get_offer, hid)
        row = await self._move(row, "failed", reason=reason)
        self.report(row.from_device, HandoffState(hid=hid, state="failed", reason=reason[:MAX_REPORT]))
        return row

    def report(self, device_id: str, message: HandoffState) -> None:
        """Tell the sender (now, or when it is back)."""
        session = self.owner.sessions.get(device_id)
        if session is not None:
            session.report(message)


__all__ = ["CLAIM_WAIT", "MAX_REPORT", "OfferDesk"]
