"""Choosing the ICE servers of one peer connection, and saying which path it took or why it failed.

* :func:`merge` — the user's own servers (``P2PD_ICE_SERVERS`` / ``ice_servers`` in the config) first, then the
  ones the signaling server handed out after ``joined`` (``ice_servers`` message, signaling/PROTOCOL.md); one
  entry per URL.
* :func:`plan` — aiortc uses only the first STUN and the first TURN URL it is given. So before gathering, every
  TURN URL is probed at once (a real allocation, deleted right away; UDP, then TCP, then TLS preferred) and
  the first that works is the one aiortc gets: a network that blocks UDP still reaches the relay over TCP/TLS,
  and a refused credential or an unreachable relay is known — in words — before the peer is waited for.
* :func:`selected_path` — from the nominated candidate pair: direct (host to host), through NAT (a
  server-reflexive or peer-reflexive address), or relayed over UDP/TCP/TLS.
* :func:`explain` — on failure, the reason (no relay configured; relay refused the credential; UDP blocked and
  no TCP relay; peer unreachable) and what to do.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import msgspec

from p2pd.transfer import lazydns, nomedia  # noqa: F401  (first: aiortc comes without PyAV, dnspython deferred)

# isort: split
from aiortc import RTCConfiguration, RTCIceServer, RTCPeerConnection
from aiortc.rtcconfiguration import RTCIceTransportPolicy
from aiortc.rtcicetransport import parse_stun_turn_uri

DEFAULT_PROBE_TIMEOUT = 3.0
# Once a relay answered over TCP or TLS, how much longer the UDP probes are waited for. Over a path that carries
# UDP, a UDP allocation (two STUN round trips) answers before a TCP one (a handshake more), and one lost datagram
# costs aioice's first retransmission, 0.5 s: a network where UDP is blocked no longer waits the whole probe
# timeout (3 s) for it (tests/net, no UDP: relay check 3.0 s -> ~1 s).
UDP_GRACE = 1.0
Status = Callable[[str], None]


class Failure(StrEnum):
    """Why no peer connection could be made (``ConnectionFailedError.details["reason"]``)."""

    NO_RELAY = "no_relay"
    RELAY_REFUSED = "relay_refused"
    UDP_BLOCKED = "udp_blocked"
    RELAY_UNREACHABLE = "relay_unreachable"
    PEER_UNREACHABLE = "peer_unreachable"


class Outcome(StrEnum):
    OK = "ok"
    REFUSED = "refused"  # the relay answered 401/403/437/441: the credential is wrong or expired
    UNREACHABLE = "unreachable"  # no answer, connection refused or TLS failure


class Server(msgspec.Struct, frozen=True):
    url: str
    username: str | None = None
    credential: str | None = None

    @property
    def is_turn(self) -> bool:
        return self.url.startswith(("turn:", "turns:"))

    @property
    def transport(self) -> str:
        """``udp``, ``tcp`` or ``tls`` (``turns:``) for a TURN URL."""
        parsed = parse_stun_turn_uri(self.url)
        return "tls" if parsed["scheme"] == "turns" else str(parsed["transport"])

    def rtc(self) -> RTCIceServer:
        return RTCIceServer(urls=self.url, username=self.username, credential=self.credential)


class Probe(msgspec.Struct, frozen=True):
    server: Server
    outcome: Outcome


@dataclass
class IcePlan:
    servers: list[Server]  # what aiortc gets: the first STUN and the first working TURN
    turn: Server | None = None
    probes: list[Probe] = field(default_factory=list)
    relay_only: bool = False

    def configuration(self) -> RTCConfiguration:
        policy = RTCIceTransportPolicy.RELAY if self.relay_only else RTCIceTransportPolicy.ALL
        return RTCConfiguration(iceServers=[s.rtc() for s in self.servers], iceTransportPolicy=policy)


def _entries(raw: Sequence[Any]) -> list[Server]:
    out: list[Server] = []
    for item in raw:
        if not isinstance(item, dict):
            continue
        urls = item.get("urls")
        user, cred = item.get("username"), item.get("credential")
        for url in [urls] if isinstance(urls, str) else urls if isinstance(urls, list) else []:
            if not isinstance(url, str):
                continue
            try:
                parse_stun_turn_uri(url)
            except ValueError:
                continue
            out.append(Server(url, user if isinstance(user, str) else None, cred if isinstance(cred, str) else None))
    return out


def merge(local: Sequence[Any], from_server: Sequence[Any]) -> list[Server]:
    """The user's servers first, then the server-given ones; one entry per URL (the first wins)."""
    seen: set[str] = set()
    merged: list[Server] = []
    for server in _entries(local) + _entries(from_server):
        if server.url not in seen:
            seen.add(server.url)
            merged.append(server)
    return merged


