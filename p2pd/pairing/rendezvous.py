"""Pairing two peers over the signaling server: CPace → key confirmation → sealed messages.

:class:`Pairing` is the sans-I/O state machine (fed the peer's relayed ``data`` objects, it returns what to
send back); :class:`Rendezvous` is the thin asyncio client that runs it over a WebSocket to ``p2pd-signal``.
The wire format of the peer-to-peer messages is in PAIRING.md.

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
import json
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal

from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI
from websockets.typing import Subprotocol

from p2pd.errors import NoPeerError, NotFoundError, P2pdError, TransferFailedError, WrongCodeError
from p2pd.pairing.codes import Code, generate_code, parse_code
from p2pd.pairing.cpace import CPace, CPaceError, lv_cat
from p2pd.pairing.seal import (
    Opener,
    Role,
    Sealer,
    SessionKeys,
    TamperedError,
    b64decode,
    b64encode,
    check_confirmation,
    confirmation_tag,
    derive_keys,
    other_role,
    verification_string,
)

SUBPROTOCOL = "p2pd-signal.v1"
PAIRING_VERSION = 1
CI_LABEL = b"p2pd-pairing-v1"
SID_BYTES = 16
WRONG_CODE_MESSAGE = "wrong code: the other side used a different code (or someone interfered); nothing was sent"

State = Literal["idle", "waiting-share", "waiting-confirm", "paired", "failed"]


def channel_identifier(room: str) -> bytes:
    """CPace's CI: binds the run to this protocol and room."""
    return lv_cat(CI_LABEL, room.encode("utf-8"))


@dataclass(slots=True)
class Step:
    """What one event produced: messages to relay to the peer (in order), opened sealed messages, and
    a failure to raise *after* sending ``send`` (the sender still sends its confirmation on a wrong code, so
    both sides learn it)."""

    send: list[dict[str, Any]] = field(default_factory=list)
    delivered: list[Any] = field(default_factory=list)
    error: P2pdError | None = None
    paired: bool = False


