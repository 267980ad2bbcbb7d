"""What the daemon does, in one place: the HTTP API and the MCP tools are thin layers over :class:`DaemonService`.

Sends and receives run as background tasks, each tracked by a row in the store's ``transfers`` table and
cancellable through a :class:`~p2pd.transfer.channel.TransferControl` (which tells the peer) and, while still
pairing, by cancelling the task. Blocking work (parsing transcripts, SQLite, compression) runs in threads.

Sends to a device or a link go through the device network (:class:`p2pd.daemon.network.DeviceNetwork`, plugged in
by ``serve``), which also hands this service what paired devices send (:meth:`DaemonService.accept_conversation`);
without a network they fail with :class:`NoNetworkError` (HTTP 409).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from p2pd.blob import container as blob
from p2pd.conversation.document_io import parse_document, read_document, write_document
from p2pd.conversation.model import ConversationDocument
from p2pd.daemon.handoffs import FINAL, HandoffPackage, attach_package, package_of
from p2pd.daemon.home import Home
from p2pd.daemon.store import TRANSFER_FINAL, HandoffRow, InboxRow, ProgressWriter, Store, TransferRow, new_id
from p2pd.errors import ConflictError, InvalidInputError, NotFoundError, P2pdError
from p2pd.transfer.channel import TransferControl

if TYPE_CHECKING:
    from p2pd.daemon.devices import Device
    from p2pd.daemon.network import DeviceNetwork
    from p2pd.daemon.peer_protocol import HandoffOffer

log = logging.getLogger("p2pd.daemon")

CODE_WAIT = 20.0  # seconds POST /send waits for the signaling server to hand out a code
CANCEL_GRACE = 3.0  # seconds a cancelled transfer may take to tell its peer before its task is stopped


class NoNetworkError(ConflictError):
    """A device or link send without a device network (HTTP 409)."""

    def __init__(self) -> None:
        super().__init__("no device network: start the daemon with a signaling server and pair a device first "
                         "(`p2pd pair`), or send to a code instead")


class SendTo(BaseModel):
    """Exactly one of: a paired ``device`` (id or name), a pairing ``code`` (``""`` or null: make a new one), a
    fan-out ``link``."""

    model_config = ConfigDict(extra="forbid")

    device: str | None = Field(default=None, max_length=200)
    code: str | None = Field(default=None, max_length=200)
    link: str | None = Field(default=None, max_length=200)

    @model_validator(mode="after")
    def _exactly_one(self) -> SendTo:
        given = [k for k in ("device", "code", "link") if k in self.model_fields_set]
        if len(given) != 1:
            raise ValueError("'to' needs exactly one of device, code or link")
        if given[0] != "code" and not getattr(self, given[0]):
            raise ValueError(f"'to.{given[0]}' must not be empty")
        return self

    @property
    def kind(self) -> str:
        return next(k for k in ("device", "code", "link") if k in self.model_fields_set)


class _TransferUI:
    """The exchange UI of a daemon transfer: writes what happens into the transfer's row."""

    def __init__(self, store: Store, transfer_id: str) -> None:
        self.store = store
        self.transfer_id = transfer_id
        self.code_event = asyncio.Event()
        self._progress = ProgressWriter(store, transfer_id, with_size=True)

    def code_ready(self, code: str) -> None:
        self.store.update_transfer(self.transfer_id, code=code)
        self.code_event.set()

    def paired(self, verification: str) -> None:
        self.store.update_transfer(self.transfer_id, state="running", detail={"verification": verification})

    def status(self, text: str) -> None:
        self.store.update_transfer(self.transfer_id, detail={"status": text})

    def progress(self, done: int, total: int) -> None:
        self._progress(done, total)

    async def decide(self, offer: Any) -> bool:
        info = offer.info
        await asyncio.to_thread(self.store.update_transfer, self.transfer_id, title=info.title,
                                size=offer.compressed_size,
                                detail={"platform": info.platform, "session_id": info.session_id,
                                        "messages": info.message_count, "raw_size": offer.raw_size})
        return True


def _document_stats(doc: ConversationDocument) -> dict[str, Any]:
    c = doc.counts
    return {"title": doc.title or doc.context_id, "platform": doc.origin.platform,
            "session_id": doc.origin.session_id or doc.context_id, "cwd": doc.origin.cwd,
            "messages": c.messages, "tool_calls": c.tool_calls, "subagents": c.subagents}