_ORDER = {"udp": 0, "tcp": 1, "tls": 2}


class _Sink(asyncio.DatagramProtocol):
    pass


async def probe(server: Server, timeout: float = DEFAULT_PROBE_TIMEOUT) -> Probe:
    """Try a TURN allocation on ``server`` (deleted again at once)."""
    from aioice import stun
    from aioice.turn import create_turn_endpoint

    parsed = parse_stun_turn_uri(server.url)
    try:
        async with asyncio.timeout(timeout):
            transport, _ = await create_turn_endpoint(
                _Sink, server_addr=(parsed["host"], parsed["port"]), username=server.username,
                password=server.credential, ssl=parsed["scheme"] == "turns", transport=str(parsed["transport"]))
    except stun.TransactionFailed as exc:
        code = exc.response.attributes.get("ERROR-CODE", (0, ""))[0]
        return Probe(server, Outcome.REFUSED if code in (401, 403, 437, 441) else Outcome.UNREACHABLE)
    except (TimeoutError, OSError, ConnectionError, stun.TransactionError):
        return Probe(server, Outcome.UNREACHABLE)
    transport.close()
    return Probe(server, Outcome.OK)


async def _probe_all(turns: Sequence[Server], timeout: float, grace: float) -> list[Probe]:
    """Every probe at once, in ``turns``' order; once one over TCP/TLS worked, those still pending get ``grace``
    seconds more, then count as unreachable (a UDP one so cut short: UDP is taken as blocked)."""
    loop = asyncio.get_running_loop()
    tasks: dict[asyncio.Future[Probe], Server] = {asyncio.ensure_future(probe(s, timeout)): s for s in turns}
    results: dict[asyncio.Future[Probe], Probe] = {}
    pending: set[asyncio.Future[Probe]] = set(tasks)
    deadline: float | None = None
    try:
        while pending:
            left = None if deadline is None else max(0.0, deadline - loop.time())
            done, pending = await asyncio.wait(pending, timeout=left, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                results[task] = task.result()
                if deadline is None and results[task].outcome is Outcome.OK and tasks[task].transport != "udp":
                    deadline = loop.time() + grace
            if pending and deadline is not None and loop.time() >= deadline:
                break
    finally:
        for task in pending:
            task.cancel()  # (aioice closes the socket of an allocation cancelled halfway)
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
    return [results.get(task, Probe(server, Outcome.UNREACHABLE)) for task, server in tasks.items()]


async def plan(servers: Sequence[Server], *, relay_only: bool = False, status: Status | None = None,
               probe_timeout: float = DEFAULT_PROBE_TIMEOUT) -> IcePlan:
    """Probe every TURN URL at once; aiortc gets the first STUN URL and the best working TURN URL."""
    say = status or (lambda _text: None)
    stun = [s for s in servers if not s.is_turn][:1]
    turns = sorted((s for s in servers if s.is_turn), key=lambda s: _ORDER.get(s.transport, 3))
    if turns:
        say(f"checking the relay{'s' if len(turns) > 1 else ''}: "
            + ", ".join(f"{s.url.split('?')[0]} over {s.transport.upper()}" for s in turns))
    probes = await _probe_all(turns, probe_timeout, UDP_GRACE)
    # a STUN server at the address of a relay that did not answer over UDP would not answer either: skip it
    # rather than wait for aioice's STUN timeout while gathering
    silent = {_address(p.server) for p in probes if p.outcome is Outcome.UNREACHABLE and p.server.transport == "udp"}
    if stun and _address(stun[0]) in silent:
        say(f"skipping {stun[0].url}: its address did not answer over UDP")
        stun = []
    usable = [p.server for p in probes if p.outcome is Outcome.OK]
    chosen = usable[0] if usable else None
    if chosen is not None:
        say(f"relay available: {chosen.url.split('?')[0]} over {chosen.transport.upper()}")
    return IcePlan(servers=stun + ([chosen] if chosen else []), turn=chosen, probes=probes,
                   relay_only=relay_only)


REASONS: dict[Failure, str] = {
    Failure.NO_RELAY: ("no relay (TURN server) is configured, and the two sides could not reach each other "
                       "directly (NAT or firewall). Run p2pd-signal with --ice-server turn:… and --turn-secret-file "
                       "(see README, 'Running your own signaling server'), or set ice_servers in the p2pd config"),
    Failure.RELAY_REFUSED: ("the relay refused the credential (expired or wrong): check that the signaling server "
                            "and coturn share the same secret and that both clocks are right; retry to get a "
                            "fresh credential"),
    Failure.UDP_BLOCKED: ("the relay did not answer over UDP (UDP looks blocked on this network) and no TCP relay "
                          "is configured: add turn:HOST:3478?transport=tcp or turns:HOST:443 to the signaling "
                          "server's --ice-server list"),
    Failure.RELAY_UNREACHABLE: "no relay answered: check that coturn runs and that its ports are open",
    Failure.PEER_UNREACHABLE: ("the peer could not be reached, not even through the relay: its network may block "
                               "the relay too, or it went away; try again, or hand the conversation over as a file"),
}


def _address(server: Server) -> tuple[str, int]:
    parsed = parse_stun_turn_uri(server.url)
    return str(parsed["host"]), int(parsed["port"])


def explain(ice: IcePlan) -> tuple[Failure, str]:
    """Why the connection failed, in words, with what to do."""
    if not ice.probes:
        reason = Failure.NO_RELAY
    elif ice.turn is not None:
        reason = Failure.PEER_UNREACHABLE
    elif any(p.outcome is Outcome.REFUSED for p in ice.probes):
        reason = Failure.RELAY_REFUSED
    elif all(p.server.transport == "udp" for p in ice.probes):
        reason = Failure.UDP_BLOCKED
    else:
        reason = Failure.RELAY_UNREACHABLE
    return reason, REASONS[reason]


class PathKind(StrEnum):
    DIRECT = "direct"
    NAT = "nat"
    RELAY = "relay"


class IcePath(msgspec.Struct, frozen=True):
    """The path the connection took: from the nominated candidate pair."""

    kind: PathKind
    local_type: str
    remote_type: str
    transport: str | None = None  # udp/tcp/tls to the relay, for a relayed path
    local: str = ""
    remote: str = ""

    def describe(self) -> str:
        if self.kind is PathKind.RELAY:
            how = f"TURN over {self.transport.upper()}" if self.transport else "through the peer's relay"
            return f"relayed ({how}; {self.local_type} → {self.remote_type})"
        if self.kind is PathKind.NAT:
            return f"direct through NAT ({self.local_type} → {self.remote_type})"
        return "direct (same network)"

    def to_dict(self) -> dict[str, str | None]:
        return {"kind": self.kind.value, "local_type": self.local_type, "remote_type": self.remote_type,
                "transport": self.transport, "description": self.describe()}


def selected_path(pc: RTCPeerConnection, ice: IcePlan | None) -> IcePath | None:
    """The nominated pair of the peer connection's ICE transport, described; ``None`` when not known."""
    with contextlib.suppress(AttributeError):
        sctp = pc.sctp
        connection = sctp.transport.transport._connection if sctp is not None else None
        pairs = list(getattr(connection, "_nominated", {}).values())
        if not pairs:
            return None
        pair = pairs[0]
        local, remote = pair.local_candidate, pair.remote_candidate
        if "relay" in (local.type, remote.type):
            kind = PathKind.RELAY
        elif local.type == "host" and remote.type == "host":
            kind = PathKind.DIRECT
        else:
            kind = PathKind.NAT
        transport = ice.turn.transport if local.type == "relay" and ice is not None and ice.turn else None
        return IcePath(kind, local.type, remote.type, transport, f"{local.host}:{local.port}",
                       f"{remote.host}:{remote.port}")
    return None
