"""Random and malformed input never crashes the server, never leaks across rooms, and others keep being served."""

from __future__ import annotations

import asyncio
import json
import os
import random
import socket
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from typing import Any

import psutil
import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from p2pd.pairing import Rendezvous
from signaling.protocol import SUBPROTOCOL
from signaling.rooms import Close, Registry, Send, ServerLimits
from tests.fuzzing import SECONDS, SEED
from tests.signal_process import SignalProcess, signal_server
from tests.signaling.rawclient import frame, handshake

print(f"signaling fuzz seed: {SEED} (set P2PD_FUZZ_SEED to change it)")

json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)
TYPES = ["allocate", "join", "relay", "leave", "close_room", "ping", "pong", "welcome", "", "JOIN"]
FIELDS = ["id", "room", "create", "capacity", "to", "data", "from", "extra"]


@st.composite
def near_valid(draw: st.DrawFn, peers: list[str]) -> str:
    message: dict[str, Any] = {"type": draw(st.sampled_from(TYPES))}
    for name in draw(st.lists(st.sampled_from(FIELDS), max_size=4, unique=True)):
        if name == "room":
            message[name] = draw(st.sampled_from(["1", "2", "lobby", "x" * 70, "../x"]) | json_values)
        elif name == "to":
            message[name] = draw(st.sampled_from([*peers, "ffffffff"]) if peers else json_values)
        else:
            message[name] = draw(json_values)
    return json.dumps(message)


raw_messages = st.text(max_size=200) | st.binary(max_size=200).map(bytes)


def check_invariants(reg: Registry) -> None:
    for name, room in reg.rooms.items():
        assert room.name == name and 0 < len(room.members) <= room.capacity
        for peer_id, conn in room.members.items():
            state = reg.connections[conn]
            assert state.room is room and state.peer_id == peer_id
    for state in reg.connections.values():
        if state.room is not None:
            assert reg.rooms.get(state.room.name) is state.room
    # the per-address charges match what is open: nothing leaks, nothing is charged twice
    addresses = Counter(state.address for state in reg.connections.values())
    owners = Counter(room.owner for room in reg.rooms.values())
    for address in {*addresses, *owners, "10.0.0.1", "10.0.0.2", "10.0.0.3"}:
        assert reg._address_conns.held(address) == addresses[address] <= reg.limits.max_connections_per_address
        assert reg._address_rooms.held(address) == owners[address] <= reg.limits.max_rooms_per_address


@seed(SEED)
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_registry_survives_random_sessions(data: st.DataObject):
    clock = [0.0]
    reg = Registry(ServerLimits(max_rooms=5, max_connections=6, room_capacity=2, max_room_capacity=3,
                                message_burst=30, joins_per_minute=20, max_message_bytes=512, rate_limit_strikes=5,
                                max_connections_per_address=3, max_rooms_per_address=2, join_deadline=50),
                   clock=lambda: clock[0], rng=random.Random(0))
    conns: list[int] = []
    condemned: set[int] = set()  # closed by the registry, not yet disconnected by the (imagined) adapter
    for _ in range(data.draw(st.integers(1, 60))):
        action = data.draw(st.sampled_from(["connect", "message", "message", "message", "raw", "flood",
                                            "disconnect", "tick"]))
        if action == "connect" or not conns:
            result = reg.connect(data.draw(st.sampled_from(["10.0.0.1", "10.0.0.2", "10.0.0.3"])))
            if result.accepted:
                conns.append(result.conn)
            else:
                assert isinstance(result.actions[-1], Close)
            actions = result.actions if result.accepted else []
        elif action == "disconnect":
            conn = data.draw(st.sampled_from(conns))
            conns.remove(conn)
            condemned.discard(conn)
            actions = reg.disconnect(conn)
        elif action == "tick":
            clock[0] += data.draw(st.floats(0, 700))
            actions = reg.expire()
        else:
            conn = data.draw(st.sampled_from(conns))
            peers = [pid for room in reg.rooms.values() for pid in room.members]
            count = 25 if action == "flood" else 1
            raw = data.draw(raw_messages if action == "raw" else near_valid(peers))
            before_room = reg.connections[conn].room
            actions = [act for _ in range(count) for act in reg.receive(conn, raw)]
            if conn in condemned:
                assert actions == []  # a condemned connection is not heard any more
            for act in actions:  # a message reaches the sender, or members of the sender's room only
                if isinstance(act, Send) and act.conn != conn and json.loads(act.text)["type"] == "relay":
                    assert before_room is not None and act.conn in before_room.members.values()
        for act in actions:
            assert isinstance(act, Send | Close)
            assert act.conn not in condemned, "an action for a connection already closed"
            if isinstance(act, Send):
                assert isinstance(json.loads(act.text), dict)
        for act in actions:
            if isinstance(act, Close):
                condemned.add(act.conn)
        if condemned and data.draw(st.booleans()):  # the adapter's close completes some time later
            conn = condemned.pop()
            conns.remove(conn)
            reg.disconnect(conn)
        check_invariants(reg)


