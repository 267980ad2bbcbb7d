"""The real ``python -m signaling`` process under abuse: floods, slot hogging, idle and half-open sockets.
Every client is on loopback; 127.0.0.2, 127.0.0.3, … stand for distinct client addresses."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psutil
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from p2pd.pairing import Rendezvous
from signaling.protocol import SUBPROTOCOL
from tests.signal_process import SignalProcess, signal_server
from tests.signaling.rawclient import close_code, flood, frame, handshake, tcp, upgrade_request
from tests.signaling.test_server import metric

MiB = 1 << 20


@contextmanager
def peak_rss(pid: int) -> Iterator[list[int]]:
    """Samples the process's RSS every 20 ms while the block runs; yields [peak] (filled in at the end)."""
    process = psutil.Process(pid)
    peak = [process.memory_info().rss]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.02):
            peak[0] = max(peak[0], process.memory_info().rss)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield peak
    finally:
        stop.set()
        sampler.join()
        peak[0] = max(peak[0], process.memory_info().rss)


async def client_from(server: SignalProcess, source: str, **kwargs: Any) -> ClientConnection:
    sock = tcp(server.port, source)
    sock.setblocking(False)
    ws = await connect(server.url, subprotocols=[SUBPROTOCOL], sock=sock, **kwargs)  # type: ignore[list-item]
    return ws


async def rendezvous_pairing(server: SignalProcess) -> Any:
    async with await Rendezvous.open(server.url, role="sender") as sender:
        async def receive() -> Any:
            async with Rendezvous.connect(server.url, str(sender.code), role="receiver", peer_timeout=10) as receiver:
                return await receiver.recv_sealed(timeout=10)

        receiving = asyncio.create_task(receive())
        await sender.pair(timeout=10)
        await sender.send_sealed({"type": "offer", "sdp": "v=0"})
        return await receiving


def healthz_seconds(server: SignalProcess, timeout: float = 2.0) -> float:
    started = time.monotonic()
    with urllib.request.urlopen(server.http + "/healthz", timeout=timeout) as response:
        assert response.status == 200 and response.read() == b"ok\n"
    return time.monotonic() - started


def flood_for(port: int, source: str, seconds: float) -> tuple[int, int, int | None]:
    """Floods tiny pings without ever reading for ``seconds``, reconnecting whenever the server drops the
    connection; returns (frames sent, connections made, close code seen by the first connection)."""
    ping = frame('{"type":"ping"}')
    deadline = time.monotonic() + seconds
    frames = connections = 0
    first_code: int | None = None
    while (left := deadline - time.monotonic()) > 0:
        try:
            sock = handshake(port, source)
        except (OSError, ConnectionError):  # refused (HTTP 429, reset): try again shortly
            time.sleep(0.05)
            continue
        connections += 1
        frames += flood(sock, ping, left)
        if connections == 1:
            first_code = close_code(sock, timeout=1.0)
        sock.close()
    return frames, connections, first_code


async def test_a_non_reading_flood_does_not_take_the_server_down():
    """The reproduced defect: 5 s of tiny pings from a client that never reads its socket."""
    with signal_server() as server:  # default limits
        with peak_rss(server.process.pid) as peak:
            frames, connections, first_code = await asyncio.to_thread(flood_for, server.port, "127.0.0.2", 5.0)
            print(f"flood: {frames} frames ({frames * 21 / MiB:.1f} MiB) over {connections} connections in 5 s")
            assert frames > 20_000  # the loopback buffers alone take far more than the 260 frames it is allowed
            answered = await asyncio.to_thread(healthz_seconds, server)
            assert answered < 2.0
            assert await asyncio.wait_for(rendezvous_pairing(server), 30) == {"type": "offer", "sdp": "v=0"}
        print(f"server RSS peak {peak[0] / MiB:.0f} MiB; /healthz answered in {answered * 1000:.0f} ms")
        assert peak[0] < 150 * MiB
        # closed once: by the message rate limit (4002, after the welcome, pongs and one error), or — when the
        # server reads a big chunk of the flood at once — dropped for frames far over that rate
        assert first_code in (4002, None)
        deadline = time.monotonic() + 15  # every flooding connection is dropped (a close times out: it never reads)
        while metric(server, "p2pd_signal_connections") != 0:
            assert time.monotonic() < deadline, "a condemned connection was never dropped"
            await asyncio.sleep(0.2)
        assert metric(server, "p2pd_signal_connections_closed_rate_limit_total") \
            + metric(server, "p2pd_signal_connections_dropped_flood_total") == connections


