"""The accept policy between two paired device networks (real signaling server process, real aiortc peers on
loopback): refusals reach the sender with a typed cause and store nothing; ``ask`` holds a transfer pending —
nothing stored — until it is accepted or declined."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from p2pd.conversation.document_io import dumps
from p2pd.conversation.model import ConversationDocument
from p2pd.daemon.accept_policy import AcceptPolicy
from p2pd.daemon.network import DeviceNetwork
from p2pd.daemon.store import TransferRow
from p2pd.transfer.partial import PARTIAL_DIR
from tests.daemon.test_network import (
    InboxHost,
    _pair,
    _until,
    corpus_doc,
    loopback_ice,
    server,
    source_of,
    sources_folder,
)
from tests.signal_process import SignalProcess

pytestmark = pytest.mark.slow
__all__ = ["corpus_doc", "loopback_ice", "server", "sources_folder"]  # (fixtures)

Nets = tuple[tuple[DeviceNetwork, InboxHost], tuple[DeviceNetwork, InboxHost]]


@pytest.fixture
async def make_pair(tmp_path: Path, server: SignalProcess) -> AsyncIterator[Callable[[AcceptPolicy], object]]:
    started: list[DeviceNetwork] = []

    async def make(policy: AcceptPolicy) -> Nets:
        a, b = tmp_path / "a", tmp_path / "b"
        ida, idb = await _pair(server.url, a, b)
        out = []
        for folder, ident, pol in ((a, ida, AcceptPolicy()), (b, idb, policy)):
            host = InboxHost(folder)
            net = DeviceNetwork(folder, ident, host, server.url, connect_timeout=20, idle_timeout=20, policy=pol)
            await net.start()
            started.append(net)
            out.append((net, host))
        await _until(lambda: all(d["online"] for d in out[0][0].devices()))
        return out[0], out[1]

    yield make
    for net in started:
        await net.stop()


def variant(doc: ConversationDocument, n: int) -> ConversationDocument:
    copy = doc.model_copy(deep=True)
    copy.title = f"variant {n}"
    return copy


async def ended(host: InboxHost, tid: str) -> TransferRow:
    return await _until(lambda: (r := host.store.get_transfer(tid)).state in ("done", "failed", "cancelled") and r)


def incoming(host: InboxHost) -> list[TransferRow]:
    return [r for r in host.store.list_transfers() if r.direction == "in"]


def nothing_stored(net: DeviceNetwork) -> bool:
    part = net.partial / PARTIAL_DIR
    return not part.exists() or not any(part.iterdir())


async def test_refusals_reach_the_sender_with_a_typed_cause_and_store_nothing(make_pair, corpus_doc) -> None:  # type: ignore[no-untyped-def]
    size = len(dumps(corpus_doc, pretty=False))
    (na, ha), (nb, hb) = await make_pair(AcceptPolicy(max_size=size + 1000, transfers_per_hour=1))
    big = variant(corpus_doc, 0)
    big.title = "x" * 2000  # over max_size by the title alone
    over = await ended(ha, (await na.send_to_device(nb.identity.device_id, source_of(big))).id)
    assert (over.state, over.cause) == ("failed", "declined") and "over its size limit" in (over.error or "")
    first = await ended(ha, (await na.send_to_device(nb.identity.device_id, source_of(corpus_doc))).id)
    assert first.state == "done", first.error
    second = await ended(ha, (await na.send_to_device(nb.identity.device_id, source_of(variant(corpus_doc, 1)))).id)
    assert (second.state, second.cause) == ("failed", "rate_limited"), second
    assert "1 transfers per hour" in (second.error or "")
    await _until(lambda: len(incoming(hb)) == 3 and all(r.state != "queued" for r in incoming(hb)))
    causes = sorted((r.state, r.cause or "") for r in incoming(hb))
    assert causes == [("done", ""), ("failed", "rate_limited"), ("failed", "too_large")]
    assert len(hb.received) == 1 and nothing_stored(nb)


async def test_a_device_not_in_the_allowed_list_is_refused(make_pair, corpus_doc) -> None:  # type: ignore[no-untyped-def]
    (na, ha), (nb, hb) = await make_pair(AcceptPolicy(devices=("some-other-device",)))
    row = await ended(ha, (await na.send_to_device(nb.identity.device_id, source_of(corpus_doc))).id)
    assert (row.state, row.cause) == ("failed", "not_allowed") and "declined by" in (row.error or "")
    await _until(lambda: [r for r in incoming(hb) if r.state == "failed"])
    assert [r.cause for r in incoming(hb)] == ["not_allowed"] and hb.received == [] and nothing_stored(nb)


async def test_ask_holds_the_transfer_pending_until_accepted_or_declined(make_pair, corpus_doc) -> None:  # type: ignore[no-untyped-def]
    (na, ha), (nb, hb) = await make_pair(AcceptPolicy(ask=True))
    out = await na.send_to_device(nb.identity.device_id, source_of(corpus_doc))
    waiting = await _until(lambda: nb.transfers.pending.ids())
    row = hb.store.get_transfer(waiting[0])
    assert row.state == "queued" and row.detail["pending"] is True and row.detail["device"] == na.identity.name
    assert ha.store.get_transfer(out.id).state == "running"  # the sender waits for the answer
    assert hb.received == [] and nothing_stored(nb)
    nb.transfers.answer(waiting[0], True)
    assert (await ended(ha, out.id)).state == "done"
    await _until(lambda: hb.received)

    out2 = await na.send_to_device(nb.identity.device_id, source_of(variant(corpus_doc, 2)))
    waiting2 = await _until(lambda: nb.transfers.pending.ids())
    nb.transfers.answer(waiting2[0], False)
    declined = await ended(ha, out2.id)
    assert (declined.state, declined.cause) == ("failed", "declined"), declined
    mine = await ended(hb, waiting2[0])
    assert (mine.state, mine.cause, mine.detail["pending"]) == ("failed", "declined", False)
    assert len(hb.received) == 1 and nothing_stored(nb)
