"""Sends and receives with a pairing code, run by the daemon in the background: each is a row in the store and a
task in the registry of running transfers (:class:`~p2pd.daemon.running.RunningTransfers`), cancellable through
its :class:`~p2pd.transfer.channel.TransferControl` (which tells the peer) and, while still pairing, by stopping
the task. The exchange itself is :mod:`p2pd.exchange.handover`, the same as the CLI's.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Awaitable, Callable
from typing import Any

from p2pd.agents.file_source import document_envelope
from p2pd.daemon.home import Home
from p2pd.daemon.inbox import Inbox, document_stats, file_sha256
from p2pd.daemon.outbox import Source, pack_outbox
from p2pd.daemon.ready_blob import ReadyBlob
from p2pd.daemon.running import ProgressWriter, RunningTransfers
from p2pd.daemon.store import Store, TransferRow
from p2pd.daemon.transfers import TransferState
from p2pd.errors import Cause, P2pdError, cause_of
from p2pd.transfer.channel import TransferControl

log = logging.getLogger("p2pd.daemon")

CODE_WAIT = 20.0  # seconds a send waits for the signaling server to hand out a code before it returns


class TransferUI:
    """The exchange UI of a daemon transfer: writes what happens into the transfer's row."""

    def __init__(self, store: Store, transfer_id: str) -> None:
        self.store = store
        self.transfer_id = transfer_id
        self.code_event = asyncio.Event()
        self._progress = ProgressWriter(store, transfer_id, with_size=True)

    def code_ready(self, code: str, *, peer_present: bool = False) -> None:
        self.store.update_transfer(self.transfer_id, code=code)
        self.code_event.set()

    def sending(self, about: dict[str, Any]) -> None:
        pass  # the row already names the conversation

    def paired(self, verification: str) -> None:
        self.store.update_transfer(self.transfer_id, state=TransferState.RUNNING,
                                   detail={"verification": verification})

    def status(self, text: str) -> None:
        self.store.update_transfer(self.transfer_id, detail={"status": text})

    def progress(self, done: int, total: int) -> None:
        self._progress(done, total)

    def stage(self, name: str, done: int | None = None, total: int | None = None) -> None:
        self.store.update_transfer(self.transfer_id, detail={"status": name})

    async def decide(self, offer: Any) -> bool:
        info = offer.info
        await asyncio.to_thread(self.store.update_transfer, self.transfer_id, title=info.title,
                                size=offer.compressed_size,
                                detail={"platform": info.platform, "session_id": info.session_id,
                                        "messages": info.message_count, "raw_size": offer.raw_size})
        return True


