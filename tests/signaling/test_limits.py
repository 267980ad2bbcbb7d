"""The abuse limits of the sans-I/O registry and of signaling.limits, with a fake clock and no sockets."""

from __future__ import annotations

import pytest

from signaling import protocol as p
from signaling.limits import (
    AddressCounts,
    RateByAddress,
    ServerLimits,
    SocketGate,
    address_key,
    client_address,
)
from signaling.rooms import Close, Registry
from tests.signaling.test_rooms import Clock, connect, decode, error_code, make, one, send


def test_a_condemned_connection_is_closed_once_and_costs_nothing_after():
    reg, _ = make(messages_per_second=1, message_burst=2, rate_limit_strikes=3)
    a = connect(reg)
    results = [send(reg, a, {"type": "ping"}) for _ in range(5)]  # 2 pongs, error, silent, close
    assert results[4] == [Close(a, p.CLOSE_RATE_LIMIT, "rate limit exceeded", abrupt=True)]
    received, errors = reg.counters["messages_received"], sum(reg.errors.values())
    for _ in range(10_000):  # the flood goes on: not one more action, error or count
        assert send(reg, a, {"type": "ping"}) == []
    assert reg.counters["messages_received"] == received and sum(reg.errors.values()) == errors
    assert reg.connections[a].strikes == 3 and reg.is_condemned(a)
    assert reg.condemn(a, 4999, "again") == []  # nor a second close, from any cause
    assert reg.counters["connections_closed_rate_limit"] == 1


def test_condemn_by_the_adapter_is_once_too_and_the_peer_learns_at_disconnect():
    reg, _ = make()
    a = connect(reg)
    b = connect(reg)
    room = one(reg, a, {"type": "allocate"})
    one(reg, b, {"type": "join", "room": room["room"]})
    assert reg.condemn(b, p.CLOSE_SLOW_CONSUMER, "slow") == [Close(b, p.CLOSE_SLOW_CONSUMER, "slow")]
    assert reg.condemn(b, p.CLOSE_SLOW_CONSUMER, "slow") == []
    assert send(reg, b, {"type": "relay", "to": room["peer_id"], "data": 1}) == []  # no longer heard
    assert decode(reg.disconnect(b), a)[0]["type"] == "peer_left"
    assert not reg.is_condemned(a) and reg.is_condemned(b)  # unknown connections count as condemned


def test_connections_per_address():
    reg, _ = make(max_connections_per_address=2, max_connections=10)
    first, _ = connect(reg, "10.0.0.1"), connect(reg, "10.0.0.1")
    refused = reg.connect("10.0.0.1")
    assert not refused.accepted
    [error] = decode(refused.actions, refused.conn)
    assert error_code(error) == "too-many-connections" and error["fatal"] is True and "2" in error["reason"]
    assert refused.actions[-1] == Close(refused.conn, p.CLOSE_ADDRESS_FULL, "too many connections from your address")
    assert reg.connect("10.0.0.2").accepted  # another address is not locked out
    reg.disconnect(first)
    assert reg.connect("10.0.0.1").accepted  # a slot comes back when a connection goes
    assert reg.counters["connections_refused_address"] == 1
    assert "p2pd_signal_connections_refused_address_total 1" in reg.metrics()


def test_the_global_cap_refuses_new_connections_but_serves_the_open_ones():
    reg, _ = make(max_connections=2, max_connections_per_address=5)
    a, b = connect(reg, "10.0.0.1"), connect(reg, "10.0.0.2")
    assert error_code(decode(reg.connect("10.0.0.3").actions, 3)[0]) == "server-full"
    room = one(reg, a, {"type": "allocate"})
    one(reg, b, {"type": "join", "room": room["room"]})
    assert decode(send(reg, b, {"type": "relay", "to": room["peer_id"], "data": "hi"}), a)[0]["data"] == "hi"


def test_rooms_per_address():
    reg, clock = make(max_rooms_per_address=2, max_connections_per_address=10, room_ttl=60, join_deadline=1000)
    conns = [connect(reg, "10.0.0.1") for _ in range(4)]
    one(reg, conns[0], {"type": "allocate"})
    lobby = one(reg, conns[1], {"type": "join", "room": "lobby", "create": True})
    reply = one(reg, conns[2], {"type": "allocate"})
    assert error_code(reply) == "too-many-rooms" and "your address" in reply["reason"]
    assert error_code(one(reg, conns[2], {"type": "join", "room": "other", "create": True})) == "too-many-rooms"
    assert one(reg, conns[2], {"type": "join", "room": "lobby"})["type"] == "joined"  # joining is not creating
    assert one(reg, connect(reg, "10.0.0.2"), {"type": "allocate"})["type"] == "joined"  # others unaffected
    send(reg, conns[0], {"type": "leave"})  # its room is gone: a slot comes back
    assert one(reg, conns[3], {"type": "allocate"})["type"] == "joined"
    send(reg, conns[1], {"type": "close_room"})  # closed by a member: back too
    assert one(reg, conns[0], {"type": "allocate"})["type"] == "joined"
    clock.now += 61
    reg.expire()  # expired: back too
    assert lobby["created"] and all(one(reg, c, {"type": "allocate"})["type"] == "joined" for c in conns[:2])


