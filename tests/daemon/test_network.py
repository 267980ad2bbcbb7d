"""Paired devices over a real signaling server process and real aiortc peers on loopback (in one process)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from p2pd.agents.sources import load_file
from p2pd.conversation.document_io import parse_document, write_document
from p2pd.conversation.model import ConversationDocument
from p2pd.daemon.device_pairing import pair_device
from p2pd.daemon.devices import Device, DeviceBook
from p2pd.daemon.identity import Identity, load_identity
from p2pd.daemon.network import DeviceNetwork
from p2pd.daemon.outbox import Source, pack_outbox
from p2pd.daemon.peer_protocol import HandoffOffer
from p2pd.daemon.running import RunningTransfers
from p2pd.daemon.store import Store
from p2pd.errors import ConflictError, DeviceKeyChangedError, WrongCodeError
from p2pd.exchange.handover import QuietUI
from tests.corpus import claude_code_files
from tests.signal_process import SignalProcess, signal_server

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server() -> Iterator[SignalProcess]:
    with signal_server("--joins-per-minute", "100000", "--messages-per-second", "1000",
                       "--message-burst", "1000") as s:
        yield s


@pytest.fixture(autouse=True)
def loopback_ice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("P2PD_ICE_HOST_ADDRESSES", "127.0.0.1")


class InboxHost:
    """The receiving end the network hands verified blobs to: files them in the real store's inbox."""

    def __init__(self, folder: Path, claim: bool = True) -> None:
        self.store = Store(folder / "state.sqlite3")
        self.running = RunningTransfers()
        self.folder = folder
        self.claim = claim
        self.received: list[ConversationDocument] = []

    async def accept_conversation(self, device: Device, blob_path: Path, *, transfer_id: str,
                                  handoff_id: str | None, link_id: str | None) -> str:
        from p2pd.blob import container as blob

        doc = parse_document(blob.read(blob_path), source="received")
        path = self.folder / "inbox" / f"{transfer_id}.a2a.json"
        write_document(doc, path)
        self.store.add_inbox(transfer_id=transfer_id, from_peer=device.device_id, document_path=str(path),
                             title=doc.title, platform=doc.origin.platform, session_id=doc.origin.session_id,
                             messages=doc.counts.messages, sha256="", handoff_id=handoff_id)
        self.received.append(doc)
        return f"claude --resume {doc.origin.session_id}"

    async def resume_import(self, device: Device, entry_id: str) -> str:
        return ""  # (these tests never stop a daemon while it imports)

    def should_claim(self, device: Device, offer: HandoffOffer) -> bool:
        return self.claim


async def _pair(url: str, a: Path, b: Path) -> tuple[Identity, Identity]:
    ida, idb = load_identity(a), load_identity(b)
    ui_a = QuietUI()
    task = asyncio.create_task(pair_device(signal_url=url, code=None, identity=ida, book=DeviceBook(a), ui=ui_a,
                                           timeout=20))
    while not ui_a.codes:
        await asyncio.sleep(0.02)
    rb = await pair_device(signal_url=url, code=ui_a.codes[0], identity=idb, book=DeviceBook(b), ui=QuietUI(),
                           timeout=20)
    ra = await task
    assert ra.device.device_id == idb.device_id and rb.device.device_id == ida.device_id
    assert ra.device.secret == rb.device.secret and ra.verification == rb.verification
    return ida, idb


async def _until(check: Callable[[], Any], timeout: float = 30.0) -> Any:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while loop.time() < end:
        value = check()
        if value:
            return value
        await asyncio.sleep(0.05)
    raise AssertionError(f"condition not met within {timeout} s")


_SOURCES: list[Path] = []


@pytest.fixture(autouse=True)
def sources_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    _SOURCES.append(tmp_path_factory.mktemp("sources"))
    yield
    _SOURCES.pop()


def source_of(doc: ConversationDocument) -> Source:
    """A document sent as the daemon sends one: from a file its packing process reads (never from memory)."""
    path = _SOURCES[-1] / f"doc-{len(list(_SOURCES[-1].iterdir()))}.a2a.json"
    write_document(doc, path, pretty=False)
    return Source(str(path))


