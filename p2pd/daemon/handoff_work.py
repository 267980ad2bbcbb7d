"""Work on handoffs, both sides, for the service (and through it the HTTP API and the MCP tools):

- the receiving side: a conversation of a handoff this daemon was granted is filed in the inbox and imported
  when its folder exists here; with ``accept_handoffs`` (mode ``auto``) the import completes it, and an import
  done later by hand (the folder was missing) completes it too. A worker (mode ``worker``: a person or an agent
  claimed it) reports started, then completed with its result or failed with a reason;
- the sending side: a handoff claimed over the local API is worked on the same way; a claim that is not started
  within ``handoff_claim_timeout`` seconds goes back to pending (and is offered again);
- the context a resumed session gets (the SessionStart hook's additional context): the handoff's goal, summary,
  notes and files, and what to call when the work is done.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any, Protocol

from p2pd.daemon.inbox import existing_folder
from p2pd.daemon.offers import HELD
from p2pd.daemon.store import HandoffRow, OfferRow, Store
from p2pd.errors import ConflictError, InvalidInputError, NotFoundError
from p2pd.support.text import visible

if TYPE_CHECKING:
    from p2pd.daemon.devices import Device
    from p2pd.daemon.inbox import Inbox
    from p2pd.daemon.network import DeviceNetwork
    from p2pd.daemon.offer_desk import OfferDesk


class WorkOwner(Protocol):
    """What the handoff work needs from the service."""

    store: Store
    inbox: Inbox
    network: DeviceNetwork | None
    device_id: str

    def offer_desk(self) -> OfferDesk:
        """The device network's offer desk (NoNetworkError without a network)."""
        ...

log = logging.getLogger("p2pd.daemon")

MAX_CONTEXT = 12_000  # characters of handoff context given to a resumed session


