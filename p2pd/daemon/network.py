"""The daemon's device network: one control channel per paired device, transfers and handoffs over them, and the
dispatch of what devices say on those channels.

For every paired device the daemon keeps a :class:`~p2pd.daemon.device_session.DeviceSession` (the sealed control
channel in the pair's room, see DEVICES.md). Conversations go over a WebRTC data channel opened per transfer
(:mod:`p2pd.daemon.device_transfers`); handoffs are offered, claimed and reported on the control channel; links
fan a send out to several devices (:mod:`p2pd.daemon.links`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from p2pd.config import ReceiveLimits, receive_limits
from p2pd.daemon.accept_policy import AcceptPolicy, PolicySource
from p2pd.daemon.cancels import CancelDesk
from p2pd.daemon.device_session import DeviceSession
from p2pd.daemon.device_state import DeviceState
from p2pd.daemon.device_transfers import DeviceTransfers, NetworkHost
from p2pd.daemon.devices import Device, DeviceBook
from p2pd.daemon.handoffs import FINAL as HANDOFF_FINAL
from p2pd.daemon.identity import NAME_FILE, Identity, load_identity
from p2pd.daemon.links import LinkBook
from p2pd.daemon.notices import granted_unsent, notices_for, transfer_closed
from p2pd.daemon.offer_desk import OfferDesk
from p2pd.daemon.outbox import Source, pack_outbox
from p2pd.daemon.peer_protocol import (
    FEATURES_TID,
    Control,
    HandoffClaim,
    HandoffClaimResult,
    HandoffClosed,
    HandoffOffer,
    HandoffState,
    Hello,
    LinkMember,
    LinkUpdate,
    LinkView,
    Rtc,
    SessionLinkUpdate,
    SessionRefusal,
    SessionTurn,
    TransferCancel,
    TransferClosed,
    TransferOutcome,
    TransferStart,
    features_message,
    features_of,
)
from p2pd.daemon.session_desk import SessionDesk
from p2pd.daemon.session_relay import SessionRelay
from p2pd.daemon.session_tables import SessionStore
from p2pd.daemon.store import HandoffRow, TransferRow
from p2pd.daemon.transfers import TransferState
from p2pd.errors import Cause, ConflictError, DeviceKeyChangedError, InvalidInputError, NotFoundError, P2pdError
from p2pd.transfer.partial import sweep

log = logging.getLogger("p2pd.network")

BOOK_POLL = 1.0
PARTIAL_MAX_AGE = 7 * 24 * 3600.0  # seconds a cut-off receive waits for its resume before start-up removes it


class DeviceNetwork:
    def __init__(self, folder: Path, identity: Identity, host: NetworkHost, signal_url: str, *,
                 connect_timeout: float | None = None, idle_timeout: float = 30.0,
                 partial_max_age: float = PARTIAL_MAX_AGE, policy: AcceptPolicy | None = None,
                 limits: ReceiveLimits | None = None) -> None:
        """``policy``: what incoming transfers are taken (default: the config file's ``[accept]``); ``limits``:
        the receive caps (default: the configured ones)."""
        self.folder = folder
        self.identity = identity
        self.host = host
        self.store = host.store
        self.running = host.running
        self.signal_url = signal_url
        if connect_timeout is None:
            from p2pd.config import connect_timeout as configured_connect_timeout

            connect_timeout = configured_connect_timeout()
        self.connect_timeout = connect_timeout
        self.idle_timeout = idle_timeout
        self.partial_max_age = partial_max_age
        self.book = DeviceBook(folder)
        self.links = LinkBook(folder, identity.device_id)
        self.partial = folder / "partial"  # verified blobs land here; cut-off ones wait to resume
        self.outbox = folder / "outbox"
        self.sessions: dict[str, DeviceSession] = {}
        self.offers = OfferDesk(self)  # handoffs paired devices offer to this daemon
        self.session_relay = SessionRelay(self, SessionDesk(folder, SessionStore(folder / "state.sqlite3"),
                                                            identity.device_id))  # session links (seed 003)
        self.transfers = DeviceTransfers(host, self.links, self.partial, self.offers, idle_timeout=idle_timeout,
                                         policy=PolicySource(policy),
                                         limits=limits if limits is not None else receive_limits())
        self.cancels = CancelDesk(self)  # cancels of device transfers: asked by the sender, decided by the receiver
        self._watcher: asyncio.Task[None] | None = None
        self._stopping: set[asyncio.Task[None]] = set()
        self._name_mtime = 0

    # ---- lifecycle -------------------------------------------------------------------------------------------

    async def start(self) -> None:
        """Come up: transfers a previous run left unfinished are sent again once their device is back."""
        await asyncio.to_thread(self.store.interrupted_transfers)
        swept = await asyncio.to_thread(sweep, self.partial, self.partial_max_age)
        if swept:
            log.info("removed %d partial transfers older than %g h", swept, self.partial_max_age / 3600)
        # before any device connects: a resend of the same transfer must not race its filing
        await self.transfers.file_verified(dict(self.book.devices))
        self._sync_sessions()
        self._watcher = asyncio.create_task(self._watch_book())

    async def stop(self) -> None:
        """Stop every session and the transfers they run. Peers are not told that a transfer is cancelled: to
        them this daemon went away, and they resume when it is back."""
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher
        await self.transfers.refiler.stop()
        await asyncio.gather(*(s.stop() for s in self.sessions.values()))
        self.sessions.clear()

    async def _watch_book(self) -> None:
        while True:
            await asyncio.sleep(BOOK_POLL)
            try:
                changed = await asyncio.to_thread(self.book.reload)
            except P2pdError as exc:
                log.warning("%s", exc)
                continue
            if changed:
                self._sync_sessions()
            await self._check_name()
            self.transfers.refiler.due(dict(self.book.devices))  # committed conversations this machine refused

    async def _check_name(self) -> None:
        """``p2pd devices name NEW`` (another process) renamed this device: tell every connected device."""
        try:
            mtime = (self.folder / NAME_FILE).stat().st_mtime_ns
        except FileNotFoundError:
            return
        if mtime == self._name_mtime:
            return
        self._name_mtime = mtime
        name = (await asyncio.to_thread(load_identity, self.folder, create=False)).name
        if name != self.identity.name:
            self.identity = dataclasses.replace(self.identity, name=name)
            for session in self.sessions.values():
                if session.online:
                    session.spawn(session.send(Hello(name=name)))

    def _sync_sessions(self) -> None:
        for device_id in list(self.sessions):
            current = self.book.devices.get(device_id)
            if current is None or current.secret != self.sessions[device_id].device.secret:
                session = self.sessions.pop(device_id)
                stopping = asyncio.create_task(session.stop())
                self._stopping.add(stopping)
                stopping.add_done_callback(self._stopping.discard)
        for device in self.book.devices.values():
            if device.device_id not in self.sessions:
                session = DeviceSession(self, device)
                self.sessions[device.device_id] = session
                session.start()
            else:
                self.sessions[device.device_id].device = device  # a rename

    def session(self, ref: str) -> DeviceSession:
        device = self.book.get(ref)
        session = self.sessions.get(device.device_id)
        if session is None:
            self._sync_sessions()
            session = self.sessions[device.device_id]
        return session

    # ---- what the API uses ---------------------------------------------------------------------------------

    def devices(self) -> list[dict[str, Any]]:
        return [s.view() for s in self.sessions.values()]

    def reload_policy(self) -> None:
        """SIGHUP: the config file's ``[accept]`` is read again before the next offer is judged."""
        self.transfers.policy_source.reload()
        log.info("SIGHUP: the [accept] policy will be read again")

    def should_claim(self, device: Device, offer: HandoffOffer) -> bool:
        return self.host.should_claim(device, offer)

    def target(self, ref: str) -> Device:
        """The paired device a send or handoff names, checked before any work: an unknown one is NotFoundError,
        this device itself InvalidInputError, a device refused for a changed key DeviceKeyChangedError (exit 11,
        both fingerprints in the message) — a send to it would wait for ever."""
        try:
            device = self.book.get(ref)
        except NotFoundError:
            me = self.identity
            ref = ref.strip()
            if ref == me.name or (len(ref) >= 4 and me.device_id.startswith(ref.lower())):
                raise InvalidInputError(f"{ref!r} is this device ({me.name}, {me.device_id}); name another paired "
                                        "device (`p2pd devices` lists them)") from None
            raise
        session = self.sessions.get(device.device_id)
        if session is not None and session.presence.state is DeviceState.REFUSED:
            error = session.presence.error or f"device {device.name!r} is refused"
            if session.presence.cause is Cause.KEY_CHANGED:
                raise DeviceKeyChangedError(error)
            raise ConflictError(error)
        return device

    async def send_to_device(self, ref: str, source: Source, *, handoff_id: str | None = None,
                             link_id: str | None = None) -> TransferRow:
        """Queue a conversation for a paired device (packed into the outbox by a child process); returns the
        transfer row (sent as soon as the device is online)."""
        self.target(ref)  # an unknown, own or refused device fails before any work
        packed = await pack_outbox(source, self.outbox)
        return await self.queue_blob(ref, packed.path, title=packed.title, sha256=packed.sha256,
                                     handoff_id=handoff_id, link_id=link_id)

    async def queue_blob(self, ref: str, blob_path: Path, *, title: str, sha256: str,
                         handoff_id: str | None = None, link_id: str | None = None,
                         detail: dict[str, Any] | None = None) -> TransferRow:
        """Queue an outbox blob for a paired device."""
        session = self.session(ref)
        row = await asyncio.to_thread(
            self.store.create_transfer, "out", session.device.device_id, title=title,
            size=blob_path.stat().st_size, sha256=sha256, blob_path=str(blob_path), handoff_id=handoff_id,
            link_id=link_id, detail={"device": session.device.name, **(detail or {})})
        session.kick.set()
        return row

    async def send_to_link(self, link_id: str, source: Source) -> list[TransferRow]:
        """Queue a conversation for every member of a link but this device and those that left."""
        targets = [t for t in self.links.targets(link_id) if t in self.book.devices]
        if not targets:
            raise ConflictError(f"link {link_id} has no other member paired with this device")
        packed = await pack_outbox(source, self.outbox)
        return [await self.queue_blob(device_id, packed.path, title=packed.title, sha256=packed.sha256,
                                      link_id=link_id) for device_id in targets]

    async def handoff_created(self, handoff_id: str) -> None:
        """Offer a new handoff to the devices it targets that are online now (others get it when they connect)."""
        row = await asyncio.to_thread(self.store.get_handoff, handoff_id)
        for session in self.sessions.values():
            if session.online and row.target in ("any", session.device.device_id):
                session.spawn(session.send(self._handoff_offer(row)))

    async def handoff_closed(self, row: HandoffRow, state: str, reason: str, *, but: str | None = None) -> None:
        """Tell the devices ``row`` was offered to (its claimer included) that it is taken or cancelled, so their
        lists show it and a claimer imports nothing; ``but``: the device that won it."""
        message = HandoffClosed(hid=row.id, state="cancelled" if state == "cancelled" else "taken", reason=reason)
        for session in self.sessions.values():
            device_id = session.device.device_id
            if session.online and device_id != but and row.target in ("any", device_id):
                session.spawn(session.send(message))

    async def create_link(self, name: str, refs: list[str]) -> LinkView:
        members = [LinkMember(id=self.identity.device_id, name=self.identity.name)]
        for ref in refs:
            device = self.book.get(ref)
            if device.device_id != self.identity.device_id:
                members.append(LinkMember(id=device.device_id, name=device.name))
        view = await asyncio.to_thread(self.links.create, name, members)
        self._announce(view)
        return view

    async def close_link(self, link_id: str) -> LinkView:
        view = await asyncio.to_thread(self.links.close, link_id)
        await self._stop_link_transfers(view, "the link was closed")
        self._announce(view)
        return view

    async def leave_link(self, link_id: str) -> LinkView:
        view = await asyncio.to_thread(self.links.leave, link_id)
        await self._stop_link_transfers(view, "this device left the link")
        self._announce(view)
        return view

    def _announce(self, view: LinkView) -> None:
        for member in view.members:
            session = self.sessions.get(member.id)
            if session is not None and session.online:
                session.spawn(session.send(LinkUpdate(link=view)))

    async def _stop_link_transfers(self, view: LinkView, reason: str) -> None:
        """Outgoing transfers the link no longer allows — all of them once it is closed or this device left,
        else those to members that left — are cancelled: queued ones at once, the others asked of their
        receiver (cancels.py)."""
        everyone = view.closed or self.identity.device_id in view.left

        def stopped(row: TransferRow) -> bool:
            return row.link_id == view.id and row.direction == "out" and (everyone or row.peer in view.left)

        for row in await asyncio.to_thread(self.transfers.stop_link_transfers, stopped):
            with contextlib.suppress(ConflictError, NotFoundError):
                await self.cancels.request(row, reason)

    # ---- control messages -----------------------------------------------------------------------------------

    async def greet(self, session: DeviceSession) -> None:
        """What a device gets when it (re)connects: this device's name, pending handoffs for it, the links it is
        in, and — from the store, so nothing waits in memory for a device that is away — how transfers and
        handoffs between the two ended while it was away (:mod:`p2pd.daemon.notices`)."""
        device_id = session.device.device_id
        # (it may have restarted with room for what its disk refused: that is sent again now)
        await asyncio.to_thread(self.transfers.device_back, device_id)
        await session.send(features_message())  # before the hello: an older daemon ignores it (DEVICES.md)
        await session.send(Hello(name=self.identity.name))
        for row in await asyncio.to_thread(self.store.pending_handoffs_for, device_id):
            await session.send(self._handoff_offer(row))
        for view in self.links.links.values():
            if device_id in {m.id for m in view.members}:
                await session.send(LinkUpdate(link=view))
        await self.session_relay.greet(session)
        for h in await asyncio.to_thread(granted_unsent, self.store, device_id):  # a stop cut grant from queue
            with contextlib.suppress(P2pdError):
                await self.queue_blob(device_id, Path(h.document_path), title=h.title,
                                      sha256=str(h.source.get("sha256") or ""), handoff_id=h.id)
        for message in await asyncio.to_thread(notices_for, self.store, device_id):
            await session.send(message)

    def _handoff_offer(self, row: HandoffRow) -> HandoffOffer:
        package = row.package if isinstance(row.package, dict) else {}
        messages = row.source.get("messages") if isinstance(row.source, dict) else 0
        return HandoffOffer(hid=row.id, title=(row.title or "")[:4000],
                            summary=str(package.get("summary") or "")[:4000],
                            messages=messages if isinstance(messages, int) else 0)

    async def dispatch(self, session: DeviceSession, message: Control) -> None:
        """Act on one message from a device's control channel (one handler per message type)."""
        handler = self._handlers.get(type(message))
        if handler is not None:
            await handler(session, message)

    @property
    def _handlers(self) -> dict[type[Control], Callable[[DeviceSession, Any], Awaitable[None]]]:
        return {Hello: self._on_hello, TransferClosed: self._on_transfer_closed,
                TransferCancel: self.cancels.on_cancel, TransferOutcome: self.cancels.outcome,
                Rtc: self._on_rtc, TransferStart: self._on_transfer_start, HandoffOffer: self.offers.offered,
                HandoffClaim: self._on_claim, HandoffClaimResult: self.offers.claim_result,
                HandoffClosed: self.offers.closed, HandoffState: self._on_handoff_state,
                LinkUpdate: self._on_link_update, SessionLinkUpdate: self.session_relay.on_update,
                SessionTurn: self.session_relay.on_turn, SessionRefusal: self.session_relay.on_refusal}

    async def _on_hello(self, session: DeviceSession, message: Hello) -> None:
        """The name the device gives itself: shown here from now on (a rename there reaches this device)."""
        if message.name != session.device.name:
            with contextlib.suppress(P2pdError):
                session.device = await asyncio.to_thread(self.book.rename, session.device.device_id, message.name)
                log.info("device %s is now called %s", session.device.device_id, session.device.name)
        if session.features is None:
            session.features = frozenset()  # it announced nothing before its hello: an older daemon
        await self.cancels.ask_all(session)  # cancels it has not answered yet (asked again on every contact)

    async def _on_transfer_closed(self, session: DeviceSession, message: TransferClosed) -> None:
        state, device_id = TransferState(message.state), session.device.device_id
        running = session.incoming.get(message.tid)
        if running is not None:  # it ends as the sender says once it has wound down
            self.transfers.closed_by_sender[(device_id, message.tid)] = (state, message.reason)
            running[1].cancel(message.reason or f"the sender {message.state} it")
        await asyncio.to_thread(self.transfers.close_incoming, device_id, message.tid, state, message.reason)

    def transfer_ended(self, row: TransferRow) -> None:
        """An outgoing transfer was cancelled (or failed) here: its receiver, if online, hears it now (else at
        the next contact)."""
        session = self.sessions.get(row.peer)
        message = transfer_closed(row)
        if session is not None and session.online and message is not None:
            session.spawn(session.send(message))

    async def _on_rtc(self, session: DeviceSession, message: Rtc) -> None:
        if message.tid == FEATURES_TID:
            session.features = features_of(message)
            return
        session.deliver_rtc(message)

    async def _on_transfer_start(self, session: DeviceSession, message: TransferStart) -> None:
        self.transfers.start_incoming(session, message)

    async def _on_link_update(self, session: DeviceSession, message: LinkUpdate) -> None:
        device = session.device
        before = self.links.links.get(message.link.id)
        merged = await asyncio.to_thread(self.links.merge, message.link, device.device_id)
        if merged is not None and merged != before and (merged.closed or merged.left):
            await self._stop_link_transfers(merged, f"{device.name} closed the link" if merged.closed
                                            else "the device left the link")

    async def _on_claim(self, session: DeviceSession, message: HandoffClaim) -> None:
        hid = message.hid
        device_id = session.device.device_id
        try:
            row = await asyncio.to_thread(self.store.claim_handoff, hid, device_id)
        except NotFoundError:
            row = None
        if row is None:
            with contextlib.suppress(NotFoundError):  # cancelled: its offer there ends cancelled, not taken
                gone = await asyncio.to_thread(self.store.get_handoff, hid)
                if gone.state == "cancelled" and gone.target in ("any", device_id):
                    await session.send(HandoffClosed(hid=hid, state="cancelled", reason=(gone.reason or "")[:4000]))
            await session.send(HandoffClaimResult(hid=hid, granted=False,
                                                  reason="already claimed, cancelled or not for this device"))
            return
        try:  # it stays claimed until the claimer reports started (its worker began) or how it ended
            await self.queue_blob(device_id, Path(row.document_path), title=row.title,
                                  sha256=str(row.source.get("sha256") or ""), handoff_id=hid)
        except P2pdError as exc:
            await asyncio.to_thread(self.store.transition_handoff, hid, "failed", reason=str(exc))
        # the grant after the queued transfer (both in the store): if the device goes away before it hears it,
        # the next contact tells it again (notices.py), and the transfer waits for it (chaos seed 102)
        await session.send(HandoffClaimResult(hid=hid, granted=True))
        await self.handoff_closed(row, "taken", f"claimed by {session.device.name}", but=device_id)

    async def _on_handoff_state(self, session: DeviceSession, message: HandoffState) -> None:
        try:
            row = await asyncio.to_thread(self.store.get_handoff, message.hid)
        except NotFoundError:
            return
        if row.claimed_by != session.device.device_id or row.state in HANDOFF_FINAL or row.state == message.state:
            return
        if message.state == "cancelled" and row.state != "cancelling":
            return  # only ever the answer to a cancel this side asked for
        with contextlib.suppress(P2pdError):
            await asyncio.to_thread(self.store.transition_handoff, message.hid, message.state,
                                    output=message.output or None, reason=message.reason or None,
                                    result=message.result or None)

    # ---- transfers (the device sessions' owner) --------------------------------------------------------------

    def next_outgoing(self, device_id: str) -> tuple[TransferRow | None, float | None]:
        return self.transfers.next_outgoing(device_id)

    def send_again(self, row: TransferRow) -> TransferRow:
        """Send ``row`` at its device's next turn, not after the wait it was given (RoomWaits.send_again)."""
        self.transfers.room.send_again(row)
        if (session := self.sessions.get(row.peer)) is not None:
            session.kick.set()
        return row

    async def run_outgoing(self, session: DeviceSession, row: TransferRow) -> None:
        await self.transfers.run_outgoing(session, row)


__all__ = ["DeviceNetwork", "NetworkHost"]
