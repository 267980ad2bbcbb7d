"""The room registry of the signaling server, as a sans-I/O state machine applying every limit of
:mod:`signaling.limits`.

The server adapter feeds it events — a connection opened (with its client address), a text/binary message
arrived, a connection closed, time passed — and performs the :class:`Send` / :class:`Close` actions it
returns. Nothing here does I/O or reads the clock except through the injected ``clock``, so every message
and every limit is testable without sockets. A connection is condemned at most once: its one :class:`Close`
is the last action for it, and every later message from it is ignored without any work (the adapter stops
reading it at the same moment).
"""

from __future__ import annotations

import json
import random
import secrets
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from heapq import heapify, heappop, heappush

from signaling import protocol as p
from signaling.limits import AddressCounts, RateByAddress, ServerLimits, TokenBucket
from signaling.metrics import render_metrics
from signaling.parsing import BadMessage, parse_client_message
from signaling.protocol import ErrorCode

SERVER_NAME = "p2pd-signal/0.1"
FLOOD_PENALTY = 8  # handshakes an address loses when one of its connections is closed for flooding


@dataclass(frozen=True, slots=True)
class Send:
    conn: int
    text: str


@dataclass(frozen=True, slots=True)
class Close:
    conn: int
    code: int
    reason: str
    abrupt: bool = False  # a flooding peer: stop reading it at once (its close then ends by timeout)


Action = Send | Close


@dataclass(slots=True)
class Room:
    name: str
    capacity: int
    expires_at: float
    members: dict[str, int] = field(default_factory=dict)  # peer id -> connection id
    generation: int = 0
    owner: str = ""  # the address that created it (charged for it while it is open)


@dataclass(slots=True)
class ConnectionState:
    conn: int
    address: str
    bucket: TokenBucket
    room: Room | None = None
    peer_id: str = ""
    strikes: int = 0
    outside_since: float = 0.0  # when it last was outside a room (connected, left, room closed)
    condemned: bool = False


@dataclass(frozen=True, slots=True)
class ConnectResult:
    conn: int
    accepted: bool
    actions: list[Action]


