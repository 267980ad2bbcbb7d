"""``p2pd serve``: the daemon — the HTTP API and MCP endpoint (uvicorn) over the service, plus the device network
when one is plugged in.

Binds 127.0.0.1 by default. Any address that is not loopback is refused unless ``allow_remote = true`` is in the
config (or ``--allow-remote``): the API hands out conversations, and the token is its only lock. While serving,
``daemon.json`` in the home folder says where (url, port, pid); it is removed on a clean stop. SIGTERM and SIGINT
stop cleanly: running transfers stop at once and are marked interrupted (to be resumed by the next start), pending
handoffs stay pending.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from importlib import resources
from pathlib import Path
from types import FrameType
from typing import Any

from p2pd.daemon.home import Home
from p2pd.daemon.network import DeviceNetwork
from p2pd.daemon.service import DaemonService
from p2pd.daemon.store import Store
from p2pd.errors import InvalidInputError
from p2pd.support.memory import limit_arenas, use_system_malloc

log = logging.getLogger("p2pd.daemon")

NetworkFactory = Callable[[DaemonService], DeviceNetwork | None]


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, allow_remote: bool) -> None:
    if not is_loopback(host) and not allow_remote:
        raise InvalidInputError(
            f"refusing to serve on {host}: that address is reachable from other machines. The daemon binds "
            "127.0.0.1 unless you set `allow_remote = true` in the p2pd config (or pass --allow-remote) — and then "
            "anyone who has the token can read and send your conversations")


def url_for(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    if host in ("0.0.0.0", "::"):
        shown = "127.0.0.1"
    return f"http://{shown}:{port}"


def systemd_unit(command: str | None = None) -> str:
    """The systemd user unit, its ``ExecStart`` running ``command`` (default: :func:`p2pd_command`)."""
    template = resources.files("p2pd.daemon").joinpath("p2pd.service").read_text(encoding="utf-8")
    return template.replace("@P2PD@", command or p2pd_command())


def p2pd_command(argv0: str | None = None) -> str:
    """How systemd starts this very p2pd, as an ``ExecStart`` command: the ``p2pd`` program being run (its absolute
    path, not resolved through symlinks, so pipx's and uv's ``~/.local/bin/p2pd`` survive upgrades), else the
    ``p2pd`` beside this interpreter (``python -m p2pd`` in a venv), else the interpreter with ``-m p2pd``."""
    program = Path(sys.argv[0] if argv0 is None else argv0)
    sibling = Path(sys.executable).parent / "p2pd"
    for candidate in (program, sibling):
        if candidate.name == "p2pd" and candidate.is_file() and os.access(candidate, os.X_OK):
            return _systemd_word(os.path.abspath(candidate))
    return f"{_systemd_word(sys.executable)} -m p2pd"


def _systemd_word(word: str) -> str:
    """``word`` as one ExecStart word: ``%`` and ``$`` doubled (systemd expands them), quoted when it has spaces."""
    word = word.replace("%", "%%").replace("$", "$$")
    if any(c.isspace() or c in "\\\"'" for c in word):
        word = '"' + word.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return word


def _server_class() -> Any:
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn's server, but a SIGTERM/SIGINT ends ``serve()`` normally instead of being raised again after the
        graceful shutdown (which would kill the process before daemon.json is removed), and, once it has started,
        calls ``on_exit`` on the loop as soon as the signal comes (the daemon stops its transfers then, not after
        the HTTP shutdown)."""

        on_exit: Callable[[], None] | None = None
        _loop: asyncio.AbstractEventLoop | None = None

        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            first = not self.should_exit
            super().handle_exit(sig, frame)
            if first and self.started and self.on_exit is not None and self._loop is not None:
                self._loop.call_soon_threadsafe(self.on_exit)

        async def serve(self, sockets: Any = None) -> None:
            self._loop = asyncio.get_running_loop()
            await super().serve(sockets)

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            previous = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
            try:
                yield
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)

    return Server


def device_network(service: DaemonService) -> DeviceNetwork:
    """The daemon's link to its paired devices, under this machine's device identity (made on first run)."""
    from p2pd.config import daemon_settings
    from p2pd.daemon.identity import load_identity

    identity = load_identity(service.home.root)
    service.device_id = identity.device_id
    return DeviceNetwork(service.home.root, identity, service, service.signal_url(),
                         partial_max_age=daemon_settings().partial_max_age_hours * 3600)


async def serve(home: Home, *, host: str, port: int, cors_origins: tuple[str, ...] = (),
                network_factory: NetworkFactory | None = None, announce: Callable[[str], None] = print) -> None:
    import uvicorn

    from p2pd.daemon.api import create_app

    _Server = _server_class()

    home.ensure()
    limit_arenas()  # before the worker threads: freed memory of one big job is reused by the next
    token = home.token()
    store = await asyncio.to_thread(Store, home.db_path)
    service = DaemonService(home, store)
    service.network = (network_factory or device_network)(service)
    app = create_app(service, token, host=host, cors_origins=cors_origins)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on", access_log=False,
                            server_header=False, timeout_graceful_shutdown=5)
    server = _Server(config)
    server.on_exit = service.begin_stop

    async def announce_when_up() -> None:
        while not server.started:
            if server.should_exit:
                return
            await asyncio.sleep(0.02)
        bound = port
        for s in server.servers:
            for sock in s.sockets or ():
                bound = sock.getsockname()[1]
        url = url_for(host, bound)
        await asyncio.to_thread(home.write_daemon_info, url=url, host=host, port=bound)
        announce(f"p2pd daemon listening on {url}")
        announce(f"  token file: {home.token_path}")
        announce(f"  MCP endpoint: {url}/mcp")
        announce(f"  home: {home.root}")
        if service.network is not None:
            net = service.network
            announce(f"  device: {net.identity.name} ({net.identity.device_id}), {len(net.book.devices)} paired, "
                     f"signaling {service.signal_url()}")

    watcher = asyncio.create_task(announce_when_up())
    if service.network is not None and hasattr(signal, "SIGHUP"):  # SIGHUP: read [accept] again now
        with contextlib.suppress(NotImplementedError, RuntimeError):
            asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, service.network.reload_policy)
    try:
        await server.serve()
    finally:
        watcher.cancel()
        home.remove_daemon_info()
    if not server.started:
        raise InvalidInputError(f"the daemon could not listen on {host}:{port} (is another daemon running there?)")


def cmd_serve(args: Any) -> int:
    from p2pd.config import daemon_settings
    from p2pd.support.eventloop import run

    if args.print_systemd_unit:
        sys.stdout.write(systemd_unit())
        return 0
    use_system_malloc(sys.argv[1:])  # exec again (same pid) with PYTHONMALLOC=malloc: memory goes back after jobs
    settings = daemon_settings()
    host = args.host or settings.host
    port = settings.port if args.port is None else args.port
    check_bind(host, settings.allow_remote or args.allow_remote)
    if not 0 <= port <= 65535:
        raise InvalidInputError(f"the port must be 0..65535, not {port}")
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    home = Home.default()
    running = home.read_daemon_info()
    if running is not None:
        raise InvalidInputError(f"a daemon already runs for {home.root} at {running['url']} (pid {running.get('pid')})")

    def say(line: str) -> None:
        print(line, flush=True)

    run(serve(home, host=host, port=port, cors_origins=settings.cors_origins, announce=say))
    return 0