class HandoffWork:
    def __init__(self, service: WorkOwner) -> None:
        self.service = service
        self.store: Store = service.store

    def _offer_desk(self) -> OfferDesk:
        return self.service.offer_desk()

    # ---- receiving side ------------------------------------------------------------------------------------

    async def received(self, device: Device, entry_id: str, hid: str, package: dict[str, Any] | None,
                       agent: str) -> str:
        """A granted handoff's conversation is in the inbox as ``entry_id``: import it where it belongs. Returns the
        resume command when the handoff is this daemon's to complete (mode auto), else ""."""
        try:
            return await self._import_received(device, entry_id, hid, package, agent)
        except ConflictError:  # the sender withdrew it meanwhile (chaos seed 319): an ordinary conversation, kept
            log.info("handoff %s was closed while its conversation was filed; not imported", hid)
            return ""

    async def resume(self, device: Device, entry_id: str, agent: str) -> str:
        """Start-up: a granted handoff's conversation was filed in the inbox but a stop cut its import off (its
        transfer committed, so it is this daemon's to finish): imported now, as :meth:`received` would have. Returns
        the resume command when that completes the handoff."""
        from p2pd.agents.file_source import document_envelope
        from p2pd.daemon.handoffs import package_of

        entry = await asyncio.to_thread(self.store.get_inbox, entry_id)
        if entry.handoff_id is None:
            return ""
        if entry.imported:  # imported, and stopped before it was reported
            offer = await asyncio.to_thread(self.store.find_offer, entry.handoff_id, device.device_id)
            return str(entry.imported.get("resume_command") or "") if offer is not None and offer.mode == "auto" \
                else ""
        # (read as a stream for its envelope, whose metadata holds the package: never whole in the daemon)
        doc = await asyncio.to_thread(document_envelope, entry.document_path)
        return await self.received(device, entry_id, entry.handoff_id, package_of(doc), agent)

    async def _import_received(self, device: Device, entry_id: str, hid: str, package: dict[str, Any] | None,
                               agent: str) -> str:
        offer = await asyncio.to_thread(self.store.find_offer, hid, device.device_id)
        if offer is None or offer.state not in HELD:
            return ""
        await self._set(offer, inbox_id=entry_id, package=package or {})
        folder = existing_folder(package)
        if folder is None:
            await self._set(offer, reason="its folder does not exist here: import it with `p2pd inbox import "
                                          f"{entry_id} --cwd DIR`")
            return ""
        offer = await asyncio.to_thread(self.store.find_offer, hid, device.device_id)  # withdrawn meanwhile?
        if offer is None or offer.state not in HELD:
            return ""
        try:
            result = await self.service.inbox.import_(entry_id, to=agent, cwd=folder)
        except (NotFoundError, InvalidInputError) as exc:
            await self._set(offer, reason=f"not imported: {exc}")
            return ""
        await self._set(offer, resume_command=result["resume_command"])
        return str(result["resume_command"]) if offer.mode == "auto" else ""

    async def imported(self, inbox_id: str, result: dict[str, Any]) -> None:
        """An inbox entry was imported by hand: a handoff this daemon accepted by itself is done with it."""
        entry = await asyncio.to_thread(self.store.get_inbox, inbox_id)
        if entry.handoff_id is None or self.service.network is None:
            return
        offer = await asyncio.to_thread(self.store.find_offer, entry.handoff_id, entry.from_peer)
        if offer is None or offer.state not in HELD:
            return
        await self._set(offer, resume_command=result["resume_command"])
        if offer.mode == "auto":
            await self._offer_desk().complete(offer.id, "imported by hand on the receiving device",
                                              output=result["resume_command"])

    async def _set(self, offer: OfferRow, **fields: Any) -> None:
        await asyncio.to_thread(self.store.move_offer, offer.id, offer.from_device, offer.state, **fields)

    # ---- either side: the worker's reports --------------------------------------------------------------------

    async def claim(self, hid: str, *, wait: float) -> dict[str, Any]:
        """Claim a handoff: one a paired device offered here (asks it), else one of this daemon's own (as this
        device, with a lease)."""
        if await asyncio.to_thread(self.store.find_offer, hid) is not None:
            return self.offer_view(await self._offer_desk().claim(hid, wait=wait))
        return (await self.claim_local(hid, self.service.device_id)).to_json()

    async def claim_local(self, hid: str, claimer: str) -> HandoffRow:
        """Atomic claim of one of this daemon's handoffs; ConflictError (409) for everybody but the one winner. It
        returns to pending unless started within ``handoff_claim_timeout`` seconds."""
        from p2pd.config import daemon_settings

        lease = time.time() + daemon_settings().handoff_claim_timeout
        row = await asyncio.to_thread(self.store.claim_handoff, hid, claimer, lease_until=lease)
        if row is None:
            current = await asyncio.to_thread(self.store.get_handoff, hid)
            if current.state != "pending":
                who = f" by {current.claimed_by}" if current.claimed_by else ""
                raise ConflictError(f"handoff {hid} is already {current.state}{who}")
            raise ConflictError(f"handoff {hid} is for device {current.target}, not {claimer}")
        return row

    async def report(self, hid: str, state: str, *, result: str = "", reason: str = "") -> dict[str, Any]:
        """started / completed (with the worker's result) / failed (with a reason), for an offered handoff (told
        to its sender) or one of this daemon's own claimed over the local API."""
        if await asyncio.to_thread(self.store.find_offer, hid) is not None:
            desk = self._offer_desk()
            if state == "started":
                return self.offer_view(await desk.start(hid))
            if state == "completed":
                return self.offer_view(await desk.complete(hid, result))
            return self.offer_view(await desk.fail(hid, reason))
        row = await asyncio.to_thread(self.store.get_handoff, hid)
        if self.service.network is not None and row.claimed_by in self.service.network.book.devices:
            raise ConflictError(f"handoff {hid} was claimed by a paired device; that device reports its work")
        if state == "completed" and row.state == "claimed":
            await asyncio.to_thread(self.store.transition_handoff, hid, "started")
        row = await asyncio.to_thread(self.store.transition_handoff, hid, state, result=result or None,
                                      reason=reason or None)
        return row.to_json()

    async def release_expired(self) -> list[str]:
        """Claims over the local API not started in time go back to pending and are offered again."""
        released = await asyncio.to_thread(self.store.release_expired_claims, time.time())
        if self.service.network is not None:
            for hid in released:
                await self.service.network.handoff_created(hid)
        return released

    # ---- what a person or agent reads -------------------------------------------------------------------------

    def offer_view(self, row: OfferRow) -> dict[str, Any]:
        view = row.to_json()
        net = self.service.network
        device = net.book.devices.get(row.from_device) if net is not None else None
        view["from_name"] = device.name if device is not None else None
        return view


def session_context(store: Store, session_id: str | None, transcript_path: str | None) -> str | None:
    """What a resumed session is told when it continues a handoff this machine received: the goal, summary,
    notes and files, and how to report. None for any other session. Peer text, shown through ``visible``."""
    offer = store.offer_of_session(session_id, transcript_path)
    if offer is None or not isinstance(offer.package, dict):
        return None
    pkg = offer.package

    def text(key: str) -> str:
        value = pkg.get(key)
        return visible(value) if isinstance(value, str) else ""

    lines = [f"This session continues handoff {offer.id}, sent from another machine (device {offer.from_device})."]
    for label, key in (("Goal", "goal"), ("Summary of what was done", "summary"), ("Notes", "notes"),
                       ("Working directory there", "cwd"), ("Project path there", "project_path")):
        if text(key):
            lines.append(f"{label}: {text(key)}")
    files = [f for f in pkg.get("files") or [] if isinstance(f, dict) and isinstance(f.get("path"), str)]
    if files:
        lines.append("Relevant files: " + "; ".join(
            visible(f["path"]) + (f" ({visible(f['summary'])})" if isinstance(f.get("summary"), str)
                                  and f["summary"] else "") for f in files[:50]))
    if offer.state in HELD and offer.mode == "worker":
        lines.append(f"When you begin, call the p2pd MCP tool start_handoff(handoff_id={offer.id!r}); when the work "
                     "is done call complete_handoff with a short result summary, or fail_handoff with the reason.")
    out = "\n".join(lines)
    return out if len(out) <= MAX_CONTEXT else out[:MAX_CONTEXT] + " …"


__all__ = ["HandoffWork", "session_context"]
