"""The thin asyncio/websockets adapter around :class:`signaling.rooms.Registry`.

One process, in-memory rooms. HTTP on the same port: ``GET /healthz``, ``GET /metrics`` (Prometheus text,
counts only) and, when ``static_dir`` is given, static files (the browser client, ``web/``: the command serves
it by default); WebSocket upgrades on
``/`` with the subprotocol ``p2pd-signal.v1``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import gc
import hashlib
import http
import logging
import mimetypes
import posixpath
import re
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, cast
from urllib.parse import unquote, urlsplit

from websockets.asyncio.server import Server, ServerConnection, broadcast, serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response
from websockets.typing import Subprotocol

from signaling import protocol as p
from signaling.ice import IceSettings
from signaling.limits import SocketGate, TokenBucket, address_key, client_address
from signaling.rooms import Close, Registry, Send, ServerLimits

log = logging.getLogger("p2pd.signaling")

WEBSOCKET_PATH = "/"


@dataclass(frozen=True, slots=True)
class ServerOptions:
    host: str = "127.0.0.1"
    port: int = 8765
    ping_interval: float = 20.0  # heartbeat: a WebSocket ping this often …
    ping_timeout: float = 20.0  # … and the connection is dropped when the pong is this late
    slow_consumer_bytes: int = 1 << 20  # a peer whose unsent output exceeds this is disconnected
    handshake_timeout: float = 10.0  # a socket that has not completed its HTTP request/upgrade by then is dropped
    # TCP sockets of any state (handshake, HTTP request, open, closing) beyond max_connections in all, and beyond
    # max_connections_per_address per peer; a socket over either is dropped at once, before its request is read.
    spare_sockets: int = 1024
    spare_sockets_per_address: int = 16
    # Behind a reverse proxy: charge connections to the last address of this header (e.g. X-Forwarded-For) when
    # the TCP peer is one of trusted_proxies. Off by default: a client could otherwise pick its own address.
    forwarded_header: str | None = None
    trusted_proxies: frozenset[str] = frozenset({"127.0.0.1", "::1"})
    expiry_interval: float = 1.0
    static_dir: Path | None = None
    # Full (generation 2) garbage collections pause the loop for ~45 µs per open connection (~0.5 s at 10,000),
    # and Python starts one whenever the long-lived objects grew by 25 %. With gc_interval > 0 automatic full
    # collections are off and one runs every gc_interval seconds or after gc_after_closes closed connections
    # (each leaves ~1 KiB of cyclic garbage); young generations stay automatic. 0 (the default for in-process
    # use, since the GC is process-wide) keeps Python's behaviour; the p2pd-signal command uses 300.
    gc_interval: float = 0.0
    gc_after_closes: int = 20_000
    backlog: int = 2048
    tls: ssl.SSLContext | None = None  # serve https/wss (p2pd-signal --cert/--key)
    ice: IceSettings | None = None  # STUN/TURN handed to every client that joined a room (signaling/ice.py)


_INLINE_SCRIPT = re.compile(rb"<script(?:\s[^>]*)?>(.*?)</script>", re.DOTALL | re.IGNORECASE)
_HOST = re.compile(r"^[A-Za-z0-9.-]+(?::[0-9]{1,5})?$|^\[[0-9A-Fa-f:.]+\](?::[0-9]{1,5})?$")
_TYPES = {".js": "text/javascript", ".mjs": "text/javascript", ".css": "text/css", ".html": "text/html",
          ".json": "application/json", ".svg": "image/svg+xml", ".png": "image/png", ".ico": "image/x-icon"}


def content_security_policy(html: bytes, host: str | None) -> str:
    """The page's CSP: everything from this origin only; inline scripts (the import map) only by their hash;
    connections only to this origin's HTTP and WebSocket; images also from data:/blob: (conversation images)."""
    hashes = " ".join(
        "'sha256-" + base64.b64encode(hashlib.sha256(body).digest()).decode("ascii") + "'"
        for body in _INLINE_SCRIPT.findall(html) if body.strip()
    )
    connect = "'self'"
    if host and _HOST.match(host):
        connect += f" ws://{host} wss://{host}"
    return ("default-src 'self'; "
            f"script-src 'self'{' ' + hashes if hashes else ''}; "
            f"connect-src {connect}; "
            "img-src 'self' data: blob:; style-src 'self'; object-src 'none'; base-uri 'none'; "
            "frame-ancestors 'none'; form-action 'self'")


