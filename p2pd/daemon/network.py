"""The daemon's device network: one control channel per paired device, transfers and handoffs over them.

For every paired device the daemon keeps a connection to the signaling server in the pair's room (see
DEVICES.md). When both devices are there they run CPace with the pair secret, prove their pinned Ed25519 keys and
keep the room as a sealed control channel. Conversations themselves go over a WebRTC data channel opened per
transfer (its SDP travels sealed on the control channel), with the transfer protocol of ``p2pd.transfer``.

Outgoing transfers are rows in the store (``queued`` → ``running`` → ``done`` | ``failed`` | ``cancelled``); a
device that is away keeps them queued, a transfer cut off (peer gone, daemon restarted) becomes ``interrupted``
and is sent again when the device is back — the receiver keeps what it had, so the transfer resumes.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from p2pd.blob import container as blob
from p2pd.conversation.document_io import dumps
from p2pd.conversation.model import ConversationDocument
from p2pd.daemon.devices import Device, DeviceBook
from p2pd.daemon.identity import Identity
from p2pd.daemon.links import LinkBook
from p2pd.daemon.peer_protocol import (
    Control,
    HandoffClaim,
    HandoffClaimResult,
    HandoffOffer,
    HandoffState,
    LinkMember,
    LinkUpdate,
    LinkView,
    Rtc,
    TransferStart,
    check_pinned_proof,
    make_proof,
    parse_control,
)
from p2pd.daemon.store import ProgressWriter
from p2pd.errors import (
    BusyError,
    ConflictError,
    DeclinedError,
    DeviceKeyChangedError,
    NotFoundError,
    P2pdError,
    TransferFailedError,
    WrongCodeError,
)
from p2pd.pairing.client import Rendezvous
from p2pd.pairing.codes import Code
from p2pd.pairing.seal import other_role
from p2pd.support.atomic import atomic_write_bytes
from p2pd.transfer.channel import TransferControl, receive_blob, send_blob
from p2pd.transfer.frames import Offer, OfferInfo

log = logging.getLogger("p2pd.network")

MESSAGE_SIZE = 65536
ROOM_WAIT = 240.0  # re-join the pair room this often while the other device is away (rooms expire after 600 s)
BACKOFF_FIRST = 0.5
BACKOFF_MAX = 30.0
REFUSED_RETRY = 60.0
BOOK_POLL = 1.0
STOP_GRACE = 5.0


class NetworkHost(Protocol):
    """What the network needs from the rest of the daemon."""

    store: Any

    async def accept_conversation(self, device: Device, blob_path: Path, *, transfer_id: str,
                                  handoff_id: str | None, link_id: str | None) -> str:
        """Put a received, verified blob in the inbox (and, for a handoff, import it). Returns the output to
        report for a handoff (the resume command)."""
        ...

    def should_claim(self, device: Device, offer: HandoffOffer) -> bool:
        """Whether this daemon claims a handoff a paired device offers."""
        ...


# ---- outbox blobs ------------------------------------------------------------------------------------------


def pack_outbox(doc: ConversationDocument, outbox: Path) -> tuple[Path, OfferInfo, str]:
    """Write ``doc`` as a blob named by its payload's SHA-256 in ``outbox`` (kept for resume), with its offer
    description beside it. Returns (blob path, offer info, sha256 hex). Call in a thread."""
    data = blob.encode(dumps(doc, pretty=False))
    sha = blob.BlobHeader.unpack(data).sha256.hex()
    outbox.mkdir(parents=True, exist_ok=True)
    path = outbox / f"{sha}.a2a.p2pd"
    info = offer_info(doc)
    # Written atomically: a send of the same conversation may be reading these files right now.
    if not path.exists():
        atomic_write_bytes(path, data)
    atomic_write_bytes(_info_path(path), info.to_json())
    return path, info, sha


def offer_info(doc: ConversationDocument) -> OfferInfo:
    return OfferInfo.normalized(doc.title or doc.context_id, doc.origin.platform,
                                doc.origin.session_id or doc.context_id, doc.counts.messages)


def outbox_info(blob_path: Path) -> OfferInfo:
    """The offer description kept beside an outbox blob (made again from the blob when it is missing)."""
    try:
        return OfferInfo.from_json(_info_path(blob_path).read_bytes())
    except (OSError, ValueError):
        from p2pd.conversation.document_io import parse_document

        return offer_info(parse_document(blob.read(blob_path), source=str(blob_path)))


def _info_path(blob_path: Path) -> Path:
    return blob_path.with_name(blob_path.name.split(".")[0] + ".offer.json")


# ---- one paired device ---------------------------------------------------------------------------------------


@dataclass
class DeviceSession:
    """The control channel to one paired device, kept up (with jittered backoff) while the daemon runs."""

    net: DeviceNetwork
    device: Device
    state: str = "offline"  # offline | connecting | online | refused
    error: str | None = None
    since: float = field(default_factory=time.time)
    rv: Rendezvous | None = None
    rtc: dict[str, asyncio.Queue[dict[str, Any]]] = field(default_factory=dict)
    online_event: asyncio.Event = field(default_factory=asyncio.Event)
    kick: asyncio.Event = field(default_factory=asyncio.Event)
    reports: list[Control] = field(default_factory=list)  # handoff states to deliver when online
    incoming: dict[str, tuple[asyncio.Task[None], TransferControl]] = field(default_factory=dict)
    tasks: set[asyncio.Task[Any]] = field(default_factory=set)
    runner: asyncio.Task[None] | None = None
    worker: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.runner = asyncio.create_task(self._run(), name=f"p2pd-device-{self.device.device_id}")
        self.worker = asyncio.create_task(self._outbox(), name=f"p2pd-outbox-{self.device.device_id}")

    async def stop(self) -> None:
        everything = [t for t in (self.runner, self.worker, *self.tasks, *(t for t, _ in self.incoming.values()))
                      if t is not None]
        for task in everything:
            task.cancel()
        if everything:
            _, stuck = await asyncio.wait(everything, timeout=STOP_GRACE)
            for task in stuck:  # never hang a shutdown; say what did not end
                log.warning("device %s: %s did not stop within %.0f s: %s", self.device.name, task.get_name(),
                            STOP_GRACE, "".join(_stack(task)))

    def view(self) -> dict[str, Any]:
        return {**self.device.public_view(), "online": self.state == "online", "state": self.state,
                "error": self.error, "since": self.since}

    def _set(self, state: str, error: str | None = None) -> None:
        if state != self.state:
            self.since = time.time()
        self.state, self.error = state, error
        if state == "online":
            self.online_event.set()
        else:
            self.online_event.clear()

    # ---- connection loop ------------------------------------------------------------------------------------

    async def _run(self) -> None:
        failures = 0
        code = Code(nameplate=self.device.room, words=(self.device.secret_bytes.hex(),))
        while True:
            if self.state != "refused":  # a refused device stays marked so until it proves its key
                self._set("connecting")
            try:
                rv = await Rendezvous.open(self.net.signal_url, role="auto", code=code, create=True,
                                           connect_timeout=10.0)
            except (P2pdError, OSError) as exc:
                failures += 1
                self._set("offline", str(exc))
                await asyncio.sleep(_backoff(failures))
                continue
            wait = ROOM_WAIT
            try:
                await rv.pair(timeout=ROOM_WAIT)
                await rv.send_sealed(make_proof(self.net.identity, rv.exporter, rv.role))
                check_pinned_proof(await rv.recv_sealed(timeout=20.0), rv.exporter, other_role(rv.role), self.device)
                self.rv = rv
                failures = 0
                self._set("online")
                log.info("device %s (%s) is online", self.device.name, self.device.device_id)
                await self._serve(rv)
            except DeviceKeyChangedError as exc:
                log.warning("%s", exc)
                self._set("refused", str(exc))
                wait = REFUSED_RETRY
            except WrongCodeError:
                msg = (f"device {self.device.name!r} no longer shares this pairing (it removed this device or "
                       "paired again): run `p2pd pair` on both")
                log.warning("%s", msg)
                self._set("refused", msg)
                wait = REFUSED_RETRY
            except P2pdError as exc:
                was_online = self.state == "online"
                self._set("offline", str(exc))
                failures += 0 if was_online else 1
                wait = 0.0 if "no peer joined" in str(exc) else _backoff(max(failures, 1))
            finally:
                self.rv = None
                if self.state == "online":
                    self._set("offline", "connection ended")
                for queue in self.rtc.values():
                    queue.put_nowait({"type": "gone"})
                await rv.close()
            await asyncio.sleep(wait)

    async def _serve(self, rv: Rendezvous) -> None:
        self.kick.set()
        for report in list(self.reports):
            await self.send(report)
            self.reports.remove(report)
        await self.net.greet(self)
        while True:
            message = parse_control(await rv.recv_sealed())
            await self.net.dispatch(self, message)

    async def send(self, message: Control) -> None:
        rv = self.rv
        if rv is None:
            raise TransferFailedError(f"device {self.device.name!r} is not connected")
        await rv.send_sealed(message.model_dump(exclude_none=True))

    def report(self, message: HandoffState) -> None:
        """Deliver a handoff state now, or as soon as the device is back."""
        self.reports.append(message)
        if self.rv is not None:
            self.spawn(self._flush_reports())

    async def _flush_reports(self) -> None:
        for report in list(self.reports):
            try:
                await self.send(report)
            except P2pdError:
                return
            with contextlib.suppress(ValueError):
                self.reports.remove(report)

    def spawn(self, coro: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self.tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("device %s: %s", self.device.name, task.exception())

    # ---- peer connections per transfer ------------------------------------------------------------------------

    async def open_link(self, tid: str, role: str) -> Any:
        from p2pd.transfer.peer import connect

        queue: asyncio.Queue[dict[str, Any]] = self.rtc.setdefault(tid, asyncio.Queue())

        async def send(m: dict[str, Any]) -> None:
            await self.send(Rtc(tid=tid, m=m))

        async def recv() -> dict[str, Any]:
            m = await queue.get()
            if m.get("type") == "gone":
                raise TransferFailedError(f"device {self.device.name!r} went away")
            return m

        try:
            link = await connect(role, send, recv, timeout=self.net.connect_timeout,
                                 server_ice=self.rv.ice_servers if self.rv is not None else ())
            if link.path is not None:
                log.info("device %s: transfer %s %s", self.device.name, tid, link.path.describe())
            return link
        finally:
            self.rtc.pop(tid, None)

    # ---- outgoing transfers ---------------------------------------------------------------------------------

    async def _outbox(self) -> None:
        """The single sender task of this device: sends queued transfers one at a time, while online."""
        while True:
            await self.online_event.wait()
            self.kick.clear()
            row = await asyncio.to_thread(self.net.next_outgoing, self.device.device_id)
            if row is None:
                await self.kick.wait()
                continue
            try:
                await self.net.run_outgoing(self, row)
            except P2pdError as exc:  # e.g. the row reached a final state meanwhile (cancelled)
                log.info("transfer %s: %s", row.id, exc)
            except Exception:  # a bug must not stop this device's sends for good
                log.exception("transfer %s failed unexpectedly", row.id)
                await asyncio.sleep(1.0)


def _stack(task: asyncio.Task[Any]) -> list[str]:
    import io

    buf = io.StringIO()
    task.print_stack(file=buf)
    return [buf.getvalue()]


def _forget(table: dict[str, Any], key: str, _task: object) -> None:
    table.pop(key, None)


def _backoff(failures: int) -> float:
    """Full-jitter exponential backoff."""
    return random.uniform(0, min(BACKOFF_MAX, BACKOFF_FIRST * 2 ** min(failures, 10)))


# ---- the network -----------------------------------------------------------------------------------------------


class DeviceNetwork:
    def __init__(self, folder: Path, identity: Identity, host: NetworkHost, signal_url: str, *,
                 connect_timeout: float | None = None, idle_timeout: float = 30.0) -> None:
        from p2pd.config import connect_timeout as configured_connect_timeout

        self.folder = folder
        self.identity = identity
        self.host = host
        self.store = host.store
        self.signal_url = signal_url
        self.connect_timeout = connect_timeout if connect_timeout is not None else configured_connect_timeout()
        self.idle_timeout = idle_timeout
        self.book = DeviceBook(folder)
        self.links = LinkBook(folder, identity.device_id)
        self.partial = folder / "partial"  # verified blobs land here; cut-off ones wait to resume
        self.outbox = folder / "outbox"
        self.sessions: dict[str, DeviceSession] = {}
        self.controls: dict[str, TransferControl] = {}
        self._watcher: asyncio.Task[None] | None = None
        self._stopping: set[asyncio.Task[None]] = set()

    # ---- lifecycle -------------------------------------------------------------------------------------------

    async def start(self) -> None:
        """Come up: transfers a previous run left unfinished are sent again once their device is back."""
        await asyncio.to_thread(self.store.interrupted_transfers)
        self._sync_sessions()
        self._watcher = asyncio.create_task(self._watch_book())

    async def stop(self) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher
        for control in self.controls.values():
            control.cancel("the daemon is stopping")
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

    async def send_to_device(self, ref: str, doc: ConversationDocument, *, handoff_id: str | None = None,
                             link_id: str | None = None) -> Any:
        """Queue ``doc`` for a paired device; returns the transfer row (sent as soon as the device is online)."""
        self.book.get(ref)  # an unknown device fails before any work
        path, _, sha = await asyncio.to_thread(pack_outbox, doc, self.outbox)
        return await self.queue_blob(ref, path, title=doc.title or doc.context_id, sha256=sha,
                                     handoff_id=handoff_id, link_id=link_id)

    async def queue_blob(self, ref: str, blob_path: Path, *, title: str, sha256: str,
                         handoff_id: str | None = None, link_id: str | None = None,
                         detail: dict[str, Any] | None = None) -> Any:
        """Queue an outbox blob for a paired device."""
        session = self.session(ref)
        row = await asyncio.to_thread(
            self.store.create_transfer, "out", session.device.device_id, title=title,
            size=blob_path.stat().st_size, sha256=sha256, blob_path=str(blob_path), handoff_id=handoff_id,
            link_id=link_id, detail={"device": session.device.name, **(detail or {})})
        session.kick.set()
        return row

    async def send_to_link(self, link_id: str, doc: ConversationDocument) -> list[Any]:
        """Queue ``doc`` for every member of a link but this device and those that left."""
        targets = [t for t in self.links.targets(link_id) if t in self.book.devices]
        if not targets:
            raise ConflictError(f"link {link_id} has no other member paired with this device")
        path, _, sha = await asyncio.to_thread(pack_outbox, doc, self.outbox)
        return [await self.queue_blob(device_id, path, title=doc.title or doc.context_id, sha256=sha,
                                      link_id=link_id) for device_id in targets]

    def cancel_transfer(self, transfer_id: str, reason: str = "cancelled by the user") -> bool:
        control = self.controls.get(transfer_id)
        if control is None:
            return False
        control.cancel(reason)
        return True

    async def handoff_created(self, handoff_id: str) -> None:
        """Offer a new handoff to the devices it targets that are online now (others get it when they connect)."""
        row = await asyncio.to_thread(self.store.get_handoff, handoff_id)
        for session in self.sessions.values():
            if session.state == "online" and row.target in ("any", session.device.device_id):
                session.spawn(session.send(self._handoff_offer(row)))

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
            if session is not None and session.state == "online":
                session.spawn(session.send(LinkUpdate(link=view)))

    async def _stop_link_transfers(self, view: LinkView, reason: str) -> None:
        """Outgoing transfers the link no longer allows — all of them once it is closed or this device left,
        else those to members that left — are cancelled: queued ones in the store, running ones through their
        control (on the event loop, where the transfer runs)."""
        everyone = view.closed or self.identity.device_id in view.left

        def stopped(row: Any) -> bool:
            return row.link_id == view.id and row.direction == "out" and (everyone or row.peer in view.left)

        def cancel_queued() -> list[str]:
            for row in self.store.list_transfers(limit=1000):
                if stopped(row) and row.state in ("queued", "interrupted"):
                    self.store.update_transfer(row.id, state="cancelled", error=reason)
            return [tid for tid in list(self.controls) if stopped(self.store.get_transfer(tid))]

        for tid in await asyncio.to_thread(cancel_queued):
            control = self.controls.get(tid)
            if control is not None:
                control.cancel(reason)

    # ---- control messages -----------------------------------------------------------------------------------

    async def greet(self, session: DeviceSession) -> None:
        """What a device gets when it (re)connects: pending handoffs for it and the links it is in."""
        device_id = session.device.device_id
        for row in await asyncio.to_thread(self.store.pending_handoffs_for, device_id):
            await session.send(self._handoff_offer(row))
        for view in self.links.links.values():
            if device_id in {m.id for m in view.members}:
                await session.send(LinkUpdate(link=view))

    def _handoff_offer(self, row: Any) -> HandoffOffer:
        package = row.package if isinstance(row.package, dict) else {}
        messages = row.source.get("messages") if isinstance(row.source, dict) else 0
        return HandoffOffer(hid=row.id, title=(row.title or "")[:4000],
                            summary=str(package.get("summary") or "")[:4000],
                            messages=messages if isinstance(messages, int) else 0)

    async def dispatch(self, session: DeviceSession, message: Control) -> None:
        device = session.device
        if isinstance(message, Rtc):
            queue = session.rtc.get(message.tid)
            if queue is not None:
                queue.put_nowait(message.m)
        elif isinstance(message, TransferStart):
            # A device sends one transfer at a time, so a new one means any still open here is dead (its sender
            # restarted): stop those first, so their partial file is free for this one to resume from.
            stale = list(session.incoming.values())
            for _, old in stale:
                old.cancel("the sender started again")
            session.rtc.setdefault(message.tid, asyncio.Queue())
            control = TransferControl()
            work = self.run_incoming(session, message, control, [t for t, _ in stale])
            task = asyncio.create_task(work)
            session.incoming[message.tid] = (task, control)
            task.add_done_callback(functools.partial(_forget, session.incoming, message.tid))
        elif isinstance(message, HandoffOffer):
            if self.host.should_claim(device, message):
                await session.send(HandoffClaim(hid=message.hid))
        elif isinstance(message, HandoffClaim):
            await self._on_claim(session, message.hid)
        elif isinstance(message, HandoffClaimResult):
            log.info("handoff %s %s by %s%s", message.hid, "granted" if message.granted else "refused",
                     device.name, f": {message.reason}" if message.reason else "")
        elif isinstance(message, HandoffState):
            await self._on_handoff_state(session, message)
        elif isinstance(message, LinkUpdate):
            before = self.links.links.get(message.link.id)
            merged = await asyncio.to_thread(self.links.merge, message.link, device.device_id)
            if merged is not None and merged != before and (merged.closed or merged.left):
                await self._stop_link_transfers(merged, f"{device.name} closed the link" if merged.closed
                                                else "the device left the link")

    async def _on_claim(self, session: DeviceSession, hid: str) -> None:
        device_id = session.device.device_id
        try:
            row = await asyncio.to_thread(self.store.claim_handoff, hid, device_id)
        except NotFoundError:
            row = None
        if row is None:
            await session.send(HandoffClaimResult(hid=hid, granted=False,
                                                  reason="already claimed, cancelled or not for this device"))
            return
        await session.send(HandoffClaimResult(hid=hid, granted=True))
        try:
            await self.queue_blob(device_id, Path(row.document_path), title=row.title,
                                  sha256=str(row.source.get("sha256") or ""), handoff_id=hid)
            await asyncio.to_thread(self.store.transition_handoff, hid, "started")
        except P2pdError as exc:
            await asyncio.to_thread(self.store.transition_handoff, hid, "failed", reason=str(exc))

    async def _on_handoff_state(self, session: DeviceSession, message: HandoffState) -> None:
        try:
            row = await asyncio.to_thread(self.store.get_handoff, message.hid)
        except NotFoundError:
            return
        if row.claimed_by != session.device.device_id or row.state in ("completed", "failed", "cancelled"):
            return
        with contextlib.suppress(P2pdError):
            await asyncio.to_thread(self.store.transition_handoff, message.hid, message.state,
                                    output=message.output or None, reason=message.reason or None)

    # ---- transfers ----------------------------------------------------------------------------------------------

    def next_outgoing(self, device_id: str) -> Any:
        rows = [r for r in self.store.list_transfers(limit=1000)
                if r.direction == "out" and r.peer == device_id and r.state in ("queued", "interrupted")]
        return min(rows, key=lambda r: r.created_at) if rows else None

    async def run_outgoing(self, session: DeviceSession, row: Any) -> None:
        tid = row.id
        control = self.controls.setdefault(tid, TransferControl())
        update = self._updater(tid)
        try:
            if row.link_id is not None and session.device.device_id not in self.links.targets(row.link_id):
                raise ConflictError("the device left the link")
            blob_path = Path(row.blob_path)
            info = await asyncio.to_thread(outbox_info, blob_path)
            await update(state="running", error=None)
            await session.send(TransferStart(tid=tid, handoff=row.handoff_id, link=row.link_id))
            link = await session.open_link(tid, "offer")
            try:
                result = await send_blob(link.channel, blob_path, info, on_progress=ProgressWriter(self.store, tid),
                                         idle_timeout=self.idle_timeout, max_message_size=MESSAGE_SIZE,
                                         control=control)
            finally:
                await link.close()
            await update(state="done", bytes_done=result.compressed_size,
                         detail={"resumed_bytes": result.resumed_bytes, "elapsed": round(result.elapsed, 3),
                                 "path": link.path.to_dict() if link.path is not None else None})
        except BusyError as exc:  # the receiver still holds an older attempt: try again shortly
            await update(state="interrupted", error=str(exc))
            await asyncio.sleep(_backoff(2))
            return
        except ConflictError as exc:
            await update(state="cancelled", error=str(exc))
        except DeclinedError as exc:
            await update(state="failed", error=f"declined by {session.device.name}: {exc}")
            await self._fail_handoff(row.handoff_id, f"declined by {session.device.name}")
        except (P2pdError, OSError) as exc:
            if control.cancelled:
                await update(state="cancelled", error=control.reason)
                await self._cancel_handoff(row.handoff_id, control.reason or "cancelled")
            elif session.state != "online" or "went away" in str(exc) or "connection" in str(exc):
                await update(state="interrupted", error=str(exc))  # sent again when the device is back
                await asyncio.sleep(_backoff(1))
            else:
                await update(state="failed", error=str(exc))
                await self._fail_handoff(row.handoff_id, str(exc))
        finally:
            self.controls.pop(tid, None)

    async def run_incoming(self, session: DeviceSession, start: TransferStart, control: TransferControl,
                           stale: list[asyncio.Task[None]]) -> None:
        device = session.device
        row_id: list[str] = []
        progress: list[ProgressWriter] = []
        if stale:
            await asyncio.wait(stale, timeout=10.0)

        async def decide(offer: Offer) -> bool:
            if start.link is not None and not self.links.accepts(start.link, device.device_id):
                return False
            row = await asyncio.to_thread(
                self.store.create_transfer, "in", device.device_id, title=offer.info.title,
                size=offer.compressed_size, sha256=offer.sha256.hex(), blob_path=None,
                handoff_id=start.handoff, link_id=start.link)
            row_id.append(row.id)
            progress.append(ProgressWriter(self.store, row.id))
            self.controls[row.id] = control
            await asyncio.to_thread(self.store.update_transfer, row.id, state="running")
            return True

        try:
            link = await session.open_link(start.tid, "answer")
            try:
                received = await receive_blob(link.channel, self.partial, decide=decide,
                                              on_progress=lambda done, total: progress[0](done, total),
                                              idle_timeout=self.idle_timeout, max_message_size=MESSAGE_SIZE,
                                              control=control)
            finally:
                await link.close()
            output = await self.host.accept_conversation(device, received.path, transfer_id=row_id[0],
                                                         handoff_id=start.handoff, link_id=start.link)
            await asyncio.to_thread(self.store.update_transfer, row_id[0], state="done",
                                    bytes_done=received.offer.compressed_size,
                                    detail={"resumed_bytes": received.resumed_bytes,
                                            "elapsed": round(received.elapsed, 3),
                                            "path": link.path.to_dict() if link.path is not None else None})
            if start.handoff is not None:
                session.report(HandoffState(hid=start.handoff, state="completed", output=output[:4000]))
        except (DeclinedError, BusyError):
            return  # we declined (a closed link) or are busy: the sender hears it from the transfer protocol
        except (P2pdError, OSError) as exc:
            if row_id:
                await asyncio.to_thread(self.store.update_transfer, row_id[0],
                                        state="cancelled" if control.cancelled else "failed", error=str(exc))
            if start.handoff is not None and isinstance(exc, P2pdError) and "went away" not in str(exc):
                session.report(HandoffState(hid=start.handoff, state="failed", reason=str(exc)[:4000]))
            log.warning("receiving from %s failed: %s", device.name, exc)
        finally:
            if row_id:
                self.controls.pop(row_id[0], None)

    def _updater(self, tid: str) -> Callable[..., Awaitable[None]]:
        async def update(**fields: Any) -> None:
            await asyncio.to_thread(self.store.update_transfer, tid, **fields)

        return update

    async def _fail_handoff(self, hid: str | None, reason: str) -> None:
        if hid is not None:
            with contextlib.suppress(P2pdError):
                await asyncio.to_thread(self.store.transition_handoff, hid, "failed", reason=reason)

    async def _cancel_handoff(self, hid: str | None, reason: str) -> None:
        if hid is not None:
            with contextlib.suppress(P2pdError):
                await asyncio.to_thread(self.store.transition_handoff, hid, "cancelled", reason=reason)


__all__ = ["DeviceNetwork", "DeviceSession", "NetworkHost", "outbox_info", "pack_outbox"]