class Registry:
    """All rooms and connections of one server process."""

    def __init__(self, limits: ServerLimits | None = None, *, clock: Callable[[], float] = time.monotonic,
                 rng: random.Random | None = None) -> None:
        self.limits = limits or ServerLimits()
        self._clock = clock
        self._rng = rng or random.SystemRandom()
        self._next_conn = 0
        self._generation = 0
        self.connections: dict[int, ConnectionState] = {}
        self.rooms: dict[str, Room] = {}
        limits = self.limits
        self._join_rate = RateByAddress(limits.joins_per_minute, limits.joins_per_minute)
        self._handshake_rate = RateByAddress(limits.connections_per_minute, 2 * limits.max_connections_per_address)
        self._expiry: list[tuple[float, int, str]] = []
        self._outside: deque[tuple[float, int]] = deque()  # (outside_since, conn): join deadlines, in order
        self._address_conns = AddressCounts(self.limits.max_connections_per_address)
        self._address_rooms = AddressCounts(self.limits.max_rooms_per_address)
        self.counters: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()
        self._welcome = p.encode(p.Welcome(server=SERVER_NAME, limits=self.limits.wire()))

    # ---- events ------------------------------------------------------------------------------------------

    def allow_handshake(self, address: str) -> bool:
        """May ``address`` open another WebSocket connection now (``connections_per_minute``)? Asked before the
        upgrade, so a refused one costs no more than its HTTP request (the adapter answers 429)."""
        if self._handshake_rate.take(address, self._clock()):
            return True
        self.counters["handshakes_refused_rate"] += 1
        return False

    def connect(self, address: str) -> ConnectResult:
        """A WebSocket connection was opened from client ``address`` (charged for its connections, rooms and
        joins). A refused one gets a fatal error and a close; the adapter then just drops it."""
        self._next_conn += 1
        conn = self._next_conn
        if len(self.connections) >= self.limits.max_connections:
            self.counters["connections_refused"] += 1
            reason = f"the server holds its maximum of {self.limits.max_connections} connections; try later"
            return self._refuse(conn, ErrorCode.SERVER_FULL, reason, p.CLOSE_SERVER_FULL, "server full")
        if not self._address_conns.take(address):
            self.counters["connections_refused_address"] += 1
            reason = (f"your address holds its maximum of {self.limits.max_connections_per_address} connections;"
                      " close one first")
            return self._refuse(conn, ErrorCode.TOO_MANY_CONNECTIONS, reason, p.CLOSE_ADDRESS_FULL,
                                "too many connections from your address")
        now = self._clock()
        self.connections[conn] = ConnectionState(
            conn, address, TokenBucket(self.limits.messages_per_second, self.limits.message_burst, now),
            outside_since=now)
        self._outside.append((now, conn))
        self.counters["connections_accepted"] += 1
        return ConnectResult(conn, True, [Send(conn, self._welcome)])

    def disconnect(self, conn: int) -> list[Action]:
        """The connection is gone (closed by either side or dropped by the heartbeat)."""
        state = self.connections.pop(conn, None)
        if state is None:
            return []
        self._address_conns.release(state.address)
        return [] if state.room is None else self._detach(state)

    def flooded(self, conn: int) -> None:
        """The adapter dropped ``conn`` for sending frames far over its rate: its address loses handshakes."""
        state = self.connections.get(conn)
        if state is not None:
            self.counters["connections_dropped_flood"] += 1
            self._handshake_rate.penalize(state.address, FLOOD_PENALTY, self._clock())

    def condemn(self, conn: int, code: int, reason: str, *, abrupt: bool = False) -> list[Action]:
        """Close ``conn``: the one :class:`Close` for it the first time, nothing ever after. Its messages are
        ignored from now on; it stays charged (and in its room) until :meth:`disconnect`."""
        state = self.connections.get(conn)
        if state is None or state.condemned:
            return []
        state.condemned = True
        return [Close(conn, code, reason, abrupt)]

    def is_condemned(self, conn: int) -> bool:
        state = self.connections.get(conn)
        return state is None or state.condemned

    def receive(self, conn: int, raw: str | bytes) -> list[Action]:
        """One WebSocket message from ``conn``. Never raises on any input."""
        state = self.connections.get(conn)
        if state is None or state.condemned:
            return []
        size = len(raw.encode("utf-8", "surrogatepass")) if isinstance(raw, str) else len(raw)
        now = self._clock()
        if not state.bucket.take(now):
            state.strikes += 1
            self.errors[ErrorCode.RATE_LIMITED] += 1
            if state.strikes >= self.limits.rate_limit_strikes:
                self.counters["connections_closed_rate_limit"] += 1
                self._handshake_rate.penalize(state.address, FLOOD_PENALTY, now)
                return self.condemn(conn, p.CLOSE_RATE_LIMIT, "rate limit exceeded", abrupt=True)
            if state.strikes == 1:  # one error per run of refused messages: no amplification
                reason = (f"more than {self.limits.messages_per_second:g} messages per second"
                          f" (burst {self.limits.message_burst}); message dropped")
                return [self._error(conn, ErrorCode.RATE_LIMITED, reason)]
            return []
        state.strikes = 0
        self.counters["messages_received"] += 1
        if size > self.limits.max_message_bytes:
            reason = f"message of {size} bytes is over the limit of {self.limits.max_message_bytes} bytes"
            return [self._error(conn, ErrorCode.MESSAGE_TOO_LARGE, reason)]
        message = parse_client_message(raw)
        if isinstance(message, BadMessage):
            return [self._error(conn, ErrorCode.BAD_MESSAGE, message.reason, message.msg_id)]
        if isinstance(message, p.Relay):
            return self._relay(state, message)
        if isinstance(message, p.Join):
            return self._join(state, message, now)
        if isinstance(message, p.Allocate):
            return self._allocate(state, message, now)
        if isinstance(message, p.Leave):
            return self._leave(state, message)
        if isinstance(message, p.CloseRoom):
            return self._close_room(state, message)
        return [Send(conn, p.encode(p.Pong(id=message.id)))]

    def expire(self) -> list[Action]:
        """Close every room whose TTL has run out and every connection that stayed outside a room for the join
        deadline; prune idle join-rate buckets. Call about once a second."""
        now = self._clock()
        actions: list[Action] = self._expire_outsiders(now)
        while self._expiry and self._expiry[0][0] <= now:
            _, generation, name = heappop(self._expiry)
            room = self.rooms.get(name)
            if room is None or room.generation != generation:
                continue
            self.counters["rooms_expired"] += 1
            actions.extend(self._shut(room, reason="expired", by=None))
        if len(self._expiry) > 4 * len(self.rooms) + 1024:  # drop entries of rooms that closed early
            self._expiry = [(r.expires_at, r.generation, r.name) for r in self.rooms.values()]
            heapify(self._expiry)
        for rate in (self._join_rate, self._handshake_rate):
            if len(rate) > 1024 or not self.connections:
                rate.prune(now)
        return actions

    def _expire_outsiders(self, now: float) -> list[Action]:
        actions: list[Action] = []
        deadline = self.limits.join_deadline
        while self._outside and self._outside[0][0] + deadline <= now:
            since, conn = self._outside.popleft()
            state = self.connections.get(conn)
            if state is None or state.condemned or state.room is not None or state.outside_since != since:
                continue  # gone, closing, in a room, or left a room later (a later entry stands for it)
            self.counters["connections_closed_idle"] += 1
            reason = f"no room joined within {deadline:g} s"
            actions.append(self._error(conn, ErrorCode.JOIN_TIMEOUT, reason, fatal=True))
            actions.extend(self.condemn(conn, p.CLOSE_JOIN_TIMEOUT, "no room joined"))
        return actions

    # ---- metrics -----------------------------------------------------------------------------------------

    def metrics(self) -> str:
        """Prometheus text exposition: counts only, never addresses, room names or peer ids."""
        return render_metrics(len(self.connections), len(self.rooms), self.counters, self.errors)

    # ---- message handlers --------------------------------------------------------------------------------

    def _relay(self, state: ConnectionState, message: p.Relay) -> list[Action]:
        room = state.room
        if room is None:
            return [self._error(state.conn, ErrorCode.NOT_IN_ROOM, "join a room before relaying", message.id)]
        target = room.members.get(message.to)
        if target is None or message.to == state.peer_id:
            return [self._error(state.conn, ErrorCode.NO_SUCH_PEER,
                                f"no other member {message.to!r} in this room", message.id)]
        self.counters["messages_relayed"] += 1
        text = json.dumps({"type": "relay", "from": state.peer_id, "data": message.data},
                          separators=(",", ":"), ensure_ascii=False)
        return [Send(target, text)]

    def _check_join_rate(self, state: ConnectionState, msg_id: p.MessageId | None, now: float) -> Action | None:
        if self._join_rate.take(state.address, now):
            return None
        return self._error(state.conn, ErrorCode.JOIN_RATE_LIMITED,
                           f"more than {self.limits.joins_per_minute} joins per minute from your address", msg_id)

    def _capacity(self, state: ConnectionState, requested: int | None,
                  msg_id: p.MessageId | None) -> int | Action:
        if requested is None:
            return self.limits.room_capacity
        if not 1 <= requested <= self.limits.max_room_capacity:
            return self._error(state.conn, ErrorCode.BAD_CAPACITY,
                               f"capacity must be between 1 and {self.limits.max_room_capacity}", msg_id)
        return requested

    def _admit(self, state: ConnectionState, message: p.Join | p.Allocate, verb: str, now: float) -> int | Action:
        """The checks a join and an allocation share: not already in a room, a valid capacity, the join rate.
        Returns the room capacity to use, or the error to send."""
        if state.room is not None:
            return self._error(state.conn, ErrorCode.ALREADY_IN_ROOM,
                               f"leave your room before {verb} another", message.id)
        capacity = self._capacity(state, message.capacity, message.id)
        if not isinstance(capacity, int):
            return capacity
        refused = self._check_join_rate(state, message.id, now)
        return refused if refused is not None else capacity

    def _join(self, state: ConnectionState, message: p.Join, now: float) -> list[Action]:
        capacity = self._admit(state, message, "joining", now)
        if not isinstance(capacity, int):
            return [capacity]
        room = self.rooms.get(message.room)
        created = False
        if room is None:
            if not message.create:
                return [self._error(state.conn, ErrorCode.NO_SUCH_ROOM,
                                    f"no room named {message.room!r}", message.id)]
            refused = self._check_room_quota(state, message.id)
            if refused is not None:
                return [refused]
            room = self._create(message.room, capacity, now, state.address)
            created = True
        elif len(room.members) >= room.capacity:
            return [self._error(state.conn, ErrorCode.ROOM_FULL,
                                f"room {message.room!r} already has {room.capacity} members", message.id)]
        return self._attach(state, room, message.id, created, now)

    def _allocate(self, state: ConnectionState, message: p.Allocate, now: float) -> list[Action]:
        capacity = self._admit(state, message, "allocating", now)
        if not isinstance(capacity, int):
            return [capacity]
        refused = self._check_room_quota(state, message.id)
        if refused is not None:
            return [refused]
        name = self._free_nameplate()
        if name is None:
            return [self._error(state.conn, ErrorCode.NO_FREE_NAMEPLATE, "no free nameplate", message.id)]
        return self._attach(state, self._create(name, capacity, now, state.address), message.id, True, now)

    def _leave(self, state: ConnectionState, message: p.Leave) -> list[Action]:
        room = state.room
        if room is None:
            return [self._error(state.conn, ErrorCode.NOT_IN_ROOM, "you are not in a room", message.id)]
        actions = self._detach(state)
        actions.append(Send(state.conn, p.encode(p.Left(id=message.id, room=room.name))))
        return actions

    def _close_room(self, state: ConnectionState, message: p.CloseRoom) -> list[Action]:
        room = state.room
        if room is None:
            return [self._error(state.conn, ErrorCode.NOT_IN_ROOM, "you are not in a room", message.id)]
        self.counters["rooms_closed"] += 1
        return self._shut(room, reason="closed", by=state.peer_id)

    # ---- helpers -----------------------------------------------------------------------------------------

    def _create(self, name: str, capacity: int, now: float, owner: str) -> Room:
        self._generation += 1
        room = Room(name, capacity, now + self.limits.room_ttl, generation=self._generation, owner=owner)
        self._address_rooms.take(owner)  # checked by _check_room_quota
        self.rooms[name] = room
        heappush(self._expiry, (room.expires_at, room.generation, name))
        self.counters["rooms_created"] += 1
        return room

    def _attach(self, state: ConnectionState, room: Room, msg_id: p.MessageId | None, created: bool,
                now: float) -> list[Action]:
        peer_id = secrets.token_hex(4)
        while peer_id in room.members:  # pragma: no cover - 2**-32 collision
            peer_id = secrets.token_hex(4)
        others = list(room.members.items())
        room.members[peer_id] = state.conn
        state.room, state.peer_id = room, peer_id
        if len(room.members) == 2:
            self.counters["pairings"] += 1
        joined = p.Joined(id=msg_id, room=room.name, peer_id=peer_id, peers=[pid for pid, _ in others],
                          capacity=room.capacity, expires_in=round(max(0.0, room.expires_at - now), 3),
                          created=created)
        notice = p.encode(p.PeerJoined(room=room.name, peer_id=peer_id))
        return [Send(state.conn, p.encode(joined)), *(Send(conn, notice) for _, conn in others)]

    def _detach(self, state: ConnectionState) -> list[Action]:
        room, peer_id = state.room, state.peer_id
        assert room is not None
        room.members.pop(peer_id, None)
        self._outside_room(state)
        if not room.members:
            self._drop(room)
            return []
        notice = p.encode(p.PeerLeft(room=room.name, peer_id=peer_id))
        return [Send(conn, notice) for conn in room.members.values()]

    def _shut(self, room: Room, *, reason: str, by: str | None) -> list[Action]:
        notice = p.encode(p.RoomClosed(room=room.name, reason=reason, by=by))  # type: ignore[arg-type]
        actions: list[Action] = []
        for conn in room.members.values():
            member = self.connections.get(conn)
            if member is not None:
                self._outside_room(member)
            actions.append(Send(conn, notice))
        room.members.clear()
        self._drop(room)
        return actions

    def _outside_room(self, state: ConnectionState) -> None:
        state.room, state.peer_id = None, ""
        state.outside_since = self._clock()
        self._outside.append((state.outside_since, state.conn))

    def _drop(self, room: Room) -> None:
        if self.rooms.get(room.name) is room:
            del self.rooms[room.name]
            self._address_rooms.release(room.owner)

    def _free_nameplate(self) -> str | None:
        for digits in range(1, self.limits.max_nameplate_digits + 1):
            low, high = (1 if digits == 1 else 10 ** (digits - 1)), 10**digits - 1
            for _ in range(8):
                name = str(self._rng.randint(low, high))
                if name not in self.rooms:
                    return name
            if high - low < 1000:  # small ranges: do not skip a free name because random picks missed it
                free = [str(n) for n in range(low, high + 1) if str(n) not in self.rooms]
                if free:
                    return self._rng.choice(free)
        return None

    def _check_room_quota(self, state: ConnectionState, msg_id: p.MessageId | None) -> Action | None:
        if len(self.rooms) >= self.limits.max_rooms:
            reason = f"the server holds its maximum of {self.limits.max_rooms} rooms; try later"
        elif self._address_rooms.held(state.address) >= self._address_rooms.limit:
            reason = f"your address holds its maximum of {self._address_rooms.limit} open rooms"
        else:
            return None
        return self._error(state.conn, ErrorCode.TOO_MANY_ROOMS, reason, msg_id)

    def _refuse(self, conn: int, code: ErrorCode, reason: str, close_code: int, close_reason: str) -> ConnectResult:
        return ConnectResult(conn, False, [self._error(conn, code, reason, fatal=True),
                                           Close(conn, close_code, close_reason)])

    def _error(self, conn: int, code: ErrorCode, reason: str, msg_id: p.MessageId | None = None, *,
               fatal: bool = False) -> Send:
        self.errors[code] += 1
        return Send(conn, p.encode(p.Error(id=msg_id, code=code, reason=reason, fatal=fatal)))


__all__ = ["Action", "Close", "ConnectResult", "Registry", "Send", "ServerLimits", "TokenBucket"]  # re-exported
