"""The daemon's local HTTP API (FastAPI) and the MCP endpoint beside it.

- Every request needs ``Authorization: Bearer <token>`` except ``GET /health`` (which says only ``{"ok": true}``);
  otherwise 401 with a JSON error. The token is compared in constant time. The check is one ASGI middleware in
  front of everything, ``/openapi.json`` and ``/mcp`` included.
- No CORS headers for any origin, unless origins are listed explicitly (``cors_origins`` in the config).
- Errors are JSON ``{"error": "<one line>", "cause": …, "party": …, "exit_code": …, "kind": "<error class>"}``
  (:meth:`p2pd.errors.P2pdError.to_wire`; the client rebuilds the same error with :func:`p2pd.errors.from_wire`).
  The status code comes from the error's cause, in :data:`HTTP_STATUS` (the one place that maps them; every cause
  has one).
- ``/mcp``: the MCP server (streamable HTTP) from :mod:`p2pd.daemon.mcp_tools`.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import APIRouter, Body, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from p2pd import __version__
from p2pd.agents.registry import AgentName, ImportTarget
from p2pd.daemon.handoffs import HandoffPackage
from p2pd.daemon.handoffs import State as HandoffState
from p2pd.daemon.mcp_tools import build_mcp, session_manager
from p2pd.daemon.offers import OfferState
from p2pd.daemon.service import DaemonService, SendTo
from p2pd.daemon.session_api import session_routes
from p2pd.daemon.store import HandoffRow, InboxRow, TransferRow
from p2pd.daemon.transfers import TransferStateName
from p2pd.errors import Cause, InvalidInputError, P2pdError

HTTP_STATUS: dict[Cause, int] = {
    Cause.UNEXPECTED: 500,
    Cause.USAGE: 400,
    Cause.NOT_FOUND: 404,
    Cause.INVALID_INPUT: 400,
    Cause.CHECKSUM_MISMATCH: 400,
    Cause.CODEC: 400,
    Cause.TOO_LARGE: 413,
    Cause.CONFLICT: 409,
    Cause.STORAGE: 507,
    Cause.PEER_STORAGE: 502,  # (the receiver's storage: for this daemon, a failure upstream)
    Cause.UNAUTHORIZED: 401,
    Cause.DAEMON_NOT_RUNNING: 503,
    Cause.NO_NETWORK: 409,
    Cause.INTERRUPTED: 503,
    Cause.WRONG_CODE: 400,
    Cause.NO_PEER: 504,
    Cause.SIGNALING_UNREACHABLE: 502,
    Cause.SIGNALING_LOST: 502,
    Cause.SIGNALING_REFUSED: 502,
    Cause.ROLE_CLASH: 409,
    Cause.TAMPERED: 502,
    Cause.CONNECTION_FAILED: 502,
    Cause.PEER_GONE: 502,
    Cause.TIMEOUT: 504,
    Cause.PROTOCOL: 502,
    Cause.BUSY: 409,
    Cause.DECLINED: 409,
    Cause.NOT_ALLOWED: 403,
    Cause.RATE_LIMITED: 429,
    Cause.LIMIT_REACHED: 429,
    Cause.CANCELLED: 409,
    Cause.TRANSFER_FAILED: 502,
    Cause.DEVICE_OFFLINE: 503,
    Cause.KEY_CHANGED: 409,
}
# Plain HTTP errors (an unknown path, a wrong method) as causes.
_CAUSE_OF_STATUS: dict[int, Cause] = {404: Cause.NOT_FOUND, 405: Cause.USAGE, 400: Cause.USAGE}
Limit = Annotated[int, Query(ge=1, le=1000)]
OPEN_PATHS = frozenset({("GET", "/health"), ("HEAD", "/health")})


def http_status(exc: P2pdError) -> int:
    return HTTP_STATUS.get(exc.cause, 500)


def error_response(exc: P2pdError, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(exc.to_wire(), status_code=http_status(exc), headers=headers)


class BearerAuth:
    """ASGI middleware: the bearer token on every request except the open paths; constant-time comparison."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or (scope.get("method"), scope["path"]) in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        given = b""
        for key, value in scope["headers"]:
            if key == b"authorization":
                given = value
                break
        if not hmac.compare_digest(given, self.expected):
            reason = "missing bearer token" if not given else "wrong bearer token"
            error = P2pdError(f"unauthorized: {reason} (see the token file printed by `p2pd serve`)",
                              cause=Cause.UNAUTHORIZED)
            body = json.dumps({**error.to_wire(), "kind": "Unauthorized"}).encode()
            await send({"type": "http.response.start", "status": 401,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", str(len(body)).encode()),
                                    (b"www-authenticate", b'Bearer realm="p2pd"')]})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)


