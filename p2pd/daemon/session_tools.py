"""The MCP tools of the agent-session work, added to the daemon's MCP server (:mod:`p2pd.daemon.mcp_tools`):

- delegation (seed 002): ``delegate``, ``get_delegation``, ``list_delegations``, ``start_delegation``,
  ``message_delegation``;
- session links (seed 003): ``link_sessions``, ``list_session_links``, ``sever_session_link``;
- messages between sessions: ``message_session``, ``read_session_messages``.

Failures are tool errors ``[cause] reason``, like every p2pd tool.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from p2pd.agents.registry import ImportTarget
from p2pd.daemon.agent_sessions import AgentSessions
from p2pd.daemon.delegating import PROMPT_MAX
from p2pd.daemon.session_api import LinkMemberRequest
from p2pd.daemon.session_desk import MESSAGE_MAX

T = TypeVar("T")
Text = Annotated[str, Field(min_length=1, max_length=MESSAGE_MAX)]

INSTRUCTIONS = """To fork your own conversation into a new session in another folder or a new git worktree, call
`delegate` with your session id (P2PD_SESSION_ID) and a prompt; check it with `get_delegation` and message it with
`message_delegation`. To link your session with another (here or on a paired device), call `link_sessions`: each
linked session's turn output then reaches the others in their next prompt's context; `sever_session_link` ends it
for your session."""


def register(mcp: MCPServer, sessions: AgentSessions, call: Callable[[Awaitable[Any]], Awaitable[Any]]) -> None:
    """Add the tools to ``mcp``; ``call`` turns a p2pd error into a tool error."""

    @mcp.tool()
    async def delegate(prompt: Annotated[str, Field(max_length=PROMPT_MAX)] = "", session_id: str | None = None,
                       directory: str | None = None, branch: str | None = None, base: str | None = None,
                       path: str | None = None, cwd: str | None = None, start: bool = False,
                       agent: ImportTarget | None = None) -> dict[str, Any]:
        """Fork your conversation into a new local session: in `directory` (an existing folder) or in a new git
        worktree on `branch` (from `base`, default HEAD; at `path`, default beside the repository). `session_id`:
        your own (P2PD_SESSION_ID from the hook); default: the session the hook recorded for `cwd`. `prompt`: the
        new session's task. `start`: start the agent there (only when the daemon's delegate_command is set).
        Returns the delegation: id, the new session_id, cwd, resume_command, state."""
        return await call(sessions.delegate(session_id=session_id, cwd=cwd, directory=directory, branch=branch,
                                            base=base, path=path, prompt=prompt, start=start, agent=agent))

    @mcp.tool()
    async def get_delegation(delegation_id: str) -> dict[str, Any]:
        """A delegation's status: state (created, running, exited, failed), exit_code, session_started (its
        hook was seen), last_output (its last turn), messages_waiting, resume_command."""
        return await call(sessions.delegation(delegation_id))

    @mcp.tool()
    async def list_delegations(parent_session: str | None = None,
                               limit: Annotated[int, Field(ge=1, le=500)] = 50) -> dict[str, Any]:
        """Delegations made on this machine (optionally only those of one parent session), newest first."""
        return {"delegations": await call(sessions.delegations(parent_session, limit))}

    @mcp.tool()
    async def start_delegation(delegation_id: str,
                               prompt: Annotated[str, Field(max_length=PROMPT_MAX)] | None = None) -> dict[str, Any]:
        """Start (or start again) the agent on a delegated session (needs the daemon's delegate_command)."""
        return await call(sessions.start_delegation(delegation_id, prompt))

    @mcp.tool()
    async def message_delegation(delegation_id: str, text: Text) -> dict[str, Any]:
        """Send the delegated session a message: its next prompt (or session start) shows it to its agent."""
        return await call(sessions.message_delegation(delegation_id, text))

    @mcp.tool()
    async def link_sessions(session_id: str, members: Annotated[list[LinkMemberRequest], Field(min_length=1,
                                                                                                 max_length=15)],
                            name: Annotated[str, Field(max_length=64)] = "") -> dict[str, Any]:
        """Link your session (`session_id`) with others: each member {session, device?} — device a paired device's
        id or name, absent for this machine. Each member's turn output then goes to the others (never back to
        itself) until it severs the link or its session ends."""
        return await call(sessions.create_link(session_id, [m.model_dump() for m in members], name))

    @mcp.tool()
    async def list_session_links(session_id: str | None = None) -> dict[str, Any]:
        """Session links on this machine (or only those `session_id` is in): members, who left, state (open,
        ended, closed)."""
        return {"links": await call(sessions.links(session_id))}

    @mcp.tool()
    async def sever_session_link(link_id: str, session_id: str, close: bool = False) -> dict[str, Any]:
        """Sever a link from inside your session (`session_id`): your session leaves it; with `close` (only the
        session that made it) it is closed for every member."""
        return await call(sessions.sever(link_id, session_id, close))

    @mcp.tool()
    async def message_session(session_id: str, text: Text, from_session: str | None = None) -> dict[str, Any]:
        """Leave a message for another session on this machine (e.g. your parent, when you are a delegation); its
        next prompt shows it."""
        return await call(sessions.message(session_id, text, from_session))

    @mcp.tool()
    async def read_session_messages(session_id: str, undelivered: bool = False,
                                    limit: Annotated[int, Field(ge=1, le=500)] = 50) -> dict[str, Any]:
        """The messages for a session (linked sessions' turn output, a parent's messages), newest first;
        `undelivered`: only those no hook has shown yet."""
        return {"messages": await call(sessions.messages(session_id, undelivered, limit))}