@pytest.fixture
def corpus_doc() -> ConversationDocument:
    path = next(p for p in claude_code_files(include_subagents=False) if 50_000 < p.stat().st_size < 400_000)
    return load_file(path)


@pytest.fixture
async def pair_of(tmp_path: Path, server: SignalProcess) -> AsyncIterator[list[tuple[DeviceNetwork, InboxHost]]]:
    a, b = tmp_path / "a", tmp_path / "b"
    ida, idb = await _pair(server.url, a, b)
    nets = []
    for folder, ident in ((a, ida), (b, idb)):
        host = InboxHost(folder)
        net = DeviceNetwork(folder, ident, host, server.url, connect_timeout=20, idle_timeout=20)
        await net.start()
        nets.append((net, host))
    try:
        yield nets
    finally:
        for net, _ in nets:
            await net.stop()


async def test_pairing_pins_each_others_keys(tmp_path: Path, server: SignalProcess) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    ida, idb = await _pair(server.url, a, b)
    da, db = DeviceBook(a).get(idb.device_id), DeviceBook(b).get(ida.device_id)
    assert da.key_bytes == idb.public_key and db.key_bytes == ida.public_key
    assert (a / "devices.json").stat().st_mode & 0o777 == 0o600


async def test_pairing_with_a_wrong_code_stores_nothing(tmp_path: Path, server: SignalProcess) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    ida, idb = load_identity(a), load_identity(b)
    ui = QuietUI()
    task = asyncio.create_task(pair_device(signal_url=server.url, code=None, identity=ida, book=DeviceBook(a),
                                           ui=ui, timeout=20))
    await _until(lambda: ui.codes)
    nameplate = ui.codes[0].split("-")[0]
    with pytest.raises(WrongCodeError):
        await pair_device(signal_url=server.url, code=f"{nameplate}-wrong-words", identity=idb,
                          book=DeviceBook(b), ui=QuietUI(), timeout=20)
    with pytest.raises(WrongCodeError):
        await task
    assert DeviceBook(a).devices == {} and DeviceBook(b).devices == {}


async def test_send_to_a_paired_device_without_a_code(pair_of: list[tuple[DeviceNetwork, InboxHost]],
                                                      corpus_doc: ConversationDocument) -> None:
    (na, ha), (nb, hb) = pair_of
    await _until(lambda: all(d["online"] for d in na.devices()))
    row = await na.send_to_device(nb.identity.device_id, source_of(corpus_doc))
    done = await _until(lambda: (r := ha.store.get_transfer(row.id)).state in ("done", "failed") and r)
    assert done.state == "done", done.error
    await _until(lambda: hb.received)
    assert len(hb.received) == 1
    assert hb.received[0].to_json_dict() == corpus_doc.to_json_dict()
    incoming = await _until(lambda: [r for r in hb.store.list_transfers() if r.direction == "in" and r.state == "done"])
    assert len(incoming) == 1 and incoming[0].sha256 == row.sha256
    # both sides record the path the connection took (loopback host candidates: direct)
    assert done.detail["path"]["kind"] == "direct" and incoming[0].detail["path"]["kind"] == "direct"


async def test_a_changed_device_key_is_refused(tmp_path: Path, server: SignalProcess,
                                               corpus_doc: ConversationDocument) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    ida, _ = await _pair(server.url, a, b)
    (b / "identity.key").unlink()  # b gets a new key but keeps the pair secret: a must not trust it
    idb2 = load_identity(b)
    ha, hb = InboxHost(a), InboxHost(b)
    na = DeviceNetwork(a, ida, ha, server.url)
    nb = DeviceNetwork(b, idb2, hb, server.url)
    await na.start()
    await nb.start()
    try:
        view = await _until(lambda: next((d for d in na.devices() if d["state"] == "refused"), None))
        assert "DIFFERENT KEY" in view["error"] and "p2pd devices remove" in view["error"]
        device_id = next(iter(na.book.devices))
        with pytest.raises(DeviceKeyChangedError) as refused:  # fails fast: a queued send would wait for ever
            await na.send_to_device(device_id, source_of(corpus_doc))
        assert refused.value.exit_code == 11 and "pinned" in str(refused.value) and "presented" in str(refused.value)
        assert ha.store.list_transfers() == [] and hb.received == []
    finally:
        await na.stop()
        await nb.stop()


