"""Random and malformed input never crashes the server, never leaks across rooms, and others keep being served."""

from __future__ import annotations

import asyncio
import json
import os
import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from p2pd.pairing import Rendezvous
from signaling.protocol import SUBPROTOCOL
from signaling.rooms import Close, Registry, Send, ServerLimits
from tests.signal_process import SignalProcess

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


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_registry_survives_random_sessions(data: st.DataObject):
    clock = [0.0]
    reg = Registry(ServerLimits(max_rooms=5, max_connections=4, room_capacity=2, max_room_capacity=3,
                                message_burst=30, joins_per_minute=20, max_message_bytes=512),
                   clock=lambda: clock[0], rng=random.Random(0))
    conns: list[int] = []
    for _ in range(data.draw(st.integers(1, 60))):
        action = data.draw(st.sampled_from(["connect", "message", "message", "message", "raw", "disconnect", "tick"]))
        if action == "connect" or not conns:
            result = reg.connect(data.draw(st.sampled_from(["10.0.0.1", "10.0.0.2"])))
            if result.accepted:
                conns.append(result.conn)
            actions = result.actions
        elif action == "disconnect":
            conn = data.draw(st.sampled_from(conns))
            conns.remove(conn)
            actions = reg.disconnect(conn)
        elif action == "tick":
            clock[0] += data.draw(st.floats(0, 700))
            actions = reg.expire()
        else:
            conn = data.draw(st.sampled_from(conns))
            peers = [pid for room in reg.rooms.values() for pid in room.members]
            raw = data.draw(raw_messages if action == "raw" else near_valid(peers))
            before_room = reg.connections[conn].room
            actions = reg.receive(conn, raw)
            for act in actions:  # a message reaches the sender, or members of the sender's room only
                if isinstance(act, Send) and act.conn != conn and json.loads(act.text)["type"] == "relay":
                    assert before_room is not None and act.conn in before_room.members.values()
        for act in actions:
            assert isinstance(act, Send | Close)
            if isinstance(act, Send):
                assert isinstance(json.loads(act.text), dict)
            elif act.conn in conns:  # the server closed it (rate limit): the adapter would then disconnect it
                conns.remove(act.conn)
                reg.disconnect(act.conn)
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