async def _blast(server: SignalProcess, seed: int) -> None:
    """One hostile client: random bytes, random JSON, near-valid messages, deep nesting, huge frames."""
    rng = random.Random(seed)
    try:
        async with connect(server.url, subprotocols=[SUBPROTOCOL], max_size=None,  # type: ignore[list-item]
                           max_queue=None, close_timeout=1) as ws:
            payloads: list[str | bytes] = [
                os.urandom(rng.randint(1, 300)),
                "".join(chr(rng.randint(1, 0x2FFF)) for _ in range(rng.randint(1, 100))),
                "[" * 5000 + "]" * 5000,
                '{"type":"relay","to":"aaaa","data":' + "[" * 3000 + "]" * 3000 + "}",
                json.dumps({"type": "join", "room": f"hostile-{seed % 2}", "create": True}),
                json.dumps({"type": "relay", "to": "00000000", "data": "x" * 1000}),
                json.dumps({"type": "allocate", "capacity": 10**30}),
                json.dumps({"type": "close_room"}),
                b"\x00" * 70_000,
                json.dumps({"type": "ping", "id": 2**80}),
                '{"type": "ping", "id": 1e999}',
                '{"type": "join", "room": "\\ud800"}',
            ]
            for _ in range(120):
                await ws.send(rng.choice(payloads))
                if rng.random() < 0.3:
                    await asyncio.sleep(0)
            await ws.send(json.dumps({"type": "ping"}))
            await asyncio.wait_for(ws.recv(), 5)
    except ConnectionClosed:
        pass  # being thrown out (frame too large, rate limit) is fine; crashing the server is not


async def test_hostile_clients_leave_other_rooms_working(shared_server: SignalProcess):
    async def pairing() -> Any:
        async with await Rendezvous.open(shared_server.url, role="sender") as sender:
            async def receive() -> Any:
                async with Rendezvous.connect(shared_server.url, str(sender.code), role="receiver",
                                              peer_timeout=10) as receiver:
                    return await receiver.recv_sealed(timeout=10)

            receiving = asyncio.create_task(receive())
            await sender.pair(timeout=10)
            await sender.send_sealed({"type": "offer", "sdp": "v=0"})
            return await receiving

    blasts = [asyncio.create_task(_blast(shared_server, seed)) for seed in range(6)]
    assert await pairing() == {"type": "offer", "sdp": "v=0"}  # while the blast is going on
    await asyncio.gather(*blasts)
    assert await pairing() == {"type": "offer", "sdp": "v=0"}  # and after it
    assert shared_server.process.poll() is None


# ---- raw WebSocket frames against the real process --------------------------------------------------------------


@st.composite
def hostile_frame(draw: st.DrawFn) -> bytes:
    """One client frame, valid or not: any opcode (reserved ones too), RSV bits, FIN, unmasked, non-minimal or
    lying length fields, control frames over 125 bytes, invalid UTF-8 in text, or a well-formed message."""
    opcode = draw(st.sampled_from([0, 1, 1, 1, 2, 8, 9, 10, 3, 7, 11, 15]))
    payload = draw(st.binary(max_size=200)
                   | st.text(max_size=80).map(lambda t: t.encode("utf-8", "surrogatepass"))
                   | near_valid([]).map(str.encode)
                   | st.sampled_from([b"\xff\xfe", b"\xed\xa0\x80", b"[" * 3000, b"x" * 300])
                   | st.integers(0, 2**16 - 1).map(lambda code: code.to_bytes(2, "big") + b"bye"))
    if not draw(st.booleans()) or not (draw(st.booleans()) or opcode in (1, 2)):
        return frame(payload, opcode)  # well-formed framing, hostile content
    first = (0x80 if draw(st.booleans()) else 0) | (draw(st.integers(0, 7)) << 4) | opcode
    masked = draw(st.booleans())
    size = len(payload)
    declared = draw(st.sampled_from([size, size, size + 1, max(0, size - 1), 2**40]))
    if declared < 126 and not draw(st.booleans()):
        length = bytes([(0x80 if masked else 0) | declared])
    elif declared < 2**16:
        length = bytes([(0x80 if masked else 0) | 126]) + declared.to_bytes(2, "big")
    else:
        length = bytes([(0x80 if masked else 0) | 127]) + declared.to_bytes(8, "big")
    return bytes([first]) + length + (os.urandom(4) if masked else b"") + payload