async def test_handoff_is_claimed_transferred_and_completed(pair_of: list[tuple[DeviceNetwork, InboxHost]],
                                                            corpus_doc: ConversationDocument,
                                                            tmp_path: Path) -> None:
    (na, ha), (nb, hb) = pair_of
    packed = await pack_outbox(source_of(corpus_doc), tmp_path / "outbox")
    path, sha = packed.path, packed.sha256
    row = ha.store.create_handoff(target=nb.identity.device_id, package={"summary": "carry on"},
                                  document_path=str(path), title=corpus_doc.title, source={"sha256": sha})
    await _until(lambda: all(d["online"] for d in na.devices()))
    await na.handoff_created(row.id)
    final = await _until(lambda: (h := ha.store.get_handoff(row.id)).state in ("completed", "failed") and h)
    assert final.state == "completed", final.reason
    assert final.claimed_by == nb.identity.device_id
    assert final.output and final.output.startswith("claude --resume")
    assert len(hb.received) == 1


async def _start(folder: Path, url: str) -> tuple[DeviceNetwork, InboxHost]:
    host = InboxHost(folder)
    net = DeviceNetwork(folder, load_identity(folder), host, url, connect_timeout=20, idle_timeout=20)
    await net.start()
    return net, host


async def test_fan_out_to_three_devices_and_a_closed_link_delivers_nothing(
        tmp_path: Path, server: SignalProcess, corpus_doc: ConversationDocument) -> None:
    folders = [tmp_path / name for name in "abcd"]
    for other in folders[1:]:
        await _pair(server.url, folders[0], other)
    nets = [await _start(f, server.url) for f in folders]
    (na, ha), receivers = nets[0], nets[1:]
    try:
        await _until(lambda: len(na.devices()) == 3 and all(d["online"] for d in na.devices()))
        await _until(lambda: all(n.devices() and n.devices()[0]["online"] for n, _ in receivers))
        link = await na.create_link("team", [n.identity.device_id for n, _ in receivers])
        await _until(lambda: all(link.id in n.links.links for n, _ in receivers))
        rows = await na.send_to_link(link.id, source_of(corpus_doc))
        assert sorted(r.peer for r in rows) == sorted(n.identity.device_id for n, _ in receivers)
        await _until(lambda: all(ha.store.get_transfer(r.id).state == "done" for r in rows))
        await _until(lambda: all(host.received for _, host in receivers))
        shas = {r.sha256 for r in rows}
        assert len(shas) == 1
        for _, host in receivers:
            assert [d.to_json_dict() for d in host.received] == [corpus_doc.to_json_dict()]
            assert [r.sha256 for r in host.store.list_transfers() if r.direction == "in"] == list(shas)

        # b leaves: the next send goes to c and d only
        (nb, hb), (nc, _), _ = receivers
        await nb.leave_link(link.id)
        await _until(lambda: nb.identity.device_id in na.links.get(link.id).left)
        rows = await na.send_to_link(link.id, source_of(corpus_doc))
        assert nb.identity.device_id not in {r.peer for r in rows} and len(rows) == 2
        await _until(lambda: all(ha.store.get_transfer(r.id).state in ("done", "failed") for r in rows))
        assert [ha.store.get_transfer(r.id).error for r in rows] == [None, None]
        await _until(lambda: [len(h.received) for _, h in receivers] == [1, 2, 2])
        assert len(hb.received) == 1

        # only the creator closes the link: c cannot; a closes it for everyone, then a refuses to send and a
        # receiver refuses a transfer tagged with it
        with pytest.raises(ConflictError):
            await nc.close_link(link.id)
        await na.close_link(link.id)
        await _until(lambda: nc.links.get(link.id).closed)
        with pytest.raises(ConflictError):
            await na.send_to_link(link.id, source_of(corpus_doc))
        stale = await na.send_to_device(nc.identity.device_id, source_of(corpus_doc), link_id=link.id)
        final = await _until(lambda: (r := ha.store.get_transfer(stale.id)).state in ("done", "failed", "cancelled")
                             and r)
        assert final.state in ("failed", "cancelled")
        assert [len(h.received) for _, h in receivers] == [1, 2, 2]
    finally:
        for net, _ in nets:
            await net.stop()


