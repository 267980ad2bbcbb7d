"""The asyncio client of the pairing: a WebSocket to ``p2pd-signal`` running :class:`~p2pd.pairing.machine.Session`.

This module only does I/O and time: it connects, joins or allocates the room, parses every server message into
the msgspec structs of ``signaling/protocol.py`` (:func:`parse_server_message`), feeds them to the pure session machine
and carries out the :class:`~p2pd.pairing.machine.Step` it returns (relay, deliver, report). Timeouts live here:
nobody joined in time → :class:`NoPeerError`; the peer did not finish the key exchange, or sent nothing in time
→ :class:`PeerTimeoutError`. Server trouble is a :class:`SignalingError` whose ``cause`` says unreachable, lost
or refused (the server's own words only in ``peer_text``).

    async with Rendezvous.connect(url, "7-guitar-meadow", role="receiver") as rv:
        offer = await rv.recv_sealed()
        await rv.send_sealed({"type": "answer", "sdp": "…"})

A sender that lets the server pick the nameplate learns the code before the peer joins:

    rv = await Rendezvous.open(url, role="sender")
    print(rv.code)          # tell the other side
    await rv.pair(timeout=120)
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator, Awaitable
from typing import Any, Literal

import msgspec
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI
from websockets.typing import Subprotocol

from p2pd.errors import Cause, NoPeerError, NotFoundError, P2pdError, PeerTimeoutError, SignalingError
from p2pd.pairing.codes import Code, generate_code, parse_code
from p2pd.pairing.machine import ServerEvent, Session, Step
from p2pd.pairing.seal import Role
from signaling.protocol import (
    CLOSE_RATE_LIMIT,
    CLOSE_SERVER_FULL,
    SERVER_MESSAGE,
    SERVER_MESSAGE_TYPES,
    SUBPROTOCOL,
    Allocate,
    Error,
    ErrorCode,
    IceServers,
    Join,
    Joined,
    Left,
    Pong,
    Relay,
    ServerMessage,
    Welcome,
    encode,
)

MAX_MESSAGE_BYTES = 1 << 20


def parse_server_message(raw: str | bytes) -> ServerMessage | None:
    """One server message as its model; ``None`` for a well-formed message of a type this client does not
    know (a newer server's). Anything else raises :class:`SignalingError` (cause ``SIGNALING_LOST``)."""
    try:
        envelope = _ENVELOPE.decode(raw)
        if envelope.type not in SERVER_MESSAGE_TYPES:
            return None
        return SERVER_MESSAGE.decode(raw)
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError, UnicodeError):
        raise _malformed() from None


class _Envelope(msgspec.Struct):
    """What every server message has: an object with a string ``type`` (other fields are skipped)."""

    type: str


_ENVELOPE = msgspec.json.Decoder(_Envelope)


def join_error(error: Error, code: Code | None) -> P2pdError:
    """The failure a refused ``join``/``allocate`` means."""
    plate = code.nameplate if code is not None else "?"
    if error.code is ErrorCode.NO_SUCH_ROOM:
        return NotFoundError(f"no one is waiting on nameplate {plate}: check the code, or start the other side first")
    if error.code is ErrorCode.ROOM_FULL:
        return SignalingError(f"nameplate {plate} is already in use by two peers", cause=Cause.SIGNALING_REFUSED,
                              peer_text=error.reason, details={"code": error.code.value})
    return SignalingError("the signaling server refused to pair", cause=Cause.SIGNALING_REFUSED,
                          peer_text=error.reason, details={"code": error.code.value})


def closed_error(exc: ConnectionClosed) -> SignalingError:
    """The failure a closed connection means: refused when the server closed for a limit, else lost."""
    frame = exc.rcvd
    peer_text = frame.reason if frame is not None and frame.reason else None
    if frame is not None and frame.code in (CLOSE_SERVER_FULL, CLOSE_RATE_LIMIT):
        return SignalingError("the signaling server refused the connection (over a limit)",
                              cause=Cause.SIGNALING_REFUSED, peer_text=peer_text)
    return SignalingError("lost the connection to the signaling server", cause=Cause.SIGNALING_LOST,
                          peer_text=peer_text)


def _malformed() -> SignalingError:
    return SignalingError("the signaling server sent a malformed message", cause=Cause.SIGNALING_LOST)


