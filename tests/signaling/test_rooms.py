"""The sans-I/O room registry: every message and every limit, with a fake clock and no sockets."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from signaling import protocol as p
from signaling.rooms import Action, Close, Registry, Send, ServerLimits


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make(**limits: Any) -> tuple[Registry, Clock]:
    clock = Clock()
    return Registry(ServerLimits(**limits), clock=clock), clock


def connect(reg: Registry, address: str = "10.0.0.1") -> int:
    result = reg.connect(address)
    assert result.accepted
    [welcome] = decode(result.actions, result.conn)
    assert welcome["type"] == "welcome"
    return result.conn


def decode(actions: list[Action], conn: int) -> list[dict[str, Any]]:
    return [json.loads(a.text) for a in actions if isinstance(a, Send) and a.conn == conn]


def send(reg: Registry, conn: int, message: Any) -> list[Action]:
    raw = message if isinstance(message, str | bytes) else json.dumps(message)
    return reg.receive(conn, raw)


def one(reg: Registry, conn: int, message: Any) -> dict[str, Any]:
    """Send ``message`` and return the single reply to the sender."""
    [reply] = decode(send(reg, conn, message), conn)
    return reply


def error_code(reply: dict[str, Any]) -> str:
    assert reply["type"] == "error", reply
    assert reply["reason"]
    return str(reply["code"])


def pair(reg: Registry) -> tuple[int, int, str, str, str]:
    a, b = connect(reg), connect(reg)
    joined_a = one(reg, a, {"type": "allocate"})
    actions = send(reg, b, {"type": "join", "room": joined_a["room"]})
    [joined_b] = decode(actions, b)
    return a, b, joined_a["room"], joined_a["peer_id"], joined_b["peer_id"]


def test_welcome_announces_protocol_and_limits():
    reg, _ = make(max_message_bytes=4096)
    result = reg.connect("10.0.0.1")
    [welcome] = decode(result.actions, result.conn)
    assert welcome["protocol"] == p.SUBPROTOCOL
    assert welcome["limits"]["max_message_bytes"] == 4096
    assert welcome["limits"]["room_capacity"] == 2


def test_allocate_then_join_tells_both_sides():
    reg, _ = make()
    a, b = connect(reg), connect(reg)
    joined_a = one(reg, a, {"type": "allocate", "id": 7})
    assert joined_a["type"] == "joined" and joined_a["id"] == 7 and joined_a["created"] is True
    assert joined_a["room"].isdigit() and joined_a["peers"] == []
    assert joined_a["capacity"] == 2 and 0 < joined_a["expires_in"] <= 600
    actions = send(reg, b, {"type": "join", "room": joined_a["room"], "id": "x"})
    [joined_b] = decode(actions, b)
    assert joined_b["peers"] == [joined_a["peer_id"]] and joined_b["created"] is False and joined_b["id"] == "x"
    assert decode(actions, a) == [{"type": "peer_joined", "room": joined_a["room"], "peer_id": joined_b["peer_id"]}]
    assert reg.counters["pairings"] == 1


def test_join_creates_only_when_asked():
    reg, _ = make()
    a, b = connect(reg), connect(reg)
    assert error_code(one(reg, a, {"type": "join", "room": "lobby"})) == "no-such-room"
    joined = one(reg, a, {"type": "join", "room": "lobby", "create": True})
    assert joined["created"] is True and joined["room"] == "lobby"
    assert one(reg, b, {"type": "join", "room": "lobby", "create": True})["created"] is False


def test_third_member_is_refused_room_full():
    reg, _ = make()
    _, _, room, _, _ = pair(reg)
    c = connect(reg)
    assert error_code(one(reg, c, {"type": "join", "room": room})) == "room-full"


def test_relay_reaches_only_the_named_peer_with_from_stamped():
    reg, _ = make(room_capacity=3, max_room_capacity=3)
    a, b, room, id_a, id_b = pair(reg)
    c = connect(reg)
    one(reg, c, {"type": "join", "room": room})
    data = {"kind": "sealed", "seq": 0, "box": "AAAA", "nested": [1, None, {"x": True}]}
    actions = send(reg, a, {"type": "relay", "to": id_b, "data": data})
    assert decode(actions, b) == [{"type": "relay", "from": id_a, "data": data}]
    assert decode(actions, a) == [] and decode(actions, c) == []
    actions = send(reg, b, {"type": "relay", "to": id_a, "data": None})
    assert decode(actions, a) == [{"type": "relay", "from": id_b, "data": None}]


def test_relay_errors():
    reg, _ = make()
    a, _, _, id_a, _ = pair(reg)
    loner = connect(reg)
    assert error_code(one(reg, loner, {"type": "relay", "to": "abcd", "data": 1})) == "not-in-room"
    assert error_code(one(reg, a, {"type": "relay", "to": "ffffffff", "data": 1})) == "no-such-peer"
    assert error_code(one(reg, a, {"type": "relay", "to": id_a, "data": 1})) == "no-such-peer"


def test_a_peer_cannot_reach_another_room():
    reg, _ = make()
    a, _, _, _, _ = pair(reg)
    _, d, _, _, id_d = pair(reg)
    actions = send(reg, a, {"type": "relay", "to": id_d, "data": "hi"})
    assert decode(actions, d) == []
    assert error_code(decode(actions, a)[0]) == "no-such-peer"


def test_leave_notifies_the_others_and_empty_rooms_disappear():
    reg, _ = make()
    a, b, room, id_a, _ = pair(reg)
    actions = send(reg, a, {"type": "leave", "id": 3})
    assert decode(actions, a) == [{"type": "left", "id": 3, "room": room}]
    assert decode(actions, b) == [{"type": "peer_left", "room": room, "peer_id": id_a}]
    assert error_code(one(reg, a, {"type": "leave"})) == "not-in-room"
    assert room in reg.rooms
    send(reg, b, {"type": "leave"})
    assert room not in reg.rooms
    assert error_code(one(reg, a, {"type": "join", "room": room})) == "no-such-room"


def test_disconnect_notifies_and_cleans_up():
    reg, _ = make()
    a, b, room, id_a, _ = pair(reg)
    actions = reg.disconnect(a)
    assert decode(actions, b) == [{"type": "peer_left", "room": room, "peer_id": id_a}]
    assert reg.disconnect(b) == []
    assert not reg.rooms and not reg.connections
    assert reg.disconnect(b) == [] and reg.receive(b, "{}") == []  # unknown connections are ignored


def test_close_room_closes_it_for_everyone():
    reg, _ = make()
    a, b, room, _, id_b = pair(reg)
    actions = send(reg, b, {"type": "close_room"})
    expected = {"type": "room_closed", "room": room, "reason": "closed", "by": id_b}
    assert decode(actions, a) == [expected] and decode(actions, b) == [expected]
    assert room not in reg.rooms
    assert error_code(one(reg, a, {"type": "relay", "to": id_b, "data": 1})) == "not-in-room"
    assert error_code(one(reg, a, {"type": "close_room"})) == "not-in-room"
    assert one(reg, a, {"type": "allocate"})["type"] == "joined"  # free to join another room


def test_ping_pong_echoes_id():
    reg, _ = make()
    a = connect(reg)
    assert one(reg, a, {"type": "ping", "id": 42}) == {"type": "pong", "id": 42}
    assert one(reg, a, {"type": "ping"}) == {"type": "pong"}


def test_already_in_room():
    reg, _ = make()
    a, _, _, _, _ = pair(reg)
    assert error_code(one(reg, a, {"type": "allocate"})) == "already-in-room"
    assert error_code(one(reg, a, {"type": "join", "room": "x", "create": True})) == "already-in-room"


@pytest.mark.parametrize(
    "raw",
    [
        "not json",
        "[1, 2]",
        "null",
        '"join"',
        "{}",
        '{"type": "teleport"}',
        '{"type": "join"}',
        '{"type": "join", "room": "../etc"}',
        '{"type": "join", "room": ""}',
        '{"type": "join", "room": "' + "a" * 65 + '"}',
        '{"type": "join", "room": "lobby", "create": "yes please"}',
        '{"type": "join", "room": "lobby", "sneaky": 1}',
        '{"type": "relay", "to": "NOT-HEX", "data": 1}',
        '{"type": "relay", "to": "abcd"}',
        '{"type": "allocate", "capacity": "two"}',
        '{"type": "ping", "id": [1]}',
        b"\xff\xfe\x00garbage",
        '{"type": "ping"} trailing',
    ],
)
def test_malformed_messages_get_bad_message(raw: str | bytes):
    reg, _ = make()
    a = connect(reg)
    assert error_code(one(reg, a, raw)) == "bad-message"
    assert one(reg, a, {"type": "ping", "id": 1}) == {"type": "pong", "id": 1}  # still served


def test_bad_message_echoes_a_valid_id():
    reg, _ = make()
    a = connect(reg)
    reply = one(reg, a, {"type": "join", "id": 9})
    assert error_code(reply) == "bad-message" and reply["id"] == 9 and "room" in reply["reason"]


def test_binary_frames_with_json_are_accepted():
    reg, _ = make()
    a = connect(reg)
    assert one(reg, a, b'{"type": "ping", "id": 5}') == {"type": "pong", "id": 5}


def test_message_too_large():
    reg, _ = make(max_message_bytes=1024)
    a = connect(reg)
    big = json.dumps({"type": "ping", "id": "x" * 2000})
    reply = one(reg, a, big)
    assert error_code(reply) == "message-too-large" and "1024" in reply["reason"]
    # multi-byte characters count as bytes, not characters
    assert error_code(one(reg, a, json.dumps({"type": "ping", "id": "é" * 600}, ensure_ascii=False))) \
        == "message-too-large"
    assert one(reg, a, {"type": "ping"})["type"] == "pong"


def test_messages_per_second_limit_refuses_then_closes():
    reg, clock = make(messages_per_second=2, message_burst=3, rate_limit_strikes=5)
    a = connect(reg)
    for _ in range(3):
        assert one(reg, a, {"type": "ping"})["type"] == "pong"
    reply = one(reg, a, {"type": "ping"})
    assert error_code(reply) == "rate-limited" and "per second" in reply["reason"]
    assert send(reg, a, {"type": "ping"}) == []  # only one error per run of refused messages
    clock.now += 1.0  # two tokens back
    assert one(reg, a, {"type": "ping"})["type"] == "pong"
    assert one(reg, a, {"type": "ping"})["type"] == "pong"
    assert error_code(one(reg, a, {"type": "ping"})) == "rate-limited"  # strike 1 after the pongs
    for _ in range(3):  # strikes 2..4: dropped silently
        assert send(reg, a, {"type": "ping"}) == []
    last = send(reg, a, {"type": "ping"})  # strike 5 in a row: closed
    assert last == [Close(a, p.CLOSE_RATE_LIMIT, "rate limit exceeded", abrupt=True)]


def test_joins_per_minute_per_address():
    reg, clock = make(joins_per_minute=3, max_rooms=100)
    conns = [connect(reg, "10.0.0.1") for _ in range(4)]
    for conn in conns[:3]:
        assert one(reg, conn, {"type": "allocate"})["type"] == "joined"
    reply = one(reg, conns[3], {"type": "allocate"})
    assert error_code(reply) == "join-rate-limited" and "per minute" in reply["reason"]
    assert error_code(one(reg, conns[3], {"type": "join", "room": "x", "create": True})) == "join-rate-limited"
    other = connect(reg, "10.0.0.2")  # another address has its own budget
    assert one(reg, other, {"type": "allocate"})["type"] == "joined"
    clock.now += 20.0  # one join back (3 per 60 s)
    assert one(reg, conns[3], {"type": "allocate"})["type"] == "joined"


def test_total_rooms_limit():
    reg, _ = make(max_rooms=2)
    a, b, c = connect(reg), connect(reg), connect(reg)
    one(reg, a, {"type": "allocate"})
    one(reg, b, {"type": "join", "room": "r2", "create": True})
    assert error_code(one(reg, c, {"type": "allocate"})) == "too-many-rooms"
    assert error_code(one(reg, c, {"type": "join", "room": "r3", "create": True})) == "too-many-rooms"
    assert one(reg, c, {"type": "join", "room": "r2"})["type"] == "joined"  # joining an existing room is fine


def test_total_connections_limit():
    reg, _ = make(max_connections=2)
    a, _ = connect(reg), connect(reg)
    refused = reg.connect("10.0.0.9")
    assert not refused.accepted
    [error] = decode(refused.actions, refused.conn)
    assert error_code(error) == "server-full" and error["fatal"] is True
    assert refused.actions[-1] == Close(refused.conn, p.CLOSE_SERVER_FULL, "server full")
    reg.disconnect(a)
    assert reg.connect("10.0.0.9").accepted


def test_room_ttl_closes_the_room():
    reg, clock = make(room_ttl=30)
    a, b, room, _, _ = pair(reg)
    clock.now += 29
    assert reg.expire() == []
    clock.now += 2
    actions = reg.expire()
    expected = {"type": "room_closed", "room": room, "reason": "expired"}
    assert decode(actions, a) == [expected] and decode(actions, b) == [expected]
    assert room not in reg.rooms and reg.counters["rooms_expired"] == 1
    assert one(reg, a, {"type": "join", "room": room, "create": True})["created"] is True


def test_expiry_ignores_rooms_that_closed_early_and_prunes_its_heap():
    reg, clock = make(room_ttl=30, max_rooms=10_000, joins_per_minute=100_000, message_burst=10_000)
    a = connect(reg)
    for _ in range(3000):
        one(reg, a, {"type": "allocate"})
        send(reg, a, {"type": "leave"})
    one(reg, a, {"type": "join", "room": "kept", "create": True})
    assert reg.expire() == []
    assert len(reg._expiry) <= 4 * len(reg.rooms) + 1024
    clock.now += 31
    assert [m["room"] for m in decode(reg.expire(), a)] == ["kept"]


def test_capacity_configuration():
    reg, _ = make(room_capacity=2, max_room_capacity=3)
    a, b, c, d = (connect(reg) for _ in range(4))
    assert error_code(one(reg, a, {"type": "allocate", "capacity": 4})) == "bad-capacity"
    assert error_code(one(reg, a, {"type": "allocate", "capacity": 0})) == "bad-capacity"
    room = one(reg, a, {"type": "allocate", "capacity": 3})
    assert room["capacity"] == 3
    one(reg, b, {"type": "join", "room": room["room"]})
    joined_c = one(reg, c, {"type": "join", "room": room["room"]})
    assert len(joined_c["peers"]) == 2
    assert error_code(one(reg, d, {"type": "join", "room": room["room"]})) == "room-full"


@pytest.mark.parametrize("seed", range(20))
def test_nameplates_are_distinct_shortest_first_and_run_out_cleanly(seed: int):
    clock = Clock()
    reg = Registry(ServerLimits(max_nameplate_digits=2, joins_per_minute=1000, max_connections_per_address=200,
                                max_rooms_per_address=200), clock=clock,
                   rng=random.Random(seed))
    names = [one(reg, connect(reg), {"type": "allocate"})["room"] for _ in range(99)]
    assert names[:9] and sorted(names[:9]) == [str(n) for n in range(1, 10)]  # every 1-digit one first
    assert sorted(names, key=int) == [str(n) for n in range(1, 100)]
    assert error_code(one(reg, connect(reg), {"type": "allocate"})) == "no-free-nameplate"


def test_metrics_count_without_addresses():
    reg, _ = make()
    pair(reg)
    text = reg.metrics()
    assert "p2pd_signal_connections 2" in text and "p2pd_signal_rooms 1" in text
    assert "p2pd_signal_pairings_total 1" in text
    assert 'p2pd_signal_errors_total{code="room-full"} 0' in text
    assert "10.0.0.1" not in text


def test_limits_are_validated():
    with pytest.raises(ValueError):
        ServerLimits(room_capacity=3, max_room_capacity=2)
    with pytest.raises(ValueError):
        ServerLimits(messages_per_second=0)
    with pytest.raises(ValueError):
        ServerLimits(room_ttl=0)