@pytest.fixture(scope="module")
def fuzz_server() -> Iterator[SignalProcess]:
    """A server with the default limits, for this module alone (its memory and its log are checked)."""
    with signal_server("--log-level", "WARNING") as server:
        yield server


_FUZZ_STARTED: list[float] = []
_FUZZ_SECONDS = max(SECONDS, 8.0)  # P2PD_FUZZ_SECONDS; tests/bench/fuzz.py runs it longer
_EXAMPLE = [0]


@seed(SEED)
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(frames=st.lists(hostile_frame(), min_size=1, max_size=12), read_first=st.booleans(),
       ending=st.sampled_from(["close", "reset", "linger"]))
def test_hostile_frames_leave_the_server_answering(fuzz_server: SignalProcess, frames: list[bytes],
                                                   read_first: bool, ending: str):
    if not _FUZZ_STARTED:
        _FUZZ_STARTED.append(time.monotonic())
    if time.monotonic() - _FUZZ_STARTED[0] > _FUZZ_SECONDS:
        return  # time-bounded: later examples are skipped (the checks after the run still apply)
    _EXAMPLE[0] += 1
    source = f"127.0.3.{1 + _EXAMPLE[0] % 250}"  # the clients are many addresses, not one
    try:
        sock = handshake(fuzz_server.port, source)
    except (OSError, ConnectionError):
        sock = None  # refused (rate, caps): the server protected itself; it must still answer below
    if sock is not None:
        try:
            if read_first:
                sock.settimeout(1)
                sock.recv(4096)  # the welcome
            sock.sendall(b"".join(frames))
        except OSError:
            pass  # closed by the server mid-way
        finally:
            if ending == "reset":
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            if ending != "linger":
                sock.close()
            else:
                _LINGERING.append(sock)
    started = time.monotonic()
    with urllib.request.urlopen(fuzz_server.http + "/healthz", timeout=5) as response:
        assert response.status == 200
    assert time.monotonic() - started < 2.0
    assert fuzz_server.process.poll() is None


_LINGERING: list[socket.socket] = []


async def test_after_the_fuzz_the_server_pairs_in_bounded_memory_with_a_clean_log(fuzz_server: SignalProcess):
    """Runs after the frame fuzz above (same module server): alive, pairing, under 150 MiB, no traceback."""
    async with connect(fuzz_server.url, subprotocols=[SUBPROTOCOL]) as a,  \
            connect(fuzz_server.url, subprotocols=[SUBPROTOCOL]) as b:  # type: ignore[list-item]
        await a.recv(), await b.recv()
        await a.send(json.dumps({"type": "allocate"}))
        joined = json.loads(await a.recv())
        await b.send(json.dumps({"type": "join", "room": joined["room"]}))
        joined_b = json.loads(await b.recv())
        await a.recv()  # peer_joined
        await a.send(json.dumps({"type": "relay", "to": joined_b["peer_id"], "data": {"sdp": "v=0"}}))
        assert json.loads(await asyncio.wait_for(b.recv(), 5))["data"] == {"sdp": "v=0"}
    for sock in _LINGERING:
        sock.close()
    rss = psutil.Process(fuzz_server.process.pid).memory_info().rss
    print(f"after {_EXAMPLE[0]} hostile connections: server RSS {rss / 2**20:.0f} MiB")
    assert _EXAMPLE[0] > 0 and rss < 150 * 2**20
    log = "".join(fuzz_server.output)
    assert "Traceback" not in log and "ERROR" not in log, log[-3000:]
