"""``p2pd-signal`` / ``python -m signaling``: run the signaling server.

Prints one line, ``p2pd-signal listening on ws://HOST:PORT/``, once it accepts connections (with
``--port 0`` the actual port), then serves until SIGINT/SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import resource
import signal
import ssl
import sys
from pathlib import Path

from signaling.ice import DEFAULT_TTL, IceConfigError, load_config_file, settings_from
from signaling.page import default_web_dir, startup_notes
from signaling.rooms import ServerLimits
from signaling.server import ServerOptions, SignalServer

_DEFAULTS = ServerLimits()
_OPTIONS = ServerOptions()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="p2pd-signal",
        description="p2pd signaling server: pairs peers in rooms and relays their sealed offers/answers.",
    )
    parser.add_argument("--host", default=_OPTIONS.host, help="address to listen on (default %(default)s)")
    parser.add_argument("--port", type=int, default=_OPTIONS.port,
                        help="port to listen on; 0 picks a free one (default %(default)s)")
    parser.add_argument("--room-capacity", type=int, default=_DEFAULTS.room_capacity,
                        help="members per room unless the creator asks for another (default %(default)s)")
    parser.add_argument("--max-room-capacity", type=int, default=None,
                        help="largest capacity a room creator may ask for (default: --room-capacity)")
    parser.add_argument("--max-rooms", type=int, default=_DEFAULTS.max_rooms, help="default %(default)s")
    parser.add_argument("--max-connections", type=int, default=_DEFAULTS.max_connections,
                        help="default %(default)s")
    parser.add_argument("--room-ttl", type=float, default=_DEFAULTS.room_ttl,
                        help="seconds a room lives at most (default %(default)s)")
    parser.add_argument("--max-message-bytes", type=int, default=_DEFAULTS.max_message_bytes,
                        help="default %(default)s")
    parser.add_argument("--messages-per-second", type=float, default=_DEFAULTS.messages_per_second,
                        help="per connection (default %(default)s)")
    parser.add_argument("--message-burst", type=int, default=_DEFAULTS.message_burst,
                        help="messages a connection may send at once (default %(default)s)")
    parser.add_argument("--joins-per-minute", type=int, default=_DEFAULTS.joins_per_minute,
                        help="joins and allocations per client address (default %(default)s)")
    parser.add_argument("--max-connections-per-address", type=int, default=_DEFAULTS.max_connections_per_address,
                        help="open connections charged to one client address (default %(default)s)")
    parser.add_argument("--max-rooms-per-address", type=int, default=_DEFAULTS.max_rooms_per_address,
                        help="open rooms created from one client address (default %(default)s)")
    parser.add_argument("--connections-per-minute", type=int, default=_DEFAULTS.connections_per_minute,
                        help="WebSocket handshakes per client address, over which HTTP 429 (default %(default)s)")
    parser.add_argument("--join-deadline", type=float, default=_DEFAULTS.join_deadline,
                        help="close a connection that is outside a room for N seconds (default %(default)s)")
    parser.add_argument("--handshake-timeout", type=float, default=_OPTIONS.handshake_timeout,
                        help="drop a socket whose HTTP request/upgrade is not done in N seconds (default %(default)s)")
    parser.add_argument("--forwarded-header", default=None, metavar="NAME",
                        help="behind a reverse proxy: charge connections to the last address in this header "
                             "(e.g. X-Forwarded-For) when they come from a --trusted-proxy (default: off)")
    parser.add_argument("--trusted-proxy", action="append", default=None, metavar="ADDRESS",
                        help="a proxy address whose --forwarded-header is believed; repeatable "
                             "(default: 127.0.0.1 and ::1)")
    parser.add_argument("--ping-interval", type=float, default=_OPTIONS.ping_interval,
                        help="heartbeat ping every N seconds (default %(default)s)")
    parser.add_argument("--ping-timeout", type=float, default=_OPTIONS.ping_timeout,
                        help="drop a connection whose pong is N seconds late (default %(default)s)")
    parser.add_argument("--gc-interval", type=float, default=300.0,
                        help="seconds between full garbage collections, which pause the server for ~45 µs per "
                             "connection; 0 leaves Python's automatic collection on (default %(default)s)")
    parser.add_argument("--static-dir", type=Path, default=None,
                        help="serve the files of this directory over HTTP (default: the browser client the package "
                             "carries, or a checkout's web/ folder)")
    parser.add_argument("--no-web", action="store_true", help="serve no web page (WebSocket and /healthz only)")
    parser.add_argument("--no-uvloop", action="store_true", help="use asyncio's default event loop")
    parser.add_argument("--ice-server", action="append", default=[], metavar="URL",
                        help="a STUN/TURN URL handed to clients that joined a room (repeatable): stun:HOST:3478, "
                             "turn:HOST:3478?transport=udp, turn:HOST:3478?transport=tcp, turns:HOST:443")
    parser.add_argument("--turn-secret-file", type=Path, default=None, metavar="FILE",
                        help="coturn's static-auth-secret (use-auth-secret), read from this file; clients get "
                             "short-lived credentials derived from it")
    parser.add_argument("--turn-ttl", type=float, default=None,
                        help=f"seconds the TURN credentials stay valid (default {DEFAULT_TTL:g})")
    parser.add_argument("--config", type=Path, default=None, metavar="FILE",
                        help="TOML (.toml) or JSON file with ice_servers, turn_secret_file, turn_ttl, turn_user")
    parser.add_argument("--cert", type=Path, default=None, help="TLS certificate chain (PEM): serve https/wss")
    parser.add_argument("--key", type=Path, default=None, help="TLS private key (PEM) for --cert")
    parser.add_argument("--trust-forwarded", action="store_true",
                        help="behind a reverse proxy on this host: shorthand for --forwarded-header X-Forwarded-For "
                             "(believed only from a --trusted-proxy, by default loopback)")
    parser.add_argument("--log-level", default="WARNING", help="default %(default)s")
    return parser


def tls_context(cert: Path | None, key: Path | None) -> ssl.SSLContext | None:
    """A server TLS context from PEM files, or ``None`` (plain ws/http) when neither is given."""
    if cert is None and key is None:
        return None
    if cert is None or key is None:
        raise ValueError("--cert and --key go together")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    return context


def raise_fd_limit() -> int:
    """Raise the soft open-files limit to the hard one (each connection is a file descriptor)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:
        hard = max(soft, 1 << 20)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        return hard
    return soft


