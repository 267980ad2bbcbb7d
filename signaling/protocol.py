"""Wire protocol of the p2pd signaling server (``p2pd-signal.v1``): JSON text messages with a ``type``.

See PROTOCOL.md beside this file for the prose version. Client messages are validated with pydantic
(unknown fields and unknown types are refused); server messages are plain models serialized to JSON.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, JsonValue, TypeAdapter

SUBPROTOCOL = "p2pd-signal.v1"

ROOM_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
PEER_ID_PATTERN = r"^[a-f0-9]{1,32}$"
MessageId = Annotated[int | str, Field(union_mode="left_to_right")]
RoomName = Annotated[str, Field(pattern=ROOM_NAME_PATTERN)]
PeerId = Annotated[str, Field(pattern=PEER_ID_PATTERN)]


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


class _Message(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# ---- client → server -------------------------------------------------------------------------------------


class Allocate(_Message):
    """Create a room with a fresh numeric name (a nameplate) and join it."""

    type: Literal["allocate"]
    id: MessageId | None = None
    capacity: int | None = None


class Join(_Message):
    """Join the room ``room``; with ``create`` the room is created when missing."""

    type: Literal["join"]
    id: MessageId | None = None
    room: RoomName
    create: bool = False
    capacity: int | None = None


class Relay(_Message):
    """Forward ``data`` (any JSON value, opaque to the server) to the member ``to`` of the same room."""

    type: Literal["relay"]
    id: MessageId | None = None
    to: PeerId
    data: JsonValue


class Leave(_Message):
    type: Literal["leave"]
    id: MessageId | None = None


class CloseRoom(_Message):
    """Close the room for every member."""

    type: Literal["close_room"]
    id: MessageId | None = None


class Ping(_Message):
    type: Literal["ping"]
    id: MessageId | None = None


ClientMessage = Annotated[Allocate | Join | Relay | Leave | CloseRoom | Ping, Field(discriminator="type")]
CLIENT_MESSAGE: TypeAdapter[Allocate | Join | Relay | Leave | CloseRoom | Ping] = TypeAdapter(ClientMessage)


# ---- server → client -------------------------------------------------------------------------------------


class Limits(_Message):
    max_message_bytes: int
    messages_per_second: float
    message_burst: int
    joins_per_minute: int
    room_capacity: int
    max_room_capacity: int
    room_ttl: float


class Welcome(_Message):
    type: Literal["welcome"] = "welcome"
    protocol: str = SUBPROTOCOL
    server: str
    limits: Limits


class Joined(_Message):
    type: Literal["joined"] = "joined"
    id: MessageId | None = None
    room: str
    peer_id: str
    peers: list[str]
    capacity: int
    expires_in: float
    created: bool


class PeerJoined(_Message):
    type: Literal["peer_joined"] = "peer_joined"
    room: str
    peer_id: str


class PeerLeft(_Message):
    type: Literal["peer_left"] = "peer_left"
    room: str
    peer_id: str


class Relayed(_Message):
    type: Literal["relay"] = "relay"
    # ``from`` is a Python keyword: the field is ``sender`` in Python and ``from`` on the wire.
    sender: str = Field(validation_alias=AliasChoices("from", "sender"), serialization_alias="from")
    data: Any


class Left(_Message):
    type: Literal["left"] = "left"
    id: MessageId | None = None
    room: str


class RoomClosed(_Message):
    type: Literal["room_closed"] = "room_closed"
    room: str
    reason: Literal["closed", "expired"]
    by: str | None = None


class Pong(_Message):
    type: Literal["pong"] = "pong"
    id: MessageId | None = None


class IceServer(_Message):
    """One STUN or TURN server (the shape of WebRTC's ``RTCIceServer``); TURN entries carry credentials."""

    urls: list[str]
    username: str | None = None
    credential: str | None = None


class IceServers(_Message):
    """Sent once after each ``joined``: the servers to use, TURN credentials valid for ``expires_in`` s."""

    type: Literal["ice_servers"] = "ice_servers"
    ice_servers: list[IceServer]
    expires_in: float


class Error(_Message):
    type: Literal["error"] = "error"
    id: MessageId | None = None
    code: ErrorCode
    reason: str
    fatal: bool = False


ServerMessage = Annotated[Welcome | Joined | PeerJoined | PeerLeft | Relayed | Left | RoomClosed | Pong | IceServers
                          | Error, Field(discriminator="type")]
SERVER_MESSAGE: TypeAdapter[Welcome | Joined | PeerJoined | PeerLeft | Relayed | Left | RoomClosed | Pong | IceServers
                            | Error] = TypeAdapter(ServerMessage)
SERVER_MESSAGE_TYPES = frozenset({"welcome", "joined", "peer_joined", "peer_left", "relay", "left", "room_closed",
                                  "pong", "ice_servers", "error"})


def encode(message: BaseModel) -> str:
    """Serialize a server message (``None`` fields are omitted)."""
    return message.model_dump_json(by_alias=True, exclude_none=True)


def parse_server_message(raw: str | bytes) -> dict[str, Any]:
    """Client-side helper: decode a server message to a dict with at least a string ``type``."""
    import json

    value = json.loads(raw)
    if not isinstance(value, dict) or not isinstance(value.get("type"), str):
        raise ValueError("a server message is a JSON object with a string 'type'")
    return value