async def test_one_address_cannot_take_every_slot():
    with signal_server("--max-connections", "30", "--max-connections-per-address", "5") as server:
        hog: list[ClientConnection] = []
        for _ in range(5):
            ws = await client_from(server, "127.0.0.2")
            assert json.loads(await ws.recv())["type"] == "welcome"
            hog.append(ws)
        refused = await client_from(server, "127.0.0.2")
        error = json.loads(await refused.recv())
        assert error["code"] == "too-many-connections" and error["fatal"] is True
        with pytest.raises(ConnectionClosed) as closed:
            await refused.recv()
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 4004
        # the same address also opens sockets that never finish (or never start) their handshake
        half_open = []
        for _ in range(40):
            try:
                half = tcp(server.port, "127.0.0.2")
                half.sendall(upgrade_request(server.port)[:40])
                half_open.append(half)
            except OSError:
                pass
        time.sleep(0.3)
        dropped = sum(1 for s in half_open if _closed_by_server(s))
        assert dropped >= 40 - 21  # at most max_connections_per_address + 16 sockets per peer
        assert metric(server, "p2pd_signal_sockets_refused_total") >= dropped
        # another address pairs as usual
        a, b = await client_from(server, "127.0.0.3"), await client_from(server, "127.0.0.4")
        await a.recv(), await b.recv()
        await a.send(json.dumps({"type": "allocate"}))
        joined = json.loads(await a.recv())
        await b.send(json.dumps({"type": "join", "room": joined["room"]}))
        assert json.loads(await b.recv())["type"] == "joined"
        for ws in (*hog, a, b):
            await ws.close()
        for s in half_open:
            s.close()


def _closed_by_server(sock: socket.socket) -> bool:
    sock.settimeout(0.5)
    try:
        return sock.recv(1) == b""
    except TimeoutError:
        return False
    except OSError:
        return True


async def test_connection_rate_per_address_answers_429():
    with signal_server("--connections-per-minute", "6", "--max-connections-per-address", "2") as server:
        for _ in range(4):  # the burst: twice the per-address cap
            ws = await client_from(server, "127.0.0.2")
            await ws.close()
        with pytest.raises(InvalidStatus) as refused:
            await client_from(server, "127.0.0.2")
        assert refused.value.response.status_code == 429
        assert refused.value.response.headers["Retry-After"] == "10"
        other = await client_from(server, "127.0.0.3")
        assert json.loads(await other.recv())["type"] == "welcome"
        await other.close()
        assert metric(server, "p2pd_signal_handshakes_refused_rate_total") == 1
        await asyncio.sleep(10.5)  # one handshake back per 10 s
        again = await client_from(server, "127.0.0.2")
        assert json.loads(await again.recv())["type"] == "welcome"
        await again.close()


async def test_connections_that_never_join_are_dropped_after_the_deadline():
    with signal_server("--join-deadline", "1", "--handshake-timeout", "1") as server:
        idle = await client_from(server, "127.0.0.2", ping_interval=None)
        member = await client_from(server, "127.0.0.3", ping_interval=None)
        await idle.recv(), await member.recv()
        await member.send(json.dumps({"type": "allocate"}))
        assert json.loads(await member.recv())["type"] == "joined"
        half = tcp(server.port, "127.0.0.4")  # a socket that never finishes its request
        half.sendall(b"GET / HTTP/1.1\r\n")
        started = time.monotonic()
        error = json.loads(await asyncio.wait_for(idle.recv(), 5))
        assert error["code"] == "join-timeout" and error["fatal"] is True
        with pytest.raises(ConnectionClosed) as closed:
            await asyncio.wait_for(idle.recv(), 5)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 4005
        assert 0.9 < time.monotonic() - started < 4
        assert await asyncio.to_thread(_closed_by_server_within, half, 5)
        await member.send(json.dumps({"type": "ping"}))
        assert json.loads(await member.recv()) == {"type": "pong"}  # the member of a room stays
        assert metric(server, "p2pd_signal_connections_closed_idle_total") == 1
        await member.close()
        half.close()


def _closed_by_server_within(sock: socket.socket, seconds: float) -> bool:
    sock.settimeout(seconds)
    try:
        return sock.recv(4096) == b""
    except OSError:
        return False


async def test_forwarded_address_header_only_from_a_trusted_proxy():
    with signal_server("--forwarded-header", "X-Forwarded-For", "--max-connections-per-address", "2") as server:
        async def via(source: str, forwarded: str) -> dict[str, Any]:
            ws = await client_from(server, source, additional_headers={"X-Forwarded-For": forwarded})
            first = json.loads(await ws.recv())
            opened.append(ws)
            return first

        opened: list[ClientConnection] = []
        # 127.0.0.1 is a trusted proxy (the default): each forwarded client has its own budget
        assert [(await via("127.0.0.1", "203.0.113.5"))["type"] for _ in range(2)] == ["welcome"] * 2
        assert (await via("127.0.0.1", "198.51.100.1, 203.0.113.5"))["code"] == "too-many-connections"
        assert (await via("127.0.0.1", "203.0.113.6"))["type"] == "welcome"
        ws = await client_from(server, "127.0.0.1", additional_headers=[("X-Forwarded-For", "203.0.113.6"),
                                                                         ("X-Forwarded-For", "203.0.113.5")])
        opened.append(ws)  # a header sent twice is one list: the last address is the one charged
        assert json.loads(await ws.recv())["code"] == "too-many-connections"
        # 127.0.0.2 is not trusted: its header is ignored, it is charged as itself
        assert [(await via("127.0.0.2", f"192.0.2.{i}"))["type"] for i in range(3)] == \
            ["welcome", "welcome", "error"]
        for ws in opened:
            await ws.close()
