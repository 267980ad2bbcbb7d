"""MCP tools for agents (official ``mcp`` SDK, streamable HTTP), served by the daemon at ``/mcp``.

Every tool calls :class:`~p2pd.daemon.service.DaemonService`, like the HTTP API, and returns JSON (structured
content). A failure comes back as a tool error whose text is ``[cause] reason``: the cause is the error's
:class:`p2pd.errors.Cause` value (``[peer_gone] …``, ``[not_found] …``), so an agent can tell failures apart
without reading the prose. The bearer token is checked by the
API's middleware before a request reaches the MCP transport.

Tools: list_sessions, export_conversation, send_conversation, list_transfers, get_transfer, list_inbox,
answer_transfer, import_conversation, handoff, get_handoff; for the receiving agent (the worker): list_offered_handoffs,
get_offered_handoff, claim_handoff, start_handoff, complete_handoff, fail_handoff; and the agent-session tools of
:mod:`p2pd.daemon.session_tools` (delegation, session links).
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import Field

from p2pd.agents.registry import AgentName, ImportTarget
from p2pd.daemon import session_tools
from p2pd.daemon.handoffs import HandoffFile, HandoffPackage
from p2pd.daemon.offers import OfferState
from p2pd.daemon.service import DaemonService, SendTo
from p2pd.daemon.transfers import TransferStateName
from p2pd.errors import Cause, InvalidInputError, P2pdError

T = TypeVar("T")

INSTRUCTIONS = """p2pd hands AI-agent conversations between machines and agents. To hand your current work to
another machine, call `handoff` with a summary, the current goal, the relevant files and your session id (the
p2pd SessionStart hook told you P2PD_SESSION_ID). `send_conversation` sends a session to a paired device or to a
pairing code; `list_inbox` and `import_conversation` resume what other machines sent here. To work on a handoff
another machine offered to this one: `list_offered_handoffs`, `claim_handoff`, then `start_handoff` when you begin
and `complete_handoff` (with a result summary the sender sees) or `fail_handoff` (with the reason)."""


def tool_error(exc: P2pdError) -> ToolError:
    """The MCP tool error for a p2pd error: ``[cause] message``."""
    return ToolError(f"[{exc.cause.value}] {exc.message}")


async def _call(work: Awaitable[T]) -> T:
    try:
        return await work
    except P2pdError as exc:
        raise tool_error(exc) from None


def build_mcp(service: DaemonService) -> MCPServer:
    mcp: MCPServer = MCPServer("p2pd", instructions=INSTRUCTIONS + "\n" + session_tools.INSTRUCTIONS, version="1")
    session_tools.register(mcp, service.agent_sessions, _call)  # delegations and session links (seeds 002, 003)

    @mcp.tool()
    async def list_sessions(platform: AgentName | None = None,
                            limit: Annotated[int, Field(ge=1, le=500)] = 20) -> dict[str, Any]:
        """Local agent sessions, newest first: id, platform, project folder, title, message count, transcript path."""
        return {"sessions": await _call(service.list_sessions(platform, limit))}

    @mcp.tool()
    async def export_conversation(session: str | None = None, transcript_path: str | None = None,
                                  output: str | None = None, redact: bool | None = None) -> dict[str, Any]:
        """Write a session (id, prefix, 'latest') or transcript file as an .a2a.json conversation document.
        Returns its path (default: the daemon's exports folder; `output` must be absolute), size, SHA-256 and
        statistics (messages, tool calls, subagents)."""
        return await _call(service.export(session, transcript_path=transcript_path, output=output, redact=redact))

    @mcp.tool()
    async def send_conversation(session: str | None = None, transcript_path: str | None = None,
                                device: str | None = None, code: str | None = None,
                                wait: Annotated[float, Field(ge=0, le=600)] = 0.0,
                                redact: bool | None = None) -> dict[str, Any]:
        """Send a conversation to a paired device (`device`) or through a pairing code (`code`; pass "" to get a
        new code to give the receiver). Returns the transfer (id, state, code); `wait` seconds waits for the
        outcome. Check progress with get_transfer."""
        if (device is None) == (code is None):
            raise tool_error(InvalidInputError("pass exactly one of device or code", cause=Cause.USAGE))
        to = SendTo(device=device) if device is not None else SendTo(code=code)
        row = await _call(service.send(to, session, transcript_path=transcript_path, redact=redact, wait=wait))
        return row.to_json()

    @mcp.tool()
    async def list_transfers(state: TransferStateName | None = None,
                             limit: Annotated[int, Field(ge=1, le=500)] = 50) -> dict[str, Any]:
        """Transfers in and out, newest first, optionally only those in one state."""
        rows = await _call(service.list_transfers(state, limit))
        return {"transfers": [r.to_json() for r in rows]}

    @mcp.tool()
    async def get_transfer(transfer_id: str, wait: Annotated[float, Field(ge=0, le=600)] = 0.0) -> dict[str, Any]:
        """One transfer: state, bytes done, error, result. `wait` seconds waits for it to finish first."""
        if wait > 0:
            return (await _call(service.wait_transfer(transfer_id, wait))).to_json()
        return (await _call(service.get_transfer(transfer_id))).to_json()

    @mcp.tool()
    async def list_inbox(limit: Annotated[int, Field(ge=1, le=500)] = 50) -> dict[str, Any]:
        """Conversations received on this machine (verified), newest first, with any handoff they belong to;
        `pending`: incoming transfers waiting for a decision (the accept policy asks) — see answer_transfer; and
        `not_filed_yet`: transfers received and verified here that this machine refused to file so far (a full
        disk: `error` says why); the daemon files them by itself once it can, and they then appear in `inbox`."""
        return {"inbox": [r.to_json() for r in await _call(service.list_inbox(limit))],
                "pending": [r.to_json() for r in await _call(service.pending_transfers())],
                "not_filed_yet": [r.to_json() for r in await _call(service.not_filed_yet())]}

    @mcp.tool()
    async def answer_transfer(transfer_id: str, accept: bool) -> dict[str, Any]:
        """Accept (true) or decline (false) an incoming transfer waiting for a decision (list_inbox's
        `pending`). The sender is told; a declined one is never stored here."""
        return (await _call(service.answer_transfer(transfer_id, accept))).to_json()

    @mcp.tool()
    async def import_conversation(inbox_id: str, to: ImportTarget = "claude-code",
                                  cwd: str | None = None, same_account: bool = False) -> dict[str, Any]:
        """Import a received conversation into Claude Code or Codex so it can be resumed here. `cwd`: the project
        folder to resume in (default: the handoff's project path or the conversation's folder if it exists here).
        Returns the new session id and the resume command."""
        return await _call(service.import_inbox(inbox_id, to=to, cwd=cwd, same_account=same_account))

    @mcp.tool()
    async def handoff(summary: str, goal: str, files: list[HandoffFile] | None = None, notes: str = "",
                      cwd: str | None = None, project_path: str | None = None, target: str = "any",
                      session_id: str | None = None, transcript_path: str | None = None,
                      redact: bool | None = None) -> dict[str, Any]:
        """Hand the current work to another machine: the full conversation plus a context package (summary of
        what was done, the current goal, relevant files with why they matter and optionally their content,
        notes, working directory, project path). `target`: a paired device id, or "any" (the first available
        device claims it). `session_id`: your own session (P2PD_SESSION_ID from the hook); default: the session
        the hook recorded for `cwd`, else the newest session in `cwd`. Returns the handoff (id, state); watch it
        with get_handoff — it goes pending → claimed → started → completed (with the resume command)."""
        package = HandoffPackage(summary=summary, goal=goal, files=files or [], notes=notes, cwd=cwd,
                                 project_path=project_path)
        row = await _call(service.create_handoff(package, target=target, session_id=session_id,
                                                 transcript_path=transcript_path, redact=redact))
        return row.to_json()

    @mcp.tool()
    async def get_handoff(handoff_id: str) -> dict[str, Any]:
        """One handoff's state, who claimed it, timestamps, its output (resume command), the worker's result or
        the failure reason."""
        return (await _call(service.get_handoff(handoff_id))).to_json()

    @mcp.tool()
    async def list_offered_handoffs(state: OfferState | None = None,
                                    limit: Annotated[int, Field(ge=1, le=500)] = 50) -> dict[str, Any]:
        """Handoffs paired devices offered to this machine, newest first: id, the device it came from (from_name),
        title, summary, state (offered → claimed → started → completed | failed; taken/cancelled when gone). Once
        the conversation arrived: its package (goal, summary, notes, files), inbox_id and resume_command."""
        return {"offers": await _call(service.list_offers(state, limit))}

    @mcp.tool()
    async def get_offered_handoff(handoff_id: str) -> dict[str, Any]:
        """One handoff offered to this machine, with its package (goal, summary, notes, files) once it arrived."""
        return await _call(service.get_offer(handoff_id))

    @mcp.tool()
    async def claim_handoff(handoff_id: str, wait: Annotated[float, Field(ge=0, le=120)] = 20.0) -> dict[str, Any]:
        """Claim a handoff offered to this machine (exactly one claimer wins; the others get a [conflict] error).
        The conversation then comes here, lands in the inbox and is imported when its folder exists; poll
        get_offered_handoff for its package and resume_command. Then call start_handoff."""
        return await _call(service.claim(handoff_id, wait=wait))

    @mcp.tool()
    async def start_handoff(handoff_id: str) -> dict[str, Any]:
        """Say you started working on a claimed handoff (its sender sees 'started')."""
        return await _call(service.report_handoff(handoff_id, "started"))

    @mcp.tool()
    async def complete_handoff(handoff_id: str,
                               result: Annotated[str, Field(min_length=1, max_length=4000)]) -> dict[str, Any]:
        """Say the handoff's work is done, with a short summary of the result (the sender sees it)."""
        return await _call(service.report_handoff(handoff_id, "completed", result=result))

    @mcp.tool()
    async def fail_handoff(handoff_id: str,
                           reason: Annotated[str, Field(min_length=1, max_length=4000)]) -> dict[str, Any]:
        """Say the handoff's work could not be done, and why (the sender sees it)."""
        return await _call(service.report_handoff(handoff_id, "failed", reason=reason))

    return mcp


def session_manager(mcp: MCPServer, *, host: str) -> StreamableHTTPSessionManager:
    """The streamable-HTTP transport for ``mcp``, with DNS-rebinding protection for the address served."""
    mcp.streamable_http_app(streamable_http_path="/mcp", transport_security=transport_security(host), host=host)
    return mcp.session_manager


def transport_security(host: str) -> TransportSecuritySettings:
    hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
    origins = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
    if host not in ("127.0.0.1", "localhost", "::1", "0.0.0.0", "::"):
        shown = f"[{host}]" if ":" in host else host
        hosts.append(f"{shown}:*")
        origins.append(f"http://{shown}:*")
    if host in ("0.0.0.0", "::"):  # any address: the token is the protection, not the Host header
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                     allowed_origins=origins)


