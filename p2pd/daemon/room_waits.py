"""Outgoing device transfers whose receiver's disk refused them (cause ``peer_storage``): when each is sent again.

A full disk is fixed on the receiving machine, by a person, at some point: the transfer is sent again after a
delay that grows with each refusal — the refiler's (:data:`~p2pd.daemon.refiling.RETRY_DELAYS`: 10 s, 30 s,
1 min, 2 min, then every 5 min) —, at once when the device connects again (it may have restarted with room), or
when a person says so (``p2pd transfers ID --retry``). Meanwhile the other transfers to the device go first.
The due times live in memory: a daemon that starts again sends what waited at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any

from p2pd.daemon.refiling import RETRY_DELAYS
from p2pd.daemon.store import TransferRow
from p2pd.daemon.transfers import Ending, TransferState
from p2pd.errors import ConflictError


class RoomWaits:
    """When each refused transfer is due (read from worker threads too: single dict operations)."""

    def __init__(self, delays: Sequence[float] = RETRY_DELAYS, clock: Callable[[], float] = time.monotonic) -> None:
        self.delays = delays
        self.clock = clock
        self.due: dict[str, float] = {}  # transfer id → when it goes again (clock time)

    def pick(self, rows: Iterable[TransferRow]) -> tuple[TransferRow | None, float | None]:
        """Of a device's transfers waiting to be sent: the oldest that may go now; else seconds until the first
        refused one is due (``None``: none waits)."""
        rows = list(rows)
        now = self.clock()
        ready = [r for r in rows if self.due.get(r.id, now) <= now]
        if ready:
            return min(ready, key=lambda r: r.created_at), None
        waits = [self.due[r.id] - now for r in rows if r.id in self.due]
        return None, min(waits) if waits else None

    def defer(self, row: TransferRow, ending: Ending) -> tuple[Ending, dict[str, Any]]:
        """The receiver's disk refused ``row`` (once more): the ending to record, saying when it goes again, and
        the detail to merge (``storage_refusals``, ``retry_in``)."""
        refusals = int(row.detail.get("storage_refusals") or 0) + 1
        delay = self.delays[min(refusals, len(self.delays)) - 1]
        self.due[row.id] = self.clock() + delay
        return (replace(ending, reason=f"{ending.reason}; it is sent again in {delay:g} s"),
                {"storage_refusals": refusals, "retry_in": delay})

    def keep_only(self, waiting: Iterable[str]) -> None:
        """Forget the waits of transfers no longer waiting (cancelled meanwhile, or ended otherwise)."""
        keep = set(waiting)
        for tid in list(self.due):  # (a copy taken in one step: another thread may add meanwhile)
            if tid not in keep:
                self.due.pop(tid, None)

    def going(self, tid: str) -> None:
        """The transfer is being sent now (a refusal defers it again)."""
        self.due.pop(tid, None)

    def device_back(self, rows: Iterable[TransferRow]) -> None:
        """A device connected again: its transfers that waited go now."""
        for row in rows:
            self.due.pop(row.id, None)

    def send_again(self, row: TransferRow) -> None:
        """A person says the device has room: the wait of ``row`` ends. 409 for anything but an interrupted or
        queued transfer to a paired device."""
        if row.direction != "out" or row.code is not None:
            raise ConflictError(f"transfer {row.id} is not one this daemon sends to a paired device")
        if row.state not in (TransferState.INTERRUPTED, TransferState.QUEUED):
            raise ConflictError(f"transfer {row.id} is {row.state}: only an interrupted or queued one is sent again")
        self.due.pop(row.id, None)


__all__ = ["RoomWaits"]
