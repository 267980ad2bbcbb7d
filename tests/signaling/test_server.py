"""The real ``python -m signaling`` process over real sockets: HTTP endpoints, messages, limits, heartbeat."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import socket
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from signaling.protocol import SUBPROTOCOL
from tests.signal_process import SignalProcess, signal_server


def http_get(url: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.headers.get("Content-Type", ""), response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("Content-Type", ""), exc.read().decode()


async def client(server: SignalProcess) -> ClientConnection:
    ws = await connect(server.url, subprotocols=[SUBPROTOCOL], compression=None)  # type: ignore[list-item]
    welcome = json.loads(await ws.recv())
    assert welcome["type"] == "welcome" and welcome["protocol"] == SUBPROTOCOL
    return ws


async def ask(ws: ClientConnection, message: dict[str, Any]) -> dict[str, Any]:
    await ws.send(json.dumps(message))
    return await recv(ws)


async def recv(ws: ClientConnection, timeout: float = 5.0) -> dict[str, Any]:
    return json.loads(await asyncio.wait_for(ws.recv(), timeout))


def metric(server: SignalProcess, name: str) -> float:
    _, _, text = http_get(server.http + "/metrics")
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not in metrics")


def test_healthz_metrics_and_plain_http(shared_server: SignalProcess):
    assert http_get(shared_server.http + "/healthz")[::2] == (200, "ok\n")
    status, content_type, text = http_get(shared_server.http + "/metrics")
    assert status == 200 and content_type.startswith("text/plain")
    assert "# TYPE p2pd_signal_connections gauge" in text and "127.0.0.1" not in text
    status, content_type, text = http_get(shared_server.http + "/")  # the browser client, served by default
    assert status == 200 and content_type.startswith("text/html") and "p2pd" in text


def test_no_web_leaves_plain_http_to_the_websocket():
    with signal_server("--no-web") as server:
        status, _, text = http_get(server.http + "/")
        assert status == 426 and SUBPROTOCOL in text


async def test_websocket_needs_the_subprotocol_and_path(shared_server: SignalProcess):
    with pytest.raises(InvalidStatus) as missing:
        await connect(shared_server.url)
    assert missing.value.response.status_code == 400
    with pytest.raises(InvalidStatus) as wrong:
        await connect(shared_server.url, subprotocols=["p2pd-signal.v0"])  # type: ignore[list-item]
    assert wrong.value.response.status_code == 400
    with pytest.raises(InvalidStatus) as path:
        await connect(shared_server.url + "elsewhere", subprotocols=[SUBPROTOCOL])  # type: ignore[list-item]
    assert path.value.response.status_code == 404


async def test_every_message_end_to_end(shared_server: SignalProcess):
    a, b, c = [await client(shared_server) for _ in range(3)]
    try:
        assert await ask(a, {"type": "ping", "id": 1}) == {"type": "pong", "id": 1}
        joined_a = await ask(a, {"type": "allocate", "capacity": 3})
        room = joined_a["room"]
        joined_b = await ask(b, {"type": "join", "room": room})
        assert joined_b["peers"] == [joined_a["peer_id"]]
        assert await recv(a) == {"type": "peer_joined", "room": room, "peer_id": joined_b["peer_id"]}
        await b.send(json.dumps({"type": "relay", "to": joined_a["peer_id"], "data": {"sdp": "v=0", "n": [1]}}))
        assert await recv(a) == {"type": "relay", "from": joined_b["peer_id"], "data": {"sdp": "v=0", "n": [1]}}
        joined_c = await ask(c, {"type": "join", "room": room})
        assert (await recv(a))["type"] == (await recv(b))["type"] == "peer_joined"
        assert await ask(c, {"type": "leave", "id": 2}) == {"type": "left", "id": 2, "room": room}
        left = {"type": "peer_left", "room": room, "peer_id": joined_c["peer_id"]}
        assert await recv(a) == left and await recv(b) == left
        await b.send(json.dumps({"type": "close_room"}))
        closed = {"type": "room_closed", "room": room, "reason": "closed", "by": joined_b["peer_id"]}
        assert await recv(a) == closed and await recv(b) == closed
        assert (await ask(a, {"type": "join", "room": room}))["code"] == "no-such-room"
        # a disconnect is a leave
        joined = await ask(a, {"type": "join", "room": f"room-{os.getpid()}", "create": True})
        joined_b = await ask(b, {"type": "join", "room": joined["room"]})
        await recv(a)
        await b.close()
        assert await recv(a) == {"type": "peer_left", "room": joined["room"], "peer_id": joined_b["peer_id"]}
    finally:
        for ws in (a, b, c):
            await ws.close()


async def test_message_size_limit_over_the_wire():
    with signal_server("--max-message-bytes", "1024") as server:
        ws = await client(server)
        reply = await ask(ws, {"type": "ping", "id": "x" * 2000})
        assert reply["code"] == "message-too-large"
        assert await ask(ws, {"type": "ping"}) == {"type": "pong"}  # still connected
        await ws.send("x" * (4 * 1024 + 1))  # over the frame limit: the connection is closed (1009)
        with pytest.raises(ConnectionClosed) as closed:
            await recv(ws)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
        other = await client(server)
        assert await ask(other, {"type": "ping"}) == {"type": "pong"}
        await other.close()


async def test_rate_limits_over_the_wire():
    with signal_server("--messages-per-second", "5", "--message-burst", "5", "--joins-per-minute", "2") as server:
        ws = await client(server)
        for _ in range(8):
            await ws.send(json.dumps({"type": "ping"}))
        replies = [await recv(ws) for _ in range(6)]
        assert [r["type"] for r in replies] == ["pong"] * 5 + ["error"]
        assert replies[-1]["code"] == "rate-limited"
        await asyncio.sleep(1.0)
        joiner = await client(server)
        assert (await ask(joiner, {"type": "allocate"}))["type"] == "joined"
        assert (await ask(joiner, {"type": "leave"}))["type"] == "left"
        assert (await ask(joiner, {"type": "allocate"}))["type"] == "joined"
        assert (await ask(joiner, {"type": "leave"}))["type"] == "left"
        reply = await ask(joiner, {"type": "allocate"})
        assert reply["code"] == "join-rate-limited"
        await ws.close()
        await joiner.close()


async def test_max_connections_and_rooms_over_the_wire():
    with signal_server("--max-connections", "2", "--max-rooms", "1") as server:
        a, b = await client(server), await client(server)
        assert (await ask(a, {"type": "allocate"}))["type"] == "joined"
        assert (await ask(b, {"type": "allocate"}))["code"] == "too-many-rooms"
        third = await connect(server.url, subprotocols=[SUBPROTOCOL])  # type: ignore[list-item]
        error = json.loads(await third.recv())
        assert error["code"] == "server-full" and error["fatal"] is True
        with pytest.raises(ConnectionClosed) as closed:
            await third.recv()
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 4001
        await a.close()
        await b.close()
        assert metric(server, "p2pd_signal_connections_refused_total") == 1


async def test_room_ttl_over_the_wire():
    with signal_server("--room-ttl", "0.5") as server:
        a = await client(server)
        joined = await ask(a, {"type": "allocate"})
        message = await recv(a, timeout=5)
        assert message == {"type": "room_closed", "room": joined["room"], "reason": "expired"}
        await a.close()


def _silent_websocket(port: int) -> socket.socket:
    """A client that completes the handshake and then never reads or answers pings: a dead peer."""
    sock = socket.create_connection(("127.0.0.1", port))
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(
        (f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
         f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: {SUBPROTOCOL}\r\n\r\n")
        .encode())
    response = b""
    while b"\r\n\r\n" not in response:
        response += sock.recv(4096)
    assert response.startswith(b"HTTP/1.1 101")
    return sock


def test_heartbeat_drops_dead_sockets():
    with signal_server("--ping-interval", "0.3", "--ping-timeout", "0.3") as server:
        sock = _silent_websocket(server.port)
        try:
            assert metric(server, "p2pd_signal_connections") == 1
            deadline = time.monotonic() + 10
            while metric(server, "p2pd_signal_connections") != 0:
                assert time.monotonic() < deadline, "the dead connection was not dropped"
                time.sleep(0.1)
        finally:
            sock.close()


def test_static_directory_hook(tmp_path: Path):
    (tmp_path / "index.html").write_text("<h1>p2pd</h1>")
    (tmp_path / "app.js").write_text("console.log(1)")
    (tmp_path.parent / "secret.txt").write_text("nope")
    with signal_server("--static-dir", str(tmp_path)) as server:
        status, content_type, body = http_get(server.http + "/")
        assert (status, body) == (200, "<h1>p2pd</h1>") and content_type.startswith("text/html")
        assert http_get(server.http + "/app.js")[0] == 200
        for path in ("/../secret.txt", "/%2e%2e/secret.txt", "/missing.js", "/..%2fsecret.txt"):
            status, _, body = http_get(server.http + path)
            assert status == 404 and "nope" not in body, path
        assert http_get(server.http + "/healthz")[0] == 200


def test_bad_options_exit_with_usage_error():
    import subprocess
    import sys

    from tests.signal_process import ROOT

    result = subprocess.run([sys.executable, "-m", "signaling", "--room-capacity", "0"], cwd=ROOT,
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 2 and "room_capacity" in result.stderr


async def test_a_client_that_does_not_read_is_disconnected_not_waited_for():
    with signal_server("--messages-per-second", "1000", "--message-burst", "1000", "--ping-timeout", "2") as server:
        sock = socket.create_connection(("127.0.0.1", server.port))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        slow = await connect(server.url, subprotocols=[SUBPROTOCOL], sock=sock,  # type: ignore[list-item]
                             max_queue=1, ping_interval=None)
        await recv(slow)
        fast = await client(server)
        joined = await ask(fast, {"type": "allocate"})
        joined_slow = await ask(slow, {"type": "join", "room": joined["room"]})
        await recv(fast)  # peer_joined
        payload = json.dumps({"type": "relay", "to": joined_slow["peer_id"], "data": "x" * 60_000})
        started = time.monotonic()
        for _ in range(150):  # 9 MB towards a client that reads nothing
            await fast.send(payload)
        assert await recv(fast, timeout=15) == {"type": "peer_left", "room": joined["room"],
                                                "peer_id": joined_slow["peer_id"]}
        assert time.monotonic() - started < 15
        assert await ask(fast, {"type": "ping"}) == {"type": "pong"}  # the sender was never blocked
        await fast.close()
        slow.transport.abort()