def test_a_connection_that_never_joins_is_closed_at_the_deadline():
    reg, clock = make(join_deadline=10)
    idle, joined, leaver = connect(reg), connect(reg), connect(reg)
    one(reg, joined, {"type": "allocate"})
    clock.now += 5
    one(reg, leaver, {"type": "allocate"})
    send(reg, idle, {"type": "ping"})  # pings do not count as joining
    clock.now += 4.9
    assert reg.expire() == []
    send(reg, leaver, {"type": "leave"})  # outside a room again from now (t=9.9)
    clock.now += 0.2
    actions = reg.expire()
    [error] = decode(actions, idle)
    assert error_code(error) == "join-timeout" and error["fatal"] is True
    assert actions[-1] == Close(idle, p.CLOSE_JOIN_TIMEOUT, "no room joined")
    assert all(a.conn == idle for a in actions)
    assert reg.expire() == [] and send(reg, idle, {"type": "allocate"}) == []  # once; it cannot join now
    clock.now += 10
    assert [a for a in reg.expire() if isinstance(a, Close)] == [Close(leaver, p.CLOSE_JOIN_TIMEOUT, "no room joined")]
    clock.now += 100
    assert reg.expire() == []  # the member of a room stays
    assert reg.counters["connections_closed_idle"] == 2


def test_room_closed_starts_the_deadline_for_its_members():
    reg, clock = make(join_deadline=10, room_ttl=5)
    a = connect(reg)
    one(reg, a, {"type": "allocate"})
    clock.now += 6
    assert decode(reg.expire(), a)[0]["type"] == "room_closed"
    clock.now += 9
    assert reg.expire() == []
    clock.now += 1.5
    assert Close(a, p.CLOSE_JOIN_TIMEOUT, "no room joined") in reg.expire()


def test_handshakes_per_address_per_minute():
    reg, clock = make(connections_per_minute=30, max_connections_per_address=3)
    assert all(reg.allow_handshake("10.0.0.1") for _ in range(6))  # burst: twice the per-address cap
    assert not reg.allow_handshake("10.0.0.1")
    assert reg.allow_handshake("10.0.0.2")
    clock.now += 2.0  # one back every 2 s
    assert reg.allow_handshake("10.0.0.1") and not reg.allow_handshake("10.0.0.1")
    assert reg.counters["handshakes_refused_rate"] == 2
    assert "p2pd_signal_handshakes_refused_rate_total 2" in reg.metrics()


def test_an_address_whose_connections_flood_loses_handshakes():
    reg, clock = make(connections_per_minute=60, max_connections_per_address=8, messages_per_second=1,
                      message_burst=1, rate_limit_strikes=1)
    flooder, other = connect(reg, "10.0.0.1"), connect(reg, "10.0.0.2")
    send(reg, flooder, {"type": "ping"})
    assert isinstance(send(reg, flooder, {"type": "ping"})[0], Close)  # condemned for its rate: 8 handshakes lost
    reg.flooded(other)  # dropped by the adapter for its frame rate: the same
    assert reg.counters["connections_dropped_flood"] == 1
    for address in ("10.0.0.1", "10.0.0.2"):
        assert sum(reg.allow_handshake(address) for _ in range(16)) == 8  # burst 16, less 8
    for _ in range(3):
        reg.flooded(other)  # again and again: the address goes into debt (never more than one burst)
    clock.now += 9.9  # 1 per s: back from -16 to -6.1 … a burst 16 + 8 + 8 + 8 would be longer
    assert not reg.allow_handshake("10.0.0.2")
    clock.now += 16.2
    assert reg.allow_handshake("10.0.0.2")
    assert sum(reg.allow_handshake("10.0.0.3") for _ in range(16)) == 16  # others keep their budget


def test_penalties_lock_an_address_out_for_two_bursts_at_most():
    rate = RateByAddress(per_minute=60, burst=4)
    for _ in range(100):
        rate.penalize("10.0.0.1", 8, now=0.0)
    assert not rate.take("10.0.0.1", now=4.9) and rate.take("10.0.0.1", now=5.1)  # from -4 back to 1 in 5 s


