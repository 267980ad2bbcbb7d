"""Cancelling a transfer to a paired device: a request from the sender, decided by the receiver.

The receiver is the side that files (and, for a handoff, imports), so its commit point is the only one: a
transfer's row there becomes ``verified`` — durably, before it sends DONE — or it does not
(:mod:`p2pd.daemon.device_transfers`). A CANCEL frame that crosses a DONE cannot tell the sender who won, so the
sender never decides a cancel alone once the receiver may hold the transfer:

- sender (:meth:`CancelDesk.request`): a ``queued`` row was never offered: ``cancelled`` at once. Any other
  unfinished row becomes ``cancelling`` (not final; ``error`` says why, ``cause`` cancelled); a running attempt is
  stopped (its CANCEL frame stops the receiver early if it had not committed), and the receiver is asked
  (``transfer-cancel``) now and on every contact until it answers (:meth:`CancelDesk.ask_all` at its hello);
- receiver (:meth:`CancelDesk.decide`, in one lock with the commit): its row of that transfer ``verified`` or
  ``done`` → ``done`` (the cancel came too late; it files it); else every unfinished row of it ends ``cancelled``
  (a verified blob waiting in ``partial/`` is removed), or — none yet: the control message overtook the offer — a
  cancelled row is made so that a later offer of it is refused. The decision is in the store before the answer
  (``transfer-outcome``) is sent, and an ask that comes again gets the same answer, so either side may die
  between decision and answer;
- sender (:meth:`CancelDesk.outcome`): ``cancelled`` → cancelled (its handoff, if any, too); ``done`` → done,
  with ``detail.cancel_too_late`` saying the cancel lost the race.

A device that does not announce the ``cancel-ask`` feature (an older daemon) is told as before: the sender's row
ends ``cancelled`` at its next hello and ``transfer-closed`` tells it (that receiver may still have filed it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Protocol

from p2pd.daemon.notices import transfer_closed
from p2pd.daemon.peer_protocol import CANCEL_ASK, TransferCancel, TransferOutcome
from p2pd.daemon.running import RunningTransfers
from p2pd.daemon.store import HandoffRow, Store, TransferRow
from p2pd.daemon.transfers import TransferState
from p2pd.errors import Cause, ConflictError, NotFoundError, P2pdError
from p2pd.transfer.partial import final_name

if TYPE_CHECKING:
    from p2pd.daemon.device_session import DeviceSession
    from p2pd.daemon.device_transfers import DeviceTransfers
    from p2pd.daemon.identity import Identity

log = logging.getLogger("p2pd.network")

S = TransferState
MAX_REASON = 4000


ANSWER_WAIT = 3.0  # seconds a cancel through the API waits for the device's answer before it returns


class CancelOwner(Protocol):
    store: Store
    running: RunningTransfers
    sessions: dict[str, DeviceSession]
    transfers: DeviceTransfers
    identity: Identity

    async def handoff_closed(self, row: HandoffRow, state: str, reason: str, *, but: str | None = None) -> None: ...


class CancelDesk:
    def __init__(self, owner: CancelOwner) -> None:
        self.owner = owner
        self.store = owner.store

    # ---- the sender -------------------------------------------------------------------------------------------

    async def cancel_transfer(self, row: TransferRow, reason: str) -> TransferRow:
        """The API's cancel of an outgoing device transfer: :meth:`request`, then a moment for the answer. The row
        is returned ``cancelled``, or ``cancelling`` while the device is away (asked again when it is back);
        ConflictError (409) when the receiver had it first."""
        row = await self.request(row, reason)
        end = asyncio.get_running_loop().time() + ANSWER_WAIT
        while row.state == S.CANCELLING and asyncio.get_running_loop().time() < end:
            await asyncio.sleep(0.1)
            row = await asyncio.to_thread(self.store.get_transfer, row.id)
        if row.state == S.DONE:
            raise ConflictError(f"transfer {row.id} was received before the cancel reached it "
                                f"({row.detail.get('cancel_too_late') or 'done'})")
        return row

    async def cancel_handoff(self, handoff_id: str, reason: str) -> HandoffRow:
        """The API's cancel of a handoff: :meth:`request_handoff`, its claimer and the other devices told, its
        conversation's transfers cancelled (each decided by its receiver), then a moment for the answer.
        ConflictError (409) when the claimer had begun importing it (it ends completed or failed)."""
        row = await self.request_handoff(await asyncio.to_thread(self.store.get_handoff, handoff_id), reason)
        await self.owner.handoff_closed(row, "cancelled", reason)  # to the claimer: the ask

        def unfinished() -> list[TransferRow]:
            return [tr for tr in self.store.list_transfers(limit=100_000) if tr.handoff_id == handoff_id
                    and tr.direction == "out" and tr.code is None
                    and tr.state not in (S.DONE, S.FAILED, S.CANCELLED, S.CANCELLING)]

        for tr in await asyncio.to_thread(unfinished):
            with contextlib.suppress(ConflictError, NotFoundError):
                await self.request(tr, reason)
        end = asyncio.get_running_loop().time() + ANSWER_WAIT
        while row.state == "cancelling" and asyncio.get_running_loop().time() < end:
            await asyncio.sleep(0.1)
            row = await asyncio.to_thread(self.store.get_handoff, handoff_id)
        if row.state in ("completed", "failed"):
            raise ConflictError(f"handoff {handoff_id} was {row.state} before the cancel reached its device")
        return row

    async def request(self, row: TransferRow, reason: str) -> TransferRow:
        """Cancel outgoing device transfer ``row``: cancelled at once if never offered, else ``cancelling`` until
        the receiver answers. ConflictError when it had already ended."""
        tid = row.id
        try:
            return await asyncio.to_thread(self.store.update_transfer, tid, state=S.CANCELLED, error=reason,
                                           cause=Cause.CANCELLED, only_from=frozenset({S.QUEUED}))
        except ConflictError:
            pass  # offered at least once: the receiver may hold it
        row = await asyncio.to_thread(self.store.update_transfer, tid, state=S.CANCELLING, error=reason,
                                      cause=Cause.CANCELLED, detail={"cancel_reason": reason})
        control = self.owner.running.control(tid)
        if control is not None:
            control.cancel(reason)  # CANCEL frame: the receiver stops early unless it committed first
        session = self.owner.sessions.get(row.peer)
        if session is not None and session.online and session.features is not None:
            await self._ask(session, [row])  # else at its next hello
        return await asyncio.to_thread(self.store.get_transfer, tid)

    async def request_handoff(self, row: HandoffRow, reason: str) -> HandoffRow:
        """Cancel handoff ``row``: ``cancelling`` while a paired device holds it (claimed or started: it decides,
        asked with handoff-closed by the caller and on every contact), else ``cancelled`` at once."""
        claimer = row.claimed_by
        held = row.state in ("claimed", "started") and claimer is not None and claimer in self.owner.sessions \
            and claimer != self.owner.identity.device_id
        return await asyncio.to_thread(self.store.transition_handoff, row.id, "cancelling" if held else "cancelled",
                                       reason=reason)

    async def ask_all(self, session: DeviceSession) -> None:
        """The device said hello (after its features, if any): ask again about every transfer to it being
        cancelled. A device without ``cancel-ask`` cannot answer: its handoffs being cancelled end cancelled
        here (it was told with handoff-closed, as before)."""
        device_id = session.device.device_id
        rows = [r for r in await asyncio.to_thread(self.store.list_transfers, S.CANCELLING, 1000)
                if r.direction == "out" and r.peer == device_id and r.code is None]
        await self._ask(session, rows)
        if CANCEL_ASK not in (session.features or ()):
            for h in await asyncio.to_thread(self.store.list_handoffs, "cancelling", 1000):
                if h.claimed_by == device_id:
                    with contextlib.suppress(P2pdError):
                        await asyncio.to_thread(self.store.transition_handoff, h.id, "cancelled")

    async def _ask(self, session: DeviceSession, rows: list[TransferRow]) -> None:
        for row in rows:
            reason = (row.error or "")[:MAX_REASON]
            if CANCEL_ASK in (session.features or ()):
                await session.send(TransferCancel(tid=row.id, reason=reason))
                continue
            # an older daemon cannot answer: decided here, as before, and told (notices re-tell it)
            ended = await asyncio.to_thread(self.store.update_transfer, row.id, state=S.CANCELLED)
            await self._close_handoff(ended)
            message = transfer_closed(ended)
            if message is not None:
                await session.send(message)

    async def outcome(self, session: DeviceSession, message: TransferOutcome) -> None:
        """The receiver's answer to a cancel this side asked for."""
        try:
            row = await asyncio.to_thread(self.store.get_transfer, message.tid)
        except NotFoundError:
            return
        if row.direction != "out" or row.peer != session.device.device_id or row.state != S.CANCELLING:
            return  # not ours, or answered already
        with contextlib.suppress(ConflictError):
            if message.state == "cancelled":
                ended = await asyncio.to_thread(self.store.update_transfer, row.id, state=S.CANCELLED)
                await self._close_handoff(ended)
            else:
                note = f"{session.device.name} had already received it when the cancel reached it"
                await asyncio.to_thread(self.store.update_transfer, row.id, state=S.DONE, bytes_done=row.size,
                                        detail={"cancel_too_late": note})
                log.info("transfer %s: the cancel came too late, %s", row.id, note)

    async def _close_handoff(self, row: TransferRow) -> None:
        if row.handoff_id is not None:
            with contextlib.suppress(P2pdError):
                await asyncio.to_thread(self.store.transition_handoff, row.handoff_id, "cancelled",
                                        reason=row.error or "cancelled")

    # ---- the receiver -----------------------------------------------------------------------------------------

    def decide(self, device_id: str, sender_tid: str, reason: str) -> TransferState:
        """The sender asks to cancel its transfer ``sender_tid``: ``DONE`` if this side committed it, else
        ``CANCELLED`` (recorded before returning). Call in a worker thread."""
        transfers = self.owner.transfers
        with transfers.decisions:
            rows = [r for r in self.store.list_transfers(limit=1000)
                    if r.direction == "in" and r.peer == device_id and r.detail.get("sender_tid") == sender_tid]
            if any(r.state in (S.VERIFIED, S.DONE) for r in rows):
                return S.DONE
            for r in rows:
                if r.state in (S.QUEUED, S.RUNNING, S.INTERRUPTED):
                    self.store.update_transfer(r.id, state=S.CANCELLED, error=reason or "cancelled by the sender",
                                               cause=Cause.CANCELLED, detail={"cancel_asked": True})
                    if len(r.sha256) == 64 and not any(  # verified and in place, never committed: never filed
                            o.sha256 == r.sha256 and o.id != r.id and o.state in (S.RUNNING, S.VERIFIED)
                            for o in self.store.list_transfers(limit=1000)):
                        (transfers.partial / final_name(bytes.fromhex(r.sha256))).unlink(missing_ok=True)
                elif r.state == S.CANCELLED and not r.detail.get("cancel_asked"):
                    self.store.update_transfer(r.id, detail={"cancel_asked": True})
            if not rows:  # the ask overtook the offer: a row that refuses it when it comes
                row = self.store.create_transfer("in", device_id, state=S.CANCELLED,
                                                 detail={"sender_tid": sender_tid, "cancel_asked": True})
                self.store.update_transfer(row.id, error=reason or "cancelled by the sender", cause=Cause.CANCELLED)
        return S.CANCELLED

    async def on_cancel(self, session: DeviceSession, message: TransferCancel) -> None:
        state = await asyncio.to_thread(self.decide, session.device.device_id, message.tid, message.reason)
        if state is S.CANCELLED:
            running = session.incoming.get(message.tid)
            if running is not None:
                running[1].cancel(message.reason or "cancelled by the sender")
        await session.send(TransferOutcome(tid=message.tid, state="cancelled" if state is S.CANCELLED else "done"))


__all__ = ["CancelDesk", "CancelOwner"]
