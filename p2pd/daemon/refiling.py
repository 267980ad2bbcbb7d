"""Filing what an incoming device transfer committed here, until it is filed.

:mod:`p2pd.daemon.device_transfers` commits — the row ``verified`` — before it tells the sender DONE, then files
(inbox, and the import of a granted handoff). From the commit on, the sender counts the transfer done, so this
side must file it, whatever stands in the way:

- a stop cut the filing off: the next start files it, before any device connects, so a resend of the same
  transfer cannot race it (:meth:`Refiler.at_start`);
- this machine refused (a full disk, a folder it may not write, its database): the row stays ``verified``, its
  ``error``/``cause`` say why, the blob stays in ``partial/`` (housekeeping never removes one a verified row
  owns) and the filing is tried again after 10 s, 30 s, 1 min, 2 min, then every 5 min while the daemon runs,
  and at every start (:meth:`Refiler.file`, :meth:`Refiler.due`);
- the conversation itself cannot be filed (its blob gone or unreadable): that never changes, so the row ends
  ``failed``.

Which of the last two a failure is, is read from its type and cause (:func:`can_wait`), never from its text.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from p2pd.daemon.offer_desk import OfferDesk
from p2pd.daemon.store import Store, TransferRow
from p2pd.daemon.transfers import TransferState
from p2pd.errors import Cause, ConflictError, P2pdError, StorageError, cause_of
from p2pd.support.memory import release
from p2pd.transfer.partial import final_name

if TYPE_CHECKING:
    from p2pd.daemon.devices import Device

log = logging.getLogger("p2pd.network")

RETRY_DELAYS: tuple[float, ...] = (10.0, 30.0, 60.0, 120.0, 300.0)  # then the last, again and again


class _Host(Protocol):
    async def resume_import(self, device: Device, entry_id: str) -> str: ...


class DeviceTransfers(Protocol):
    """What filing needs of :class:`p2pd.daemon.device_transfers.DeviceTransfers`."""

    store: Store
    partial: Path
    offers: OfferDesk
    decisions: threading.Lock

    @property
    def host(self) -> _Host: ...

    async def file(self, device: Device, row_id: str, path: Path, *, hid: str | None, link_id: str | None,
                   detail: dict[str, object] | None = None) -> None: ...


def can_wait(exc: BaseException) -> bool:
    """Whether a filing failed because of this machine — its disk, its folders, its database — and may work
    later; not because of the conversation (which would fail the same way every time)."""
    if isinstance(exc, P2pdError):
        return exc.cause is Cause.STORAGE
    return isinstance(exc, OSError | sqlite3.Error)


def blob_of(partial: Path, row: TransferRow) -> Path:
    """Where the verified blob of an incoming row waits to be filed."""
    return partial / final_name(bytes.fromhex(row.sha256))


@dataclass
class Waiting:
    """A committed conversation this machine could not file yet."""

    device_id: str
    attempts: int  # refusals so far
    next_at: float  # on the refiler's clock


class Refiler:
    """Files committed conversations; keeps the ones this machine refused and tries them again."""

    def __init__(self, transfers: DeviceTransfers, *, delays: Sequence[float] = RETRY_DELAYS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.transfers = transfers
        self.delays = tuple(delays)
        self.clock = clock
        self.waiting: dict[str, Waiting] = {}  # row id → why and when it is tried again
        self.filing: set[str] = set()  # rows being filed right now
        self._retries: asyncio.Task[None] | None = None

    @property
    def store(self) -> Store:
        return self.transfers.store

    def delay(self, attempts: int) -> float:
        """Seconds before the next try after ``attempts`` refusals (the last delay once they run out)."""
        return self.delays[min(max(attempts, 1), len(self.delays)) - 1]

    def busy(self, row_id: str) -> bool:
        """Whether the conversation of ``row_id`` is being filed right now."""
        return row_id in self.filing

    def try_soon(self, row_id: str, device_id: str) -> None:
        """Try the filing of committed ``row_id`` again at the next :meth:`due` (its device is back)."""
        before = self.waiting.get(row_id)
        self.waiting[row_id] = Waiting(device_id, 0 if before is None else before.attempts, self.clock())

    async def file(self, device: Device, row_id: str, path: Path, *, hid: str | None, link_id: str | None,
                   detail: dict[str, Any] | None = None) -> bool:
        """File a committed conversation. True: filed; False: this machine refused, the row stays ``verified``
        and it is tried again later. A failure that will not go away (the conversation's own) is raised."""
        self.filing.add(row_id)
        try:
            await self.transfers.file(device, row_id, path, hid=hid, link_id=link_id, detail=detail)
        except (P2pdError, OSError, sqlite3.Error) as exc:
            if not can_wait(exc) or not await asyncio.to_thread(path.is_file):
                self.waiting.pop(row_id, None)
                if isinstance(exc, sqlite3.Error):
                    raise StorageError(f"the daemon's database refused: {exc}") from exc
                raise
            await self._wait(device, row_id, exc, detail)
            return False
        finally:
            self.filing.discard(row_id)
        self.waiting.pop(row_id, None)
        return True

    async def _wait(self, device: Device, row_id: str, exc: BaseException,
                    detail: dict[str, Any] | None = None) -> None:
        before = self.waiting.get(row_id)
        attempts = 1 if before is None else before.attempts + 1
        delay = self.delay(attempts)
        cause = Cause.STORAGE if not isinstance(exc, P2pdError) else exc.cause
        self.waiting[row_id] = Waiting(device.device_id, attempts, self.clock() + delay)
        reason = f"received and verified; filing it here failed ({exc}); it is tried again in {delay:g} s"
        log.warning("could not file the verified conversation of transfer %s (attempt %d): %s; again in %g s",
                    row_id, attempts, exc, delay)
        # the store may be what refused (a full disk): the row stays verified all the same, and so it is retried
        with contextlib.suppress(P2pdError, sqlite3.Error, OSError):
            await asyncio.to_thread(self.store.update_transfer, row_id, error=reason, cause=cause,
                                    detail={**(detail or {}), "filing_attempts": attempts,
                                            "filing_retry_in": delay})

    async def at_start(self, devices: dict[str, Device]) -> None:
        """Start-up, before any device connects: every conversation committed here (``verified``: the sender was
        or is about to be told DONE) and not filed is filed now (chaos seeds 211, 400, 401); so is one verified
        and in place whose commit a stop cut off (its row ``interrupted``, its blob in ``partial/``) — committing
        it now is as good as before the stop: the sender has not heard DONE, and a cancel it asks for later gets
        ``done`` for an answer."""
        rows = [*await asyncio.to_thread(self.store.list_transfers, TransferState.VERIFIED, 1000),
                *await asyncio.to_thread(self.store.list_transfers, TransferState.INTERRUPTED, 1000)]
        for row in rows:
            device = devices.get(row.peer)
            if row.direction != "in" or device is None or len(row.sha256) != 64:
                continue
            tried = row.detail.get("filing_attempts")
            if row.state == TransferState.VERIFIED and isinstance(tried, int) and tried > 0:  # refused before the
                self.waiting[row.id] = Waiting(device.device_id, tried, self.clock())  # stop: counted on
            await self.refile(device, row)

    def due(self, devices: dict[str, Device]) -> None:
        """Try again, in the background, the waiting conversations whose time has come (call often)."""
        if self._retries is not None and not self._retries.done():
            return
        now = self.clock()
        ready = [(row_id, w) for row_id, w in self.waiting.items() if w.next_at <= now and row_id not in self.filing]
        if ready:
            self._retries = asyncio.create_task(self._retry(ready, devices))

    async def _retry(self, ready: list[tuple[str, Waiting]], devices: dict[str, Device]) -> None:
        for row_id, waiting in ready:
            device = devices.get(waiting.device_id)
            try:
                row = await asyncio.to_thread(self.store.get_transfer, row_id)
            except (P2pdError, sqlite3.Error, OSError) as exc:
                if isinstance(exc, P2pdError) and exc.cause is Cause.NOT_FOUND:
                    self.waiting.pop(row_id, None)
                else:  # the store itself refuses for now: next time
                    waiting.next_at = self.clock() + self.delay(waiting.attempts)
                continue
            if row.state != TransferState.VERIFIED or device is None:  # filed meanwhile, or the device unpaired:
                self.waiting.pop(row_id, None)  # (an unpaired device's conversation is filed at the next start
                continue  # if it is paired again)
            await self.refile(device, row)

    async def stop(self) -> None:
        """Stop trying (the daemon stops: the next start files what still waits)."""
        if self._retries is not None:
            self._retries.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._retries

    async def refile(self, device: Device, row: TransferRow) -> None:
        """File a committed (or, at start, committable) row whose filing did not happen or did not finish."""
        transfers = self.transfers
        path = blob_of(transfers.partial, row)
        entry: str | None = None
        try:
            entry = await asyncio.to_thread(_entry_of, self.store, row.id)
            if entry is not None:  # stopped after its inbox entry was stored (chaos seed 332): the rest is done now
                await asyncio.to_thread(path.unlink, missing_ok=True)
                if row.state == TransferState.INTERRUPTED:
                    await asyncio.to_thread(self.store.update_transfer, row.id, state=TransferState.VERIFIED)
                await _resume_import(transfers, device, entry, row.handoff_id)
                await asyncio.to_thread(self.store.update_transfer, row.id, state=TransferState.DONE,
                                        bytes_done=row.size)
                self.waiting.pop(row.id, None)
                return
            if not await asyncio.to_thread(path.is_file):
                if row.state == TransferState.VERIFIED:  # committed, yet its blob is gone: cannot be filed
                    self.waiting.pop(row.id, None)
                    await asyncio.to_thread(self.store.end_transfer, row.id, TransferState.FAILED,
                                            error="the verified conversation is gone from partial/",
                                            cause=Cause.TRANSFER_FAILED)
                return
            if row.state == TransferState.INTERRUPTED and not await asyncio.to_thread(_commit_at_start, transfers,
                                                                                       row.id):
                return
            await self.file(device, row.id, path, hid=row.handoff_id, link_id=row.link_id)
        except (P2pdError, OSError, sqlite3.Error) as exc:
            # (a failure of the filing itself was counted by file(), which raises only what cannot wait)
            if can_wait(exc) and (entry is not None or await asyncio.to_thread(path.is_file)):
                await self._wait(device, row.id, exc)  # the store refused around the filing: tried again later
                return
            self.waiting.pop(row.id, None)
            log.warning("could not file the verified conversation of transfer %s: %s", row.id, exc)
            with contextlib.suppress(P2pdError, sqlite3.Error, OSError):
                await asyncio.to_thread(self.store.end_transfer, row.id, TransferState.FAILED, error=str(exc),
                                        cause=cause_of(exc))
        finally:
            await asyncio.to_thread(release)


def _entry_of(store: Store, transfer_id: str) -> str | None:
    """The inbox entry filed for ``transfer_id``, if any."""
    return next((e.id for e in store.list_inbox(1000) if e.transfer_id == transfer_id), None)


def _commit_at_start(transfers: DeviceTransfers, row_id: str) -> bool:
    """A blob verified and in place whose commit a stop cut off: committed now (call in a thread)."""
    with transfers.decisions:
        try:
            transfers.store.update_transfer(row_id, state=TransferState.VERIFIED)
        except ConflictError:
            return False
    return True


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


__all__ = ["RETRY_DELAYS", "Refiler", "Waiting", "blob_of", "can_wait"]
