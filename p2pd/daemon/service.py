"""What the daemon does, in one place: the HTTP API and the MCP tools are thin layers over :class:`DaemonService`.

Every transfer is a row in the store's ``transfers`` table (its lifecycle: :mod:`p2pd.daemon.transfers`) and, while
it runs, an entry in the one registry of running transfers (:class:`~p2pd.daemon.running.RunningTransfers`), which
cancels it. Sends and receives with a code run in :mod:`p2pd.daemon.code_transfers`; received conversations go to
the :mod:`p2pd.daemon.inbox`. Blocking work (parsing transcripts, SQLite, compression) runs in threads.

Sends to a device or a link go through the device network (:class:`p2pd.daemon.network.DeviceNetwork`, plugged in
by ``serve``), which also hands this service what paired devices send (:meth:`DaemonService.accept_conversation`);
without a network they fail with :class:`NoNetworkError` (HTTP 409, cause ``no_network``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from p2pd.conversation.model import ConversationDocument
from p2pd.daemon import housekeeping
from p2pd.daemon.agent_sessions import AgentSessions
from p2pd.daemon.code_transfers import CodeTransfers
from p2pd.daemon.handoff_work import HandoffWork, session_context
from p2pd.daemon.handoffs import FINAL, HandoffPackage, package_metadata
from p2pd.daemon.home import Home
from p2pd.daemon.inbox import Inbox, document_stats, file_sha256
from p2pd.daemon.outbox import Source, export_file, pack_outbox
from p2pd.daemon.running import RunningTransfers
from p2pd.daemon.store import TRANSFER_FINAL, HandoffRow, InboxRow, Store, TransferRow, new_id
from p2pd.daemon.targets import NoNetworkError, SendTo
from p2pd.daemon.transfers import TransferState
from p2pd.errors import Cause, ConflictError, InvalidInputError

if TYPE_CHECKING:
    from p2pd.daemon.devices import Device
    from p2pd.daemon.network import DeviceNetwork
    from p2pd.daemon.offer_desk import OfferDesk
    from p2pd.daemon.peer_protocol import HandoffOffer

log = logging.getLogger("p2pd.daemon")

CANCEL_GRACE = 3.0  # seconds a cancelled transfer may take to tell its peer before its task is stopped
CHORES_EVERY = 30.0  # seconds between housekeeping rounds (at most)
PRUNE_EVERY = 3600.0  # seconds between prunings of the outbox and partial receives


class DaemonService:
    def __init__(self, home: Home, store: Store, *, network: DeviceNetwork | None = None,
                 signal_url: str | None = None, device_id: str = "local") -> None:
        self.home = home
        self.store = store
        self.network = network
        self._signal_url = signal_url
        self.device_id = device_id
        self.started_at = time.time()
        self.running = RunningTransfers()  # every transfer running in this daemon, code and device ones
        self.inbox = Inbox(home, store)
        self.codes = CodeTransfers(home, store, self.running, self.inbox, self.signal_url)
        self.work = HandoffWork(self)
        self.agent_sessions = AgentSessions(self)  # delegations and session links (seeds 002, 003)
        self._chores: asyncio.Task[None] | None = None
        self._stopping: asyncio.Future[None] | None = None

    # ------------------------------------------------------------ lifecycle
    async def start(self) -> list[TransferRow]:
        """Mark what a previous daemon left running as interrupted (returned), then start the network."""
        await asyncio.to_thread(self.home.ensure)
        await asyncio.to_thread(housekeeping.sweep_stale_staging)
        interrupted = await asyncio.to_thread(self.store.interrupted_transfers)
        if self.network is not None:
            await self.network.start()
        await self.agent_sessions.start()
        self._chores = asyncio.create_task(self._housekeeping())
        return interrupted

    async def _housekeeping(self) -> None:
        """Every few seconds: unstarted local claims go back to pending. At start and every hour: the outbox and
        partial receives are pruned (:mod:`p2pd.daemon.housekeeping`)."""
        from p2pd.config import daemon_settings

        every = min(CHORES_EVERY, daemon_settings().handoff_claim_timeout / 4)
        last_prune = -PRUNE_EVERY
        while True:
            try:
                await self.work.release_expired()
                self.agent_sessions.flush()  # session-link messages a failed send left waiting
                if time.monotonic() - last_prune >= PRUNE_EVERY:
                    last_prune = time.monotonic()
                    report = await self.gc()
                    if report["items"]:
                        log.info("housekeeping removed %d files (%d bytes)", len(report["items"]), report["freed"])
            except Exception:  # a bug must not end the daemon's chores for good
                log.exception("housekeeping failed")
            await asyncio.sleep(every)

    async def gc(self, *, everything: bool = False, dry_run: bool = False) -> dict[str, Any]:
        """Prune the outbox and partial receives by the configured limits, or (``everything``) all nothing needs."""
        from p2pd.daemon.housekeeping import Limits, prune

        limits = await asyncio.to_thread(Limits.configured)
        return await asyncio.to_thread(prune, self.home.root, self.store, limits, everything=everything,
                                       dry_run=dry_run)

    async def stop(self) -> None:
        """Stop running transfers (they become 'interrupted', to be resumed by the next start) and the network.
        Once: a SIGTERM starts it at once (``begin_stop``) and the end of the app's lifespan awaits the same."""
        self.begin_stop()
        assert self._stopping is not None
        await asyncio.shield(self._stopping)

    def begin_stop(self) -> None:
        """Start stopping now, on the running loop (a signal handler calls this: transfers stop when the signal
        comes, not after the HTTP server's graceful shutdown, during which a transfer could run to its end)."""
        if self._stopping is None:
            self._stopping = asyncio.ensure_future(self._stop())

    async def _stop(self) -> None:
        self.codes.stopping = True
        if self._chores is not None:
            self._chores.cancel()
        await self.running.stop_tasks(timeout=5)
        await self.agent_sessions.stop()
        if self.network is not None:
            await self.network.stop()

    def signal_url(self) -> str:
        if self._signal_url is None:
            from p2pd.config import signal_url

            self._signal_url = signal_url()
        return self._signal_url

    # ------------------------------------------------------------ sessions and export
    async def list_sessions(self, platform: str | None = None, limit: int | None = 50) -> list[dict[str, Any]]:
        from p2pd.agents.sessions import PLATFORMS, list_sessions

        if platform is not None and platform not in PLATFORMS:
            raise InvalidInputError(f"unknown platform {platform!r} (one of {', '.join(PLATFORMS)})")
        infos = await asyncio.to_thread(list_sessions, platform, limit=limit)
        return [i.to_json() for i in infos]

    async def source(self, session: str | None = None, *, transcript_path: str | None = None,
                     redact: bool | None = None) -> Source:
        """Which conversation: a session (id, prefix, 'latest', file) or a transcript path, redacted if
        asked/configured. Nothing is read here: the packing process (:mod:`p2pd.daemon.packer`) reads it."""
        from p2pd.config import redact_default

        if transcript_path and (not session or Path(transcript_path).is_file()):
            ref = transcript_path
        elif session:  # (a recorded transcript path that is gone: find the session by its id)
            known = await asyncio.to_thread(self.store.hook_session, session)
            tpath = known.transcript_path if known is not None else None
            ref = tpath if tpath and Path(tpath).is_file() else session
        else:
            raise InvalidInputError("name a session (id, prefix, 'latest') or a transcript path")
        return Source(ref, redact=redact if redact is not None else redact_default())

    async def export(self, session: str | None = None, *, transcript_path: str | None = None,
                     output: str | None = None, compressed: bool = False, redact: bool | None = None) -> dict[str, Any]:
        """Write the conversation (compact JSON in the line layout, or a blob) by the packing process."""
        src = await self.source(session, transcript_path=transcript_path, redact=redact)
        packed = await export_file(src, self.home.exports, output, compressed=compressed)
        digest = await asyncio.to_thread(file_sha256, packed.path)
        return {"path": str(packed.path), "size": packed.size, "sha256": digest, **document_stats(packed.envelope)}

    # ------------------------------------------------------------ transfers
    async def send(self, to: SendTo, session: str | None = None, *, transcript_path: str | None = None,
                   redact: bool | None = None, wait: float = 0.0, timeout: float = 300.0,
                   handoff_id: str | None = None) -> TransferRow:
        """Start sending; returns the transfer (with the code when sending to a code). ``wait`` > 0 waits up to
        that many seconds for the outcome."""
        if to.kind in ("device", "link") and self.network is None:
            raise NoNetworkError()
        if to.kind == "device" and self.network is not None:
            assert to.device is not None
            self.network.target(to.device)  # unknown, own or refused: fail before loading anything
        code = None
        if to.kind == "code" and to.code:
            from p2pd.pairing.codes import parse_code

            code = str(parse_code(to.code))
        src = await self.source(session, transcript_path=transcript_path, redact=redact)
        if to.kind != "code":
            rows = await self._queue_for_devices(to, src)
            return (await self._wait_rows([r.id for r in rows], wait))[0]
        return await self.codes.send(src, code, timeout=timeout, wait=wait, handoff_id=handoff_id)

    async def _queue_for_devices(self, to: SendTo, src: Source) -> list[TransferRow]:
        """Queue for a paired device, or for every member of a link (each row lists its siblings in
        ``detail.link_transfers``)."""
        net = self.network
        assert net is not None
        if to.kind == "device":
            assert to.device is not None
            rows = [await net.send_to_device(to.device, src)]
        else:
            assert to.link is not None
            rows = await net.send_to_link(to.link, src)
            ids = [r.id for r in rows]
            for r in rows:
                await asyncio.to_thread(self.store.update_transfer, r.id, detail={"link_transfers": ids})
        return rows

    async def receive(self, code: str, *, wait: float = 0.0, timeout: float = 300.0) -> TransferRow:
        """Receive with a code into the inbox (background; ``wait`` > 0 waits for the outcome)."""
        from p2pd.pairing.codes import parse_code

        return await self.codes.receive(str(parse_code(code)), wait=wait, timeout=timeout)

    async def wait_transfer(self, transfer_id: str, timeout: float) -> TransferRow:
        task = self.running.task(transfer_id)
        if task is not None:
            await asyncio.wait([task], timeout=timeout)
            return await asyncio.to_thread(self.store.get_transfer, transfer_id)
        return (await self._wait_rows([transfer_id], timeout))[0]  # a device transfer: the network runs it

    async def _wait_rows(self, ids: list[str], timeout: float) -> list[TransferRow]:
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        while True:
            rows = [await asyncio.to_thread(self.store.get_transfer, i) for i in ids]
            if all(r.state in TRANSFER_FINAL for r in rows) or loop.time() >= end:
                return rows
            await asyncio.sleep(0.1)

    async def list_transfers(self, state: str | None = None, limit: int = 100) -> list[TransferRow]:
        return await asyncio.to_thread(self.store.list_transfers, state, limit)

    async def get_transfer(self, transfer_id: str) -> TransferRow:
        return await asyncio.to_thread(self.store.get_transfer, transfer_id)

    async def cancel_transfer(self, transfer_id: str, reason: str = "cancelled through the daemon") -> TransferRow:
        row = await asyncio.to_thread(self.store.get_transfer, transfer_id)
        if row.state in TRANSFER_FINAL:
            raise ConflictError(f"transfer {transfer_id} is already {row.state}")
        if self.network is not None and row.direction == "out" and row.code is None:
            return await self.network.cancels.cancel_transfer(row, reason)  # its receiver decides
        await self.running.cancel(transfer_id, reason, grace=CANCEL_GRACE)  # tells the peer when under way
        await asyncio.to_thread(self.store.end_transfer, transfer_id, TransferState.CANCELLED, error=reason,
                                cause=Cause.CANCELLED)
        row = await asyncio.to_thread(self.store.get_transfer, transfer_id)
        if row.state != TransferState.CANCELLED:  # it finished first: the receiver has it
            raise ConflictError(f"transfer {transfer_id} was {row.state} before the cancel reached it")
        if self.network is not None and row.direction == "out" and row.code is None:
            self.network.transfer_ended(row)  # a cut-off attempt the receiver holds ends too
        return row

    async def retry_transfer(self, transfer_id: str) -> TransferRow:
        """Send now a transfer to a paired device that waits to be sent again (DeviceNetwork.send_again)."""
        row = await asyncio.to_thread(self.store.get_transfer, transfer_id)
        if self.network is None:
            raise ConflictError(f"transfer {transfer_id} is not one this daemon sends to a paired device")
        return self.network.send_again(row)

    async def answer_transfer(self, transfer_id: str, accept: bool) -> TransferRow:
        """Accept or decline an incoming transfer the accept policy holds pending (``ask``); returns its row once
        the answer took effect (409 when it waits for no decision)."""
        await asyncio.to_thread(self.store.get_transfer, transfer_id)  # 404 for an unknown id
        if self.network is None:
            raise ConflictError(f"transfer {transfer_id} is not waiting for a decision")
        self.network.transfers.answer(transfer_id, accept)
        loop = asyncio.get_running_loop()
        end = loop.time() + 5.0
        while True:
            row = await asyncio.to_thread(self.store.get_transfer, transfer_id)  # (declined: once it ended)
            if (not row.detail.get("pending") and (accept or row.state in TRANSFER_FINAL)) or loop.time() >= end:
                return row
            await asyncio.sleep(0.02)

    async def pending_transfers(self) -> list[TransferRow]:
        """Incoming transfers waiting for a decision (shown with the inbox), oldest first."""
        ids = self.network.transfers.pending.ids() if self.network is not None else []
        rows = [await asyncio.to_thread(self.store.get_transfer, tid) for tid in ids]
        return sorted(rows, key=lambda r: r.created_at)

    # ------------------------------------------------------------ what paired devices send (the network's host)
    async def accept_conversation(self, device: Device, blob_path: Path, *, transfer_id: str,
                                  handoff_id: str | None, link_id: str | None) -> str:
        """File a verified blob from a paired device in the inbox; for a handoff this daemon was granted, import it
        too (when its folder exists here) and return the resume command when that completes the handoff."""
        from p2pd.config import daemon_settings

        entry, package = await self.inbox.accept_from_device(device, blob_path, transfer_id=transfer_id,
                                                             handoff_id=handoff_id)
        if handoff_id is None:
            return ""
        return await self.work.received(device, entry.id, handoff_id, package, daemon_settings().handoff_agent)

    async def resume_import(self, device: Device, entry_id: str) -> str:
        """Start-up: finish the import of a granted handoff filed in the inbox before a stop (handoff_work.py)."""
        from p2pd.config import daemon_settings

        return await self.work.resume(device, entry_id, daemon_settings().handoff_agent)

    def should_claim(self, device: Device, offer: HandoffOffer) -> bool:
        from p2pd.config import daemon_settings

        return daemon_settings().accept_handoffs

    # ------------------------------------------------------------ inbox
    async def receive_into_inbox(self, doc: ConversationDocument, path: Path, *, transfer_id: str | None,
                                 from_peer: str, sha256: str = "", handoff_id: str | None = None) -> InboxRow:
        return await self.inbox.add(doc, path, transfer_id=transfer_id, from_peer=from_peer, sha256=sha256,
                                    handoff_id=handoff_id)

    async def list_inbox(self, limit: int = 100) -> list[InboxRow]:
        return await self.inbox.list(limit)

    async def not_filed_yet(self) -> list[TransferRow]:
        """Incoming transfers verified here whose filing this machine refused so far (refiling.py retries)."""
        rows = await asyncio.to_thread(self.store.list_transfers, TransferState.VERIFIED, 1000)
        return [r for r in rows if r.direction == "in" and r.error]

    async def get_inbox(self, inbox_id: str) -> dict[str, Any]:
        return await self.inbox.get(inbox_id)

    async def import_inbox(self, inbox_id: str, *, to: str = "claude-code", cwd: str | None = None,
                           same_account: bool = False) -> dict[str, Any]:
        """Import a received conversation; returns the session id, file and the resume command."""
        result = await self.inbox.import_(inbox_id, to=to, cwd=cwd, same_account=same_account)
        await self.work.imported(inbox_id, result)
        return result

    async def delete_inbox(self, inbox_id: str) -> InboxRow:
        return await self.inbox.delete(inbox_id)

    # ------------------------------------------------------------ handoffs
    async def resolve_session(self, *, session_id: str | None, transcript_path: str | None,
                              cwd: str | None) -> tuple[str | None, str | None]:
        """Which conversation a handoff carries: the given transcript, the given session (its hook-recorded
        transcript if known), else the newest hook-recorded session for ``cwd``, else the newest session whose
        project is ``cwd``."""
        if transcript_path or session_id:
            return session_id, transcript_path
        if cwd:
            hooked = await asyncio.to_thread(self.store.latest_hook_session, cwd)
            if hooked is not None:
                return hooked.session_id, hooked.transcript_path
            for info in await self.list_sessions(None, None):
                if info.get("cwd") == cwd:
                    return info["session_id"], info["path"]
        raise InvalidInputError("which conversation? pass session_id (the hook tells the agent its own) or "
                                "transcript_path, or a cwd that has a recorded session")

    async def create_handoff(self, package: HandoffPackage, *, target: str = "any", session_id: str | None = None,
                             transcript_path: str | None = None, redact: bool | None = None) -> HandoffRow:
        target = (target or "any").strip()
        if target != "any":
            if self.network is None:
                raise NoNetworkError()
            target = self.network.target(target).device_id  # stored by id, whatever name it was given as
        sid, tpath = await self.resolve_session(session_id=session_id, transcript_path=transcript_path,
                                                cwd=package.cwd or package.project_path)
        src = await self.source(sid, transcript_path=tpath, redact=redact)
        hid = new_id("ho")
        src.metadata = package_metadata(package, handoff_id=hid)
        packed = await pack_outbox(src, self.home.outbox)
        doc, path, digest = packed.envelope, packed.path, packed.sha256
        source = {"session_id": doc.origin.session_id or sid, "transcript_path": tpath or doc.origin.transcript_path,
                  "sha256": digest, "size": path.stat().st_size, "from_device": self.device_id, **document_stats(doc)}
        row = await asyncio.to_thread(self.store.create_handoff, id=hid, target=target,
                                      package=package.model_dump(mode="json"), document_path=str(path),
                                      title=doc.title or doc.context_id, source=source)
        if self.network is not None:
            await self.network.handoff_created(hid)
        return row

    async def list_handoffs(self, state: str | None = None, limit: int = 100) -> list[HandoffRow]:
        return await asyncio.to_thread(self.store.list_handoffs, state, limit)

    async def get_handoff(self, handoff_id: str) -> HandoffRow:
        return await asyncio.to_thread(self.store.get_handoff, handoff_id)

    async def claim_handoff(self, handoff_id: str, claimer: str) -> HandoffRow:
        """Atomic claim of this daemon's handoff; ConflictError (409) for everybody but the one winner. Back to
        pending unless started within ``handoff_claim_timeout``."""
        return await self.work.claim_local(handoff_id, claimer)

    async def list_offers(self, state: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        """Handoffs paired devices offered to this daemon, whatever ``accept_handoffs`` says."""
        rows = await asyncio.to_thread(self.store.list_offers, state, limit)
        return [self.work.offer_view(r) for r in rows]

    async def get_offer(self, handoff_id: str) -> dict[str, Any]:
        return self.work.offer_view(await asyncio.to_thread(self.store.get_offer, handoff_id))

    async def claim(self, handoff_id: str, wait: float = 20.0) -> dict[str, Any]:
        """Claim an offered handoff (asking its sender) or one of this daemon's own."""
        return await self.work.claim(handoff_id, wait=wait)

    async def report_handoff(self, handoff_id: str, state: str, *, result: str = "",
                             reason: str = "") -> dict[str, Any]:
        """The worker's report: started, completed (with its result) or failed (with a reason)."""
        return await self.work.report(handoff_id, state, result=result, reason=reason)

    async def transition_handoff(self, handoff_id: str, state: str, *, output: str | None = None,
                                 reason: str | None = None) -> HandoffRow:
        return await asyncio.to_thread(self.store.transition_handoff, handoff_id, state, output=output,
                                       reason=reason)

    async def cancel_handoff(self, handoff_id: str, reason: str = "cancelled by the sender") -> HandoffRow:
        """Cancel a handoff: at once, unless a paired device holds it — then it decides (cancels.py)."""
        if self.network is None:
            return await self.transition_handoff(handoff_id, "cancelled", reason=reason)
        return await self.network.cancels.cancel_handoff(handoff_id, reason)

    # ------------------------------------------------------------ stats, devices, hook
    async def stats(self) -> dict[str, Any]:
        def work() -> dict[str, Any]:
            handoffs = self.store.handoff_stats()
            return {"handoffs": handoffs, "handoffs_open": sum(n for s, n in handoffs.items() if s not in FINAL),
                    "transfers": self.store.transfer_stats(), "inbox": self.store.inbox_count(),
                    "running_tasks": len(self.running), "uptime": round(time.time() - self.started_at, 1),
                    "network": self.network is not None}

        return await asyncio.to_thread(work)

    def devices(self) -> list[dict[str, Any]]:
        return self.network.devices() if self.network is not None else []

    def _net(self) -> DeviceNetwork:
        if self.network is None:
            raise NoNetworkError()
        return self.network

    def offer_desk(self) -> OfferDesk:
        return self._net().offers

    def links(self) -> list[dict[str, Any]]:
        return [v.model_dump() for v in self.network.links.links.values()] if self.network is not None else []

    async def create_link(self, name: str, devices: list[str]) -> dict[str, Any]:
        return (await self._net().create_link(name, devices)).model_dump()

    async def close_link(self, link_id: str) -> dict[str, Any]:
        return (await self._net().close_link(link_id)).model_dump()

    async def leave_link(self, link_id: str) -> dict[str, Any]:
        return (await self._net().leave_link(link_id)).model_dump()

    async def record_hook_session(self, *, session_id: str, transcript_path: str | None, cwd: str | None,
                                  source: str | None = None) -> dict[str, Any]:
        row = await asyncio.to_thread(self.store.record_hook_session, session_id=session_id,
                                      transcript_path=transcript_path, cwd=cwd, source=source)
        context = await asyncio.to_thread(session_context, self.store, session_id, transcript_path)
        sessions = await self.agent_sessions.hook("session-start", {"session_id": session_id})
        return {**row.to_json(), "handoff_context": context, **sessions}
