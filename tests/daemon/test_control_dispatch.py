"""The control-channel dispatch, in process: what the network does with each message a paired device sends
(no signaling server, no peer connection; the session records what it would send)."""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import pytest

from p2pd.daemon.device_session import DeviceSession
from p2pd.daemon.devices import Device
from p2pd.daemon.identity import load_identity
from p2pd.daemon.network import DeviceNetwork
from p2pd.daemon.peer_protocol import (
    Control,
    HandoffClaim,
    HandoffClaimResult,
    HandoffOffer,
    HandoffState,
    LinkMember,
    LinkUpdate,
    LinkView,
    Rtc,
)
from p2pd.daemon.running import RunningTransfers
from p2pd.daemon.store import Store


class Host:
    def __init__(self, folder: Path, claim: bool) -> None:
        self.store = Store(folder / "state.sqlite3")
        self.running = RunningTransfers()
        self.claim = claim

    async def accept_conversation(self, device: Device, blob_path: Path, **_: Any) -> str:
        raise AssertionError("nothing is received in these tests")

    async def resume_import(self, device: Device, entry_id: str) -> str:
        raise AssertionError("nothing is received in these tests")

    def should_claim(self, device: Device, offer: HandoffOffer) -> bool:
        return self.claim


class RecordingSession(DeviceSession):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sent: list[Control] = []
        self.presence.came_online()

    async def send(self, message: Control) -> None:
        self.sent.append(message)


def _device(name: str) -> Device:
    key = os.urandom(32)
    from p2pd.daemon.identity import device_id_of

    return Device(device_id=device_id_of(key), name=name, public_key=base64.b64encode(key).decode(),
                  secret=base64.b64encode(os.urandom(32)).decode(), paired_at=0.0)


@pytest.fixture
def wired(tmp_path: Path, request: pytest.FixtureRequest) -> tuple[DeviceNetwork, RecordingSession, Host]:
    claim = getattr(request, "param", True)
    host = Host(tmp_path, claim)
    net = DeviceNetwork(tmp_path, load_identity(tmp_path), host, "ws://127.0.0.1:9/")
    device = _device("b")
    session = RecordingSession(net, device)
    net.sessions[device.device_id] = session
    net.book.devices[device.device_id] = device  # paired (in memory: the book's file is not read again here)
    return net, session, host


async def test_rtc_goes_to_the_transfer_that_expects_it(wired: Any) -> None:
    net, session, _ = wired
    session.expect_link("tr_1")
    await net.dispatch(session, Rtc(tid="tr_1", m={"type": "offer", "sdp": "x"}))
    await net.dispatch(session, Rtc(tid="tr_unknown", m={"type": "offer", "sdp": "y"}))
    assert session.rtc["tr_1"].get_nowait() == {"type": "offer", "sdp": "x"}
    assert set(session.rtc) == {"tr_1"}


@pytest.mark.parametrize("wired", [True, False], indirect=True)
async def test_an_offered_handoff_is_claimed_only_when_the_host_says_so(wired: Any) -> None:
    net, session, host = wired
    await net.dispatch(session, HandoffOffer(hid="ho_1", title="t"))
    assert session.sent == ([HandoffClaim(hid="ho_1")] if host.claim else [])


async def test_a_claim_is_granted_once_and_queues_the_transfer(wired: Any, tmp_path: Path) -> None:
    net, session, host = wired
    blob = tmp_path / "blob.a2a.p2pd"
    blob.write_bytes(b"x" * 100)
    hid = host.store.create_handoff(target=session.device.device_id, package={}, document_path=str(blob),
                                    title="t", source={"sha256": "ab"}).id
    await net.dispatch(session, HandoffClaim(hid=hid))
    await net.dispatch(session, HandoffClaim(hid=hid))
    await net.dispatch(session, HandoffClaim(hid="ho_missing"))
    results = [m for m in session.sent if isinstance(m, HandoffClaimResult)]
    assert [(r.hid, r.granted) for r in results] == [(hid, True), (hid, False), ("ho_missing", False)]
    assert host.store.get_handoff(hid).state == "claimed"  # started once the claimer says its work began
    queued = host.store.list_transfers()
    assert [(t.peer, t.handoff_id, t.state) for t in queued] == [(session.device.device_id, hid, "queued")]


async def test_handoff_states_count_only_from_the_claimer(wired: Any) -> None:
    net, session, host = wired
    hid = host.store.create_handoff(target="any", package={}, document_path="/x", title="t", source={}).id
    await net.dispatch(session, HandoffState(hid=hid, state="completed", output="claude --resume x"))
    assert host.store.get_handoff(hid).state == "pending"  # not claimed by it: ignored
    host.store.claim_handoff(hid, session.device.device_id)
    host.store.transition_handoff(hid, "started")
    await net.dispatch(session, HandoffState(hid=hid, state="completed", output="claude --resume x"))
    row = host.store.get_handoff(hid)
    assert (row.state, row.output) == ("completed", "claude --resume x")
    await net.dispatch(session, HandoffState(hid=hid, state="failed", reason="late"))
    assert host.store.get_handoff(hid).state == "completed"


async def test_a_link_closed_by_its_creator_cancels_what_is_queued_for_it(wired: Any, tmp_path: Path) -> None:
    net, session, host = wired
    peer = session.device.device_id
    # the peer device made the link (only a link's creator introduces and closes it)
    view = LinkView(id="link-0123456789abcdef", name="team", created_by=peer,
                    members=[LinkMember(id=peer, name="b"), LinkMember(id=net.identity.device_id)])
    await net.dispatch(session, LinkUpdate(link=view))
    assert net.links.get(view.id) is not None and not net.links.get(view.id).closed
    blob = tmp_path / "blob.a2a.p2pd"
    blob.write_bytes(b"x")
    queued = host.store.create_transfer("out", peer, blob_path=str(blob), link_id=view.id)
    other = host.store.create_transfer("out", peer, blob_path=str(blob))
    await net.dispatch(session, LinkUpdate(link=view.model_copy(update={"closed": True, "closed_by": peer})))
    assert net.links.get(view.id).closed
    row = host.store.get_transfer(queued.id)
    assert (row.state, row.cause) == ("cancelled", "cancelled") and "closed the link" in (row.error or "")
    assert host.store.get_transfer(other.id).state == "queued"