class Pairing:
    """The pairing state machine of one peer.

    The sender (CPace initiator) calls :meth:`start` once the peer is present and relays what it returns;
    both sides feed every relayed ``data`` object from the peer to :meth:`receive`.
    """

    def __init__(self, code: Code, role: Role, *, room: str | None = None, sid: bytes | None = None,
                 scalar: bytes | None = None) -> None:
        if role not in ("sender", "receiver"):
            raise ValueError(f"role must be 'sender' or 'receiver', not {role!r}")
        self.code = code
        self.role: Role = role
        self.room = room if room is not None else code.nameplate
        self.state: State = "idle" if role == "sender" else "waiting-share"
        self._sid = sid if sid is not None else secrets.token_bytes(SID_BYTES)
        self._scalar = scalar
        self._cpace: CPace | None = None
        self.keys: SessionKeys | None = None
        self._sealer: Sealer | None = None
        self._opener: Opener | None = None

    @property
    def verification(self) -> str | None:
        """The short authentication string, once the key is known."""
        return verification_string(self.keys.sas) if self.keys is not None else None

    def start(self) -> list[dict[str, Any]]:
        """Sender only: the first CPace message."""
        if self.role != "sender" or self.state != "idle":
            raise RuntimeError("only an idle sender starts the pairing")
        self._cpace = CPace(self.code.password, role="initiator", ci=channel_identifier(self.room),
                            sid=self._sid, ad=b"sender", scalar=self._scalar)
        self.state = "waiting-share"
        return [{"kind": "pake", "v": PAIRING_VERSION, "role": "sender", "sid": b64encode(self._sid),
                 "share": b64encode(self._cpace.share)}]

    def receive(self, data: Any) -> Step:
        """One ``data`` object relayed from the peer."""
        if self.state == "failed":
            return Step(error=TransferFailedError("the pairing has already failed"))
        try:
            step = self._receive(data)
        except P2pdError as exc:
            step = Step(error=exc)
        if step.error is not None:
            self.state = "failed"
        return step

    def seal(self, obj: Any) -> dict[str, Any]:
        if self.state != "paired" or self._sealer is None:
            raise RuntimeError("cannot seal before the pairing completed")
        return self._sealer.seal(obj)

    # ---- internals -----------------------------------------------------------------------------------------

    def _receive(self, data: Any) -> Step:
        if not isinstance(data, dict):
            raise TamperedError("malformed pairing message from the peer")
        kind = data.get("kind")
        if kind == "pake" and self.state == "waiting-share":
            return self._on_share(data)
        if kind == "confirm" and self.state == "waiting-confirm":
            return self._on_confirm(data)
        if kind == "sealed" and self.state == "paired":
            assert self._opener is not None
            return Step(delivered=[self._opener.open(data)])
        if kind == "pake" and data.get("role") == self.role:
            raise TransferFailedError(f"both peers joined as {self.role}; one side must send and one receive")
        raise TamperedError(f"unexpected pairing message {str(kind)[:20]!r} from the peer while {self.state}")

    def _check_version(self, data: dict[str, Any]) -> None:
        if data.get("v") != PAIRING_VERSION:
            raise TransferFailedError(
                f"the peer speaks pairing version {str(data.get('v'))[:10]}, this side {PAIRING_VERSION}; "
                "update both sides")

    def _on_share(self, data: dict[str, Any]) -> Step:
        self._check_version(data)
        expected = other_role(self.role)
        if data.get("role") != expected:
            if data.get("role") == self.role:
                raise TransferFailedError(f"both peers joined as {self.role}; one side must send and one receive")
            raise TamperedError("malformed pairing message from the peer")
        share = b64decode(data.get("share"), what="key exchange message", max_len=64)
        if self.role == "receiver":
            sid = b64decode(data.get("sid"), what="key exchange message", max_len=64)
            if len(sid) != SID_BYTES:
                raise TamperedError("malformed key exchange message from the peer")
            self._sid = sid
            cpace = CPace(self.code.password, role="responder", ci=channel_identifier(self.room), sid=sid,
                          ad=b"receiver", scalar=self._scalar)
            isk = self._finish(cpace, share, b"sender")
            self.keys = derive_keys(isk, self.room)
            self.state = "waiting-confirm"
            return Step(send=[{"kind": "pake", "v": PAIRING_VERSION, "role": "receiver",
                               "share": b64encode(cpace.share),
                               "confirm": b64encode(confirmation_tag(self.keys, "receiver"))}])
        assert self._cpace is not None
        tag = b64decode(data.get("confirm"), what="key confirmation", max_len=64)
        isk = self._finish(self._cpace, share, b"receiver")
        self.keys = derive_keys(isk, self.room)
        # Our confirmation goes out even when theirs fails, so the receiver also learns the code was wrong.
        reply = [{"kind": "confirm", "v": PAIRING_VERSION,
                  "confirm": b64encode(confirmation_tag(self.keys, "sender"))}]
        if not check_confirmation(self.keys, "receiver", tag):
            return Step(send=reply, error=WrongCodeError(WRONG_CODE_MESSAGE))
        self._become_paired()
        return Step(send=reply, paired=True)

    def _on_confirm(self, data: dict[str, Any]) -> Step:
        self._check_version(data)
        assert self.keys is not None
        tag = b64decode(data.get("confirm"), what="key confirmation", max_len=64)
        if not check_confirmation(self.keys, "sender", tag):
            raise WrongCodeError(WRONG_CODE_MESSAGE)
        self._become_paired()
        return Step(paired=True)

    def _finish(self, cpace: CPace, share: bytes, peer_ad: bytes) -> bytes:
        try:
            return cpace.finish(share, peer_ad)
        except CPaceError as exc:
            raise TamperedError("invalid key exchange message from the peer (the signaling was tampered with)") \
                from exc

    def _become_paired(self) -> None:
        assert self.keys is not None
        self._sealer = Sealer(self.keys, self.room, self.role)
        self._opener = Opener(self.keys, self.room, self.role)
        self.state = "paired"


