"""The asyncio client: parsing the server's messages into protocol.py's models, the failure each server behaviour
means, and the client against small in-process fake servers (a misbehaving server the real one cannot play)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.frames import Close
from websockets.typing import Subprotocol

from p2pd.errors import Cause, NoPeerError, NotFoundError, PeerGoneError, PeerTimeoutError, SignalingError
from p2pd.pairing.client import Rendezvous, closed_error, join_error, parse_server_message
from p2pd.pairing.codes import parse_code
from signaling.protocol import (
    CLOSE_RATE_LIMIT,
    CLOSE_SERVER_FULL,
    SUBPROTOCOL,
    Error,
    ErrorCode,
    Joined,
    Limits,
    PeerJoined,
    PeerLeft,
    Pong,
    Relayed,
    RoomClosed,
    Welcome,
    encode,
)
from tests.signal_process import ROOT

LIMITS = Limits(max_message_bytes=65536, messages_per_second=50, message_burst=100, joins_per_minute=30,
                room_capacity=2, max_room_capacity=4, room_ttl=600)
WELCOME = Welcome(server="fake", limits=LIMITS)


def joined(peers: list[str] | None = None) -> Joined:
    return Joined(id=1, room="7", peer_id="aa01", peers=peers or [], capacity=2, expires_in=600, created=True)


# ---- parsing ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("message", [
    WELCOME, joined(["bb02"]), PeerJoined(room="7", peer_id="bb02"), PeerLeft(room="7", peer_id="bb02"),
    Relayed(sender="bb02", data={"kind": "sealed", "seq": 0, "box": "AAAA"}), Pong(id=3),
    RoomClosed(room="7", reason="closed", by="bb02"), Error(id=1, code=ErrorCode.ROOM_FULL, reason="full"),
])
def test_every_server_message_parses_into_its_model(message: Any) -> None:
    raw = encode(message)
    assert parse_server_message(raw) == message
    assert parse_server_message(raw.encode()) == message  # binary frames hold UTF-8 JSON too


def test_relay_reads_from_off_the_wire() -> None:
    parsed = parse_server_message('{"type":"relay","from":"bb02","data":[1,null]}')
    assert isinstance(parsed, Relayed) and parsed.sender == "bb02" and parsed.data == [1, None]


def test_a_message_type_this_client_does_not_know_is_skipped() -> None:
    assert parse_server_message('{"type":"motd","text":"hello"}') is None


@pytest.mark.parametrize("raw", [
    "not json", b"\xff\xfe", "[1, 2]", '"joined"', "{}", '{"type": 7}',
    '{"type":"joined","room":"7"}',  # fields missing
    '{"type":"relay","data":1}',  # no sender
    '{"type":"error","code":"no-such-code","reason":"?"}',
    '{"type":"room_closed","room":"7","reason":"bored"}',
])
def test_a_malformed_server_message_is_a_lost_signaling_connection(raw: str | bytes) -> None:
    with pytest.raises(SignalingError) as caught:
        parse_server_message(raw)
    assert caught.value.cause is Cause.SIGNALING_LOST


def test_join_errors() -> None:
    code = parse_code("7-amber-river")
    missing = join_error(Error(code=ErrorCode.NO_SUCH_ROOM, reason="no such room"), code)
    assert type(missing) is NotFoundError and "nameplate 7" in str(missing) and "amber" not in str(missing)
    full = join_error(Error(code=ErrorCode.ROOM_FULL, reason="room 7 is full"), code)
    assert isinstance(full, SignalingError) and full.cause is Cause.SIGNALING_REFUSED
    assert full.peer_text == "room 7 is full" and full.details == {"code": "room-full"}
    other = join_error(Error(code=ErrorCode.JOIN_RATE_LIMITED, reason="too many joins \u202e"), None)
    assert isinstance(other, SignalingError) and other.cause is Cause.SIGNALING_REFUSED
    assert "\u202e" not in str(other) and other.peer_text == "too many joins \u202e"


@pytest.mark.parametrize(("close", "cause"), [
    (Close(CLOSE_SERVER_FULL, "server full"), Cause.SIGNALING_REFUSED),
    (Close(CLOSE_RATE_LIMIT, "rate limit"), Cause.SIGNALING_REFUSED),
    (Close(1001, "going away"), Cause.SIGNALING_LOST),
    (None, Cause.SIGNALING_LOST),
])
def test_a_closed_connection(close: Close | None, cause: Cause) -> None:
    error = closed_error(ConnectionClosed(close, None))
    assert isinstance(error, SignalingError) and error.cause is cause
    assert error.peer_text == (close.reason if close is not None else None)


def test_importing_the_package_or_the_codes_does_not_import_websockets() -> None:
    script = ("import sys, p2pd.pairing, p2pd.pairing.codes; assert 'websockets' not in sys.modules, 'imported'; "
              "from p2pd.pairing import Rendezvous; assert 'websockets' in sys.modules; print(Rendezvous.__name__)")
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Rendezvous"


# ---- against fake servers -----------------------------------------------------------------------------------

Handler = Callable[[ServerConnection], Awaitable[None]]


@contextlib.asynccontextmanager
async def fake_server(handler: Handler) -> AsyncIterator[str]:
    async def guarded(ws: ServerConnection) -> None:
        with contextlib.suppress(ConnectionClosed):
            await handler(ws)

    async with serve(guarded, "127.0.0.1", 0, subprotocols=[Subprotocol(SUBPROTOCOL)]) as server:
        yield f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}/"


async def welcome_then(ws: ServerConnection, *replies: Any) -> dict[str, Any]:
    """Welcome, read the join/allocate, send ``replies``; returns the client's request."""
    await ws.send(encode(WELCOME))
    request = json.loads(await ws.recv())
    for reply in replies:
        await ws.send(reply if isinstance(reply, str) else encode(reply))
    return request


