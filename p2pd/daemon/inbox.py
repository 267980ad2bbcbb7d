"""The inbox: conversations received here (verified), filed as documents and rows in the store, until they are
imported into an agent (Claude Code, Codex) or deleted.

What paired devices send arrives through :meth:`Inbox.accept_from_device`; for a handoff this daemon was granted
the service imports it (:meth:`p2pd.daemon.service.DaemonService.accept_conversation`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
from pathlib import Path
from typing import Any

from p2pd.agents.file_source import document_envelope
from p2pd.conversation.model import ConversationDocument
from p2pd.daemon.devices import Device
from p2pd.daemon.handoffs import package_of
from p2pd.daemon.home import Home
from p2pd.daemon.store import InboxRow, Store
from p2pd.errors import P2pdError


class Inbox:
    def __init__(self, home: Home, store: Store) -> None:
        self.home = home
        self.store = store

    async def add(self, doc: ConversationDocument, path: Path, *, transfer_id: str | None, from_peer: str,
                  sha256: str = "", handoff_id: str | None = None) -> InboxRow:
        """Record a received, verified conversation (already saved at ``path``) in the inbox; ``doc``: its envelope
        (read as a stream). The handoff id is taken from the document's package when not given."""
        if handoff_id is None:
            package = package_of(doc)
            hid = package.get("id") if package else None
            handoff_id = hid if isinstance(hid, str) else None
        handoff_id = handoff_id or None  # "": no handoff, whatever the document says
        return await asyncio.to_thread(
            self.store.add_inbox, transfer_id=transfer_id, from_peer=from_peer, document_path=str(path),
            title=doc.title or doc.context_id, platform=doc.origin.platform,
            session_id=doc.origin.session_id or doc.context_id, messages=doc.counts.messages, sha256=sha256,
            handoff_id=handoff_id)

    async def accept_from_device(self, device: Device, blob_path: Path, *, transfer_id: str,
                                 handoff_id: str | None) -> tuple[InboxRow, dict[str, Any] | None]:
        """File a verified blob from a paired device in the inbox; returns the entry and the handoff package in
        the document. ``handoff_id``: the handoff this daemon was granted (the document's own package id is not
        trusted: a tag counts only for a handoff this daemon accepted)."""
        def file_it() -> tuple[ConversationDocument, Path, str]:
            from p2pd.agents.sources import safe_file_stem
            from p2pd.blob.stream import check_file, iter_raw
            from p2pd.conversation.stream_reader import DocumentReader
            from p2pd.exchange.packing import place

            digest = check_file(blob_path).sha256.hex()
            # read as a stream (each element checked, within the reader's limits) while it is copied to the inbox
            reader = DocumentReader(source=f"the conversation from {device.name}")
            self.home.inbox.mkdir(parents=True, exist_ok=True)
            staged = self.home.inbox / f".{blob_path.name}.part"
            try:
                with staged.open("wb") as out:
                    for piece in iter_raw(blob_path):
                        reader.feed(piece)
                        out.write(piece)
                summary = reader.finish()
                doc = summary.document
                doc.counts = summary.counts
                path = place(staged, self.home.inbox, safe_file_stem(doc.context_id))
            except BaseException:
                staged.unlink(missing_ok=True)
                raise
            return doc, path, digest

        doc, path, digest = await asyncio.to_thread(file_it)
        entry = await self.add(doc, path, transfer_id=transfer_id, from_peer=device.device_id, sha256=digest,
                               handoff_id=handoff_id or "")
        # the verified blob goes only once the entry is stored: a stop in between leaves it for the next start
        await asyncio.to_thread(blob_path.unlink, missing_ok=True)
        return entry, package_of(doc) if handoff_id else None

    async def list(self, limit: int = 100) -> list[InboxRow]:
        return await asyncio.to_thread(self.store.list_inbox, limit)

    async def get(self, inbox_id: str) -> dict[str, Any]:
        row = await asyncio.to_thread(self.store.get_inbox, inbox_id)
        out = row.to_json()
        try:  # read as a stream: the envelope (summary, package, counts), never the whole document
            doc = await asyncio.to_thread(document_envelope, row.document_path)
        except P2pdError as exc:
            out["document_error"] = str(exc)
            return out
        out.update(summary=doc.summary, handoff=package_of(doc), stats=document_stats(doc))
        return out

    async def import_(self, inbox_id: str, *, to: str = "claude-code", cwd: str | None = None,
                      same_account: bool = False) -> dict[str, Any]:
        """Import a received conversation (in a child process: :mod:`p2pd.daemon.importer`); returns the session
        id, file and the resume command."""
        from p2pd.daemon.importer import import_in_child

        row = await asyncio.to_thread(self.store.get_inbox, inbox_id)
        # read as a stream into a spool beside the inbox, by a process of its own
        out = await import_in_child(row.document_path, to=to, cwd=cwd, same_account=same_account,
                                    spool_dir=self.home.inbox)
        await asyncio.to_thread(self.store.mark_imported, inbox_id, out)
        return out

    async def delete(self, inbox_id: str) -> InboxRow:
        row = await asyncio.to_thread(self.store.delete_inbox, inbox_id)
        with contextlib.suppress(FileNotFoundError):
            await asyncio.to_thread(os.unlink, row.document_path)
        return row


def document_stats(doc: ConversationDocument) -> dict[str, Any]:
    c = doc.counts
    return {"title": doc.title or doc.context_id, "platform": doc.origin.platform,
            "session_id": doc.origin.session_id or doc.context_id, "cwd": doc.origin.cwd,
            "messages": c.messages, "tool_calls": c.tool_calls, "subagents": c.subagents}


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def existing_folder(package: dict[str, Any] | None) -> str | None:
    """The handoff's project folder or working directory, when it exists on this machine."""
    for candidate in ((package or {}).get("project_path"), (package or {}).get("cwd")):
        if isinstance(candidate, str) and candidate and Path(candidate).is_dir():
            return candidate
    return None


__all__ = ["Inbox", "document_stats", "existing_folder", "file_sha256"]