# ---------------------------------------------------------------- request bodies
class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ExportRequest(_Body):
    session: str | None = Field(default=None, description="session id, unique prefix or 'latest'")
    transcript_path: str | None = None
    output: str | None = Field(default=None, description="absolute path (default: the daemon's exports folder)")
    compressed: bool = False
    redact: bool | None = None


class SendRequest(_Body):
    session: str | None = None
    transcript_path: str | None = None
    to: SendTo
    redact: bool | None = None
    wait: float = Field(default=0.0, ge=0, le=600, description="seconds to wait for the outcome")
    timeout: float = Field(default=300.0, gt=0, le=3600, description="seconds to wait for the receiver")


class LinkRequest(_Body):
    name: str = Field(min_length=1, max_length=64)
    devices: list[str] = Field(min_length=1, max_length=63, description="paired devices (id, id prefix or name)")


class ReceiveRequest(_Body):
    code: str = Field(min_length=1, max_length=200)
    wait: float = Field(default=0.0, ge=0, le=600)
    timeout: float = Field(default=300.0, gt=0, le=3600)


class ImportRequest(_Body):
    to: ImportTarget = "claude-code"
    cwd: str | None = None
    same_account: bool = False


class HandoffRequest(HandoffPackage):
    target: str = Field(default="any", min_length=1, max_length=200, description="a device id, or 'any'")
    session_id: str | None = None
    transcript_path: str | None = None
    redact: bool | None = None


class ClaimRequest(_Body):
    claimer: str | None = Field(default=None, max_length=200, description="device id (default: this daemon's)")


class OfferClaimRequest(_Body):
    wait: float = Field(default=20.0, ge=0, le=120, description="seconds to wait for the sender's answer")


class CompleteRequest(_Body):
    result: str = Field(min_length=1, max_length=4000, description="what the worker did (the sender sees it)")


class FailRequest(_Body):
    reason: str = Field(min_length=1, max_length=4000)


class GcRequest(_Body):
    dry_run: bool = Field(default=False, description="only say what would be removed")


class CancelRequest(_Body):
    reason: str = Field(default="cancelled through the API", max_length=1000)


class HookSessionStart(BaseModel):
    """Claude Code's or Codex's SessionStart hook input (other fields are ignored)."""

    session_id: str = Field(min_length=1, max_length=200)
    transcript_path: str | None = None
    cwd: str | None = None
    source: str | None = None


class Health(BaseModel):
    ok: bool


class ImportResult(BaseModel):
    to: str
    session_id: str
    path: str
    cwd: str
    lines: int
    warnings: list[str]
    resume_command: str


# ---------------------------------------------------------------- the app
def create_app(service: DaemonService, token: str, *, host: str = "127.0.0.1",
               cors_origins: tuple[str, ...] = ()) -> FastAPI:
    mcp = build_mcp(service)
    mcp_sessions = session_manager(mcp, host=host)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with mcp_sessions.run():
            await service.start()
            try:
                yield
            finally:
                await service.stop()

    app = FastAPI(title="p2pd daemon", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None,
                  description="Local API of the p2pd daemon. Every endpoint but /health needs "
                              "`Authorization: Bearer <token>` (the token file is printed by `p2pd serve`).")
    app.include_router(_routes(service))
    app.include_router(session_routes(service.agent_sessions))  # delegations, session links (seeds 002, 003)
    app.router.routes.append(Route("/mcp", endpoint=_MCPApp(mcp_sessions)))
    app.state.service = service

    @app.exception_handler(P2pdError)
    async def p2pd_error(request: Request, exc: P2pdError) -> JSONResponse:
        return error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        first = errors[0] if errors else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        message = f"invalid request: {where + ': ' if where else ''}{first.get('msg', 'malformed')}"
        body = {**InvalidInputError(message, cause=Cause.USAGE).to_wire(), "kind": "InvalidRequest",
                "detail": json.loads(json.dumps(errors, default=str))}
        return JSONResponse(body, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        cause = _CAUSE_OF_STATUS.get(exc.status_code, Cause.UNEXPECTED)
        body = {**P2pdError(str(exc.detail), cause=cause).to_wire(), "kind": "HTTPError"}
        return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)

    _document_security(app)
    app.add_middleware(BearerAuth, token=token)
    if cors_origins:
        from starlette.middleware.cors import CORSMiddleware

        app.add_middleware(CORSMiddleware, allow_origins=list(cors_origins), allow_credentials=False,
                           allow_methods=["GET", "POST", "DELETE"], allow_headers=["Authorization", "Content-Type"])
    return app