class DaemonService:
    def __init__(self, home: Home, store: Store, *, network: DeviceNetwork | None = None,
                 signal_url: str | None = None, device_id: str = "local") -> None:
        self.home = home
        self.store = store
        self.network = network
        self._signal_url = signal_url
        self.device_id = device_id
        self.started_at = time.time()
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._controls: dict[str, TransferControl] = {}
        self._stopping = False

    # ------------------------------------------------------------ lifecycle
    async def start(self) -> list[TransferRow]:
        """Mark what a previous daemon left running as interrupted (returned), then start the network."""
        await asyncio.to_thread(self.home.ensure)
        interrupted = await asyncio.to_thread(self.store.interrupted_transfers)
        if self.network is not None:
            await self.network.start()
        return interrupted

    async def stop(self) -> None:
        """Stop running transfers (they become 'interrupted', to be resumed by the next start) and the network."""
        self._stopping = True
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=5)
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

    async def load(self, session: str | None = None, *, transcript_path: str | None = None,
                   redact: bool | None = None) -> ConversationDocument:
        """A session (id, prefix, 'latest', file) or a transcript path → document, redacted if asked/configured."""
        from p2pd.agents.sources import load_conversation, load_file
        from p2pd.config import redact_default

        if transcript_path and (not session or Path(transcript_path).is_file()):
            doc = await asyncio.to_thread(load_file, transcript_path)
        elif session:  # (a recorded transcript path that is gone: find the session by its id)
            known = await asyncio.to_thread(self.store.hook_session, session)
            if known is not None and known.transcript_path and Path(known.transcript_path).is_file():
                doc = await asyncio.to_thread(load_file, known.transcript_path)
            else:
                doc = await asyncio.to_thread(load_conversation, session)
        else:
            raise InvalidInputError("name a session (id, prefix, 'latest') or a transcript path")
        if redact if redact is not None else redact_default():
            from p2pd.conversation.redact import redact_document

            doc, _report = await asyncio.to_thread(redact_document, doc)
        return doc

    async def export(self, session: str | None = None, *, transcript_path: str | None = None,
                     output: str | None = None, compressed: bool = False, redact: bool | None = None) -> dict[str, Any]:
        doc = await self.load(session, transcript_path=transcript_path, redact=redact)
        suffix = ".a2a.p2pd" if compressed else ".a2a.json"
        safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in doc.context_id)[:80] or "conversation"
        target = Path(output).expanduser() if output else self.home.exports / f"{safe}{suffix}"
        if not target.is_absolute():
            raise InvalidInputError("the output path must be absolute (the daemon's working folder is not yours)")
        size = await asyncio.to_thread(write_document, doc, target, compressed=compressed)
        digest = await asyncio.to_thread(_file_sha256, target)
        return {"path": str(target), "size": size, "sha256": digest, **_document_stats(doc)}

    # ------------------------------------------------------------ transfers
    def _spawn(self, transfer_id: str, work: Callable[[TransferControl], Awaitable[None]]) -> asyncio.Task[None]:
        control = TransferControl()
        self._controls[transfer_id] = control

        async def run() -> None:
            try:
                await work(control)
            except asyncio.CancelledError:
                if self._stopping and not control.cancelled:
                    await self._finish(transfer_id, "interrupted", "the daemon stopped")
                else:
                    await self._finish(transfer_id, "cancelled", control.reason or "cancelled")
            except (P2pdError, OSError) as exc:
                state = "cancelled" if control.cancelled else "failed"
                await self._finish(transfer_id, state, control.reason if control.cancelled else str(exc))
            except Exception as exc:  # a bug must not kill the daemon; the row says what happened
                log.exception("transfer %s failed", transfer_id)
                await self._finish(transfer_id, "failed", f"unexpected {type(exc).__name__}: {exc}")
            finally:
                self._tasks.pop(transfer_id, None)
                self._controls.pop(transfer_id, None)

        task = asyncio.get_running_loop().create_task(run(), name=f"transfer {transfer_id}")
        self._tasks[transfer_id] = task
        return task

    async def _finish(self, transfer_id: str, state: str, error: str | None = None,
                      detail: dict[str, Any] | None = None) -> None:
        def work() -> None:
            row = self.store.get_transfer(transfer_id)
            if row.state not in TRANSFER_FINAL:
                self.store.update_transfer(transfer_id, state=state, error=error, detail=detail)

        await asyncio.to_thread(work)

    async def _outbox_blob(self, doc: ConversationDocument) -> tuple[Path, str, int]:
        """The document as a wire blob in ``outbox/``, named by its payload's SHA-256 (kept for resume)."""
        from p2pd.daemon.network import pack_outbox

        path, _info, digest = await asyncio.to_thread(pack_outbox, doc, self.home.outbox)
        return path, digest, path.stat().st_size

    async def send(self, to: SendTo, session: str | None = None, *, transcript_path: str | None = None,
                   redact: bool | None = None, wait: float = 0.0, timeout: float = 300.0,
                   handoff_id: str | None = None) -> TransferRow:
        """Start sending; returns the transfer (with the code when sending to a code). ``wait`` > 0 waits up to
        that many seconds for the outcome."""
        if to.kind in ("device", "link") and self.network is None:
            raise NoNetworkError()
        code = None
        if to.kind == "code" and to.code:
            from p2pd.pairing.codes import parse_code

            code = str(parse_code(to.code))
        doc = await self.load(session, transcript_path=transcript_path, redact=redact)
        if to.kind != "code":
            return await self._send_to_devices(to, doc, wait=wait)
        path, digest, size = await self._outbox_blob(doc)
        row = await asyncio.to_thread(
            self.store.create_transfer, "out", "code", title=doc.title or doc.context_id, size=size, sha256=digest,
            blob_path=str(path), handoff_id=handoff_id, code=code, detail={"kind": to.kind, **_document_stats(doc)})
        tid = row.id
        ui = _TransferUI(self.store, tid)
        task = self._spawn(tid, lambda control: self._send_code(tid, doc, code, ui, control, timeout))
        waiter = asyncio.ensure_future(ui.code_event.wait())
        await asyncio.wait([waiter, task], timeout=CODE_WAIT, return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        if wait > 0:
            await asyncio.wait([task], timeout=wait)
        return await asyncio.to_thread(self.store.get_transfer, tid)

    async def _send_to_devices(self, to: SendTo, doc: ConversationDocument, *, wait: float) -> TransferRow:
        """Queue for a paired device, or for every member of a link (the first row is returned; each row
        lists its siblings in ``detail.link_transfers``)."""
        net = self.network
        assert net is not None
        if to.kind == "device":
            assert to.device is not None
            rows = [await net.send_to_device(to.device, doc)]
        else:
            assert to.link is not None
            rows = await net.send_to_link(to.link, doc)
            ids = [r.id for r in rows]
            for r in rows:
                await asyncio.to_thread(self.store.update_transfer, r.id, detail={"link_transfers": ids})
        return (await self._wait_rows([r.id for r in rows], wait))[0]

    async def _send_code(self, tid: str, doc: ConversationDocument, code: str | None, ui: _TransferUI,
                         control: TransferControl, timeout: float) -> None:
        from p2pd.exchange.handover import send_document

        await asyncio.to_thread(self.store.update_transfer, tid, state="running")
        outcome = await send_document(doc, signal_url=self.signal_url(), code=code, ui=ui, peer_timeout=timeout,
                                      fallback_dir=self.home.outbox, control=control)
        if outcome.sent:
            r = outcome.result
            await asyncio.to_thread(self.store.update_transfer, tid, bytes_done=r.compressed_size)
            await self._finish(tid, "done", detail={"bytes_sent": r.bytes_sent, "resumed_bytes": r.resumed_bytes,
                                                    "elapsed": round(r.elapsed, 3), "verified_sha256": r.sha256.hex()})
        else:
            await self._finish(tid, "failed", f"no peer connection ({outcome.fallback_reason}); the conversation "
                               f"was written to {outcome.fallback_path}",
                               detail={"fallback_path": str(outcome.fallback_path)})

    async def receive(self, code: str, *, wait: float = 0.0, timeout: float = 300.0) -> TransferRow:
        """Receive with a code into the inbox (background; ``wait`` > 0 waits for the outcome)."""
        from p2pd.pairing.codes import parse_code

        parsed = str(parse_code(code))
        row = await asyncio.to_thread(self.store.create_transfer, "in", "code", code=parsed, detail={"kind": "code"})
        tid = row.id
        ui = _TransferUI(self.store, tid)

        async def work(control: TransferControl) -> None:
            from p2pd.exchange.handover import receive_document

            await asyncio.to_thread(self.store.update_transfer, tid, state="running")
            outcome = await receive_document(signal_url=self.signal_url(), code=parsed, ui=ui,
                                             out_dir=self.home.inbox, peer_timeout=timeout, control=control)
            digest = await asyncio.to_thread(_file_sha256, outcome.path)
            entry = await self.receive_into_inbox(outcome.document, outcome.path, transfer_id=tid, from_peer="code",
                                                  sha256=digest)
            await asyncio.to_thread(self.store.update_transfer, tid, bytes_done=outcome.bytes_received)
            await self._finish(tid, "done", detail={"inbox_id": entry.id, "resumed_bytes": outcome.resumed_bytes})

        task = self._spawn(tid, work)
        if wait > 0:
            await asyncio.wait([task], timeout=wait)
        return await asyncio.to_thread(self.store.get_transfer, tid)

    async def wait_transfer(self, transfer_id: str, timeout: float) -> TransferRow:
        task = self._tasks.get(transfer_id)
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
        control, task = self._controls.get(transfer_id), self._tasks.get(transfer_id)
        if self.network is not None:
            self.network.cancel_transfer(transfer_id, reason)
        if control is not None:
            control.cancel(reason)  # tells the peer when the transfer is under way
        if task is not None:
            done, _ = await asyncio.wait([task], timeout=CANCEL_GRACE)
            if not done:
                task.cancel()  # still pairing or connecting: nothing to tell
                await asyncio.wait([task], timeout=CANCEL_GRACE)
        await self._finish(transfer_id, "cancelled", reason)
        return await asyncio.to_thread(self.store.get_transfer, transfer_id)

    # ------------------------------------------------------------ what paired devices send (the network's host)
    async def accept_conversation(self, device: Device, blob_path: Path, *, transfer_id: str,
                                  handoff_id: str | None, link_id: str | None) -> str:
        """File a verified blob from a paired device in the inbox; for a handoff, import it too and return the
        resume command (the handoff's output)."""
        from p2pd.exchange.handover import fallback_file

        def file_it() -> tuple[ConversationDocument, Path, str]:
            raw = blob_path.read_bytes()
            digest = blob.BlobHeader.unpack(raw).sha256.hex()
            doc = parse_document(blob.decode(raw), source=f"the conversation from {device.name}")
            path = fallback_file(doc, self.home.inbox)
            os.unlink(blob_path)
            return doc, path, digest

        doc, path, digest = await asyncio.to_thread(file_it)
        entry = await self.receive_into_inbox(doc, path, transfer_id=transfer_id, from_peer=device.device_id,
                                              sha256=digest, handoff_id=handoff_id)
        if handoff_id is None:
            return ""
        from p2pd.config import daemon_settings

        package = package_of(doc) or {}
        folders = [package.get("cwd"), package.get("project_path")]
        folder = next((f for f in folders if isinstance(f, str) and Path(f).is_dir()), None)
        try:
            result = await self.import_inbox(entry.id, to=daemon_settings().handoff_agent, cwd=folder)
        except P2pdError as exc:
            raise type(exc)(f"received into the inbox as {entry.id} but not imported: {exc}; import it with "
                            f"`p2pd inbox import {entry.id} --cwd DIR`") from exc
        return str(result["resume_command"])

    def should_claim(self, device: Device, offer: HandoffOffer) -> bool:
        from p2pd.config import daemon_settings

        return daemon_settings().accept_handoffs

    # ------------------------------------------------------------ inbox
    async def receive_into_inbox(self, doc: ConversationDocument, path: Path, *, transfer_id: str | None,
                                 from_peer: str, sha256: str = "", handoff_id: str | None = None) -> InboxRow:
        """Record a received, verified conversation (already saved at ``path``) in the inbox. The handoff id is
        taken from the document's package when not given."""
        if handoff_id is None:
            package = package_of(doc)
            hid = package.get("id") if package else None
            handoff_id = hid if isinstance(hid, str) else None
        return await asyncio.to_thread(
            self.store.add_inbox, transfer_id=transfer_id, from_peer=from_peer, document_path=str(path),
            title=doc.title or doc.context_id, platform=doc.origin.platform,
            session_id=doc.origin.session_id or doc.context_id, messages=doc.counts.messages, sha256=sha256,
            handoff_id=handoff_id)

    async def list_inbox(self, limit: int = 100) -> list[InboxRow]:
        return await asyncio.to_thread(self.store.list_inbox, limit)

    async def get_inbox(self, inbox_id: str) -> dict[str, Any]:
        row = await asyncio.to_thread(self.store.get_inbox, inbox_id)
        out = row.to_json()
        try:
            doc = await asyncio.to_thread(read_document, row.document_path)
        except P2pdError as exc:
            out["document_error"] = str(exc)
            return out
        out.update(summary=doc.summary, handoff=package_of(doc), stats=_document_stats(doc))
        return out

    async def import_inbox(self, inbox_id: str, *, to: str = "claude-code", cwd: str | None = None,
                           same_account: bool = False) -> dict[str, Any]:
        """Import a received conversation; returns the session id, file and the resume command."""
        from p2pd.agents.importing import import_document

        row = await asyncio.to_thread(self.store.get_inbox, inbox_id)
        doc = await asyncio.to_thread(read_document, row.document_path)
        folder = cwd or _resume_folder(doc)
        if folder is None:
            raise InvalidInputError("say which project folder to resume in (cwd): the conversation's own folder "
                                    "does not exist on this machine")
        if not Path(folder).is_dir():
            raise NotFoundError(f"the folder to resume in does not exist: {folder}")
        result = await asyncio.to_thread(import_document, doc, to=to, cwd=folder, same_account=same_account)
        out = {"to": to, "session_id": result.session_id, "path": str(result.path), "cwd": folder,
               "lines": result.lines, "warnings": list(result.warnings), "resume_command": result.resume_command}
        await asyncio.to_thread(self.store.mark_imported, inbox_id, out)
        return out

    async def delete_inbox(self, inbox_id: str) -> InboxRow:
        row = await asyncio.to_thread(self.store.delete_inbox, inbox_id)
        with contextlib.suppress(FileNotFoundError):
            await asyncio.to_thread(os.unlink, row.document_path)
        return row

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
        sid, tpath = await self.resolve_session(session_id=session_id, transcript_path=transcript_path,
                                                cwd=package.cwd or package.project_path)
        doc = await self.load(sid, transcript_path=tpath, redact=redact)
        hid = new_id("ho")
        attach_package(doc, package, handoff_id=hid)
        path, digest, size = await self._outbox_blob(doc)
        source = {"session_id": doc.origin.session_id or sid, "transcript_path": tpath or doc.origin.transcript_path,
                  "sha256": digest, "size": size, "from_device": self.device_id, **_document_stats(doc)}
        row = await asyncio.to_thread(self.store.create_handoff, id=hid, target=target or "any",
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
        """Atomic claim; ConflictError (409) for everybody but the one winner."""
        row = await asyncio.to_thread(self.store.claim_handoff, handoff_id, claimer)
        if row is None:
            current = await asyncio.to_thread(self.store.get_handoff, handoff_id)
            if current.state != "pending":
                who = f" by {current.claimed_by}" if current.claimed_by else ""
                raise ConflictError(f"handoff {handoff_id} is already {current.state}{who}")
            raise ConflictError(f"handoff {handoff_id} is for device {current.target}, not {claimer}")
        return row

    async def transition_handoff(self, handoff_id: str, state: str, *, output: str | None = None,
                                 reason: str | None = None) -> HandoffRow:
        return await asyncio.to_thread(self.store.transition_handoff, handoff_id, state, output=output,
                                       reason=reason)

    async def cancel_handoff(self, handoff_id: str, reason: str = "cancelled by the sender") -> HandoffRow:
        row = await self.transition_handoff(handoff_id, "cancelled", reason=reason)
        for tid in [t for t, task in self._tasks.items() if not task.done()]:
            tr = await asyncio.to_thread(self.store.get_transfer, tid)
            if tr.handoff_id == handoff_id:
                with contextlib.suppress(ConflictError):
                    await self.cancel_transfer(tid, reason)
        return row

    # ------------------------------------------------------------ stats, devices, hook
    async def stats(self) -> dict[str, Any]:
        def work() -> dict[str, Any]:
            handoffs = self.store.handoff_stats()
            return {"handoffs": handoffs, "handoffs_open": sum(n for s, n in handoffs.items() if s not in FINAL),
                    "transfers": self.store.transfer_stats(), "inbox": self.store.inbox_count(),
                    "running_tasks": len(self._tasks), "uptime": round(time.time() - self.started_at, 1),
                    "network": self.network is not None}

        return await asyncio.to_thread(work)

    def devices(self) -> list[dict[str, Any]]:
        return self.network.devices() if self.network is not None else []

    def _net(self) -> DeviceNetwork:
        if self.network is None:
            raise NoNetworkError()
        return self.network

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
        return row.to_json()


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _resume_folder(doc: ConversationDocument) -> str | None:
    package = package_of(doc) or {}
    for candidate in (package.get("project_path"), package.get("cwd"), doc.origin.cwd):
        if isinstance(candidate, str) and candidate and Path(candidate).is_dir():
            return candidate
    return None
