"""The daemon's agent-session work in one place for the HTTP API and the MCP tools: delegations (seed 002,
:mod:`p2pd.daemon.delegating`), session links and session messages (seed 003, :mod:`p2pd.daemon.session_desk`),
and the hook events that drive them (:mod:`p2pd.daemon.session_hooks`). After each change that concerns a paired
device, what waits for it is sent (:mod:`p2pd.daemon.session_relay`)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Protocol

from p2pd.daemon.delegating import DelegationOwner, Delegator
from p2pd.daemon.session_desk import SessionDesk
from p2pd.daemon.session_hooks import on_event
from p2pd.daemon.session_tables import SessionStore

if TYPE_CHECKING:
    from p2pd.daemon.network import DeviceNetwork


class SessionsOwner(DelegationOwner, Protocol):
    network: DeviceNetwork | None


class AgentSessions:
    def __init__(self, owner: SessionsOwner) -> None:
        from p2pd.daemon.identity import load_identity

        self.owner = owner
        self.store = SessionStore(owner.home.db_path)
        self.desk = SessionDesk(owner.home.root, self.store, load_identity(owner.home.root).device_id)
        self.delegator = Delegator(owner, self.store, self.desk)

    def flush(self) -> None:
        """Send what waits for online paired devices (session-link changes, turn output)."""
        if self.owner.network is not None:
            self.owner.network.session_relay.flush()

    # ---- delegations ---------------------------------------------------------------------------------------
    async def delegate(self, **kw: Any) -> dict[str, Any]:
        return await self.delegator.delegate(**kw)

    async def delegation(self, delegation_id: str) -> dict[str, Any]:
        return await self.delegator.status(delegation_id)

    async def delegations(self, parent_session: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        return await self.delegator.list(parent_session, limit)

    async def start_delegation(self, delegation_id: str, prompt: str | None = None) -> dict[str, Any]:
        return await self.delegator.start(delegation_id, prompt)

    async def message_delegation(self, delegation_id: str, text: str) -> dict[str, Any]:
        return await self.delegator.message(delegation_id, text)

    # ---- links and messages --------------------------------------------------------------------------------
    async def create_link(self, session: str, members: list[dict[str, Any]], name: str = "") -> dict[str, Any]:
        view = await asyncio.to_thread(self.desk.create_link, session, members, name)
        self.flush()
        return self.desk.view(view)

    async def links(self, session: str | None = None) -> list[dict[str, Any]]:
        views = await asyncio.to_thread(self.desk.links_of, session)
        return [self.desk.view(v) for v in views]

    async def link(self, link_id: str) -> dict[str, Any]:
        return self.desk.view(await asyncio.to_thread(self.store.get_link, link_id))

    async def sever(self, link_id: str, session: str, close: bool = False) -> dict[str, Any]:
        view = await asyncio.to_thread(self.desk.sever, link_id, session, close)
        self.flush()
        return self.desk.view(view)

    async def close_link(self, link_id: str) -> dict[str, Any]:
        view = await asyncio.to_thread(self.desk.close, link_id)
        self.flush()
        return self.desk.view(view)

    async def message(self, session: str, text: str, from_session: str | None = None) -> dict[str, Any]:
        return (await asyncio.to_thread(self.desk.message, session, text, from_session=from_session)).to_json()

    async def messages(self, session: str, undelivered: bool = False, limit: int = 100) -> list[dict[str, Any]]:
        rows = await asyncio.to_thread(self.store.messages, session, undelivered=undelivered, limit=limit)
        return [r.to_json() for r in rows]

    async def limits(self) -> dict[str, Any]:
        """What paired devices may push into session links here, and what each did (counters since the daemon
        started) and has waiting for it."""
        network = self.owner.network
        if network is None:
            from p2pd.daemon.session_limits import LinkLimits

            limits = await asyncio.to_thread(LinkLimits.configured)
            return {"limits": limits.to_json(), "devices": []}
        return await asyncio.to_thread(network.session_relay.view)

    # ---- hooks ---------------------------------------------------------------------------------------------
    async def hook(self, action: str, record: dict[str, Any]) -> dict[str, Any]:
        from p2pd.config import redact_default

        redact = await asyncio.to_thread(redact_default)
        out = await asyncio.to_thread(on_event, action, record, self.desk, redact=redact)
        self.flush()
        return out

    async def start(self) -> None:
        await self.delegator.recover()

    async def stop(self) -> None:
        await self.delegator.stop()
