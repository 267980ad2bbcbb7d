"""The pairing of one peer, sans I/O: inputs in, what to send / deliver / report out. No asyncio, no sockets.

Two layers, both pure:

* :class:`Pairing` — the peer-to-peer protocol of PAIRING.md (CPace → key confirmation → sealed messages). It is
  fed the ``data`` objects the peer relayed and returns a :class:`Step`.
* :class:`Session` — one peer in its room on the signaling server: it is fed the server's messages (the typed
  models of ``signaling/protocol.py``), tracks who the peer is, starts the PAKE when the user waits for the
  pairing and the peer is present, and turns server events into typed failures (peer left, room closed,
  message refused). ``p2pd/pairing/client.py`` runs it over a WebSocket.

The states of :class:`Pairing` (``TRANSITIONS`` is enforced)::

    sender:    idle ──start──▶ waiting-share ──pake(receiver, good tag)──▶ paired
    receiver:  waiting-share ──pake(sender)──▶ waiting-confirm ──confirm(good tag)──▶ paired
    any state ──wrong tag / malformed / out-of-place message / role clash──▶ failed (final)

Failures are typed (``p2pd.errors``): ``WrongCodeError`` for a confirmation tag that does not match,
``TamperedError`` (cause ``TAMPERED``) for a malformed, out-of-place or unauthenticated message,
``TransferFailedError(cause=ROLE_CLASH)`` when both peers took the same role, ``ProtocolError`` for another
pairing version. A failed machine answers every later input with its first failure.

The behaviour is pinned by ``tests/vectors/pairing_machine.json`` (checked against this module and against
``web/src/pairing.js``).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from p2pd.errors import (
    Cause,
    P2pdError,
    Party,
    PeerGoneError,
    ProtocolError,
    SignalingError,
    TransferFailedError,
    WrongCodeError,
)
from p2pd.pairing.codes import Code
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
from signaling.protocol import Error, PeerJoined, PeerLeft, Relayed, RoomClosed

PAIRING_VERSION = 1
CI_LABEL = b"p2pd-pairing-v1"
SID_BYTES = 16
WRONG_CODE_MESSAGE = "wrong code: the other side used a different code (or someone interfered); nothing was sent"


class State(StrEnum):
    IDLE = "idle"
    WAITING_SHARE = "waiting-share"
    WAITING_CONFIRM = "waiting-confirm"
    PAIRED = "paired"
    FAILED = "failed"


TRANSITIONS: dict[State, frozenset[State]] = {
    State.IDLE: frozenset({State.WAITING_SHARE, State.FAILED}),
    State.WAITING_SHARE: frozenset({State.WAITING_CONFIRM, State.PAIRED, State.FAILED}),
    State.WAITING_CONFIRM: frozenset({State.PAIRED, State.FAILED}),
    State.PAIRED: frozenset({State.FAILED}),
    State.FAILED: frozenset(),
}


def channel_identifier(room: str) -> bytes:
    """CPace's CI: binds the run to this protocol and room."""
    return lv_cat(CI_LABEL, room.encode("utf-8"))


@dataclass(slots=True)
class Step:
    """What one input produced: messages to relay to the peer (in order), opened sealed messages, and a failure
    to report *after* sending ``send`` (the sender still sends its confirmation on a wrong code, so both sides
    learn it). ``paired`` is set on the input that completed the pairing, ``peer_present`` on the one that made
    the peer known."""

    send: list[dict[str, Any]] = field(default_factory=list)
    delivered: list[Any] = field(default_factory=list)
    error: P2pdError | None = None
    paired: bool = False
    peer_present: bool = False


def role_clash(role: Role) -> TransferFailedError:
    return TransferFailedError(f"both peers joined as {role}; one side must send and one receive",
                               cause=Cause.ROLE_CLASH, party=Party.PEER)


