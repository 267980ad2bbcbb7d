"""The HTTP routes of the agent-session work (delegations, session links, session messages, the extra hooks),
beside :mod:`p2pd.daemon.api`, over :class:`~p2pd.daemon.agent_sessions.AgentSessions`."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Query
from pydantic import BaseModel, ConfigDict, Field

from p2pd.agents.registry import ImportTarget
from p2pd.daemon.agent_sessions import AgentSessions
from p2pd.daemon.delegating import PROMPT_MAX
from p2pd.daemon.session_desk import MESSAGE_MAX

SessionId = Annotated[str, Field(min_length=1, max_length=64)]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DelegateRequest(_Body):
    session_id: SessionId | None = Field(default=None, description="the parent session (the hook's session id)")
    transcript_path: str | None = None
    cwd: str | None = Field(default=None, description="the parent's folder (finds its session when no id is given)")
    directory: str | None = Field(default=None, description="an existing folder for the new session")
    branch: str | None = Field(default=None, max_length=200, description="a new git worktree on this branch")
    base: str | None = Field(default=None, max_length=200, description="what the new branch starts from")
    path: str | None = Field(default=None, description="where the worktree goes (default: beside the repository)")
    prompt: str = Field(default="", max_length=PROMPT_MAX, description="the new session's task")
    start: bool = Field(default=False, description="start the agent there (needs delegate_command)")
    agent: ImportTarget | None = None


class StartRequest(_Body):
    prompt: str | None = Field(default=None, max_length=PROMPT_MAX)


class MessageRequest(_Body):
    text: str = Field(min_length=1, max_length=MESSAGE_MAX)
    from_session: SessionId | None = None


class LinkMemberRequest(_Body):
    session: SessionId
    device: str | None = Field(default=None, max_length=200, description="a paired device (id or name); "
                               "absent: this machine")


class SessionLinkRequest(_Body):
    session_id: SessionId = Field(description="the session making the link (a member)")
    members: list[LinkMemberRequest] = Field(min_length=1, max_length=15)
    name: str = Field(default="", max_length=64)


class SeverRequest(_Body):
    session_id: SessionId
    close: bool = Field(default=False, description="the creator closes the link for everyone")


class HookEvent(BaseModel):
    """A Claude Code or Codex hook's input (other fields are ignored)."""

    session_id: SessionId
    transcript_path: str | None = None
    cwd: str | None = None
    last_assistant_message: str | None = None


def session_routes(sessions: AgentSessions) -> APIRouter:
    r = APIRouter()

    @r.post("/delegations", status_code=201)
    async def delegate(req: DelegateRequest) -> dict[str, Any]:
        return await sessions.delegate(**req.model_dump())

    @r.get("/delegations")
    async def delegations(parent_session: str | None = None,
                          limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> list[dict[str, Any]]:
        return await sessions.delegations(parent_session, limit)

    @r.get("/delegations/{delegation_id}")
    async def delegation(delegation_id: str) -> dict[str, Any]:
        return await sessions.delegation(delegation_id)

    @r.post("/delegations/{delegation_id}/start")
    async def start(delegation_id: str, req: Annotated[StartRequest | None, Body()] = None) -> dict[str, Any]:
        return await sessions.start_delegation(delegation_id, req.prompt if req else None)

    @r.post("/delegations/{delegation_id}/message", status_code=201)
    async def message_delegation(delegation_id: str, req: MessageRequest) -> dict[str, Any]:
        return await sessions.message_delegation(delegation_id, req.text)

    @r.get("/session-links")
    async def links(session: str | None = None) -> list[dict[str, Any]]:
        return await sessions.links(session)

    @r.post("/session-links", status_code=201)
    async def create_link(req: SessionLinkRequest) -> dict[str, Any]:
        return await sessions.create_link(req.session_id, [m.model_dump() for m in req.members], req.name)

    @r.get("/session-links/limits")
    async def limits() -> dict[str, Any]:
        return await sessions.limits()

    @r.get("/session-links/{link_id}")
    async def link(link_id: str) -> dict[str, Any]:
        return await sessions.link(link_id)

    @r.post("/session-links/{link_id}/sever")
    async def sever(link_id: str, req: SeverRequest) -> dict[str, Any]:
        return await sessions.sever(link_id, req.session_id, req.close)

    @r.post("/session-links/{link_id}/close")
    async def close(link_id: str) -> dict[str, Any]:
        return await sessions.close_link(link_id)

    @r.get("/sessions/{session_id}/messages")
    async def messages(session_id: str, undelivered: bool = False,
                       limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> list[dict[str, Any]]:
        return await sessions.messages(session_id, undelivered, limit)

    @r.post("/sessions/{session_id}/messages", status_code=201)
    async def message(session_id: str, req: MessageRequest) -> dict[str, Any]:
        return await sessions.message(session_id, req.text, req.from_session)

    @r.post("/hooks/{event}")
    async def hook(event: Literal["prompt-submit", "stop", "session-end"], req: HookEvent) -> dict[str, Any]:
        return await sessions.hook(event, req.model_dump())

    return r
