"""The one registry of running transfers, in process: start, find, cancel (telling the peer through the control
first, stopping the task after the grace period), and the service cancelling a device transfer through it."""

from __future__ import annotations

import asyncio
from pathlib import Path

from p2pd.daemon.home import Home
from p2pd.daemon.running import RunningTransfers
from p2pd.daemon.service import DaemonService
from p2pd.daemon.store import Store
from p2pd.transfer.channel import TransferControl


async def test_a_started_transfer_is_registered_until_it_ends() -> None:
    running = RunningTransfers()
    release = asyncio.Event()
    seen: list[TransferControl] = []

    async def work(control: TransferControl) -> None:
        seen.append(control)
        await release.wait()

    task = running.start("tr_a", work)
    await asyncio.sleep(0)
    assert "tr_a" in running and running.task("tr_a") is task and running.control("tr_a") is seen[0]
    release.set()
    await task
    assert "tr_a" not in running and len(running) == 0


async def test_cancel_asks_the_control_first_and_stops_a_task_that_does_not_listen() -> None:
    running = RunningTransfers()

    async def listens(control: TransferControl) -> None:
        while not control.cancelled:
            await asyncio.sleep(0.01)

    async def deaf(control: TransferControl) -> None:
        await asyncio.sleep(3600)

    polite, stubborn = running.start("tr_p", listens), running.start("tr_s", deaf)
    assert await running.cancel("tr_p", "by me", grace=5)
    assert polite.done() and not polite.cancelled()
    assert await running.cancel("tr_s", "by me", grace=0.05)
    assert stubborn.cancelled()
    assert not await running.cancel("tr_gone", "x", grace=0.05)


async def test_the_service_cancels_a_device_transfer_through_the_same_registry(tmp_path: Path) -> None:
    store = Store(tmp_path / "state.sqlite3")
    service = DaemonService(Home(tmp_path / "home"), store)
    row = store.create_transfer("out", "dev1")
    store.update_transfer(row.id, state="running")
    control = service.running.add(row.id)  # as a device's outbox worker registers what it sends
    done = await service.cancel_transfer(row.id, "changed my mind")
    assert control.cancelled and control.reason == "changed my mind"
    assert (done.state, done.error, done.cause) == ("cancelled", "changed my mind", "cancelled")
