"""``p2pd send`` and ``p2pd receive``: pair through the signaling server with a code, connect peer to peer,
move the conversation with the transfer protocol — or, when no peer can be reached, hand over a file.

The steps are plain functions with a small UI interface, so the CLI and the daemon can drive them alike:

sender:   packing starts at once in another process (:mod:`producing`), while: rendezvous (allocate or join the
          code's room) → PAKE → sealed SDP offer/answer → data channel → HELLOs → a receiver that streams gets
          the offer as soon as the summary is known and the payload as it is produced (SPEC.md §12), any other
          the whole blob once packed → DONE (progress = what the receiver acknowledged)
receiver: code → rendezvous (its checking process starts) → PAKE → sealed SDP → data channel → OFFER shown →
          accept/decline → chunks, decompressed and checked as they arrive (:mod:`consuming`; a version-1
          transfer: after the SHA-256) → SHA-256 verified → .a2a.json placed → optional import

Fallback: when no peer joins within the timeout, the signaling server cannot be reached or drops out, or no
peer connection can be made, ``send`` writes the conversation as ``.a2a.json`` and says how to import it; after
pairing it also tells the receiver (``notice.py``), which then says which file to import.
A wrong code or a declined offer is not a reason to fall back: both are answers from the other side.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from p2pd.errors import Cause, P2pdError, StorageError, TransferFailedError, storage_error
from p2pd.exchange.notice import GRACE, PeerSignals, sender_fell_back, tell_receiver
from p2pd.exchange.producing import Production
from p2pd.support import staging, workroom

if TYPE_CHECKING:  # the conversation's modules (pydantic) load when a conversation is read or written, not before
    from p2pd.config import ReceiveLimits
    from p2pd.conversation.model import ConversationDocument
    from p2pd.exchange.packing import Unpacked

DAEMON_MESSAGE_SIZE = 65536
SEND_WORK_PREFIX = workroom.SEND  # the send's work folder (p2pd/support/workroom.py; swept once stale)


class UI(Protocol):
    """What the orchestration tells the person (or the daemon's log) along the way."""

    def code_ready(self, code: str, *, peer_present: bool = False) -> None:
        """The code is known; ``peer_present``: the other side is in the room already (it has the code)."""

    def sending(self, about: dict[str, Any]) -> None: ...

    def paired(self, verification: str) -> None: ...

    def status(self, text: str) -> None: ...

    def progress(self, done: int, total: int) -> None: ...

    def stage(self, name: str, done: int | None = None, total: int | None = None) -> None:
        """A long step under way ("packing the conversation", "decompressing and checking…"), with bytes done
        of ``total`` when known; it ends when anything else is reported."""

    async def decide(self, offer: Any) -> bool: ...


class QuietUI:
    """A UI that says nothing and accepts every offer (tests, daemon)."""

    def __init__(self, accept: bool = True) -> None:
        self.accept = accept
        self.codes: list[str] = []
        self.lines: list[str] = []

    def code_ready(self, code: str, *, peer_present: bool = False) -> None:
        self.codes.append(code)

    def sending(self, about: dict[str, Any]) -> None:
        self.lines.append(f"sending {about.get('title')}")

    def paired(self, verification: str) -> None:
        self.lines.append(f"paired {verification}")

    def status(self, text: str) -> None:
        self.lines.append(text)

    def progress(self, done: int, total: int) -> None:
        pass

    def stage(self, name: str, done: int | None = None, total: int | None = None) -> None:
        pass

    async def decide(self, offer: Any) -> bool:
        return self.accept


@dataclass
class SendOutcome:
    sent: bool
    code: str | None = None
    verification: str | None = None
    result: Any = None  # p2pd.transfer.channel.TransferResult when sent
    fallback_path: Path | None = None
    fallback_reason: str | None = None
    ice_path: Any = None  # p2pd.transfer.ice.IcePath: the path the connection took
    fallback_cause: Cause | None = None  # why there was no peer connection, as data
    title: str = ""  # the conversation's title (or its id), as offered
    about: dict[str, Any] = field(default_factory=dict)  # title, platform, session_id, messages


@dataclass
class ReceiveOutcome:
    summary: Unpacked  # title, context id, counts: what was checked while the document was written
    path: Path
    verification: str | None = None
    bytes_received: int = 0
    resumed_bytes: int = 0
    imported: Any = None
    ice_path: Any = None  # p2pd.transfer.ice.IcePath
    notes: list[str] = field(default_factory=list)

    @property
    def document(self) -> ConversationDocument:
        """The whole document, read back from the file written (in memory: only for an import)."""
        from p2pd.conversation.document_io import read_document

        return read_document(self.path)


@runtime_checkable
class Prepared(Protocol):
    """A conversation packed before the send (the daemon's outbox blob): ``production(work)`` gives the send's
    source (:class:`~p2pd.transfer.streaming.StreamSource` with ``wait_complete()`` and ``close()``)."""

    def production(self, work: Path) -> Any: ...


async def send_document(doc: ConversationDocument | Path | Prepared, *, signal_url: str, code: str | None, ui: UI,
                        peer_timeout: float = 300.0, connect_timeout: float = 30.0,
                        idle_timeout: float = 30.0, fallback_dir: Path | None = None,
                        control: Any = None) -> SendOutcome:
    """Send one conversation: a document, a file packed as a stream by a process of its own (a Claude Code
    session converted, a document file checked and sent as it is: memory bounded by a message, not the session;
    :mod:`p2pd.exchange.producer`), or a blob packed already. Raises
    WrongCodeError / DeclinedError / TransferFailedError (after the peer
    connected); falls back to a file (``SendOutcome.sent == False``) when no peer could be reached."""
    from p2pd.pairing.client import Rendezvous

    await asyncio.to_thread(workroom.sweep_stale_work)  # what killed runs left
    work = await asyncio.to_thread(workroom.work_folder, SEND_WORK_PREFIX)
    held = staging.hold(work)  # (a sweep by another process leaves it alone while this one lives)
    rv: Rendezvous | None = None
    link = None
    outcome = SendOutcome(sent=False)
    prod: Any = None  # a Production, or a Prepared blob's source
    named: asyncio.Future[None] | None = None

    async def fall_back(reason: str, cause: Cause) -> SendOutcome:
        outcome.fallback_reason = reason
        outcome.fallback_cause = cause
        from p2pd.agents.sources import safe_file_stem
        from p2pd.exchange.packing import blob_to_file

        start_packing()
        assert prod is not None
        blob = await asyncio.to_thread(prod.wait_complete)
        if named is not None:
            await named
        stem = safe_file_stem(outcome.about.get("session_id") or "conversation")
        folder = fallback_dir or Path.cwd()
        try:
            outcome.fallback_path = await asyncio.to_thread(blob_to_file, blob, folder, stem)
        except OSError as exc:  # the conversation stays where it was read from; say both things that failed
            refused = storage_error(exc, f"the fallback file into {folder.resolve()}")
            raise StorageError(f"no peer connection ({reason}); {refused}",
                               details={**refused.details, "fallback_reason": reason,
                                        "fallback_cause": cause.value}) from exc
        return outcome

    def start_packing() -> None:
        """Pack in another process while this one pairs and connects; streamed to a receiver that speaks it."""
        nonlocal prod, named
        if prod is None:
            prod = doc.production(work) if isinstance(doc, Prepared) else Production.start(doc, work)
            named = asyncio.ensure_future(name_it())

    async def name_it() -> None:  # the conversation is named as soon as its summary is known
        assert prod is not None
        info = (await asyncio.to_thread(prod.summary)).info
        outcome.title = info.title or info.session_id
        outcome.about = {"title": info.title, "platform": info.platform, "session_id": info.session_id,
                         "messages": info.message_count}
        ui.sending(outcome.about)

    try:
        ui.stage("packing the conversation")
        if code is not None:  # no code to show first: pack while the signaling server is reached
            start_packing()
        try:
            rv = await Rendezvous.open(signal_url, role="sender", code=code, connect_timeout=min(10.0, connect_timeout))
        except (TransferFailedError, OSError) as exc:
            if isinstance(exc, P2pdError):  # its message names the server already
                return await fall_back(str(exc), exc.cause)
            return await fall_back(f"signaling server unreachable: {exc}", Cause.SIGNALING_UNREACHABLE)
        outcome.code = str(rv.code)
        ui.code_ready(outcome.code, peer_present=rv.peer is not None)
        start_packing()  # (after the code: on a busy machine the packing would hold the code back)
        # The peer-connection stack (aiortc, 0.1-0.4 s to import) after the code is shown, while the pairing
        # waits on the network (the peer's messages, through the signaling server), as the receiver does.
        _preload("p2pd.transfer.peer")
        try:
            outcome.verification = await rv.pair(timeout=peer_timeout)
        except TransferFailedError as exc:
            return await fall_back(str(exc), exc.cause)
        ui.paired(outcome.verification)
        from p2pd.transfer.peer import connect
        from p2pd.transfer.streaming import send_stream

        try:
            link = await connect("offer", rv.send_sealed, _recv(rv, connect_timeout), timeout=connect_timeout,
                                 server_ice=rv.ice_servers, status=ui.status)
        except TransferFailedError as exc:
            await fall_back(str(exc), exc.cause)
            assert outcome.fallback_path is not None
            await tell_receiver(rv, outcome.fallback_path.name, exc.details.get("reason"))
            return outcome
        outcome.ice_path = link.path
        assert prod is not None and named is not None
        outcome.result = await send_stream(link.channel, prod, on_progress=ui.progress, idle_timeout=idle_timeout,
                                           max_message_size=DAEMON_MESSAGE_SIZE, control=control)
        await named
        outcome.sent = True
        return outcome
    finally:
        if named is not None and not named.done():
            named.cancel()
            with contextlib.suppress(BaseException):
                await named
        if prod is not None:
            prod.close()
        if link is not None:
            await link.close()
        if rv is not None:
            await rv.close()
        os.close(held)
        shutil.rmtree(work, ignore_errors=True)


def _recv(rv: Any, timeout: float) -> Callable[[], Awaitable[dict[str, Any]]]:
    async def recv() -> dict[str, Any]:
        msg = await rv.recv_sealed(timeout=timeout)
        if not isinstance(msg, dict):
            raise TransferFailedError("the peer sent a malformed signaling message")
        return msg

    return recv


async def receive_document(*, signal_url: str, code: str | None, ui: UI, out_dir: Path,
                           peer_timeout: float = 300.0, connect_timeout: float = 30.0,
                           idle_timeout: float = 30.0, control: Any = None, pretty: bool = False,
                           limits: ReceiveLimits | None = None) -> ReceiveOutcome:
    """Receive one conversation into ``out_dir`` (as ``.a2a.json``). ``code=None`` allocates a code for the
    sender to use (the receiver goes first); with a code either side may come first. ``limits``: the receive caps
    (default: the configured ones). Raises WrongCodeError, DeclinedError, TransferFailedError."""
    from p2pd.agents.sources import safe_file_stem
    from p2pd.config import receive_limits
    from p2pd.exchange import consuming
    from p2pd.exchange.packing import STAGING_PREFIX, indent_staged, place, unpack
    from p2pd.pairing.client import Rendezvous
    from p2pd.transfer.channel import receive_blob

    caps = limits or receive_limits()
    from p2pd.config import partial_max_age_hours
    from p2pd.transfer.partial import check_room, sweep

    await asyncio.to_thread(sweep, out_dir, partial_max_age_hours() * 3600)  # killed receives' partials
    await asyncio.to_thread(staging.sweep_files, out_dir, f"{STAGING_PREFIX}*")  # and streamed receives' staging

    out_dir.mkdir(parents=True, exist_ok=True)
    unpacked: list[Unpacked] = []  # checked and staged before DONE: a blob that does not parse is refused
    sinks: list[consuming.ChildUnpacker] = []  # a streamed transfer: checked and staged as it arrives (a child)

    loop = asyncio.get_running_loop()

    def validate(path: Path) -> None:  # in a worker thread, once every byte is verified
        loop.call_soon_threadsafe(ui.stage, "decompressing and checking the conversation")
        unpacked.append(unpack(path, out_dir, max_raw_size=caps.max_size))

    spare: list[Any] = []  # the checker of a streamed payload, started early: it imports while the peers pair

    def stream_sink(offer: Any) -> consuming.ChildUnpacker:
        # The document will take about the transcript's size (the offer's estimate): a folder with less than
        # half of that is refused before a byte is sent (not a closer bound: it is an estimate)
        check_room(out_dir, offer.raw_size, at_least=offer.raw_size // 2)
        proc = spare.pop() if spare else None
        sinks.append(consuming.ChildUnpacker(offer.codec or "", out_dir, max_raw_size=caps.max_size, proc=proc))
        return sinks[-1]

    rv = await Rendezvous.open(signal_url, role="receiver", code=code, connect_timeout=min(10.0, connect_timeout))
    link = None
    try:
        spare.append(consuming.spawn())
        ui.code_ready(str(rv.code), peer_present=rv.peer is not None)
        _preload("p2pd.transfer.peer")  # aiortc: 0.1-0.2 s, imported while the peer comes, not after it paired
        verification = await rv.pair(timeout=peer_timeout)
        ui.paired(verification)
        link = await _connect_or_hear_fallback(rv, connect_timeout, ui)
        received = await receive_blob(link.channel, out_dir, decide=ui.decide, on_progress=ui.progress,
                                      idle_timeout=idle_timeout, max_message_size=DAEMON_MESSAGE_SIZE,
                                      control=control, validate=validate, max_raw_size=caps.max_size,
                                      min_rate=caps.min_rate, rate_window=caps.rate_window,
                                      stream_sink=stream_sink)
        link_path = link.path
    finally:
        for proc in spare:  # not needed: the offer was not streamed, or nothing came
            await asyncio.to_thread(consuming.stop, proc)
        if link is not None:
            await link.close()
        await rv.close()
    streamed = [s.unpacked for s in sinks if s.unpacked is not None]
    got = streamed[0] if streamed else unpacked[0]
    if streamed:
        ui.status("streamed: checked while it arrived")
    ui.stage("writing the conversation document")  # staged while checked; now given its name
    staged = await asyncio.to_thread(indent_staged, got.staged, out_dir) if pretty else got.staged
    path = await asyncio.to_thread(place, staged, out_dir, safe_file_stem(got.context_id))
    if not streamed:
        with contextlib.suppress(OSError):
            os.unlink(received.path)
    return ReceiveOutcome(summary=got, path=path, verification=verification,
                          bytes_received=received.bytes_received, resumed_bytes=received.resumed_bytes,
                          ice_path=link_path)


def _preload(module: str) -> None:
    """Import ``module`` in a thread while the process waits on the network; a later import of it waits for that
    one (the import lock) instead of starting over."""
    import importlib
    import threading

    def load() -> None:
        with contextlib.suppress(Exception):  # the real import says what is wrong
            importlib.import_module(module)

    threading.Thread(target=load, name=f"import {module}", daemon=True).start()


async def _connect_or_hear_fallback(rv: Any, connect_timeout: float, ui: UI) -> Any:
    """The receiver's peer connection — unless the sender gives up first and says it wrote a file."""
    from p2pd.transfer.peer import connect

    signals = PeerSignals(rv, connect_timeout)
    connecting = asyncio.ensure_future(connect("answer", rv.send_sealed, signals.recv, timeout=connect_timeout,
                                               server_ice=rv.ice_servers, status=ui.status))
    try:
        waiting: set[asyncio.Future[Any]] = {connecting, signals.fallback}
        await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        if not connecting.done():
            connecting.cancel()
            with contextlib.suppress(asyncio.CancelledError, P2pdError):
                await connecting
            raise sender_fell_back(signals.fallback.result())
        try:
            return connecting.result()  # raises the connection's own failure
        except P2pdError as own:
            with contextlib.suppress(TimeoutError):
                raise sender_fell_back(await asyncio.wait_for(asyncio.shield(signals.fallback), GRACE),
                                       own) from None
            raise
    finally:
        await signals.close()


__all__ = ["UI", "Prepared", "QuietUI", "ReceiveOutcome", "SendOutcome", "receive_document",
           "send_document"]