class _MCPApp:
    def __init__(self, sessions: Any) -> None:
        self.sessions = sessions

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.sessions.handle_request(scope, receive, send)


def _document_security(app: FastAPI) -> None:
    """Say in the OpenAPI description that every operation but /health needs the bearer token."""
    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            from fastapi.openapi.utils import get_openapi

            schema = get_openapi(title=app.title, version=app.version, description=app.description,
                                 routes=app.routes)
            schema.setdefault("components", {})["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
            for path, ops in schema.get("paths", {}).items():
                for method, op in ops.items():
                    if (method.upper(), path) not in OPEN_PATHS:
                        op["security"] = [{"bearer": []}]
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def _routes(service: DaemonService) -> APIRouter:
    r = APIRouter()

    @r.get("/health", response_model=Health, tags=["daemon"])
    async def health() -> Health:
        return Health(ok=True)

    @r.get("/stats", tags=["daemon"])
    async def stats() -> dict[str, Any]:
        return await service.stats()

    @r.post("/gc", tags=["daemon"])
    async def gc(req: Annotated[GcRequest | None, Body()] = None) -> dict[str, Any]:
        return await service.gc(everything=True, dry_run=(req or GcRequest()).dry_run)

    @r.get("/links", tags=["devices"])
    async def links() -> list[dict[str, Any]]:
        return service.links()

    @r.post("/links", status_code=201, tags=["devices"])
    async def create_link(req: LinkRequest) -> dict[str, Any]:
        return await service.create_link(req.name, req.devices)

    @r.post("/links/{link_id}/close", tags=["devices"])
    async def close_link(link_id: str) -> dict[str, Any]:
        return await service.close_link(link_id)

    @r.post("/links/{link_id}/leave", tags=["devices"])
    async def leave_link(link_id: str) -> dict[str, Any]:
        return await service.leave_link(link_id)

    @r.get("/devices", tags=["daemon"])
    async def devices() -> list[dict[str, Any]]:
        return service.devices()

    @r.get("/sessions", tags=["sessions"])
    async def sessions(platform: AgentName | None = None,
                       limit: Limit = 50) -> list[dict[str, Any]]:
        return await service.list_sessions(platform, limit)

    @r.post("/export", tags=["sessions"])
    async def export(req: ExportRequest) -> dict[str, Any]:
        return await service.export(req.session, transcript_path=req.transcript_path, output=req.output,
                                    compressed=req.compressed, redact=req.redact)

    @r.post("/send", response_model=TransferRow, status_code=202, tags=["transfers"])
    async def send(req: SendRequest) -> TransferRow:
        return await service.send(req.to, req.session, transcript_path=req.transcript_path, redact=req.redact,
                                  wait=req.wait, timeout=req.timeout)

    @r.post("/receive", response_model=TransferRow, status_code=202, tags=["transfers"])
    async def receive(req: ReceiveRequest) -> TransferRow:
        return await service.receive(req.code, wait=req.wait, timeout=req.timeout)

    @r.get("/transfers", response_model=list[TransferRow], tags=["transfers"])
    async def transfers(state: TransferStateName | None = None, limit: Limit = 100) -> list[TransferRow]:
        return await service.list_transfers(state, limit)

    @r.get("/transfers/{transfer_id}", response_model=TransferRow, tags=["transfers"])
    async def transfer(transfer_id: str, wait: Annotated[float, Query(ge=0, le=600)] = 0.0) -> TransferRow:
        if wait > 0:
            return await service.wait_transfer(transfer_id, wait)
        return await service.get_transfer(transfer_id)

    @r.post("/transfers/{transfer_id}/cancel", response_model=TransferRow, tags=["transfers"])
    async def cancel_transfer(transfer_id: str, req: Annotated[CancelRequest | None, Body()] = None) -> TransferRow:
        return await service.cancel_transfer(transfer_id, (req or CancelRequest()).reason)

    @r.post("/transfers/{transfer_id}/retry", response_model=TransferRow, tags=["transfers"])
    async def retry_transfer(transfer_id: str) -> TransferRow:
        return await service.retry_transfer(transfer_id)

    @r.post("/transfers/{transfer_id}/accept", response_model=TransferRow, tags=["inbox"])
    async def accept_transfer(transfer_id: str) -> TransferRow:
        return await service.answer_transfer(transfer_id, True)

    @r.post("/transfers/{transfer_id}/decline", response_model=TransferRow, tags=["inbox"])
    async def decline_transfer(transfer_id: str) -> TransferRow:
        return await service.answer_transfer(transfer_id, False)

    @r.get("/inbox/pending", response_model=list[TransferRow], tags=["inbox"])
    async def pending() -> list[TransferRow]:
        return await service.pending_transfers()

    @r.get("/inbox", response_model=list[InboxRow], tags=["inbox"])
    async def inbox(limit: Limit = 100) -> list[InboxRow]:
        return await service.list_inbox(limit)

    @r.get("/inbox/{inbox_id}", tags=["inbox"])
    async def inbox_entry(inbox_id: str) -> dict[str, Any]:
        return await service.get_inbox(inbox_id)

    @r.post("/inbox/{inbox_id}/import", response_model=ImportResult, tags=["inbox"])
    async def import_entry(inbox_id: str, req: Annotated[ImportRequest | None, Body()] = None) -> dict[str, Any]:
        req = req or ImportRequest()
        return await service.import_inbox(inbox_id, to=req.to, cwd=req.cwd, same_account=req.same_account)

    @r.delete("/inbox/{inbox_id}", response_model=InboxRow, tags=["inbox"])
    async def delete_entry(inbox_id: str) -> InboxRow:
        return await service.delete_inbox(inbox_id)

    @r.post("/handoffs", response_model=HandoffRow, status_code=201, tags=["handoffs"])
    async def create_handoff(req: HandoffRequest) -> HandoffRow:
        package = HandoffPackage.model_validate(req.model_dump(include=set(HandoffPackage.model_fields)))
        return await service.create_handoff(package, target=req.target, session_id=req.session_id,
                                            transcript_path=req.transcript_path, redact=req.redact)

    @r.get("/handoffs", response_model=list[HandoffRow], tags=["handoffs"])
    async def handoffs(state: HandoffState | None = None, limit: Limit = 100) -> list[HandoffRow]:
        return await service.list_handoffs(state, limit)

    @r.get("/handoffs/{handoff_id}", response_model=HandoffRow, tags=["handoffs"])
    async def handoff(handoff_id: str) -> HandoffRow:
        return await service.get_handoff(handoff_id)

    @r.post("/handoffs/{handoff_id}/claim", response_model=HandoffRow, tags=["handoffs"])
    async def claim(handoff_id: str, req: Annotated[ClaimRequest | None, Body()] = None) -> HandoffRow:
        return await service.claim_handoff(handoff_id, (req.claimer if req else None) or service.device_id)

    @r.post("/handoffs/{handoff_id}/cancel", response_model=HandoffRow, tags=["handoffs"])
    async def cancel_handoff(handoff_id: str, req: Annotated[CancelRequest | None, Body()] = None) -> HandoffRow:
        return await service.cancel_handoff(handoff_id, req.reason if req else "cancelled by the sender")

    @r.post("/handoffs/{handoff_id}/start", tags=["handoffs"])
    async def start_handoff(handoff_id: str) -> dict[str, Any]:
        return await service.report_handoff(handoff_id, "started")

    @r.post("/handoffs/{handoff_id}/complete", tags=["handoffs"])
    async def complete_handoff(handoff_id: str, req: CompleteRequest) -> dict[str, Any]:
        return await service.report_handoff(handoff_id, "completed", result=req.result)

    @r.post("/handoffs/{handoff_id}/fail", tags=["handoffs"])
    async def fail_handoff(handoff_id: str, req: FailRequest) -> dict[str, Any]:
        return await service.report_handoff(handoff_id, "failed", reason=req.reason)

    @r.get("/offers", tags=["handoffs"])
    async def offers(state: OfferState | None = None, limit: Limit = 100) -> list[dict[str, Any]]:
        return await service.list_offers(state, limit)

    @r.get("/offers/{handoff_id}", tags=["handoffs"])
    async def offer(handoff_id: str) -> dict[str, Any]:
        return await service.get_offer(handoff_id)

    @r.post("/offers/{handoff_id}/claim", tags=["handoffs"])
    async def claim_offer(handoff_id: str, req: Annotated[OfferClaimRequest | None, Body()] = None) -> dict[str, Any]:
        await service.get_offer(handoff_id)  # 404 for a handoff nobody offered here
        return await service.claim(handoff_id, wait=(req or OfferClaimRequest()).wait)

    @r.post("/hooks/session-start", tags=["hooks"])
    async def hook_session_start(req: HookSessionStart) -> dict[str, Any]:
        return await service.record_hook_session(session_id=req.session_id, transcript_path=req.transcript_path,
                                                 cwd=req.cwd, source=req.source)

    return r
