"""Running transfers: the one registry that starts, finds and cancels them, and their throttled progress writer.

Every transfer that runs in this daemon — sends and receives with a code, device transfers both ways — is in
:class:`RunningTransfers` while it runs, with the :class:`~p2pd.transfer.channel.TransferControl` that stops it
(telling the peer) and, when it has its own task, that task. Cancelling asks the control first, then stops the task
if it does not end within a grace period (still pairing or connecting: nothing to tell).

Progress is reported on the event loop; SQLite writes do not belong there, so :class:`ProgressWriter` hands them
to one worker thread (one thread: they land in order) at most every :data:`PROGRESS_EVERY` seconds.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from p2pd.daemon.store import Store
from p2pd.transfer.channel import TransferControl

log = logging.getLogger("p2pd.daemon")

PROGRESS_EVERY = 0.5  # seconds between progress writes of one transfer
_PROGRESS_WRITES = ThreadPoolExecutor(max_workers=1, thread_name_prefix="p2pd-progress")  # one thread: in order


@dataclass
class Run:
    control: TransferControl
    task: asyncio.Task[None] | None = None  # None: it runs inside another task (a device's outbox worker)


class RunningTransfers:
    """The transfers running now, by transfer id."""

    def __init__(self) -> None:
        self._runs: dict[str, Run] = {}

    def start(self, transfer_id: str, work: Callable[[TransferControl], Awaitable[None]]) -> asyncio.Task[None]:
        """Run ``work(control)`` as its own task, registered until it ends."""
        control = TransferControl()

        async def run() -> None:
            try:
                await work(control)
            finally:
                self.remove(transfer_id, control)

        task = asyncio.get_running_loop().create_task(run(), name=f"transfer {transfer_id}")
        self._runs[transfer_id] = Run(control, task)
        return task

    def add(self, transfer_id: str, control: TransferControl | None = None,
            task: asyncio.Task[None] | None = None) -> TransferControl:
        """Register a transfer that runs in a task of its caller; returns its control. The caller removes it."""
        run = self._runs.get(transfer_id)
        if run is None:
            run = self._runs[transfer_id] = Run(control or TransferControl(), task)
        return run.control

    def remove(self, transfer_id: str, control: TransferControl | None = None) -> None:
        run = self._runs.get(transfer_id)
        if run is not None and (control is None or run.control is control):
            del self._runs[transfer_id]

    def control(self, transfer_id: str) -> TransferControl | None:
        run = self._runs.get(transfer_id)
        return run.control if run is not None else None

    def task(self, transfer_id: str) -> asyncio.Task[None] | None:
        run = self._runs.get(transfer_id)
        return run.task if run is not None else None

    def ids(self) -> list[str]:
        return list(self._runs)

    def __contains__(self, transfer_id: object) -> bool:
        return transfer_id in self._runs

    def __len__(self) -> int:
        return len(self._runs)

    async def cancel(self, transfer_id: str, reason: str, *, grace: float) -> bool:
        """Cancel a running transfer: its control tells the peer; a task that has not ended within ``grace``
        seconds is stopped. Returns whether it was running."""
        run = self._runs.get(transfer_id)
        if run is None:
            return False
        run.control.cancel(reason)
        if run.task is not None and not run.task.done():
            done, _ = await asyncio.wait([run.task], timeout=grace)
            if not done:
                run.task.cancel()
                await asyncio.wait([run.task], timeout=grace)
        return True

    async def stop_tasks(self, timeout: float) -> None:
        """Stop every transfer that has its own task, without telling peers (the daemon is stopping: they
        resume later)."""
        tasks = [r.task for r in self._runs.values() if r.task is not None and not r.task.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=timeout)


class ProgressWriter:
    """A transfer's progress callback: records the bytes done at most every PROGRESS_EVERY seconds (and the last
    one always), in a worker thread."""

    def __init__(self, store: Store, transfer_id: str, *, with_size: bool = False) -> None:
        self.store = store
        self.transfer_id = transfer_id
        self.with_size = with_size
        self._last = 0.0

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - self._last < PROGRESS_EVERY:
            return
        self._last = now
        fields: dict[str, Any] = {"bytes_done": done, **({"size": total} if self.with_size else {})}
        asyncio.get_running_loop().run_in_executor(_PROGRESS_WRITES, self._write, fields) \
            .add_done_callback(_log_failure)

    def _write(self, fields: dict[str, Any]) -> None:
        self.store.update_transfer(self.transfer_id, **fields)


def _log_failure(future: Future[None] | asyncio.Future[None]) -> None:
    if not future.cancelled() and future.exception() is not None:  # progress is best effort; the row stays right
        log.debug("progress write failed: %s", future.exception())