class CodeTransfers:
    def __init__(self, home: Home, store: Store, running: RunningTransfers, inbox: Inbox,
                 signal_url: Callable[[], str]) -> None:
        self.home = home
        self.store = store
        self.running = running
        self.inbox = inbox
        self.signal_url = signal_url
        self.stopping = False  # set when the daemon stops: a stopped transfer is interrupted, not cancelled

    def _spawn(self, transfer_id: str, work: Callable[[TransferControl], Awaitable[None]]) -> asyncio.Task[None]:
        """Run a code transfer in the registry of running transfers; its row ends as the work ends."""

        async def run(control: TransferControl) -> None:
            try:
                await work(control)
            except asyncio.CancelledError:
                if self.stopping and not control.cancelled:
                    await self._finish(transfer_id, TransferState.INTERRUPTED, "the daemon stopped",
                                       cause=Cause.INTERRUPTED)
                else:
                    await self._finish(transfer_id, TransferState.CANCELLED, control.reason or "cancelled",
                                       cause=Cause.CANCELLED)
            except (P2pdError, OSError) as exc:
                if control.cancelled:
                    await self._finish(transfer_id, TransferState.CANCELLED, control.reason, cause=Cause.CANCELLED)
                else:
                    await self._finish(transfer_id, TransferState.FAILED, str(exc), cause=cause_of(exc))
            except Exception as exc:  # a bug must not kill the daemon; the row says what happened
                log.exception("transfer %s failed", transfer_id)
                await self._finish(transfer_id, TransferState.FAILED, f"unexpected {type(exc).__name__}: {exc}",
                                   cause=Cause.UNEXPECTED)

        return self.running.start(transfer_id, run)

    async def _finish(self, transfer_id: str, state: TransferState, error: str | None = None,
                      detail: dict[str, Any] | None = None, cause: Cause | None = None) -> None:
        """End a transfer unless it already ended."""
        await asyncio.to_thread(self.store.end_transfer, transfer_id, state, error=error, cause=cause, detail=detail)

    async def send(self, source: Source, code: str | None, *, timeout: float, wait: float,
                   handoff_id: str | None = None) -> TransferRow:
        """Send a conversation with ``code`` (None: the server makes one): packed into the outbox by a child
        process (zstd), then streamed from there. Returns once the code is known (or the send ended), or after
        ``wait`` seconds more for the outcome."""
        packed = await pack_outbox(source, self.home.outbox, codec="zstd")
        row = await asyncio.to_thread(
            self.store.create_transfer, "out", "code", title=packed.title, size=packed.size,
            sha256=packed.sha256, blob_path=str(packed.path), handoff_id=handoff_id, code=code,
            detail={"kind": "code", **document_stats(packed.envelope)})
        tid = row.id
        ui = TransferUI(self.store, tid)
        ready = await asyncio.to_thread(ReadyBlob, packed.path, packed.info)
        task = self._spawn(tid, lambda control: self._send(tid, ready, code, ui, control, timeout))
        waiter = asyncio.ensure_future(ui.code_event.wait())
        await asyncio.wait([waiter, task], timeout=CODE_WAIT, return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        if wait > 0:
            await asyncio.wait([task], timeout=wait)
        return await asyncio.to_thread(self.store.get_transfer, tid)

    async def _send(self, tid: str, ready: ReadyBlob, code: str | None, ui: TransferUI,
                    control: TransferControl, timeout: float) -> None:
        from p2pd.exchange.handover import send_document

        await asyncio.to_thread(self.store.update_transfer, tid, state=TransferState.RUNNING)
        outcome = await send_document(ready, signal_url=self.signal_url(), code=code, ui=ui, peer_timeout=timeout,
                                      fallback_dir=self.home.outbox, control=control)
        if outcome.sent:
            r = outcome.result
            await asyncio.to_thread(self.store.update_transfer, tid, bytes_done=r.compressed_size)
            await self._finish(tid, TransferState.DONE,
                               detail={"bytes_sent": r.bytes_sent, "resumed_bytes": r.resumed_bytes,
                                       "elapsed": round(r.elapsed, 3), "verified_sha256": r.sha256.hex()})
        else:
            await self._finish(tid, TransferState.FAILED, f"no peer connection ({outcome.fallback_reason}); the "
                               f"conversation was written to {outcome.fallback_path}",
                               detail={"fallback_path": str(outcome.fallback_path)},
                               cause=outcome.fallback_cause or Cause.TRANSFER_FAILED)

    async def receive(self, code: str, *, wait: float, timeout: float) -> TransferRow:
        """Receive with ``code`` (already parsed) into the inbox, in the background; ``wait`` > 0 waits for the
        outcome."""
        row = await asyncio.to_thread(self.store.create_transfer, "in", "code", code=code, detail={"kind": "code"})
        tid = row.id
        ui = TransferUI(self.store, tid)

        async def work(control: TransferControl) -> None:
            from p2pd.exchange.handover import receive_document

            await asyncio.to_thread(self.store.update_transfer, tid, state=TransferState.RUNNING)
            outcome = await receive_document(signal_url=self.signal_url(), code=code, ui=ui,
                                             out_dir=self.home.inbox, peer_timeout=timeout, control=control)
            try:  # the sender was told DONE: the conversation stays here, and an error says where it is
                digest = await asyncio.to_thread(file_sha256, outcome.path)
                envelope = await asyncio.to_thread(document_envelope, outcome.path)  # read as a stream
                entry = await self.inbox.add(envelope, outcome.path, transfer_id=tid, from_peer="code",
                                             sha256=digest)
            except (P2pdError, OSError, sqlite3.Error) as exc:
                cause = exc.cause if isinstance(exc, P2pdError) else Cause.STORAGE
                raise P2pdError(f"received and verified as {outcome.path}, but it could not be listed in the "
                                f"inbox: {exc}", cause=cause, details={"path": str(outcome.path)}) from exc
            await asyncio.to_thread(self.store.update_transfer, tid, bytes_done=outcome.bytes_received)
            await self._finish(tid, TransferState.DONE,
                               detail={"inbox_id": entry.id, "resumed_bytes": outcome.resumed_bytes})

        task = self._spawn(tid, work)
        if wait > 0:
            await asyncio.wait([task], timeout=wait)
        return await asyncio.to_thread(self.store.get_transfer, tid)


__all__ = ["CODE_WAIT", "CodeTransfers", "TransferUI"]
