"""Test double: a malicious signaling server.

It sits between the clients and the real server (a WebSocket proxy that speaks the same protocol), passes the
server's messages through, and rewrites what the peers relay to each other:

* ``flip``: flips one bit in every sealed message,
* ``swap``: replaces the sealed offer with one sealed under a key of its own (a different SDP),
* ``replay``: delivers every sealed message twice,
* ``mitm``: runs its own CPace with each peer using a guessed code, trying to sit between them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal

from websockets.asyncio.client import ClientConnection, connect
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.typing import Subprotocol

from p2pd.pairing.codes import parse_code
from p2pd.pairing.machine import Pairing
from p2pd.pairing.seal import Sealer, b64decode, b64encode, derive_keys
from signaling.protocol import SUBPROTOCOL

Mode = Literal["flip", "swap", "replay", "mitm"]


@dataclass
class Link:
    client: ServerConnection
    upstream: ClientConnection
    room: str = ""
    peer_id: str = ""


@dataclass
class HostileRelay:
    upstream_url: str
    mode: Mode
    guess: str = "1-wrong-guess"
    links: list[Link] = field(default_factory=list)
    tampered: int = 0
    fake_sender: Pairing | None = None
    fake_receiver: Pairing | None = None
    victim_receiver: Link | None = None

    async def _handle(self, client: ServerConnection) -> None:
        async with connect(self.upstream_url, subprotocols=[Subprotocol(SUBPROTOCOL)]) as upstream:
            link = Link(client, upstream)
            self.links.append(link)

            async def down() -> None:
                async for raw in upstream:
                    await self._down(link, json.loads(raw))

            async def up() -> None:
                async for raw in client:
                    await self._up(link, json.loads(raw))

            tasks = [asyncio.create_task(down()), asyncio.create_task(up())]
            with contextlib.suppress(ConnectionClosed):
                await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in tasks:
                task.cancel()

    async def _send_down(self, link: Link, message: dict[str, Any]) -> None:
        await link.client.send(json.dumps(message))

    async def _send_up(self, link: Link, message: dict[str, Any]) -> None:
        await link.upstream.send(json.dumps(message))

    async def _down(self, link: Link, message: dict[str, Any]) -> None:
        """A message from the server to ``link``'s client."""
        if message.get("type") == "joined":
            link.room, link.peer_id = message["room"], message["peer_id"]
        data = message.get("data")
        if message.get("type") != "relay" or not isinstance(data, dict):
            await self._send_down(link, message)
            return
        kind = data.get("kind")
        if kind == "sealed" and self.mode == "flip":
            box = bytearray(b64decode(data["box"], what="box"))
            box[len(box) // 2] ^= 0x01
            message = {**message, "data": {**data, "box": b64encode(bytes(box))}}
            self.tampered += 1
        elif kind == "sealed" and self.mode == "swap" and data.get("seq") == 0:
            forged = Sealer(derive_keys(b"\x42" * 64, link.room), link.room, "sender")
            message = {**message, "data": forged.seal({"type": "offer", "sdp": "v=0 attacker's fingerprint"})}
            self.tampered += 1
        elif kind == "sealed" and self.mode == "replay":
            await self._send_down(link, message)
            self.tampered += 1
        elif self.mode == "mitm" and kind == "pake" and data.get("role") == "sender":
            # The real sender's first message to the receiver: answer it ourselves as a fake receiver, and
            # start our own exchange with the real receiver as a fake sender.
            guess = parse_code(self.guess)
            self.fake_receiver = Pairing(guess, "receiver", room=link.room)
            step = self.fake_receiver.receive(data)
            for out in step.send:
                await self._send_up(link, {"type": "relay", "to": message["from"], "data": out})
            self.victim_receiver = link
            self.fake_sender = Pairing(guess, "sender", room=link.room)
            for out in self.fake_sender.start():
                await self._send_down(link, {**message, "data": out})
            self.tampered += 1
            return
        elif self.mode == "mitm" and kind == "confirm" and link is self.victim_receiver:
            if self.fake_receiver is not None:  # the real sender's confirmation ends our fake receiver's run
                self.fake_receiver.receive(data)
            return
        await self._send_down(link, message)

    async def _up(self, link: Link, message: dict[str, Any]) -> None:
        """A message from ``link``'s client to the server."""
        data = message.get("data")
        if (self.mode == "mitm" and message.get("type") == "relay" and isinstance(data, dict)
                and data.get("kind") == "pake" and data.get("role") == "receiver" and self.fake_sender is not None):
            step = self.fake_sender.receive(data)  # the real receiver answering our fake sender
            for out in step.send:
                await self._send_down(link, {"type": "relay", "from": message["to"], "data": out})
            return
        await self._send_up(link, message)


@contextlib.asynccontextmanager
async def hostile_relay(upstream_url: str, mode: Mode, guess: str = "1-wrong-guess") -> AsyncIterator[
        tuple[str, HostileRelay]]:
    relay = HostileRelay(upstream_url, mode, guess)
    async with serve(relay._handle, "127.0.0.1", 0, subprotocols=[Subprotocol(SUBPROTOCOL)]) as server:
        port = server.sockets[0].getsockname()[1]
        yield f"ws://127.0.0.1:{port}/", relay