def test_rate_by_address_forgets_quiet_addresses():
    rate = RateByAddress(per_minute=60, burst=2)
    for n in range(100):
        assert rate.take(f"10.0.0.{n}", now=0.0)
    assert rate.take("10.0.0.1", now=0.0) and not rate.take("10.0.0.1", now=0.0)
    rate.prune(now=1.0)  # the others are full again (2 tokens), 10.0.0.1 is not
    assert len(rate) == 1
    rate.prune(now=2.0)
    assert len(rate) == 0


def test_address_counts_and_socket_gate():
    counts = AddressCounts(2)
    assert counts.take("a") and counts.take("a") and not counts.take("a") and counts.take("b")
    counts.release("a")
    assert counts.held("a") == 1 and counts.take("a")
    counts.release("b")
    assert len(counts) == 1  # empty entries are dropped: no memory per address ever seen
    gate = SocketGate(max_total=5, max_per_peer=2, exempt=frozenset({"10.9.9.9"}))
    assert gate.admit("1.1.1.1") and gate.admit("1.1.1.1") and not gate.admit("1.1.1.1")
    assert gate.admit("10.9.9.9") and gate.admit("10.9.9.9") and gate.admit("10.9.9.9")  # the proxy: total only
    assert gate.total == 5 and not gate.admit("2.2.2.2")  # the total is full
    gate.release("1.1.1.1")
    assert gate.admit("2.2.2.2") and not gate.admit("3.3.3.3")


@pytest.mark.parametrize(("peer", "header", "expected"), [
    ("127.0.0.1", None, "127.0.0.1"),
    ("127.0.0.1", "203.0.113.7", "203.0.113.7"),
    ("127.0.0.1", "198.51.100.1, 203.0.113.7", "203.0.113.7"),  # the proxy appends: the last one is real
    ("127.0.0.1", "203.0.113.7:5555", "203.0.113.7"),
    ("127.0.0.1", "[2001:db8::1]:443", "2001:db8::/64"),
    ("127.0.0.1", "2001:db8::1", "2001:db8::/64"),
    ("::1", "203.0.113.7", "203.0.113.7"),
    ("127.0.0.1", "not an address", "127.0.0.1"),  # unparseable: charged to the proxy
    ("127.0.0.1", "", "127.0.0.1"),
    ("192.0.2.9", "203.0.113.7", "192.0.2.9"),  # an untrusted peer cannot pick its address
])
def test_client_address(peer: str, header: str | None, expected: str):
    assert client_address(peer, header, frozenset({"127.0.0.1", "::1"})) == expected


@pytest.mark.parametrize(("address", "key"), [
    ("192.0.2.1", "192.0.2.1"),
    ("::ffff:192.0.2.1", "192.0.2.1"),  # IPv4-mapped: the IPv4 address
    ("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"),  # IPv6: its /64, which one subscriber holds
    ("2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"),
    ("::1", "::/64"),
    ("unknown", "unknown"),
])
def test_address_key(address: str, key: str):
    assert address_key(address) == key


def test_one_ipv6_subscriber_cannot_rotate_past_the_address_cap():
    reg, _ = make(max_connections_per_address=2)
    keys = [client_address(f"2001:db8::{n:x}", None, frozenset()) for n in range(1, 4)]
    assert reg.connect(keys[0]).accepted and reg.connect(keys[1]).accepted
    assert not reg.connect(keys[2]).accepted
    assert reg.connect(client_address("2001:db8:0:1::1", None, frozenset())).accepted  # another /64


def test_new_limits_are_validated():
    for bad in ({"max_connections_per_address": 0}, {"max_rooms_per_address": 0}, {"join_deadline": 0},
                {"connections_per_minute": 0}):
        with pytest.raises(ValueError):
            ServerLimits(**bad)


def test_registry_memory_is_bounded_under_churn():
    """Joins, leaves and disconnects from many addresses leave nothing behind once the connections are gone."""
    clock = Clock()
    reg = Registry(ServerLimits(join_deadline=5, joins_per_minute=10_000), clock=clock)
    for round_ in range(50):
        conns = [connect(reg, f"10.0.{round_}.{i}") for i in range(20)]
        for conn in conns:
            one(reg, conn, {"type": "allocate"})
            send(reg, conn, {"type": "leave"})
        for conn in conns[::2]:
            reg.disconnect(conn)
        clock.now += 6
        closes = [a for a in reg.expire() if isinstance(a, Close)]
        assert sorted(c.conn for c in closes) == conns[1::2]
        for close in closes:
            reg.disconnect(close.conn)
    assert not reg.connections and not reg.rooms and len(reg._address_conns) == 0 and len(reg._address_rooms) == 0
    assert len(reg._outside) == 0

