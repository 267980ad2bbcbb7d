"""One paired device: the sealed control channel to it, kept up while the daemon runs, and its outbox worker.

The connection loop joins the pair's room on the signaling server, runs CPace with the pair secret, has the
device prove its pinned Ed25519 key and then serves the room as a sealed control channel (see DEVICES.md); its
states and retry policy are :mod:`p2pd.daemon.device_state`. Per transfer it carries the WebRTC signaling
(``Rtc`` messages) for a data channel of its own (:meth:`DeviceSession.open_link`). The outbox worker sends this
device's queued transfers one at a time while it is online.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any, Protocol

from p2pd.daemon.device_state import DeviceState, Presence
from p2pd.daemon.devices import Device
from p2pd.daemon.identity import Identity
from p2pd.daemon.peer_protocol import Control, HandoffState, Rtc, check_pinned_proof, make_proof, parse_control
from p2pd.daemon.store import TransferRow
from p2pd.errors import DeviceOfflineError, P2pdError, PeerGoneError
from p2pd.pairing.client import Rendezvous
from p2pd.pairing.codes import Code
from p2pd.pairing.seal import other_role
from p2pd.transfer.channel import TransferControl
from p2pd.transfer.peer import PeerLink

log = logging.getLogger("p2pd.network")

ROOM_WAIT = 240.0  # re-join the pair room this often while the other device is away (rooms expire after 600 s)
STOP_GRACE = 5.0
_GONE: dict[str, Any] = {"type": "gone"}  # put in a transfer's signaling queue when the control channel ends


class SessionOwner(Protocol):
    """What a device session needs from the network that owns it."""

    signal_url: str
    identity: Identity
    connect_timeout: float

    async def greet(self, session: DeviceSession) -> None: ...

    async def dispatch(self, session: DeviceSession, message: Control) -> None: ...

    def next_outgoing(self, device_id: str) -> tuple[TransferRow | None, float | None]: ...

    async def run_outgoing(self, session: DeviceSession, row: TransferRow) -> None: ...


@dataclass
class DeviceSession:
    """The control channel to one paired device, kept up (with jittered backoff) while the daemon runs."""

    net: SessionOwner
    device: Device
    presence: Presence = field(default_factory=Presence)
    rv: Rendezvous | None = None
    rtc: dict[str, asyncio.Queue[dict[str, Any]]] = field(default_factory=dict)
    online_event: asyncio.Event = field(default_factory=asyncio.Event)
    kick: asyncio.Event = field(default_factory=asyncio.Event)
    greeted: asyncio.Event = field(default_factory=asyncio.Event)  # this contact's greeting is sent
    reports: list[Control] = field(default_factory=list)  # handoff states being delivered now (online only)
    incoming: dict[str, tuple[asyncio.Task[None], TransferControl]] = field(default_factory=dict)
    links: list[PeerLink] = field(default_factory=list)  # the transfers' peer connections (closed at stop)
    tasks: set[asyncio.Task[Any]] = field(default_factory=set)
    runner: asyncio.Task[None] | None = None
    worker: asyncio.Task[None] | None = None
    features: frozenset[str] | None = None  # what the device announced on this contact (None: not yet heard)

    @property
    def online(self) -> bool:
        return self.presence.online

    def start(self) -> None:
        self.runner = asyncio.create_task(self._run(), name=f"p2pd-device-{self.device.device_id}")
        self.worker = asyncio.create_task(self._outbox(), name=f"p2pd-outbox-{self.device.device_id}")

    async def stop(self) -> None:
        """Stop everything of this device. The transfers' peer connections are closed first: to the device this
        daemon went away (it resumes them later); a transfer stopped with its connection still open would tell
        the device it was cancelled (chaos seed 204: a SIGTERM'd receiver made its sender fail the transfer)."""
        for link in self.links:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(link.close(), STOP_GRACE)
        self.links.clear()
        receiving = [t for t, _ in self.incoming.values()]
        if receiving:  # they wind down on the closed connection: partial kept, its lock released, row interrupted
            await asyncio.wait(receiving, timeout=STOP_GRACE)
        everything = [t for t in (self.runner, self.worker, *self.tasks, *(t for t, _ in self.incoming.values()))
                      if t is not None]
        for task in everything:
            task.cancel()
        if everything:
            _, stuck = await asyncio.wait(everything, timeout=STOP_GRACE)
            for task in stuck:  # never hang a shutdown; say what did not end
                log.warning("device %s: %s did not stop within %.0f s: %s", self.device.name, task.get_name(),
                            STOP_GRACE, _stack(task))

    def view(self) -> dict[str, Any]:
        return {**self.device.public_view(), **self.presence.view()}

    def _changed(self) -> None:
        if self.presence.online:
            self.online_event.set()
        else:
            self.online_event.clear()

    # ---- connection loop ------------------------------------------------------------------------------------

    async def _run(self) -> None:
        code = Code(nameplate=self.device.room, words=(self.device.secret_bytes.hex(),))
        while True:
            self.presence.attempt()
            self._changed()
            try:
                rv = await Rendezvous.open(self.net.signal_url, role="auto", code=code, create=True,
                                           connect_timeout=10.0)
            except (P2pdError, OSError) as exc:
                wait = self.presence.unreachable(exc)
                self._changed()
                await asyncio.sleep(wait)
                continue
            wait = ROOM_WAIT
            arrival = asyncio.create_task(self._connecting_when_there(rv))
            try:
                await rv.pair(timeout=ROOM_WAIT)
                await rv.send_sealed(make_proof(self.net.identity, rv.exporter, rv.role))
                check_pinned_proof(await rv.recv_sealed(timeout=20.0), rv.exporter, other_role(rv.role), self.device)
                self.rv = rv
                self.presence.came_online()
                self._changed()
                log.info("device %s (%s) is online", self.device.name, self.device.device_id)
                await self._serve(rv)
            except P2pdError as exc:
                wait = self.presence.after_failure(exc, self.device.name)
                self._changed()
                if self.presence.state is DeviceState.REFUSED:
                    log.warning("%s", self.presence.error)
            finally:
                arrival.cancel()
                self.greeted.clear()
                self.rv = None
                self.presence.ended()
                self._changed()
                for queue in self.rtc.values():
                    queue.put_nowait(_GONE)
                await rv.close()
            await asyncio.sleep(wait)

    async def _connecting_when_there(self, rv: Rendezvous) -> None:
        await rv.wait_peer()
        if not self.presence.online:
            self.presence.peer_arrived()
            self._changed()

    async def _serve(self, rv: Rendezvous) -> None:
        self.reports.clear()  # what they said is in the store, and greet tells it again (notices.py)
        self.features = None  # it announces them again, before its hello (an older daemon never does)
        await self.net.greet(self)
        self.greeted.set()  # transfers after the greeting: a claim granted again is heard before its conversation
        self.kick.set()  # (chaos seed 32824065: one that went first was filed as an ordinary conversation, the
        # handoff left claimed on both sides)
        while True:
            message = parse_control(await rv.recv_sealed())
            await self.net.dispatch(self, message)

    async def send(self, message: Control) -> None:
        rv = self.rv
        if rv is None:
            raise DeviceOfflineError(f"device {self.device.name!r} is not connected")
        await rv.send_sealed(message.model_dump(exclude_none=True))

    def report(self, message: HandoffState) -> None:
        """Deliver a handoff state now, in order; a device that is away hears it from the store when it is back
        (``notices.py``)."""
        if self.rv is not None:
            self.reports.append(message)
            self.spawn(self._flush_reports())

    async def _flush_reports(self) -> None:
        for report in list(self.reports):
            try:
                await self.send(report)
            except P2pdError:
                return
            with contextlib.suppress(ValueError):
                self.reports.remove(report)

    def spawn(self, coro: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self.tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("device %s: %s", self.device.name, task.exception())

    # ---- peer connections per transfer ------------------------------------------------------------------------

    def expect_link(self, tid: str) -> None:
        """Queue the WebRTC signaling of transfer ``tid`` from now on (before the peer's offer can arrive)."""
        self.rtc.setdefault(tid, asyncio.Queue())

    def deliver_rtc(self, message: Rtc) -> None:
        queue = self.rtc.get(message.tid)
        if queue is not None:
            queue.put_nowait(message.m)

    async def open_link(self, tid: str, role: str) -> PeerLink:
        """A data channel to the device for transfer ``tid``, its SDP carried sealed on the control channel.
        Raises PeerGoneError when the control channel ends meanwhile."""
        from p2pd.transfer.peer import connect

        queue: asyncio.Queue[dict[str, Any]] = self.rtc.setdefault(tid, asyncio.Queue())

        async def send(m: dict[str, Any]) -> None:
            await self.send(Rtc(tid=tid, m=m))

        async def recv() -> dict[str, Any]:
            m = await queue.get()
            if m is _GONE:
                raise PeerGoneError(f"device {self.device.name!r} went away")
            return m

        try:
            link = await connect(role, send, recv, timeout=self.net.connect_timeout,
                                 server_ice=self.rv.ice_servers if self.rv is not None else ())
            if link.path is not None:
                log.info("device %s: transfer %s %s", self.device.name, tid, link.path.describe())
            self.links = [x for x in self.links if x.pc.connectionState != "closed"]
            self.links.append(link)
            return link
        finally:
            self.rtc.pop(tid, None)

    # ---- outgoing transfers ---------------------------------------------------------------------------------

    async def _outbox(self) -> None:
        """The single sender task of this device: sends queued transfers one at a time, while online."""
        while True:
            await self.online_event.wait()
            await self.greeted.wait()
            self.kick.clear()
            row, due_in = await asyncio.to_thread(self.net.next_outgoing, self.device.device_id)
            if row is None:  # (due_in: a transfer waits to be sent again, e.g. the device's disk was full)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.kick.wait(), due_in)
                continue
            # its own task, so a cancel through the API can wait for it (and stop it) without stopping this worker
            send = asyncio.create_task(self.net.run_outgoing(self, row), name=f"p2pd-send-{row.id}")
            try:
                await asyncio.wait([send])
            except asyncio.CancelledError:
                send.cancel()
                raise
            if send.cancelled():
                continue
            exc = send.exception()
            if isinstance(exc, P2pdError):  # e.g. the row reached a final state meanwhile (cancelled)
                log.info("transfer %s: %s", row.id, exc)
            elif exc is not None:  # a bug must not stop this device's sends for good
                log.error("transfer %s failed unexpectedly", row.id, exc_info=exc)
                await asyncio.sleep(1.0)


def _stack(task: asyncio.Task[Any]) -> str:
    buf = io.StringIO()
    task.print_stack(file=buf)
    return buf.getvalue()


__all__ = ["ROOM_WAIT", "STOP_GRACE", "DeviceSession", "SessionOwner"]
