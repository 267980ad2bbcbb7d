"""p2pd/daemon/room_waits.py: the order of a device's outgoing transfers when one waits to be sent again (its
receiver's disk refused it): the wait grows with each refusal, the others go first meanwhile, the device's
return or a person's --retry ends the wait. Rows from the real store, time from a clock the test moves; the
two-daemon cases with a real full disk are in test_filing.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from p2pd.daemon.room_waits import RoomWaits
from p2pd.daemon.store import Store, TransferRow
from p2pd.daemon.transfers import Ending, TransferState
from p2pd.errors import Cause, ConflictError

REFUSED = Ending(TransferState.INTERRUPTED, "the receiver could not store the conversation", Cause.PEER_STORAGE,
                 retry_later=True)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _waiting(store: Store, device: str) -> list[TransferRow]:
    return [r for r in store.list_transfers(limit=100) if r.peer == device and r.direction == "out"
            and r.state in (TransferState.QUEUED, TransferState.INTERRUPTED)]


def test_a_refused_transfer_waits_longer_each_time_while_the_others_go_first(tmp_path: Path) -> None:
    store = Store(tmp_path / "state.sqlite3")
    clock = Clock()
    room = RoomWaits((10.0, 30.0, 300.0), clock)
    first = store.create_transfer("out", "dev-1", title="first", state="interrupted")
    second = store.create_transfer("out", "dev-1", title="second")
    assert room.pick(_waiting(store, "dev-1")) == (first, None)  # the oldest first
    delays = []
    for _ in range(4):
        ending, detail = room.defer(store.get_transfer(first.id), REFUSED)
        store.update_transfer(first.id, detail=detail)
        delays.append(detail["retry_in"])
        assert ending.reason == f"{REFUSED.reason}; it is sent again in {detail['retry_in']:g} s"
        assert (ending.state, ending.cause, ending.retry_later) == (REFUSED.state, REFUSED.cause, True)
    assert delays == [10.0, 30.0, 300.0, 300.0]  # then the last delay, again and again
    assert store.get_transfer(first.id).detail["storage_refusals"] == 4
    row, due_in = room.pick(_waiting(store, "dev-1"))
    assert row is not None and row.id == second.id and due_in is None  # the other one goes meanwhile
    store.update_transfer(second.id, state="running")
    store.update_transfer(second.id, state="done")
    assert room.pick(_waiting(store, "dev-1")) == (None, 300.0)  # nothing may go: when to look again
    clock.now += 299.0
    assert room.pick(_waiting(store, "dev-1")) == (None, 1.0)
    clock.now += 1.0
    row, _ = room.pick(_waiting(store, "dev-1"))
    assert row is not None and row.id == first.id  # due
    room.going(first.id)
    assert room.due == {}


def test_the_devices_return_or_a_persons_retry_ends_the_wait_and_nothing_else_is_sent_again(tmp_path: Path) -> None:
    store = Store(tmp_path / "state.sqlite3")
    room = RoomWaits((10.0,), Clock())
    row = store.create_transfer("out", "dev-1", title="t", state="interrupted")
    room.defer(row, REFUSED)
    assert room.pick(_waiting(store, "dev-1"))[0] is None
    room.device_back(_waiting(store, "dev-1"))  # it connected again
    assert room.pick(_waiting(store, "dev-1"))[0] == row
    room.defer(row, REFUSED)
    room.send_again(store.get_transfer(row.id))  # `p2pd transfers ID --retry`
    assert room.pick(_waiting(store, "dev-1"))[0] == row
    incoming = store.create_transfer("in", "dev-1", title="in", state="interrupted")
    to_code = store.create_transfer("out", "", title="code", code="7-a-b", state="interrupted")
    store.update_transfer(row.id, state="running")
    for other, words in ((incoming, "not one this daemon sends"), (to_code, "not one this daemon sends"),
                         (store.get_transfer(row.id), "only an interrupted or queued one")):
        with pytest.raises(ConflictError, match=words):
            room.send_again(other)


def test_a_wait_ends_with_its_transfer_when_it_is_cancelled_meanwhile(tmp_path: Path) -> None:
    store = Store(tmp_path / "state.sqlite3")
    room = RoomWaits((10.0,), Clock())
    kept = store.create_transfer("out", "dev-1", title="kept", state="interrupted")
    dropped = store.create_transfer("out", "dev-2", title="dropped", state="interrupted")
    room.defer(kept, REFUSED)
    room.defer(dropped, REFUSED)
    store.update_transfer(dropped.id, state="cancelled")  # `p2pd transfers ID --cancel` while it waited
    waiting = [r for r in store.list_transfers(limit=100) if r.direction == "out"
               and r.state in (TransferState.QUEUED, TransferState.INTERRUPTED)]
    room.keep_only(r.id for r in waiting)  # what next_outgoing does before it picks
    assert set(room.due) == {kept.id}
    assert room.pick(_waiting(store, "dev-1")) == (None, 10.0)  # the one still waiting keeps its wait
