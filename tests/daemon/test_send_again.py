"""The order of a device's outgoing transfers when one waits to be sent again (its receiver's disk refused it):
the wait grows with each refusal, the others go first meanwhile, and the device's return ends the wait. On the
real store; the two-daemon case with a real full disk is in test_filing.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from p2pd.daemon.device_transfers import DeviceTransfers
from p2pd.daemon.store import Store
from p2pd.daemon.transfers import Ending, TransferState
from p2pd.errors import Cause


@pytest.fixture
def transfers(tmp_path: Path) -> DeviceTransfers:
    t = DeviceTransfers.__new__(DeviceTransfers)  # (only its store and its waits: no network here)
    t.store = Store(tmp_path / "state.sqlite3")
    t.deferred = {}
    t.retry_delays = (10.0, 30.0, 300.0)
    return t


def test_a_refused_transfer_waits_longer_each_time_while_the_others_go_first(transfers: DeviceTransfers) -> None:
    store = transfers.store
    first = store.create_transfer("out", "dev-1", title="first", state="interrupted")
    second = store.create_transfer("out", "dev-1", title="second")
    elsewhere = store.create_transfer("out", "dev-2", title="to another device")
    assert transfers.next_outgoing("dev-1") == (first, None)  # the oldest first
    refused = Ending(TransferState.INTERRUPTED, "the receiver could not store the conversation",
                     Cause.PEER_STORAGE, retry_later=True)
    delays = []
    for _ in range(4):
        row = store.get_transfer(first.id)
        ending, detail = transfers._defer(row, refused)
        store.update_transfer(first.id, detail=detail)
        delays.append(detail["retry_in"])
        assert ending.reason.endswith(f"it is sent again in {detail['retry_in']:g} s") and ending.retry_later
    assert delays == [10.0, 30.0, 300.0, 300.0]  # then the last delay, again and again
    assert store.get_transfer(first.id).detail["storage_refusals"] == 4
    row, due_in = transfers.next_outgoing("dev-1")
    assert row is not None and row.id == second.id and due_in is None  # the other one goes meanwhile
    store.update_transfer(second.id, state="running")
    store.update_transfer(second.id, state="done")
    row, due_in = transfers.next_outgoing("dev-1")
    assert row is None and due_in is not None and 290 < due_in <= 300  # nothing ready: when to look again
    assert transfers.next_outgoing("dev-2") == (elsewhere, None)  # another device's queue is its own
    transfers.device_back("dev-1")  # it connected again: what waited goes now
    row, _ = transfers.next_outgoing("dev-1")
    assert row is not None and row.id == first.id
