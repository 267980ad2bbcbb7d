"""Transfers to and from paired devices: one WebRTC data channel per transfer, the transfer protocol of
``p2pd.transfer`` over it, each transfer a row in the store moving as :mod:`p2pd.daemon.transfers` allows.

Outgoing rows wait ``queued`` until their device's outbox worker takes them; one that is cut off (peer gone,
connection failed, peer silent, receiver busy with an older attempt, daemon stopped) becomes ``interrupted`` and is
sent again when the device is back — the receiver keeps what it had, so the transfer resumes. What a failure means
is decided on its cause (:func:`~p2pd.daemon.transfers.outgoing_ending`), never on its text.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import threading
import time
from pathlib import Path
from typing import Any, Protocol

from p2pd.config import ReceiveLimits
from p2pd.daemon.accept_policy import Accepted, AcceptPolicy, Decision, PolicySource
from p2pd.daemon.device_session import DeviceSession
from p2pd.daemon.device_state import backoff
from p2pd.daemon.devices import Device
from p2pd.daemon.links import LinkBook
from p2pd.daemon.offer_desk import OfferDesk
from p2pd.daemon.outbox import outbox_info
from p2pd.daemon.peer_protocol import HandoffOffer, TransferStart
from p2pd.daemon.pending import PendingOffers
from p2pd.daemon.ready_blob import opened_for_send
from p2pd.daemon.refiling import Refiler
from p2pd.daemon.room_waits import RoomWaits
from p2pd.daemon.running import ProgressWriter, RunningTransfers
from p2pd.daemon.store import Store, TransferRow
from p2pd.daemon.transfers import Ending, TransferState, incoming_ending, outgoing_ending
from p2pd.errors import (
    BusyError,
    Cause,
    ConflictError,
    DeclinedError,
    P2pdError,
    PeerGoneError,
    TooLargeError,
    cause_of,
)
from p2pd.support.memory import BIG_JOB, release
from p2pd.transfer.channel import Refusal, TransferControl, receive_blob
from p2pd.transfer.frames import Code, Offer
from p2pd.transfer.peer import PeerLink
from p2pd.transfer.streaming import send_stream

log = logging.getLogger("p2pd.network")

MESSAGE_SIZE = 65536
STALE_WAIT = 10.0  # seconds a new incoming transfer waits for the dead ones it replaces to let go of their files


class NetworkHost(Protocol):
    """What the network needs from the rest of the daemon."""

    store: Store
    running: RunningTransfers

    async def accept_conversation(self, device: Device, blob_path: Path, *, transfer_id: str,
                                  handoff_id: str | None, link_id: str | None) -> str:
        """Put a received, verified blob in the inbox (and, for a handoff, import it). Returns the output to
        report for a handoff (the resume command)."""
        ...

    async def resume_import(self, device: Device, entry_id: str) -> str:
        """Start-up: import a granted handoff's conversation filed before a stop cut its import off; returns the
        output to report (the resume command) when that completes it."""
        ...

    def should_claim(self, device: Device, offer: HandoffOffer) -> bool:
        """Whether this daemon claims a handoff a paired device offers."""
        ...


class DeviceTransfers:
    def __init__(self, host: NetworkHost, links: LinkBook, partial: Path, offers: OfferDesk, *,
                 idle_timeout: float, policy: PolicySource, limits: ReceiveLimits) -> None:
        self.host = host
        self.offers = offers
        self.store = host.store
        self.running = host.running
        self.links = links
        self.partial = partial  # verified blobs land here; cut-off ones wait to resume
        self.idle_timeout = idle_timeout
        self.policy_source = policy  # what incoming transfers are taken, refused or asked about (accept_policy.py)
        self.limits = limits  # the receive caps (config.py)
        self.pending = PendingOffers()  # incoming transfers waiting for a person's decision
        self._superseded: set[int] = set()  # controls of incoming transfers stopped because the sender began again
        self._links: dict[int, PeerLink] = {}  # the peer connection of each incoming attempt (by its control)
        # (device, sender's id) → (state, reason): transfers the sender said it ended while they ran here
        self.closed_by_sender: dict[tuple[str, str], tuple[TransferState, str]] = {}
        # One decision at a time about an incoming transfer's fate: its row made for an offer, its commit (running →
        # verified, before DONE), a cancel the sender asks for (cancels.py). Taken in worker threads.
        self.decisions = threading.Lock()
        self.refiler = Refiler(self)  # files what was committed here, again and again while this machine refuses
        self.room = RoomWaits()  # outgoing transfers the receiving device's disk refused: when each goes again

    @property
    def policy(self) -> AcceptPolicy:
        """The accept policy now (the config file's, read again when it changed)."""
        return self.policy_source.current()

    async def _update(self, tid: str, **fields: Any) -> None:
        await asyncio.to_thread(self.store.update_transfer, tid, **fields)

    # ---- outgoing -------------------------------------------------------------------------------------------

    def next_outgoing(self, device_id: str) -> tuple[TransferRow | None, float | None]:
        """The oldest transfer to ``device_id`` that may be sent now; else seconds until one refused for room is
        due (:class:`~p2pd.daemon.room_waits.RoomWaits`)."""
        waiting = [r for r in self.store.list_transfers(limit=1000)
                   if r.direction == "out" and r.state in (TransferState.QUEUED, TransferState.INTERRUPTED)]
        self.room.keep_only(r.id for r in waiting)  # (a wait ends with its transfer: cancelled, or sent meanwhile)
        return self.room.pick(r for r in waiting if r.peer == device_id)

    def device_back(self, device_id: str) -> None:
        """A device (re)connected: what waited for its room goes now."""
        self.room.device_back(r for r in self.store.list_transfers(TransferState.INTERRUPTED, limit=1000)
                              if r.direction == "out" and r.peer == device_id)

    async def run_outgoing(self, session: DeviceSession, row: TransferRow) -> None:
        tid = row.id
        control = self.running.add(tid, task=asyncio.current_task())  # a cancel waits for the outcome
        self.room.going(tid)
        pause = 0
        try:
            if row.link_id is not None and session.device.device_id not in self.links.targets(row.link_id):
                raise ConflictError("the device left the link")
            blob_path = Path(row.blob_path or "")
            info = await asyncio.to_thread(outbox_info, blob_path)
            await self._update(tid, state=TransferState.RUNNING)
            await session.send(TransferStart(tid=tid, handoff=row.handoff_id, link=row.link_id))
            link = await session.open_link(tid, "offer")
            try:  # zstd when the receiver's HELLO lists it, else an lz4 copy (ready_blob.py; DAEMON.md "Codecs")
                async with opened_for_send(blob_path, info) as ready:
                    result = await send_stream(link.channel, ready, idle_timeout=self.idle_timeout,
                                               on_progress=ProgressWriter(self.store, tid, with_size=True),
                                               max_message_size=MESSAGE_SIZE, control=control)
            finally:
                await link.close()
            detail = {"resumed_bytes": result.resumed_bytes, "elapsed": round(result.elapsed, 3),
                      "codec": ready.sent_codec, "path": link.path.to_dict() if link.path is not None else None}
            if result.cancel_too_late:  # (as the receiver's answer to a cancel says it: cancels.py)
                detail["cancel_too_late"] = f"{session.device.name} had already received it when the cancel reached it"
            await self._update(tid, state=TransferState.DONE, bytes_done=result.compressed_size, detail=detail)
        except (P2pdError, OSError) as exc:
            ending = outgoing_ending(exc, cancelled=control.reason, device_online=session.online,
                                     device_name=session.device.name)
            refused: dict[str, Any] | None = None
            if ending.retry_later:  # the device's disk refused it: sent again later (room_waits.py)
                ending, refused = self.room.defer(row, ending)
            # (the state, its reason and the refusal's detail in one write: a reader never sees the row
            # interrupted without saying how often and when it goes again)
            await self._end(tid, ending, row.handoff_id, detail=refused)
            pause = ending.backoff
        finally:
            self.running.remove(tid, control)
            if row.size >= BIG_JOB:
                await asyncio.to_thread(release)
        if pause:
            await asyncio.sleep(backoff(pause))

    async def _end(self, tid: str, ending: Ending, handoff_id: str | None,
                   detail: dict[str, Any] | None = None) -> None:
        # (a row that reached a final state meanwhile keeps it and its reason; one being cancelled waits for the
        # receiver's answer: it may have committed the transfer before the cancel reached it)
        if (await asyncio.to_thread(self.store.get_transfer, tid)).state == TransferState.CANCELLING:
            return
        try:
            await asyncio.to_thread(self.store.end_transfer, tid, ending.state, error=ending.reason,
                                    cause=ending.cause, detail=detail)
        except ConflictError:  # asked to cancel meanwhile
            return
        if handoff_id is not None and ending.handoff is not None:
            with contextlib.suppress(P2pdError):
                await asyncio.to_thread(self.store.transition_handoff, handoff_id, ending.handoff,
                                        reason=ending.handoff_reason)

    # ---- incoming -------------------------------------------------------------------------------------------

    def start_incoming(self, session: DeviceSession, start: TransferStart) -> None:
        """A device starts a transfer to us. It sends one transfer at a time, so a new one means any still open
        here is dead (its sender restarted): stop those first, so their partial file is free for this one."""
        stale = list(session.incoming.values())
        for _, old in stale:
            # Quietly: its connection is closed, never a CANCEL sent on it — it may be connected to the sender's new
            # attempt (both signal under the same transfer id), which would take a CANCEL for the receiver's answer
            # (chaos seed 1524154286: the sender failed a handoff "cancelled by the peer" that nobody cancelled).
            self._superseded.add(id(old))
            stale_link = self._links.get(id(old))
            if stale_link is not None:
                session.spawn(stale_link.close())
        session.expect_link(start.tid)
        control = TransferControl()
        work = self.run_incoming(session, start, control, [t for t, _ in stale])
        task = asyncio.create_task(work)
        session.incoming[start.tid] = (task, control)
        task.add_done_callback(functools.partial(_forget, session.incoming, start.tid))

    async def run_incoming(self, session: DeviceSession, start: TransferStart, control: TransferControl,
                           stale: list[asyncio.Task[None]]) -> None:
        device = session.device
        row_id: list[str] = []
        progress: list[ProgressWriter] = []
        again: list[str] = []  # the done row of a transfer already filed here, when the sender sends it again
        raw_sizes: list[int] = []
        committed: list[Path] = []  # the verified blob, once this side committed to filing it (before DONE)
        if stale:
            await asyncio.wait(stale, timeout=STALE_WAIT)
        # A handoff tag counts only for a handoff this daemon was granted by this device; any other is ignored.
        hid = await asyncio.to_thread(self.offers.honoured, start.handoff, device.device_id)

        async def decide(offer: Offer) -> bool | Refusal:
            if start.link is not None and not self.links.accepts(start.link, device.device_id):
                return False
            raw_sizes.append(offer.raw_size)
            row = await asyncio.to_thread(self._incoming_row, device, start, offer, hid)
            while row.state == TransferState.VERIFIED and self.refiler.busy(row.id):  # an earlier attempt is
                await asyncio.sleep(0.2)  # filing it: let it finish
                row = await asyncio.to_thread(self.store.get_transfer, row.id)
            if row.state == TransferState.CANCELLED:  # its sender asked to cancel it and this side agreed
                return Refusal(Code.DECLINED, "cancelled by the sender")
            if row.state in (TransferState.DONE, TransferState.VERIFIED):  # filed already, or committed and
                # waiting to be filed (refiling.py); the sender missed the DONE (chaos seed 346): it gets it
                again.append(row.id)  # again, and nothing is filed twice
                return True
            row_id.append(row.id)
            progress.append(ProgressWriter(self.store, row.id))
            self.running.add(row.id, control, asyncio.current_task())
            return await self._judge(device, row.id, offer, claimed_handoff=start.handoff is not None)

        def commit(path: Path) -> bool:  # in a worker thread, before DONE: the one commit point (SPEC.md §6)
            if again or not row_id:
                return True
            with self.decisions:
                try:
                    self.store.update_transfer(row_id[0], state=TransferState.VERIFIED)
                except ConflictError:  # cancelled first (cancels.py): never filed
                    path.unlink(missing_ok=True)
                    return False
            committed.append(path)
            return True

        try:
            link = await session.open_link(start.tid, "answer")
            self._links[id(control)] = link
            if id(control) in self._superseded:  # replaced while it connected: it goes away without a word
                await link.close()
                raise PeerGoneError("the sender started this transfer again")
            try:
                received = await receive_blob(link.channel, self.partial, decide=decide,
                                              on_progress=functools.partial(_progress, progress),
                                              idle_timeout=self.idle_timeout, max_message_size=MESSAGE_SIZE,
                                              control=control, max_raw_size=self.limits.max_size,
                                              min_rate=self.limits.min_rate, rate_window=self.limits.rate_window,
                                              validate=functools.partial(readable_blob,
                                                                         max_size=self.limits.max_size),
                                              commit=commit)
            except (P2pdError, OSError):
                if not committed:
                    raise
                received = None  # committed, then cut off (a CANCEL crossed the DONE): it is filed all the same
            finally:
                await link.close()
            if again:
                log.info("transfer %s from %s came again; it was committed here as %s", start.tid, device.name,
                         again[0])
                if received is not None:
                    row = await asyncio.to_thread(self.store.get_transfer, again[0])
                    if row.state == TransferState.VERIFIED:  # committed and waiting to be filed: that blob is
                        self.refiler.try_soon(row.id, device.device_id)  # its own; the filing is tried now
                    else:
                        await asyncio.to_thread(received.path.unlink, missing_ok=True)
                return
            detail: dict[str, Any] = {}
            if received is not None:
                detail = {"resumed_bytes": received.resumed_bytes, "elapsed": round(received.elapsed, 3),
                          "path": link.path.to_dict() if link.path is not None else None}
            await self.refiler.file(device, row_id[0], committed[0], hid=hid, link_id=start.link, detail=detail)
        except BusyError as exc:  # an older attempt still holds the partial: this one is cut off, tried again
            if row_id:
                await asyncio.to_thread(self.store.end_transfer, row_id[0], TransferState.INTERRUPTED,
                                        error=str(exc), cause=Cause.BUSY)
        except (DeclinedError, TooLargeError):
            return  # we declined (policy, person, closed link) or are over a cap: the sender hears it from
            # the transfer protocol (the row, if any, already ended with the cause)
        except (P2pdError, OSError) as exc:
            ending = incoming_ending(exc, cancelled=control.cancelled, superseded=id(control) in self._superseded)
            if committed:  # the conversation itself cannot be filed (refiling.py): the sender has it done
                ending = Ending(TransferState.FAILED, f"could not file the verified conversation: {exc}",
                                cause_of(exc), handoff="failed", handoff_reason=str(exc))
            if row_id:
                await asyncio.to_thread(self.store.end_transfer, row_id[0], ending.state, error=ending.reason,
                                        cause=ending.cause)
            closed = self.closed_by_sender.pop((device.device_id, start.tid), None)
            if closed is not None:  # the sender ended it while this attempt was still winding down (chaos seed
                # 543887713: the row stayed interrupted while both stayed connected)
                await asyncio.to_thread(self.close_incoming, device.device_id, start.tid, *closed)
            if hid is not None and isinstance(exc, P2pdError) and ending.handoff is not None:
                with contextlib.suppress(P2pdError):
                    await self.offers.fail(hid, ending.handoff_reason)
            log.warning("receiving from %s failed: %s", device.name, exc)
        finally:
            self._superseded.discard(id(control))
            self._links.pop(id(control), None)
            if row_id:
                self.running.remove(row_id[0], control)
                if raw_sizes and raw_sizes[0] >= BIG_JOB:  # verified, parsed, filed: give the memory back
                    await asyncio.to_thread(release)

    def _incoming_row(self, device: Device, start: TransferStart, offer: Offer, hid: str | None) -> TransferRow:
        """The row of an incoming transfer: the one an earlier attempt of the same transfer left interrupted (the
        sender's id is kept in ``detail.sender_tid``), so both sides keep one row per transfer; else a new one.
        A done row of it means it was filed here already and the sender missed the DONE: it is returned as is."""
        detail = {"raw_size": offer.raw_size, "device": device.name, "sender_tid": start.tid}
        with self.decisions:
            for row in self.store.list_transfers(limit=1000):
                if row.direction != "in" or row.peer != device.device_id or row.detail.get("sender_tid") != start.tid:
                    continue
                if row.state in (TransferState.DONE, TransferState.VERIFIED) and row.sha256 == offer.sha256.hex():
                    return row  # filed already (or being filed): the caller only lets the sender finish
                if row.state == TransferState.CANCELLED and row.detail.get("cancel_asked"):
                    return row  # its sender asked to cancel it (cancels.py): refused
                if row.state == TransferState.INTERRUPTED:
                    return self.store.update_transfer(row.id, title=offer.info.title, size=offer.compressed_size,
                                                      sha256=offer.sha256.hex(), detail=detail)
            return self.store.create_transfer("in", device.device_id, title=offer.info.title,
                                              size=offer.compressed_size, sha256=offer.sha256.hex(),
                                              blob_path=None, handoff_id=hid, link_id=start.link, detail=detail)

    def close_incoming(self, device_id: str, sender_tid: str, state: TransferState, reason: str) -> None:
        """The sender ended transfer ``sender_tid`` while it was not under way here (cancelled, or failed): an
        interrupted row of it here ends the same way (call in a thread)."""
        for row in self.store.list_transfers(TransferState.INTERRUPTED, limit=1000):
            if row.direction == "in" and row.peer == device_id and row.detail.get("sender_tid") == sender_tid:
                cause = Cause.CANCELLED if state is TransferState.CANCELLED else Cause.TRANSFER_FAILED
                self.store.end_transfer(row.id, state, error=reason, cause=cause)

    async def file(self, device: Device, row_id: str, path: Path, *, hid: str | None, link_id: str | None,
                   detail: dict[str, Any] | None = None) -> None:
        """File a committed (``verified``) conversation: into the inbox, imported for a handoff this daemon still
        holds, its row done."""
        hid = await self.offers.import_begins(hid, device.device_id)  # None: withdrawn while it came (not imported)
        try:
            output = await self.host.accept_conversation(device, path, transfer_id=row_id, handoff_id=hid,
                                                         link_id=link_id)
            row = await asyncio.to_thread(self.store.get_transfer, row_id)
            await self._update(row_id, state=TransferState.DONE, bytes_done=row.size, detail=detail or None)
            if hid is not None and output:  # imported by this daemon (accept_handoffs): the handoff is done
                with contextlib.suppress(ConflictError):
                    await self.offers.complete(hid, "imported by the receiving daemon", output=output)
        finally:
            await self.offers.import_ended(hid)

    async def file_verified(self, devices: dict[str, Device]) -> None:
        """Start-up, before any device connects: what was committed here and not filed is filed (refiling.py)."""
        await self.refiler.at_start(devices)

    async def _judge(self, device: Device, tid: str, offer: Offer, *, claimed_handoff: bool) -> bool | Refusal:
        """The accept policy's verdict on an offer (its row is ``tid``): refused with a typed code, accepted, or
        held pending until a person answers (:meth:`answer`)."""
        sha = offer.sha256.hex()
        recent = await asyncio.to_thread(self._accepted_from, device.device_id)
        verdict = self.policy.judge(device_id=device.device_id, device_name=device.name, sha256=sha,
                                    size=offer.raw_size, recent=recent, now=time.time(),
                                    claimed_handoff=claimed_handoff)
        if verdict.decision is Decision.REFUSE:
            await asyncio.to_thread(self.store.end_transfer, tid, TransferState.FAILED,
                                    error=f"refused by the accept policy: {verdict.reason}", cause=verdict.cause)
            log.info("refused a transfer from %s: %s", device.name, verdict.reason)
            return Refusal(verdict.code, verdict.reason)
        if verdict.decision is Decision.ASK:
            await self._update(tid, detail={"pending": True})
            accepted = await self.pending.ask(tid)
            await self._update(tid, detail={"pending": False})
            if not accepted:
                await asyncio.to_thread(self.store.end_transfer, tid, TransferState.FAILED, error="declined here",
                                        cause=Cause.DECLINED)
                return False
        await self._update(tid, state=TransferState.RUNNING, detail={"accepted_at": time.time()})
        return True

    def _accepted_from(self, device_id: str) -> list[Accepted]:
        """What was accepted from a device lately (its rows marked ``accepted_at``)."""
        out = []
        for row in self.store.list_transfers(limit=1000):
            at = row.detail.get("accepted_at")
            if row.direction == "in" and row.peer == device_id and isinstance(at, int | float):
                size = row.detail.get("raw_size")
                out.append(Accepted(row.sha256, size if isinstance(size, int) else row.size, float(at)))
        return out

    def answer(self, tid: str, accept: bool) -> None:
        """A person's answer to a pending incoming transfer (ConflictError when none waits)."""
        self.pending.answer(tid, accept)

    def stop_link_transfers(self, stopped: Any) -> list[TransferRow]:
        """The unfinished outgoing transfers ``stopped(row)`` selects (call in a thread), for the caller to cancel
        (a request to their receiver, cancels.py, unless never offered)."""
        return [row for row in self.store.list_transfers(limit=1000) if stopped(row) and row.state in (
            TransferState.QUEUED, TransferState.RUNNING, TransferState.INTERRUPTED)]


def readable_blob(path: Path, max_size: int | None = None) -> None:
    """The receive side's check before a verified blob is kept: it must parse as a conversation."""
    from p2pd.blob.stream import iter_raw
    from p2pd.conversation.stream_reader import read_stream

    pieces = iter_raw(path) if max_size is None else iter_raw(path, max_raw_size=max_size)
    read_stream(pieces, source="the received conversation")  # as a stream: within the reader's limits


def _progress(writers: list[ProgressWriter], done: int, total: int) -> None:
    if writers:  # none for a transfer filed already and sent again
        writers[0](done, total)


def _forget(table: dict[str, Any], key: str, task: object) -> None:
    entry = table.get(key)
    if entry is not None and entry[0] is task:  # not a newer attempt of the same transfer
        del table[key]


__all__ = ["MESSAGE_SIZE", "DeviceTransfers", "NetworkHost"]