class Pairing:
    """The pairing state machine of one peer (the peer-to-peer messages only).

    The sender (CPace initiator) calls :meth:`start` once the peer is present and relays what it returns;
    both sides feed every relayed ``data`` object from the peer to :meth:`receive`. ``sid`` and ``scalar`` fix
    the randomness (test vectors); by default both are drawn fresh.
    """

    def __init__(self, code: Code, role: Role, *, room: str | None = None, sid: bytes | None = None,
                 scalar: bytes | None = None) -> None:
        if role not in ("sender", "receiver"):
            raise ValueError(f"role must be 'sender' or 'receiver', not {role!r}")
        self.code = code
        self.role: Role = role
        self.room = room if room is not None else code.nameplate
        self.state = State.IDLE if role == "sender" else State.WAITING_SHARE
        self.failure: P2pdError | None = None
        self.keys: SessionKeys | None = None
        self.verification: str | None = None  # the short authentication string, once paired (kept if it fails later)
        self._sid = sid if sid is not None else secrets.token_bytes(SID_BYTES)
        self._scalar = scalar
        self._cpace: CPace | None = None
        self._sealer: Sealer | None = None
        self._opener: Opener | None = None


    def start(self) -> list[dict[str, Any]]:
        """Sender only: the first CPace message."""
        if self.role != "sender" or self.state != State.IDLE:
            raise RuntimeError("only an idle sender starts the pairing")
        self._cpace = CPace(self.code.password, role="initiator", ci=channel_identifier(self.room),
                            sid=self._sid, ad=b"sender", scalar=self._scalar)
        self._become(State.WAITING_SHARE)
        return [{"kind": "pake", "v": PAIRING_VERSION, "role": "sender", "sid": b64encode(self._sid),
                 "share": b64encode(self._cpace.share)}]

    def receive(self, data: Any) -> Step:
        """One ``data`` object relayed from the peer."""
        if self.failure is not None:
            return Step(error=self.failure)
        try:
            step = self._receive(data)
        except P2pdError as exc:
            step = Step(error=exc)
        if step.error is not None:
            self.failure = step.error
            self._become(State.FAILED)
        return step

    def seal(self, obj: Any) -> dict[str, Any]:
        if self.state != State.PAIRED or self._sealer is None:
            raise RuntimeError("cannot seal before the pairing completed")
        return self._sealer.seal(obj)

    # ---- internals -----------------------------------------------------------------------------------------

    def _become(self, state: State) -> None:
        if state not in TRANSITIONS[self.state]:
            raise RuntimeError(f"pairing state {self.state} cannot become {state}")
        self.state = state

    def _receive(self, data: Any) -> Step:
        if not isinstance(data, dict):
            raise TamperedError("malformed pairing message from the peer")
        kind = data.get("kind")
        if kind == "pake" and self.state == State.WAITING_SHARE:
            return self._on_share(data)
        if kind == "confirm" and self.state == State.WAITING_CONFIRM:
            return self._on_confirm(data)
        if kind == "sealed" and self.state == State.PAIRED:
            assert self._opener is not None
            return Step(delivered=[self._opener.open(data)])
        if kind == "pake" and data.get("role") == self.role:
            raise role_clash(self.role)
        raise TamperedError(f"unexpected pairing message {str(kind)[:20]!r} from the peer while {self.state}")

    def _check_version(self, data: dict[str, Any]) -> None:
        version = data.get("v")
        if type(version) is not int or version != PAIRING_VERSION:  # not `True`, which equals 1 in Python
            raise ProtocolError(f"the peer speaks pairing version {str(version)[:10]}, this side {PAIRING_VERSION}; "
                                "update both sides")

    def _on_share(self, data: dict[str, Any]) -> Step:
        self._check_version(data)
        if data.get("role") != other_role(self.role):
            if data.get("role") == self.role:
                raise role_clash(self.role)
            raise TamperedError("malformed pairing message from the peer")
        share = b64decode(data.get("share"), what="key exchange message", max_len=64)
        if self.role == "receiver":
            sid = b64decode(data.get("sid"), what="key exchange message", max_len=64)
            if len(sid) != SID_BYTES:
                raise TamperedError("malformed key exchange message from the peer")
            self._sid = sid
            cpace = CPace(self.code.password, role="responder", ci=channel_identifier(self.room), sid=sid,
                          ad=b"receiver", scalar=self._scalar)
            self.keys = derive_keys(self._finish(cpace, share, b"sender"), self.room)
            self._become(State.WAITING_CONFIRM)
            return Step(send=[{"kind": "pake", "v": PAIRING_VERSION, "role": "receiver",
                               "share": b64encode(cpace.share),
                               "confirm": b64encode(confirmation_tag(self.keys, "receiver"))}])
        assert self._cpace is not None
        tag = b64decode(data.get("confirm"), what="key confirmation", max_len=64)
        self.keys = derive_keys(self._finish(self._cpace, share, b"receiver"), self.room)
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
        self.verification = verification_string(self.keys.sas)
        self._become(State.PAIRED)


