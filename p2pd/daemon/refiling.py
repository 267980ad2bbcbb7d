"""Start-up filing of what an incoming device transfer committed here but a stop kept from being filed
(:mod:`p2pd.daemon.device_transfers` commits — the row ``verified`` — before it tells the sender DONE, then files).
Runs before any device connects, so a resend of the same transfer cannot race it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from p2pd.daemon.offer_desk import OfferDesk
from p2pd.daemon.store import Store
from p2pd.daemon.transfers import TransferState
from p2pd.errors import Cause, ConflictError, P2pdError, cause_of
from p2pd.support.memory import release
from p2pd.transfer.partial import final_name

if TYPE_CHECKING:
    from p2pd.daemon.devices import Device

log = logging.getLogger("p2pd.network")


class _Host(Protocol):
    async def resume_import(self, device: Device, entry_id: str) -> str: ...


class DeviceTransfers(Protocol):
    """What start-up filing needs of :class:`p2pd.daemon.device_transfers.DeviceTransfers`."""

    store: Store
    partial: Path
    offers: OfferDesk
    decisions: threading.Lock

    @property
    def host(self) -> _Host: ...

    async def file(self, device: Device, row_id: str, path: Path, *, hid: str | None, link_id: str | None,
                   detail: dict[str, object] | None = None) -> None: ...


def _commit_at_start(transfers: DeviceTransfers, row_id: str) -> bool:
    """A blob verified and in place whose commit a stop cut off: committed now (call in a thread)."""
    with transfers.decisions:
        try:
            transfers.store.update_transfer(row_id, state=TransferState.VERIFIED)
        except ConflictError:
            return False
    return True


async def file_verified(transfers: DeviceTransfers, devices: dict[str, Device]) -> None:
    """Start-up, before any device connects: every conversation committed here (``verified``: the sender was
    or is about to be told DONE) whose filing a stop cut off is filed now, never left unfiled (chaos seeds
    211, 400, 401); so is one verified and in place whose commit a stop cut off (its row ``interrupted``,
    its blob in ``partial/``) — committing it now is as good as before the stop: the sender has not heard
    DONE, and a cancel it asks for later gets ``done`` for an answer."""
    rows = [*await asyncio.to_thread(transfers.store.list_transfers, TransferState.VERIFIED, 1000),
            *await asyncio.to_thread(transfers.store.list_transfers, TransferState.INTERRUPTED, 1000)]
    filed = {e.transfer_id: e.id for e in await asyncio.to_thread(transfers.store.list_inbox, 1000)}
    for row in rows:
        device = devices.get(row.peer)
        if row.direction != "in" or device is None or len(row.sha256) != 64:
            continue
        path = transfers.partial / final_name(bytes.fromhex(row.sha256))
        if row.id in filed:  # stopped after its inbox entry was stored (chaos seed 332): the rest is done now
            await asyncio.to_thread(path.unlink, missing_ok=True)
            if row.state == TransferState.INTERRUPTED:
                await asyncio.to_thread(transfers.store.update_transfer, row.id, state=TransferState.VERIFIED)
            await _resume_import(transfers, device, filed[row.id], row.handoff_id)
            await asyncio.to_thread(transfers.store.update_transfer, row.id, state=TransferState.DONE,
                                    bytes_done=row.size)
            continue
        if not path.is_file():
            if row.state == TransferState.VERIFIED:  # committed, yet its blob is gone: cannot be filed
                await asyncio.to_thread(transfers.store.end_transfer, row.id, TransferState.FAILED,
                                        error="the verified conversation is gone from partial/",
                                        cause=Cause.TRANSFER_FAILED)
            continue
        if row.state == TransferState.INTERRUPTED and not await asyncio.to_thread(_commit_at_start, transfers,
                                                                                   row.id):
            continue
        try:
            await transfers.file(device, row.id, path, hid=row.handoff_id, link_id=row.link_id)
        except (P2pdError, OSError) as exc:
            log.warning("could not file the verified conversation of transfer %s: %s", row.id, exc)
            with contextlib.suppress(P2pdError):
                await asyncio.to_thread(transfers.store.end_transfer, row.id, TransferState.FAILED, error=str(exc),
                                        cause=cause_of(exc))
        finally:
            await asyncio.to_thread(release)


async def _resume_import(transfers: DeviceTransfers, device: Device, entry_id: str,
                         hid: str | None) -> None:
    """A handoff whose conversation was filed but whose import a stop cut off: imported (and completed) now,
    if this daemon still holds it."""
    hid = await transfers.offers.import_begins(hid, device.device_id)
    try:
        if hid is None:
            return
        output = await transfers.host.resume_import(device, entry_id)
        if output:
            with contextlib.suppress(ConflictError):
                await transfers.offers.complete(hid, "imported by the receiving daemon", output=output)
    except (P2pdError, OSError) as exc:
        log.warning("could not import the conversation of handoff %s: %s", hid, exc)
    finally:
        await transfers.offers.import_ended(hid)


__all__ = ["file_verified"]
