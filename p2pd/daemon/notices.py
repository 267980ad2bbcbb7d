"""What two paired devices tell each other on every contact about work between them that ended while one was
away (pure reads of the store: no I/O beyond it, no state in memory).

The store is the one source of truth, so nothing waits in memory for a device that is away, and nothing is lost
when either daemon restarts: on each contact a daemon re-tells the device how recent work between them ended.
Each message is idempotent on the other side (a state already reached, or an unknown id, is ignored):

- as the sender of transfers: ``transfer-closed`` for each outgoing transfer to the device that was cancelled or
  failed, so a cut-off attempt the receiver still holds as ``interrupted`` ends the same way;
- as the sender of handoffs: ``handoff-closed`` for each handoff offered to the device that was cancelled or
  that another device took, and ``handoff-claim-result`` (granted) for each the device holds claimed — a grant
  it did not hear (it went away meanwhile) would leave its offer ``claiming`` for ever;
- as the receiver of handoffs (the claimer): ``handoff-state`` for each offer of the device that was started,
  completed or failed here (a completed one is told ``started`` first: the sender's lifecycle goes through it).
"""

from __future__ import annotations

from p2pd.daemon.peer_protocol import Control, HandoffClaimResult, HandoffClosed, HandoffState, TransferClosed
from p2pd.daemon.store import HandoffRow, Store, TransferRow
from p2pd.daemon.transfers import TransferState

RECENT = 1000  # rows of each kind looked at per contact (newest first)
MAX_TEXT = 4000  # characters of a reason, result or output in a control message


def transfer_closed(row: TransferRow) -> TransferClosed | None:
    """The notice for an outgoing transfer that ended without reaching its receiver, else None."""
    if row.direction != "out" or row.code is not None:
        return None
    reason = (row.error or "")[:MAX_TEXT]
    if row.state == TransferState.CANCELLED:
        return TransferClosed(tid=row.id, state="cancelled", reason=reason)
    if row.state == TransferState.FAILED:
        return TransferClosed(tid=row.id, state="failed", reason=reason)
    return None


def notices_for(store: Store, device_id: str) -> list[Control]:
    """Everything this daemon re-tells ``device_id`` when it connects (call in a thread)."""
    out: list[Control] = []
    for row in store.list_transfers(limit=RECENT):
        if row.peer == device_id and (message := transfer_closed(row)) is not None:
            out.append(message)
    for h in store.list_handoffs(limit=RECENT):
        if h.target not in ("any", device_id) or h.state == "pending":
            continue
        if h.state in ("cancelled", "cancelling"):  # cancelling: the ask, until the claimer answers (cancels.py)
            out.append(HandoffClosed(hid=h.id, state="cancelled", reason=(h.reason or "")[:MAX_TEXT]))
        elif h.claimed_by == device_id and h.state in ("claimed", "started"):
            out.append(HandoffClaimResult(hid=h.id, granted=True))  # a grant it may not have heard
        elif h.claimed_by is not None and h.claimed_by != device_id:
            out.append(HandoffClosed(hid=h.id, state="taken", reason="claimed by another device"))
    for o in store.list_offers(limit=RECENT):
        if o.from_device != device_id or o.state not in ("started", "completed", "failed"):
            continue
        if o.state != "failed":
            out.append(HandoffState(hid=o.id, state="started"))
        if o.state == "completed":
            out.append(HandoffState(hid=o.id, state="completed", result=(o.result or "")[:MAX_TEXT],
                                    output=(o.resume_command or "")[:MAX_TEXT]))
        elif o.state == "failed":
            out.append(HandoffState(hid=o.id, state="failed", reason=(o.reason or "")[:MAX_TEXT]))
    return out


def granted_unsent(store: Store, device_id: str) -> list[HandoffRow]:
    """Handoffs granted to ``device_id`` (claimed or started) whose conversation was never queued for it: the
    daemon stopped between the grant and the queue (chaos seed 3996369679). Queued at its next contact (call in a
    thread)."""
    queued = {t.handoff_id for t in store.list_transfers(limit=RECENT) if t.direction == "out"}
    return [h for h in store.list_handoffs(limit=RECENT)
            if h.claimed_by == device_id and h.state in ("claimed", "started") and h.id not in queued]


__all__ = ["RECENT", "granted_unsent", "notices_for", "transfer_closed"]
