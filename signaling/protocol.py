"""Wire protocol of the p2pd signaling server (``p2pd-signal.v1``): JSON text messages with a ``type``.

See PROTOCOL.md beside this file for the prose version. One definition for the server and the client: msgspec
structs, tagged by ``type``. Decoding validates (:data:`CLIENT_MESSAGE` on the server, :data:`SERVER_MESSAGE`
in the client): unknown fields and unknown types are refused, field types are strict (no ``"3"`` for ``3``),
room names and peer ids must match their patterns. :func:`encode` writes compact JSON, ``type`` first, fields
in the order below, ``None`` fields left out.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal

import msgspec

SUBPROTOCOL = "p2pd-signal.v1"

ROOM_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
PEER_ID_PATTERN = r"^[a-f0-9]{1,32}$"
# msgspec checks patterns with Python's ``re.search``, where ``$`` also matches before a final newline: ``\Z``
# is the end of the text, as ``$`` is in the patterns above (and in JavaScript).
RoomName = Annotated[str, msgspec.Meta(pattern=ROOM_NAME_PATTERN[:-1] + r"\Z")]
PeerId = Annotated[str, msgspec.Meta(pattern=PEER_ID_PATTERN[:-1] + r"\Z")]
MessageId = int | str


class ErrorCode(StrEnum):
    """Error codes the server sends in ``error`` messages (and closes with, when fatal)."""

    BAD_MESSAGE = "bad-message"  # not JSON, unknown type, missing/extra/invalid fields
    MESSAGE_TOO_LARGE = "message-too-large"
    RATE_LIMITED = "rate-limited"  # messages per second per connection
    JOIN_RATE_LIMITED = "join-rate-limited"  # joins/allocations per minute per client address
    TOO_MANY_ROOMS = "too-many-rooms"
    SERVER_FULL = "server-full"  # total connections (fatal)
    TOO_MANY_CONNECTIONS = "too-many-connections"  # connections from one client address (fatal)
    JOIN_TIMEOUT = "join-timeout"  # no room joined within the deadline (fatal)
    ROOM_FULL = "room-full"
    NO_SUCH_ROOM = "no-such-room"
    BAD_CAPACITY = "bad-capacity"
    ALREADY_IN_ROOM = "already-in-room"
    NOT_IN_ROOM = "not-in-room"
    NO_SUCH_PEER = "no-such-peer"
    NO_FREE_NAMEPLATE = "no-free-nameplate"


# WebSocket close codes used by the server (4000–4999 are for applications).
CLOSE_SERVER_FULL = 4001
CLOSE_RATE_LIMIT = 4002
CLOSE_SLOW_CONSUMER = 4003
CLOSE_ADDRESS_FULL = 4004
CLOSE_JOIN_TIMEOUT = 4005


def _always_sent(value: Any) -> Any:
    """A default that is still written: ``omit_defaults`` leaves out a field equal to its plain default (every
    ``None`` here) but never one made by a factory other than an empty collection's."""
    return msgspec.field(default_factory=lambda: value)


class _Message(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True, tag_field="type"):
    pass


# ---- client → server -------------------------------------------------------------------------------------


class Allocate(_Message, tag="allocate", kw_only=True, frozen=True):
    """Create a room with a fresh numeric name (a nameplate) and join it."""

    id: MessageId | None = None
    capacity: int | None = None


class Join(_Message, tag="join", kw_only=True, frozen=True):
    """Join the room ``room``; with ``create`` the room is created when missing."""

    id: MessageId | None = None
    room: RoomName
    create: bool = _always_sent(False)
    capacity: int | None = None


class Relay(_Message, tag="relay", kw_only=True, frozen=True):
    """Forward ``data`` (any JSON value, opaque to the server) to the member ``to`` of the same room."""

    id: MessageId | None = None
    to: PeerId
    data: Any


class Leave(_Message, tag="leave", kw_only=True, frozen=True):
    id: MessageId | None = None


class CloseRoom(_Message, tag="close_room", kw_only=True, frozen=True):
    """Close the room for every member."""

    id: MessageId | None = None


class Ping(_Message, tag="ping", kw_only=True, frozen=True):
    id: MessageId | None = None


ClientMessage = Allocate | Join | Relay | Leave | CloseRoom | Ping
CLIENT_MESSAGE: msgspec.json.Decoder[ClientMessage] = msgspec.json.Decoder(ClientMessage)


# ---- server → client -------------------------------------------------------------------------------------


class Limits(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    max_message_bytes: int
    messages_per_second: float
    message_burst: int
    joins_per_minute: int
    room_capacity: int
    max_room_capacity: int
    room_ttl: float


class Welcome(_Message, tag="welcome", kw_only=True, frozen=True):
    protocol: str = _always_sent(SUBPROTOCOL)
    server: str
    limits: Limits


class Joined(_Message, tag="joined", kw_only=True, frozen=True):
    id: MessageId | None = None
    room: str
    peer_id: str
    peers: list[str]
    capacity: int
    expires_in: float
    created: bool


class PeerJoined(_Message, tag="peer_joined", kw_only=True, frozen=True):
    room: str
    peer_id: str


class PeerLeft(_Message, tag="peer_left", kw_only=True, frozen=True):
    room: str
    peer_id: str


class Relayed(_Message, tag="relay", kw_only=True, frozen=True):
    # ``from`` is a Python keyword: the field is ``sender`` in Python and ``from`` on the wire.
    sender: str = msgspec.field(name="from")
    data: Any


class Left(_Message, tag="left", kw_only=True, frozen=True):
    id: MessageId | None = None
    room: str


class RoomClosed(_Message, tag="room_closed", kw_only=True, frozen=True):
    room: str
    reason: Literal["closed", "expired"]
    by: str | None = None


class Pong(_Message, tag="pong", kw_only=True, frozen=True):
    id: MessageId | None = None


class IceServer(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    """One STUN or TURN server (the shape of WebRTC's ``RTCIceServer``); TURN entries carry credentials."""

    urls: list[str]
    username: str | None = None
    credential: str | None = None


class IceServers(_Message, tag="ice_servers", kw_only=True, frozen=True):
    """Sent once after each ``joined``: the servers to use, TURN credentials valid for ``expires_in`` s."""

    ice_servers: list[IceServer]
    expires_in: float


class Error(_Message, tag="error", kw_only=True, frozen=True):
    id: MessageId | None = None
    code: ErrorCode
    reason: str
    fatal: bool = _always_sent(False)


ServerMessage = Welcome | Joined | PeerJoined | PeerLeft | Relayed | Left | RoomClosed | Pong | IceServers | Error
SERVER_MESSAGE: msgspec.json.Decoder[ServerMessage] = msgspec.json.Decoder(ServerMessage)
SERVER_MESSAGE_TYPES = frozenset({"welcome", "joined", "peer_joined", "peer_left", "relay", "left", "room_closed",
                                  "pong", "ice_servers", "error"})

_ENCODER = msgspec.json.Encoder()


def encode(message: msgspec.Struct) -> str:
    """Serialize a message (``None`` fields are omitted)."""
    return _ENCODER.encode(message).decode()