ServerEvent = PeerJoined | PeerLeft | Relayed | RoomClosed | Error
"""The server messages a :class:`Session` acts on once in its room (others — pong, left — change nothing)."""


class Session:
    """One peer's pairing in its room: server events in, a :class:`Step` out.

    Built from the server's ``joined`` reply (``room`` and the ``peers`` already there). :meth:`begin` says the
    user now waits for the pairing: the sender starts the PAKE as soon as the peer is present (now or on
    ``peer_joined``). Relayed data counts only from the peer (the first other member). The first failure — the
    pairing's, a server event's, or one the I/O layer reports with :meth:`fail` — is final and is kept in
    :attr:`failure`; later events change nothing.
    """

    def __init__(self, code: Code, role: Role, *, room: str, peers: list[str] | tuple[str, ...] = (),
                 sid: bytes | None = None, scalar: bytes | None = None) -> None:
        self.pairing = Pairing(code, role, room=room, sid=sid, scalar=scalar)
        self.role: Role = role
        self.room = room
        self.peer: str | None = peers[0] if peers else None
        self.failure: P2pdError | None = None
        self._begun = False

    @property
    def paired(self) -> bool:
        return self.pairing.state == State.PAIRED

    def begin(self) -> Step:
        """The user waits for the pairing now."""
        self._begun = True
        return self._start_if_ready()

    def receive(self, event: ServerEvent) -> Step:
        """One message from the server (already parsed into its model)."""
        if self.failure is not None:
            return Step()
        step = Step()
        if isinstance(event, PeerJoined):
            if self.peer is None:
                self.peer = event.peer_id
                step = self._start_if_ready()
                step.peer_present = True
        elif isinstance(event, PeerLeft):
            if event.peer_id == self.peer:
                step.error = PeerGoneError("the peer left" if self.paired
                                           else "the peer left before the pairing completed")
        elif isinstance(event, RoomClosed):
            step.error = self._room_closed(event)
        elif isinstance(event, Error):
            step.error = SignalingError("the signaling server refused a message", cause=Cause.SIGNALING_REFUSED,
                                        peer_text=event.reason, details={"code": event.code.value})
        elif isinstance(event, Relayed) and self.peer is not None and event.sender == self.peer:
            step = self.pairing.receive(event.data)
        if step.error is not None:
            self.failure = step.error
        return step

    def seal(self, obj: Any) -> dict[str, Any]:
        """``obj`` sealed for the peer (raises the failure if there is one, RuntimeError before pairing)."""
        if self.failure is not None:
            raise self.failure
        return self.pairing.seal(obj)

    def fail(self, error: P2pdError) -> bool:
        """Record a failure the I/O layer saw (lost connection…); False when there already was one."""
        if self.failure is not None:
            return False
        self.failure = error
        return True

    def _start_if_ready(self) -> Step:
        if (self._begun and self.peer is not None and self.failure is None and self.role == "sender"
                and self.pairing.state == State.IDLE):
            return Step(send=self.pairing.start())
        return Step()

    def _room_closed(self, event: RoomClosed) -> P2pdError:
        if event.reason == "expired":
            return SignalingError("the pairing room expired on the signaling server", cause=Cause.SIGNALING_LOST)
        if event.by is not None and event.by == self.peer:
            return PeerGoneError("the peer closed the pairing room")
        return SignalingError("the pairing room was closed on the signaling server", cause=Cause.SIGNALING_LOST)
