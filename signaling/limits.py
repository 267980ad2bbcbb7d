"""Every limit of the signaling server and the small sans-I/O counters that enforce them.

:class:`ServerLimits` is the configuration (all of it command-line options of ``p2pd-signal``); the
:class:`TokenBucket` meters rates; :class:`AddressCounts` caps what one client address may hold (connections,
rooms); :class:`SocketGate` caps the TCP sockets — including those still in their HTTP handshake — globally and
per peer; :func:`client_address` decides which address a connection is charged to (the TCP peer, or a trusted
proxy's forwarded header). Nothing here does I/O or reads the clock: callers pass ``now``.
"""

from __future__ import annotations

import ipaddress
from collections import Counter
from dataclasses import dataclass

from signaling import protocol as p


@dataclass(frozen=True, slots=True)
class ServerLimits:
    """Every limit the registry enforces; all are command-line options of ``p2pd-signal``."""

    max_message_bytes: int = 64 * 1024
    messages_per_second: float = 20.0
    message_burst: int = 60
    rate_limit_strikes: int = 200  # refused messages in a row before the connection is closed
    joins_per_minute: int = 60  # joins + allocations per client address
    connections_per_minute: int = 120  # WebSocket handshakes per client address (burst: twice the address cap)
    max_rooms: int = 10_000
    max_connections: int = 20_000
    room_capacity: int = 2
    max_room_capacity: int = 2
    room_ttl: float = 600.0
    max_nameplate_digits: int = 6
    max_connections_per_address: int = 32  # open WebSocket connections charged to one client address
    max_rooms_per_address: int = 32  # open rooms created from one client address
    join_deadline: float = 30.0  # seconds a connection may stay outside a room before it is closed

    def __post_init__(self) -> None:
        if self.room_capacity < 1 or self.max_room_capacity < self.room_capacity:
            raise ValueError("need 1 <= room_capacity <= max_room_capacity")
        if self.max_message_bytes < 256:
            raise ValueError("max_message_bytes must be at least 256")
        if min(self.messages_per_second, self.message_burst, self.joins_per_minute, self.connections_per_minute) <= 0:
            raise ValueError("rates must be positive")
        if min(self.max_rooms, self.max_connections, self.rate_limit_strikes, self.max_connections_per_address,
               self.max_rooms_per_address) < 1:
            raise ValueError("counts must be positive")
        if self.room_ttl <= 0 or self.join_deadline <= 0:
            raise ValueError("room_ttl and join_deadline must be positive")
        if not 1 <= self.max_nameplate_digits <= 9:
            raise ValueError("max_nameplate_digits must be 1..9")

    @property
    def frame_rate(self) -> float:
        """WebSocket frames of any kind (messages, pings, pongs, …) per second a connection may send before it
        is dropped without ceremony: far over the message rate, so the message limit (its error and its 4002
        close) always acts first on a client that merely sends too fast."""
        return 2 * self.messages_per_second + 5

    @property
    def frame_burst(self) -> float:
        return self.message_burst + self.rate_limit_strikes + 64

    def wire(self) -> p.Limits:
        return p.Limits(
            max_message_bytes=self.max_message_bytes,
            messages_per_second=float(self.messages_per_second),
            message_burst=self.message_burst,
            joins_per_minute=self.joins_per_minute,
            room_capacity=self.room_capacity,
            max_room_capacity=self.max_room_capacity,
            room_ttl=float(self.room_ttl),
        )


class TokenBucket:
    """``rate`` tokens per second, at most ``burst`` stored; starts full."""

    __slots__ = ("burst", "rate", "stamp", "tokens")

    def __init__(self, rate: float, burst: float, now: float) -> None:
        self.rate = rate
        self.burst = burst
        self.tokens = burst
        self.stamp = now

    def refill(self, now: float) -> None:
        if now > self.stamp:
            self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
            self.stamp = now

    def take(self, now: float) -> bool:
        self.refill(now)
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False

    def full(self, now: float) -> bool:
        self.refill(now)
        return self.tokens >= self.burst