async def test_the_client_sends_a_join_the_server_accepts() -> None:
    requests: list[dict[str, Any]] = []

    async def handler(ws: ServerConnection) -> None:
        requests.append(await welcome_then(ws, joined()))
        await ws.wait_closed()

    async with fake_server(handler) as url, await Rendezvous.open(url, role="sender", code="7-amber-river") as rv:
        assert rv.room == "7" and rv.peer_id == "aa01" and rv.peer is None and rv.role == "sender"
    assert requests == [{"type": "join", "id": 1, "room": "7", "create": True}]


async def test_another_protocol_version_is_refused() -> None:
    async def handler(ws: ServerConnection) -> None:
        await ws.send(encode(Welcome(protocol="p2pd-signal.v9", server="fake", limits=LIMITS)))
        await ws.wait_closed()

    async with fake_server(handler) as url:
        with pytest.raises(SignalingError) as caught:
            await Rendezvous.open(url, role="sender", connect_timeout=5)
    assert caught.value.cause is Cause.SIGNALING_REFUSED and caught.value.peer_text == "p2pd-signal.v9"


async def test_a_server_that_never_answers_the_join_is_unreachable() -> None:
    async def handler(ws: ServerConnection) -> None:
        await ws.send(encode(WELCOME))
        await ws.wait_closed()

    async with fake_server(handler) as url:
        with pytest.raises(SignalingError) as caught:
            await Rendezvous.open(url, role="sender", connect_timeout=0.5)
    assert caught.value.cause is Cause.SIGNALING_UNREACHABLE


async def test_a_server_full_close_during_the_join_is_refused() -> None:
    async def handler(ws: ServerConnection) -> None:
        await ws.close(CLOSE_SERVER_FULL, "server full")

    async with fake_server(handler) as url:
        with pytest.raises(SignalingError) as caught:
            await Rendezvous.open(url, role="sender", connect_timeout=5)
    assert caught.value.cause is Cause.SIGNALING_REFUSED and caught.value.peer_text == "server full"


@pytest.mark.parametrize(("after_join", "cause"), [
    ("close", Cause.SIGNALING_LOST),
    ("garbage", Cause.SIGNALING_LOST),
    ("refuse", Cause.SIGNALING_REFUSED),
    ("expire", Cause.SIGNALING_LOST),
])
async def test_server_trouble_while_waiting_for_the_peer(after_join: str, cause: Cause) -> None:
    async def handler(ws: ServerConnection) -> None:
        await welcome_then(ws, joined())
        await asyncio.sleep(0.05)
        if after_join == "close":
            await ws.close(1011, "bye")
            return
        await ws.send({"garbage": "{{{", "refuse": encode(Error(code=ErrorCode.RATE_LIMITED, reason="slow")),
                       "expire": encode(RoomClosed(room="7", reason="expired"))}[after_join])
        await ws.wait_closed()

    async with fake_server(handler) as url, await Rendezvous.open(url, role="sender", connect_timeout=5) as rv:
        with pytest.raises(SignalingError) as caught:
            await rv.pair(timeout=5)
        assert caught.value.cause is cause
        with pytest.raises(SignalingError):  # and it stays failed
            await rv.recv_sealed(timeout=1)


async def test_nobody_joining_is_no_peer_and_a_silent_peer_is_a_timeout() -> None:
    async def lonely(ws: ServerConnection) -> None:
        await welcome_then(ws, joined())
        await ws.wait_closed()

    async def silent_peer(ws: ServerConnection) -> None:
        await welcome_then(ws, joined(["bb02"]))  # a peer that never answers the PAKE
        await ws.wait_closed()

    async with fake_server(lonely) as url, await Rendezvous.open(url, role="sender", connect_timeout=5) as rv:
        with pytest.raises(NoPeerError) as no_peer:
            await rv.pair(timeout=0.3)
        assert no_peer.value.cause is Cause.NO_PEER
    async with fake_server(silent_peer) as url, await Rendezvous.open(url, role="sender", connect_timeout=5) as rv:
        with pytest.raises(PeerTimeoutError) as silent:
            await rv.pair(timeout=0.3)
        assert silent.value.cause is Cause.TIMEOUT


async def test_the_sender_relays_its_first_message_to_the_peer_that_joined() -> None:
    relayed: list[dict[str, Any]] = []

    async def handler(ws: ServerConnection) -> None:
        await welcome_then(ws, joined(), PeerJoined(room="7", peer_id="bb02"))
        relayed.append(json.loads(await ws.recv()))
        await ws.send(encode(PeerLeft(room="7", peer_id="bb02")))
        await ws.wait_closed()

    async with fake_server(handler) as url, await Rendezvous.open(url, role="sender", connect_timeout=5) as rv:
        with pytest.raises(PeerGoneError):
            await rv.pair(timeout=5)
    [message] = relayed
    assert message["type"] == "relay" and message["to"] == "bb02" and message["data"]["kind"] == "pake"
    assert set(message) == {"type", "to", "data"}