class Rendezvous:
    """A pairing over a live connection to the signaling server. Create with :meth:`open` or :meth:`connect`."""

    def __init__(self, ws: ClientConnection, *, url: str, code: Code, role: Role, joined: Joined) -> None:
        self.url = url
        self.code = code
        self.role: Role = role
        self.room = joined.room
        self.peer_id = joined.peer_id
        self._ws = ws
        self._session = Session(code, role, room=joined.room, peers=joined.peers)
        self._peer_present = asyncio.Event()
        if self._session.peer is not None:
            self._peer_present.set()
        self._paired = asyncio.Event()
        self._failed = asyncio.Event()
        self._inbox: asyncio.Queue[Any] = asyncio.Queue()
        # the STUN/TURN servers the server handed out after `joined` (RTCIceServer-shaped dicts; used by
        # p2pd/transfer/ice.py, merged with the local configuration)
        self.ice_servers: list[dict[str, Any]] = []
        self._reader = asyncio.get_running_loop().create_task(self._read_forever())

    # ---- construction ----------------------------------------------------------------------------------

    @classmethod
    async def open(cls, url: str, *, role: Role | Literal["auto"], code: Code | str | None = None,
                   create: bool = True, words: int = 2, connect_timeout: float = 10.0) -> Rendezvous:
        """Connect to the server and enter the room.

        ``code=None`` allocates a fresh nameplate (and words) on the server; ``rv.code`` is then the code to
        hand to the other side. With a code, either side may come first: the room is created when missing
        (``create``, default True), and the first to arrive waits in it for the other (:meth:`pair`'s timeout).
        ``create=False`` only joins, and a missing room raises :class:`NotFoundError`. ``role="auto"`` (peers
        that are alike, such as two paired daemons) makes the first in the room the PAKE initiator ("sender").
        """
        if role not in ("sender", "receiver", "auto"):
            raise ValueError(f"role must be 'sender', 'receiver' or 'auto', not {role!r}")
        parsed = parse_code(code) if isinstance(code, str) else code
        ws = await _connect(url, connect_timeout)
        try:
            request = Allocate(id=1) if parsed is None else Join(id=1, room=parsed.nameplate, create=create)
            joined = await _enter(ws, request, connect_timeout, parsed)
            if parsed is None:
                parsed = generate_code(joined.room, words=words)
            chosen: Role = role if role != "auto" else ("receiver" if joined.peers else "sender")
            return cls(ws, url=url, code=parsed, role=chosen, joined=joined)
        except BaseException:
            await ws.close()
            raise

    @classmethod
    @contextlib.asynccontextmanager
    async def connect(cls, url: str, code: Code | str | None, *, role: Role, create: bool = True,
                      peer_timeout: float = 60.0, connect_timeout: float = 10.0) -> AsyncIterator[Rendezvous]:
        """``open`` + ``pair`` as an async context manager that closes the connection on exit."""
        rv = await cls.open(url, role=role, code=code, create=create, connect_timeout=connect_timeout)
        try:
            await rv.pair(timeout=peer_timeout)
            yield rv
        finally:
            await rv.close()

    # ---- pairing and messages ------------------------------------------------------------------------------

    @property
    def peer(self) -> str | None:
        return self._session.peer

    @property
    def verification(self) -> str | None:
        """Short authentication string (``"042 917"``) both users may compare, once paired."""
        return self._session.pairing.verification

    @property
    def paired(self) -> bool:
        return self._session.paired

    @property
    def exporter(self) -> bytes:
        """A secret unique to this paired session, for protocols built on top (device proofs)."""
        keys = self._session.pairing.keys
        if keys is None or not self.paired:
            raise RuntimeError("pair() first")
        return keys.exporter

    async def pair(self, timeout: float = 60.0) -> str:
        """Wait for the peer, run the PAKE and key confirmation; returns the verification string.

        Raises :class:`NoPeerError` (nobody joined in time), :class:`PeerTimeoutError` (the peer did not finish
        the key exchange in time), :class:`WrongCodeError`, or the session's failure (see the module doc).
        """
        deadline = asyncio.get_running_loop().time() + timeout
        await self._carry_out(self._session.begin())
        if not await self._until(self._peer_present.wait(), deadline):
            raise NoPeerError(f"no peer joined within {timeout:g} s", details={"timeout": timeout})
        if not await self._until(self._paired.wait(), deadline):
            # A receiver waits for the sender to start the exchange: two receivers on one code wait for ever.
            hint = " (is the other side receiving too? one side sends)" if self.role == "receiver" else ""
            raise PeerTimeoutError(f"the peer did not complete the key exchange within {timeout:g} s{hint}",
                                   details={"timeout": timeout})
        verification = self.verification
        assert verification is not None
        return verification

    async def wait_peer(self) -> None:
        """Return once the other side is in the room (before the key exchange)."""
        await self._peer_present.wait()

    async def send_sealed(self, obj: Any) -> None:
        """Encrypt and authenticate ``obj`` (JSON-serializable) and relay it to the peer."""
        self._raise_if_failed()
        if not self.paired:
            raise RuntimeError("pair() first")
        await self._carry_out(Step(send=[self._session.seal(obj)]))

    async def recv_sealed(self, timeout: float | None = None) -> Any:
        """The peer's next sealed object, authenticated and in order."""
        if not self.paired and self._session.failure is None:
            raise RuntimeError("pair() first")
        try:
            item = await asyncio.wait_for(self._inbox.get(), timeout)
        except TimeoutError:
            raise PeerTimeoutError(f"no message from the peer within {timeout:g} s",
                                   details={"timeout": timeout}) from None
        if isinstance(item, P2pdError):
            self._inbox.put_nowait(item)  # every later call fails the same way
            raise item
        return item

    async def close(self) -> None:
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._reader
        await self._ws.close()

    async def __aenter__(self) -> Rendezvous:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ---- internals -----------------------------------------------------------------------------------------

    async def _until(self, awaitable: Awaitable[Any], deadline: float) -> bool:
        """Await ``awaitable`` until ``deadline`` (False when it passed); the session's failure, as soon as there
        is one, is raised instead (what already happened counts: a pairing that completed before the peer left
        is still paired)."""
        task = asyncio.ensure_future(awaitable)
        failed = asyncio.ensure_future(self._failed.wait())
        try:
            remaining = max(0.0, deadline - asyncio.get_running_loop().time())
            done, _ = await asyncio.wait({task, failed}, timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
            if task in done:
                return True
            self._raise_if_failed()
            return False
        finally:
            for pending in (task, failed):
                pending.cancel()

    def _raise_if_failed(self) -> None:
        if self._session.failure is not None:
            raise self._session.failure

    def _fail(self, error: P2pdError) -> None:
        if self._session.fail(error):
            self._report_failure()

    def _report_failure(self) -> None:
        assert self._session.failure is not None
        self._failed.set()
        self._inbox.put_nowait(self._session.failure)

    async def _carry_out(self, step: Step) -> None:
        """Do what the machine asked: relay, deliver, report — in that order."""
        peer = self._session.peer
        for data in step.send:
            assert peer is not None  # the machine only sends once the peer is known
            try:
                await self._ws.send(encode(Relay(to=peer, data=data)))
            except ConnectionClosed as exc:
                self._fail(closed_error(exc))
                self._raise_if_failed()
        for item in step.delivered:
            self._inbox.put_nowait(item)
        if step.peer_present:
            self._peer_present.set()
        if step.paired:
            self._paired.set()
        if step.error is not None:
            self._report_failure()

    async def _read_forever(self) -> None:
        try:
            async for raw in self._ws:
                message = parse_server_message(raw)
                if message is None or isinstance(message, Welcome | Joined | Left | Pong):
                    continue
                if isinstance(message, IceServers):
                    self.ice_servers = [msgspec.to_builtins(s) for s in message.ice_servers]
                    continue
                event: ServerEvent = message
                await self._carry_out(self._session.receive(event))
            self._fail(SignalingError("the signaling server closed the connection", cause=Cause.SIGNALING_LOST))
        except ConnectionClosed as exc:
            self._fail(closed_error(exc))
        except P2pdError as exc:
            self._fail(exc)


async def _connect(url: str, timeout: float) -> ClientConnection:
    try:
        return await asyncio.wait_for(
            ws_connect(url, subprotocols=[Subprotocol(SUBPROTOCOL)], compression=None, open_timeout=None,
                       max_size=MAX_MESSAGE_BYTES),
            timeout,
        )
    except TimeoutError:
        raise SignalingError(f"signaling server unreachable at {url}: no answer within {timeout:g} s",
                             cause=Cause.SIGNALING_UNREACHABLE) from None
    except ssl.SSLCertVerificationError as exc:
        raise SignalingError(f"signaling server unreachable at {url}: its TLS certificate is not trusted "
                             f"({exc.verify_message}); for a self-signed certificate or a private CA, point "
                             "SSL_CERT_FILE at it (PEM)", cause=Cause.SIGNALING_UNREACHABLE) from None
    except (OSError, InvalidHandshake, InvalidURI) as exc:
        raise SignalingError(f"signaling server unreachable at {url}: {exc}",
                             cause=Cause.SIGNALING_UNREACHABLE) from None


async def _enter(ws: ClientConnection, request: Allocate | Join, timeout: float, code: Code | None) -> Joined:
    """Send a join/allocate and return the ``joined`` reply (after checking the server's welcome)."""
    try:
        async with asyncio.timeout(timeout):
            await ws.send(encode(request))
            while True:
                reply = parse_server_message(await ws.recv())
                if isinstance(reply, Welcome) and reply.protocol != SUBPROTOCOL:
                    raise SignalingError("the signaling server speaks another protocol version",
                                         cause=Cause.SIGNALING_REFUSED, peer_text=reply.protocol)
                if isinstance(reply, Joined):
                    return reply
                if isinstance(reply, Error):
                    raise join_error(reply, code)
    except TimeoutError:
        raise SignalingError(f"the signaling server did not answer within {timeout:g} s",
                             cause=Cause.SIGNALING_UNREACHABLE) from None
    except ConnectionClosed as exc:
        raise closed_error(exc) from None