class Rendezvous:
    """A pairing over a live connection to the signaling server. Create with :meth:`open` or :meth:`connect`."""

    def __init__(self, ws: ClientConnection, *, url: str, code: Code, role: Role, room: str, peer_id: str,
                 peers: list[str]) -> None:
        self.url = url
        self.code = code
        self.role: Role = role
        self.room = room
        self.peer_id = peer_id
        self.peer: str | None = peers[0] if peers else None
        self._ws = ws
        self._pairing = Pairing(code, role, room=room)
        self._peer_present = asyncio.Event()
        if self.peer is not None:
            self._peer_present.set()
        self._paired: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._inbox: asyncio.Queue[Any] = asyncio.Queue()
        self._failure: P2pdError | None = None
        self._failed = asyncio.Event()
        self._reader = asyncio.get_running_loop().create_task(self._read_forever())

    # ---- construction ----------------------------------------------------------------------------------

    @classmethod
    async def open(cls, url: str, *, role: Role | Literal["auto"], code: Code | str | None = None,
                   create: bool | None = None, words: int = 2, connect_timeout: float = 10.0) -> Rendezvous:
        """Connect to the server and enter the room.

        ``code=None`` allocates a fresh nameplate (and words) on the server; ``rv.code`` is then the code to
        hand to the other side. With a code, the room is created when missing if ``create`` (default: only
        for the sender); otherwise a missing room raises :class:`NotFoundError`. ``role="auto"`` (peers that
        are alike, such as two paired daemons) makes the first in the room the PAKE initiator ("sender").
        """
        if role not in ("sender", "receiver", "auto"):
            raise ValueError(f"role must be 'sender', 'receiver' or 'auto', not {role!r}")
        parsed = parse_code(code) if isinstance(code, str) else code
        ws = await _connect(url, connect_timeout)
        try:
            if parsed is None:
                request: dict[str, Any] = {"type": "allocate", "id": 1}
            else:
                request = {"type": "join", "id": 1, "room": parsed.nameplate,
                           "create": (role != "receiver") if create is None else create}
            joined = await _request(ws, request, connect_timeout, parsed)
            room = str(joined["room"])
            if parsed is None:
                parsed = generate_code(room, words=words)
            peers = [str(peer) for peer in joined.get("peers", [])]
            chosen: Role = role if role != "auto" else ("receiver" if peers else "sender")
            return cls(ws, url=url, code=parsed, role=chosen, room=room, peer_id=str(joined["peer_id"]),
                       peers=peers)
        except BaseException:
            await ws.close()
            raise

    @classmethod
    @contextlib.asynccontextmanager
    async def connect(cls, url: str, code: Code | str | None, *, role: Role, create: bool | None = None,
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
    def verification(self) -> str | None:
        """Short authentication string (``"042 917"``) both users may compare, once paired."""
        return self._pairing.verification

    @property
    def paired(self) -> bool:
        return self._pairing.state == "paired"

    @property
    def exporter(self) -> bytes:
        """A secret unique to this paired session, for protocols built on top (device proofs)."""
        if self._pairing.keys is None or not self.paired:
            raise RuntimeError("pair() first")
        return self._pairing.keys.exporter

    async def pair(self, timeout: float = 60.0) -> str:
        """Wait for the peer, run the PAKE and key confirmation; returns the verification string.

        Raises :class:`WrongCodeError`, or :class:`TransferFailedError` for a timeout, a peer that left, a
        closed room, tampering or a lost server connection.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        try:
            await self._until(self._peer_present.wait(), deadline)
        except TimeoutError:
            raise NoPeerError(f"no peer joined within {timeout:g} s") from None
        if self.role == "sender" and self._pairing.state == "idle":
            await self._send_all(self._pairing.start())
        try:
            await self._until(asyncio.shield(self._paired), deadline)
        except TimeoutError:
            raise TransferFailedError(f"the peer did not complete the key exchange within {timeout:g} s") from None
        verification = self.verification
        assert verification is not None
        return verification

    async def send_sealed(self, obj: Any) -> None:
        """Encrypt and authenticate ``obj`` (JSON-serializable) and relay it to the peer."""
        self._raise_if_failed()
        if not self.paired:
            raise RuntimeError("pair() first")
        await self._send_all([self._pairing.seal(obj)])

    async def recv_sealed(self, timeout: float | None = None) -> Any:
        """The peer's next sealed object, authenticated and in order."""
        if not self.paired and self._failure is None:
            raise RuntimeError("pair() first")
        try:
            item = await asyncio.wait_for(self._inbox.get(), timeout)
        except TimeoutError:
            raise TransferFailedError(f"no message from the peer within {timeout:g} s") from None
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

    async def _until(self, awaitable: Any, deadline: float) -> None:
        """Await ``awaitable`` until ``deadline``, raising the pairing's failure as soon as there is one."""
        task = asyncio.ensure_future(awaitable)
        failed = asyncio.ensure_future(self._failed.wait())
        try:
            remaining = max(0.0, deadline - asyncio.get_running_loop().time())
            done, _ = await asyncio.wait({task, failed}, timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
            if task in done:
                task.result()
                return
            self._raise_if_failed()
            raise TimeoutError
        finally:
            for pending in (task, failed):
                pending.cancel()

    def _raise_if_failed(self) -> None:
        if self._failure is not None:
            raise self._failure

    def _fail(self, error: P2pdError) -> None:
        if self._failure is not None:
            return
        self._failure = error
        self._failed.set()
        if not self._paired.done():
            self._paired.set_exception(error)
            self._paired.exception()  # mark retrieved: callers may never await it
        self._inbox.put_nowait(error)

    async def _send_all(self, messages: list[dict[str, Any]]) -> None:
        if self.peer is None:
            raise RuntimeError("no peer yet")
        for data in messages:
            try:
                await self._ws.send(json.dumps({"type": "relay", "to": self.peer, "data": data},
                                               separators=(",", ":")))
            except ConnectionClosed:
                self._fail(TransferFailedError("lost the connection to the signaling server"))
                self._raise_if_failed()

    async def _read_forever(self) -> None:
        try:
            async for raw in self._ws:
                try:
                    message = json.loads(raw)
                except ValueError:
                    self._fail(TransferFailedError("the signaling server sent a malformed message"))
                    return
                if not isinstance(message, dict):
                    continue
                await self._dispatch(message)
            self._fail(TransferFailedError("the signaling server closed the connection"))
        except ConnectionClosed:
            self._fail(TransferFailedError("lost the connection to the signaling server"))
        except P2pdError as exc:
            self._fail(exc)

    async def _dispatch(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "peer_joined":
            if self.peer is None:
                self.peer = str(message.get("peer_id"))
                self._peer_present.set()
        elif kind == "peer_left":
            if message.get("peer_id") == self.peer:
                if self.paired:
                    self._fail(TransferFailedError("the peer left"))
                else:
                    self._fail(TransferFailedError("the peer left before the pairing completed"))
        elif kind == "room_closed":
            why = "expired" if message.get("reason") == "expired" else "was closed"
            self._fail(TransferFailedError(f"the pairing room {why} on the signaling server"))
        elif kind == "error":
            self._fail(TransferFailedError(f"the signaling server refused a message: {message.get('reason')}"))
        elif kind == "relay" and message.get("from") == self.peer and self.peer is not None:
            step = self._pairing.receive(message.get("data"))
            if step.send:
                await self._send_all(step.send)
            for item in step.delivered:
                self._inbox.put_nowait(item)
            if step.paired and not self._paired.done():
                self._paired.set_result(None)
            if step.error is not None:
                self._fail(step.error)


async def _connect(url: str, timeout: float) -> ClientConnection:
    try:
        return await asyncio.wait_for(
            ws_connect(url, subprotocols=[Subprotocol(SUBPROTOCOL)], compression=None, open_timeout=None,
                       max_size=1 << 20),
            timeout,
        )
    except TimeoutError:
        raise TransferFailedError(f"signaling server unreachable at {url}: no answer within {timeout:g} s") \
            from None
    except (OSError, InvalidHandshake, InvalidURI) as exc:
        raise TransferFailedError(f"signaling server unreachable at {url}: {exc}") from None


async def _request(ws: ClientConnection, request: dict[str, Any], timeout: float,
                   code: Code | None) -> dict[str, Any]:
    """Send a join/allocate and return the ``joined`` reply (after the server's welcome)."""
    try:
        async with asyncio.timeout(timeout):
            await ws.send(json.dumps(request))
            while True:
                reply = json.loads(await ws.recv())
                if not isinstance(reply, dict):
                    continue
                if reply.get("type") == "welcome":
                    if reply.get("protocol") != SUBPROTOCOL:
                        raise TransferFailedError("the signaling server speaks another protocol version")
                    continue
                if reply.get("type") == "joined":
                    return reply
                if reply.get("type") == "error":
                    raise _join_error(reply, code)
    except TimeoutError:
        raise TransferFailedError(f"the signaling server did not answer within {timeout:g} s") from None
    except ConnectionClosed as exc:
        reason = exc.rcvd.reason if exc.rcvd is not None and exc.rcvd.reason else "connection closed"
        raise TransferFailedError(f"the signaling server closed the connection: {reason}") from None
    except ValueError:
        raise TransferFailedError("the signaling server sent a malformed message") from None


def _join_error(reply: dict[str, Any], code: Code | None) -> P2pdError:
    kind, reason = reply.get("code"), reply.get("reason")
    plate = code.nameplate if code is not None else "?"
    if kind == "no-such-room":
        return NotFoundError(f"no one is waiting on nameplate {plate}: check the code, or start the other side first")
    if kind == "room-full":
        return TransferFailedError(f"nameplate {plate} is already in use by two peers")
    return TransferFailedError(f"the signaling server refused to pair: {reason}")