class RateByAddress:
    """A :class:`TokenBucket` per address (``per_minute`` refill, ``burst`` stored); buckets that are full again
    are forgotten by :meth:`prune`, so memory follows the addresses active in the last minutes only."""

    __slots__ = ("_buckets", "burst", "per_minute")

    def __init__(self, per_minute: float, burst: float) -> None:
        self.per_minute = per_minute
        self.burst = burst
        self._buckets: dict[str, TokenBucket] = {}

    def take(self, address: str, now: float) -> bool:
        return self._bucket(address, now).take(now)

    def penalize(self, address: str, tokens: float, now: float) -> None:
        """Take ``tokens`` from ``address`` (down to minus its burst: a lockout of at most two bursts' time)."""
        bucket = self._bucket(address, now)
        bucket.refill(now)
        bucket.tokens = max(-self.burst, bucket.tokens - tokens)

    def _bucket(self, address: str, now: float) -> TokenBucket:
        bucket = self._buckets.get(address)
        if bucket is None:
            bucket = self._buckets[address] = TokenBucket(self.per_minute / 60.0, self.burst, now)
        return bucket

    def prune(self, now: float) -> None:
        for address in [a for a, b in self._buckets.items() if b.full(now)]:
            del self._buckets[address]

    def __len__(self) -> int:
        return len(self._buckets)


class AddressCounts:
    """How many of something each address holds, at most ``limit`` each; empty entries are dropped."""

    __slots__ = ("_counts", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._counts: Counter[str] = Counter()

    def take(self, address: str) -> bool:
        """Charge one to ``address`` unless it holds ``limit`` already."""
        if self._counts[address] >= self.limit:
            return False
        self._counts[address] += 1
        return True

    def release(self, address: str) -> None:
        if self._counts[address] <= 1:
            self._counts.pop(address, None)
        else:
            self._counts[address] -= 1

    def held(self, address: str) -> int:
        return self._counts.get(address, 0)

    def __len__(self) -> int:
        return len(self._counts)


class SocketGate:
    """TCP sockets of every state (HTTP handshake, open, closing): at most ``max_total`` in all and
    ``max_per_peer`` per peer address. A socket over either limit is dropped before it costs anything more,
    so half-open handshakes cannot take the slots of WebSocket connections. A trusted proxy's own address is
    only charged against the total (its clients are told apart by :func:`client_address`)."""

    __slots__ = ("_peers", "exempt", "max_total", "total")

    def __init__(self, max_total: int, max_per_peer: int, exempt: frozenset[str] = frozenset()) -> None:
        self.max_total = max_total
        self.exempt = exempt
        self.total = 0
        self._peers = AddressCounts(max_per_peer)

    def admit(self, peer: str) -> bool:
        if self.total >= self.max_total:
            return False
        if peer not in self.exempt and not self._peers.take(peer):
            return False
        self.total += 1
        return True

    def release(self, peer: str) -> None:
        """The socket of an admitted ``peer`` closed."""
        self.total -= 1
        if peer not in self.exempt:
            self._peers.release(peer)


def address_key(address: str) -> str:
    """What per-address limits count by: an IPv4 address (also when IPv4-mapped), or an IPv6 address's /64 —
    one subscriber usually holds a whole /64, so counting single IPv6 addresses would limit nothing."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


def client_address(peer: str, forwarded: str | None, trusted_proxies: frozenset[str]) -> str:
    """The address key (:func:`address_key`) a connection is charged to: that of ``peer`` (the TCP peer),
    unless ``peer`` is a trusted proxy and sent a forwarded-address header (``forwarded``, e.g.
    X-Forwarded-For): then of the last address in it — the one the proxy itself appended; entries before it
    were written by the client and prove nothing. An unparseable header is charged to the proxy."""
    if forwarded is None or peer not in trusted_proxies:
        return address_key(peer)
    last = forwarded.rsplit(",", 1)[-1].strip()
    if last.startswith("[") and "]" in last:  # [v6]:port
        last = last[1:last.index("]")]
    elif last.count(":") == 1:  # v4:port
        last = last.split(":", 1)[0]
    try:
        return address_key(str(ipaddress.ip_address(last)))
    except ValueError:
        return address_key(peer)


__all__ = ["AddressCounts", "RateByAddress", "ServerLimits", "SocketGate", "TokenBucket", "address_key",
           "client_address"]