async def test_a_transfer_cut_by_a_restart_resumes(tmp_path: Path, server: SignalProcess,
                                                   corpus_doc: ConversationDocument) -> None:
    big = _big(corpus_doc)
    filler = big.messages[-1].parts[0].text
    a, b = tmp_path / "a", tmp_path / "b"
    await _pair(server.url, a, b)
    na, ha = await _start(a, server.url)
    nb, hb = await _start(b, server.url)
    try:
        await _until(lambda: all(d["online"] for d in na.devices()))
        row = await na.send_to_device(nb.identity.device_id, source_of(big))
        await _until(lambda: ha.store.get_transfer(row.id).bytes_done > row.size // 5, timeout=60)
        await na.stop()  # the sender goes down mid-transfer
        # cut off, never failed: its connection closed first (interrupted), or still running (marked at start)
        assert ha.store.get_transfer(row.id).state in ("running", "interrupted")
        na, ha = await _start(a, server.url)  # …and comes back: the row is interrupted, then sent again
        final = await _until(lambda: (r := ha.store.get_transfer(row.id)).state in ("done", "failed") and r,
                             timeout=90)
        assert final.state == "done", final.error
        assert final.detail["resumed_bytes"] > 0
        assert len(hb.received) == 1 and hb.received[0].messages[-1].parts[0].text == filler
    finally:
        await na.stop()
        await nb.stop()


async def test_devices_reconnect_after_the_signaling_server_restarts(tmp_path: Path,
                                                                       corpus_doc: ConversationDocument) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    a, b = tmp_path / "a", tmp_path / "b"
    with signal_server("--port", str(port)) as first:
        await _pair(first.url, a, b)
        na, ha = await _start(a, first.url)
        nb, hb = await _start(b, first.url)
        try:
            await _until(lambda: na.devices()[0]["online"] and nb.devices()[0]["online"])
        except BaseException:
            await na.stop()
            await nb.stop()
            raise
    try:
        await _until(lambda: not na.devices()[0]["online"], timeout=15)  # the server is gone
        row = await na.send_to_device(nb.identity.device_id, source_of(corpus_doc))  # queued meanwhile
        with signal_server("--port", str(port)):
            await _until(lambda: na.devices()[0]["online"] and nb.devices()[0]["online"], timeout=60)
            await _until(lambda: ha.store.get_transfer(row.id).state == "done", timeout=30)
            await _until(lambda: hb.received)
    finally:
        await na.stop()
        await nb.stop()


# Random bytes a transfer that a test cuts off carries (as base64: ~40 MB that no codec shrinks much): cut at a fifth
# (a few of the receiver's 2 MiB write batches in place, so there is something to resume), the rest still takes
# ~0.6 s at the ~50 MB/s the data path moves (with 9 MB, the whole transfer sometimes got through before the sender
# stopped).
CUT_SIZE = 30_000_000


def _big(doc: ConversationDocument, size: int = CUT_SIZE) -> ConversationDocument:
    import base64
    import os

    from p2pd.conversation.model import Message, Part

    big = doc.model_copy(deep=True)
    filler = base64.b64encode(os.urandom(size)).decode("ascii")
    big.messages.append(Message(message_id="filler", role="ROLE_USER", parts=[Part(text=filler)]))
    return big


async def test_a_receiver_back_within_seconds_gets_the_transfer_resumed_not_failed(
        tmp_path: Path, server: SignalProcess, corpus_doc: ConversationDocument) -> None:
    """The receiver goes down mid-transfer and is back a moment later. Its data channel closing reaches the
    sender as "peer gone" (whatever the reason text says): the sender's row is interrupted, never failed, and the
    transfer resumes from what the receiver kept."""
    big = _big(corpus_doc)
    a, b = tmp_path / "a", tmp_path / "b"
    await _pair(server.url, a, b)
    na, ha = await _start(a, server.url)
    nb, hb = await _start(b, server.url)
    seen: list[str] = []
    try:
        await _until(lambda: all(d["online"] for d in na.devices()))
        row = await na.send_to_device(nb.identity.device_id, source_of(big))
        await _until(lambda: ha.store.get_transfer(row.id).bytes_done > row.size // 5, timeout=60)
        await nb.stop()  # the receiver goes away mid-transfer…
        nb, hb = await _start(b, server.url)  # …and is back within seconds

        def final() -> Any:
            r = ha.store.get_transfer(row.id)
            if not seen or seen[-1] != r.state:
                seen.append(r.state)
            return r.state in ("done", "failed", "cancelled") and r

        done = await _until(final, timeout=90)
        assert done.state == "done", (done.error, done.cause, seen)
        assert "failed" not in seen
        assert done.detail["resumed_bytes"] > 0
        assert hb.received and hb.received[-1].messages[-1].parts[0].text == big.messages[-1].parts[0].text
    finally:
        await na.stop()
        await nb.stop()


async def test_a_handoff_whose_sender_restarts_mid_transfer_still_completes(
        tmp_path: Path, server: SignalProcess, corpus_doc: ConversationDocument) -> None:
    """The sender stops while the handoff's conversation is on its way and comes back: the receiver does not
    report the handoff failed (the sender went away — a retry will come), the transfer resumes, and the handoff
    ends completed on the sender."""
    big = _big(corpus_doc)
    a, b = tmp_path / "a", tmp_path / "b"
    await _pair(server.url, a, b)
    na, ha = await _start(a, server.url)
    nb, hb = await _start(b, server.url)
    try:
        packed = await pack_outbox(source_of(big), a / "outbox")
        path, sha = packed.path, packed.sha256
        hid = ha.store.create_handoff(target=nb.identity.device_id, package={"summary": "carry on"},
                                      document_path=str(path), title="big", source={"sha256": sha}).id
        await _until(lambda: all(d["online"] for d in na.devices()))
        await na.handoff_created(hid)
        tid = await _until(lambda: next((t.id for t in ha.store.list_transfers() if t.handoff_id == hid
                                         and t.bytes_done > t.size // 5), None), timeout=60)
        await na.stop()  # the sender goes down mid-transfer…
        assert ha.store.get_handoff(hid).state == "claimed"  # its conversation on the way
        na, ha = await _start(a, server.url)  # …and comes back
        final = await _until(lambda: (h := ha.store.get_handoff(hid)).state in ("completed", "failed", "cancelled")
                             and h, timeout=90)
        assert final.state == "completed", final.reason
        row = ha.store.get_transfer(tid)
        assert row.state == "done" and row.detail["resumed_bytes"] > 0
        assert len(hb.received) == 1
    finally:
        await na.stop()
        await nb.stop()


async def test_a_handoff_tag_counts_only_for_a_handoff_the_receiver_was_granted(
        pair_of: list[tuple[DeviceNetwork, InboxHost]], corpus_doc: ConversationDocument, tmp_path: Path) -> None:
    """A paired device tags an ordinary transfer with a handoff id (and its document names a folder): the receiver
    files it as an ordinary conversation — no handoff, no import, nothing reported."""
    from p2pd.daemon.handoffs import HandoffPackage, attach_package

    (na, ha), (nb, hb) = pair_of
    attach_package(corpus_doc, HandoffPackage(summary="x", cwd=str(tmp_path)), handoff_id="ho_forged")
    await _until(lambda: all(d["online"] for d in na.devices()) and all(d["online"] for d in nb.devices()))
    offered = await asyncio.to_thread(hb.store.offer_received, "ho_offered", na.identity.device_id, title="t",
                                      summary="", messages=1)  # offered but never granted: not honoured either
    packed = await pack_outbox(source_of(corpus_doc), tmp_path / "outbox")
    row = await na.queue_blob(nb.identity.device_id, packed.path, title="t", sha256="", handoff_id="ho_forged")
    await _until(lambda: ha.store.get_transfer(row.id).state == "done", timeout=60)
    entries = await _until(lambda: hb.store.list_inbox())
    assert [e.handoff_id for e in entries] == [None]
    assert [t.handoff_id for t in hb.store.list_transfers() if t.direction == "in"] == [None]
    assert nb.offers.honoured("ho_forged", na.identity.device_id) is None
    assert nb.offers.honoured(offered.id, na.identity.device_id) is None