class StaticFiles:
    """Serves files below ``root`` read-only; nothing outside it, no directory listings, no dot files. HTML
    pages get a Content-Security-Policy and the other headers a page that handles secrets should have."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

    def response(self, path: str, host: str | None = None) -> Response:
        relative = posixpath.normpath(unquote(urlsplit(path).path)).lstrip("/")
        if relative in ("", "."):
            relative = "index.html"
        parts = relative.split("/")
        if "\x00" in relative or any(part in ("..", "") or part.startswith(".") for part in parts):
            return _text_response(http.HTTPStatus.NOT_FOUND, "not found\n")
        target = (self.root / relative).resolve()
        if target.is_dir():
            target = target / "index.html"
        if not target.is_relative_to(self.root) or not target.is_file():
            return _text_response(http.HTTPStatus.NOT_FOUND, "not found\n")
        body = target.read_bytes()
        content_type = _TYPES.get(target.suffix.lower()) or mimetypes.guess_type(target.name)[0] \
            or "application/octet-stream"
        if content_type.startswith("text/") or content_type in ("application/javascript", "application/json"):
            content_type += "; charset=utf-8"
        headers = Headers([("Content-Type", content_type), ("Content-Length", str(len(body))),
                           ("X-Content-Type-Options", "nosniff"), ("Cache-Control", "no-cache"),
                           ("Referrer-Policy", "no-referrer"), ("Cross-Origin-Opener-Policy", "same-origin"),
                           ("Cross-Origin-Resource-Policy", "same-origin")])
        if content_type.startswith("text/html"):
            headers["Content-Security-Policy"] = content_security_policy(body, host)
            headers["X-Frame-Options"] = "DENY"
            headers["Permissions-Policy"] = "camera=(), microphone=(), geolocation=()"
        return Response(200, "OK", headers, body)


def _text_response(status: http.HTTPStatus, text: str, content_type: str = "text/plain; charset=utf-8") -> Response:
    body = text.encode("utf-8")
    headers = Headers([("Content-Type", content_type), ("Content-Length", str(len(body))),
                       ("X-Content-Type-Options", "nosniff"), ("Cache-Control", "no-store")])
    return Response(status.value, status.phrase, headers, body)


_SLICE = 4096  # bytes parsed at a time, so a flood of tiny frames is cut off after a few hundred of them


class _GatedConnection(ServerConnection):
    """A server connection that asks the :class:`SocketGate` before its request is even read, meters the frames
    it parses (a flood of frames of any kind is dropped, not parsed: pings are answered by websockets itself and
    never reach the registry's message rate) and bounds the output it writes by itself."""

    gate: ClassVar[SocketGate]
    registry: ClassVar[Registry]
    max_unsent: ClassVar[int]
    _peer: str | None = None
    _frames: TokenBucket | None = None
    flooded = False  # dropped for its frame rate: the frames it has queued are not handled either

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        peername = transport.get_extra_info("peername")
        peer = address_key(str(peername[0])) if isinstance(peername, tuple) and peername else "unknown"
        if self.gate.admit(peer):
            self._peer = peer
            limits = self.registry.limits
            self._frames = TokenBucket(limits.frame_rate, limits.frame_burst, self.loop.time())
        else:
            self.registry.counters["sockets_refused"] += 1
            cast(asyncio.Transport, transport).abort()

    def data_received(self, data: bytes) -> None:
        view = memoryview(data)
        for start in range(0, len(data), _SLICE):
            super().data_received(view[start:start + _SLICE])  # type: ignore[arg-type]
            if self.flooded:
                self.transport.abort()
                return
        # Output websockets writes by itself (pongs to control-frame pings, …) to a peer that does not read:
        # bounded like the relayed output, past which the socket is dropped.
        if self.transport.get_write_buffer_size() > self.max_unsent:
            self.registry.counters["connections_closed_slow"] += 1
            self.transport.abort()

    def process_event(self, event: Any) -> None:
        if self.request is not None and self._frames is not None and not self._frames.take(self.loop.time()):
            self.flooded = True
            return
        super().process_event(event)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._peer is not None:
            self.gate.release(self._peer)
            self._peer = None
        super().connection_lost(exc)


class SignalServer:
    """``async with SignalServer(limits, options) as server: …`` or ``await server.start()`` / ``close()``."""

    def __init__(self, limits: ServerLimits | None = None, options: ServerOptions | None = None) -> None:
        self.limits = limits or ServerLimits()
        self.options = options or ServerOptions()
        self.registry = Registry(self.limits)
        self.static = StaticFiles(self.options.static_dir) if self.options.static_dir else None
        self._sockets: dict[int, ServerConnection] = {}
        self._server: Server | None = None
        self._expiry_task: asyncio.Task[None] | None = None
        self._gc_task: asyncio.Task[None] | None = None
        self._closed_since_gc = 0
        self._gc_thresholds = gc.get_threshold()
        self._ice_given: dict[int, object] = {}  # conn -> the room it last got ICE servers for
        self._closing: dict[int, asyncio.Task[None]] = {}  # the one close of each condemned connection
        self._close_timeout = max(0.5, min(5.0, self.options.ping_timeout))
        self._closed: set[int] = set()  # connections whose one close has been started: never read or sent to again
        proxies = self.options.trusted_proxies if self.options.forwarded_header else frozenset()
        exempt = frozenset(address_key(proxy) for proxy in proxies)
        self.gate = SocketGate(self.limits.max_connections + self.options.spare_sockets,
                               self.limits.max_connections_per_address + self.options.spare_sockets_per_address,
                               exempt)

    # ---- lifecycle ---------------------------------------------------------------------------------------

    async def start(self) -> None:
        gated: Any = type("GatedConnection", (_GatedConnection,), {
            "gate": self.gate, "registry": self.registry, "max_unsent": 2 * self.options.slow_consumer_bytes})
        self._server = await serve(
            self._handle,
            self.options.host,
            self.options.port,
            subprotocols=[Subprotocol(p.SUBPROTOCOL)],
            process_request=self._process_request,
            compression=None,  # no permessage-deflate: ~100 KiB less memory per connection
            ping_interval=self.options.ping_interval,
            ping_timeout=self.options.ping_timeout,
            close_timeout=self._close_timeout,
            # Memory per connection is bounded: frames up to 4x the limit are read and refused with an error
            # message, larger ones close 1009; at most max_queue frames wait unread (then the socket is not read);
            # unsent output over slow_consumer_bytes closes it (4003).
            max_size=4 * self.limits.max_message_bytes,
            max_queue=8,
            open_timeout=self.options.handshake_timeout,
            create_connection=gated,
            backlog=self.options.backlog,
            ssl=self.options.tls,
        )
        self._expiry_task = asyncio.get_running_loop().create_task(self._expire_forever())
        if self.options.gc_interval > 0:
            self._gc_thresholds = gc.get_threshold()
            gc.collect()
            gc.freeze()  # everything alive at start-up (modules, classes) is never scanned again
            gen0, gen1, _ = self._gc_thresholds
            gc.set_threshold(gen0, gen1, 1_000_000_000)  # no automatic full collections
            self._gc_task = asyncio.get_running_loop().create_task(self._collect_forever())

    @property
    def port(self) -> int:
        assert self._server is not None, "start() first"
        return int(self._server.sockets[0].getsockname()[1])

    @property
    def url(self) -> str:
        host = self.options.host
        if ":" in host:
            host = f"[{host}]"
        scheme = "wss" if self.options.tls is not None else "ws"
        return f"{scheme}://{host}:{self.port}{WEBSOCKET_PATH}"

    async def serve_forever(self) -> None:
        assert self._server is not None, "start() first"
        await self._server.serve_forever()

    async def close(self) -> None:
        if self._gc_task is not None:
            self._gc_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._gc_task
            gc.set_threshold(*self._gc_thresholds)
            gc.unfreeze()
        if self._expiry_task is not None:
            self._expiry_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._expiry_task
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def __aenter__(self) -> SignalServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ---- HTTP ----------------------------------------------------------------------------------------------

    def _process_request(self, connection: ServerConnection, request: Request) -> Response | None:
        path = urlsplit(request.path).path
        if path == "/healthz":
            return _text_response(http.HTTPStatus.OK, "ok\n")
        if path == "/metrics":
            return _text_response(http.HTTPStatus.OK, self.registry.metrics(),
                                  "text/plain; version=0.0.4; charset=utf-8")
        if "websocket" in request.headers.get("Upgrade", "").lower():
            if path != WEBSOCKET_PATH:
                return _text_response(http.HTTPStatus.NOT_FOUND, f"the WebSocket endpoint is {WEBSOCKET_PATH}\n")
            if not self.registry.allow_handshake(self._client_address(connection, request)):
                response = _text_response(http.HTTPStatus.TOO_MANY_REQUESTS,
                                          f"over {self.limits.connections_per_minute} connections per minute "
                                          "from your address; try again later\n")
                response.headers["Retry-After"] = "10"
                return response
            return None
        if self.static is not None:
            return self.static.response(request.path, request.headers.get("Host"))
        return _text_response(
            http.HTTPStatus.UPGRADE_REQUIRED,
            f"p2pd signaling server: connect with a WebSocket to {WEBSOCKET_PATH} "
            f"using the subprotocol {p.SUBPROTOCOL}\n",
        )

    # ---- WebSocket -----------------------------------------------------------------------------------------

    def _client_address(self, ws: ServerConnection, request: Request | None) -> str:
        peer = str(ws.remote_address[0]) if ws.remote_address else "unknown"
        header = self.options.forwarded_header
        values = request.headers.get_all(header) if header and request is not None else []
        forwarded = ",".join(values) if values else None  # a header sent twice counts as one list
        return client_address(peer, forwarded, self.options.trusted_proxies)

    async def _handle(self, ws: ServerConnection) -> None:
        result = self.registry.connect(self._client_address(ws, ws.request))
        conn = result.conn
        self._sockets[conn] = ws
        try:
            if not result.accepted:
                for action in result.actions:
                    if isinstance(action, Send):
                        await ws.send(action.text)
                    else:
                        await self._close_within(ws, action.code, action.reason)
                return
            self._perform(result.actions)
            async for message in ws:
                self._perform(self.registry.receive(conn, message))
                if conn in self._closed or cast(_GatedConnection, ws).flooded:  # condemned: not one more frame
                    break
                self._give_ice(conn, ws)
        except ConnectionClosed:
            pass
        finally:
            if cast(_GatedConnection, ws).flooded:
                self.registry.flooded(conn)
            self._closed_since_gc += 1
            self._sockets.pop(conn, None)
            self._ice_given.pop(conn, None)
            self._closed.discard(conn)
            if result.accepted:
                self._perform(self.registry.disconnect(conn))
            closing = self._closing.get(conn)
            if closing is not None:  # let it send its close code before websockets closes on our return
                await asyncio.shield(closing)

    def _give_ice(self, conn: int, ws: ServerConnection) -> None:
        """After ``joined``: once per room membership, the ICE servers with fresh TURN credentials."""
        state = self.registry.connections.get(conn)
        room = state.room if state is not None else None
        if self.options.ice is None or room is None or state is None:
            return
        membership = (room.name, state.peer_id)
        if self._ice_given.get(conn) == membership:
            return
        self._ice_given[conn] = membership
        broadcast([ws], p.encode(self.options.ice.message()))

    def _perform(self, actions: list[Send | Close]) -> None:
        for action in actions:
            ws = self._sockets.get(action.conn)
            if ws is None:
                continue
            if action.conn in self._closed:
                continue
            if isinstance(action, Close):
                self._close_once(action, ws)
                continue
            transport = ws.transport
            if transport is not None and transport.get_write_buffer_size() > self.options.slow_consumer_bytes:
                self.registry.counters["connections_closed_slow"] += 1
                self._perform(self.registry.condemn(action.conn, p.CLOSE_SLOW_CONSUMER, "not reading its messages"))
                continue
            broadcast([ws], action.text)

    def _close_once(self, close: Close, ws: ServerConnection) -> None:
        """Start the closing handshake of a condemned connection — the only one: no message of it is handled
        and nothing is sent to it any more. An abrupt close (a flood) stops reading the socket at once; otherwise
        websockets stops reading it once max_queue frames wait unread, and a polite peer's close reply is still
        read. A peer that does not answer is dropped after close_timeout."""
        self._closed.add(close.conn)
        if close.abrupt:
            with contextlib.suppress(Exception):
                ws.transport.pause_reading()
        task = asyncio.get_running_loop().create_task(self._close_within(ws, close.code, close.reason))
        self._closing[close.conn] = task
        task.add_done_callback(lambda _: self._closing.pop(close.conn, None))

    async def _close_within(self, ws: ServerConnection, code: int, reason: str) -> None:
        """``ws.close()`` waits without limit to flush its close frame to a peer that does not read: bound it."""
        try:
            await asyncio.wait_for(ws.close(code, reason), self._close_timeout)
        except TimeoutError:
            ws.transport.abort()

    async def _collect_forever(self) -> None:
        loop = asyncio.get_running_loop()
        last = loop.time()
        while True:
            await asyncio.sleep(min(1.0, self.options.gc_interval))
            if self._closed_since_gc >= self.options.gc_after_closes or loop.time() - last >= self.options.gc_interval:
                gc.collect()
                self._closed_since_gc = 0
                last = loop.time()

    async def _expire_forever(self) -> None:
        while True:
            await asyncio.sleep(self.options.expiry_interval)
            try:
                self._perform(self.registry.expire())
            except Exception:  # pragma: no cover - never let the sweeper die
                log.exception("room expiry failed")