async def run(limits: ServerLimits, options: ServerOptions) -> None:
    server = SignalServer(limits, options)
    await server.start()
    print(f"p2pd-signal listening on {server.url}", flush=True)
    if options.static_dir is not None:
        print(f"p2pd-signal serves the browser client from {options.static_dir} at "
              f"{server.url.replace('ws://', 'http://', 1)}", flush=True)
    if options.ice is not None:
        print(f"p2pd-signal hands joined clients these ICE servers: {', '.join(options.ice.urls)}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    try:
        await stop.wait()
    finally:
        await server.close()


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        limits = ServerLimits(
            max_message_bytes=args.max_message_bytes,
            messages_per_second=args.messages_per_second,
            message_burst=args.message_burst,
            joins_per_minute=args.joins_per_minute,
            max_rooms=args.max_rooms,
            max_connections=args.max_connections,
            room_capacity=args.room_capacity,
            max_room_capacity=max(args.room_capacity, args.max_room_capacity or args.room_capacity),
            room_ttl=args.room_ttl,
            max_connections_per_address=args.max_connections_per_address,
            max_rooms_per_address=args.max_rooms_per_address,
            join_deadline=args.join_deadline,
            connections_per_minute=args.connections_per_minute,
        )
    except ValueError as exc:
        print(f"p2pd-signal: {exc}", file=sys.stderr)
        return 2
    static_dir = None if args.no_web else (args.static_dir or default_web_dir())
    if static_dir is not None and not static_dir.is_dir():
        print(f"p2pd-signal: --static-dir {static_dir} is not a directory", file=sys.stderr)
        return 2
    for note in startup_notes(static_dir, args.no_web):
        print(note, file=sys.stderr, flush=True)
    try:
        config = load_config_file(args.config) if args.config is not None else None
        ice = settings_from(args.ice_server, args.turn_secret_file, config=config, ttl=args.turn_ttl)
        tls = tls_context(args.cert, args.key)
        if ice is not None and ice.ttl < limits.room_ttl:
            raise IceConfigError(f"--turn-ttl ({ice.ttl:g} s) must be at least --room-ttl ({limits.room_ttl:g} s): "
                                 "a client gets its credentials once per room, and they must last while it is there")
    except (IceConfigError, ValueError, OSError) as exc:
        print(f"p2pd-signal: {exc}", file=sys.stderr)
        return 2
    options = ServerOptions(host=args.host, port=args.port, ping_interval=args.ping_interval,
                            ping_timeout=args.ping_timeout, static_dir=static_dir,
                            gc_interval=args.gc_interval, ice=ice, tls=tls,
                            handshake_timeout=args.handshake_timeout,
                            forwarded_header=args.forwarded_header or ("X-Forwarded-For" if args.trust_forwarded
                                                                       else None),
                            trusted_proxies=frozenset(args.trusted_proxy or _OPTIONS.trusted_proxies))
    raise_fd_limit()
    if not args.no_uvloop:
        with contextlib.suppress(ImportError):
            import uvloop

            asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    try:
        asyncio.run(run(limits, options))
    except OSError as exc:
        print(f"p2pd-signal: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
