"""Targets and what `send --to` shows, with two real daemons and a real signaling server: a typo and this device
itself are refused at once with their exit codes; a stopped device shows offline (since when), and a send to it
returns with a clear message and stays queued — it goes when the device is back; a device that comes back with
another key is refused and a send to it fails fast with exit 11 and both fingerprints. A claim made over HTTP and
never started returns to pending."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.daemon.conftest import SESSION_ID, Daemon, PairMaker, device_id, online, wait_for

pytestmark = pytest.mark.slow


@pytest.fixture
def desk_and_laptop(paired: PairMaker) -> tuple[Daemon, Daemon]:
    return paired(names=("desk", "laptop"))


def _device(a: Daemon, ident: str) -> dict[str, object]:
    with a.client() as c:
        return next(d for d in c.get("/devices").json() if d["id"] == ident)


def test_targets_are_checked_and_an_absent_device_keeps_the_send_queued(
        desk_and_laptop: tuple[Daemon, Daemon]) -> None:
    a, b = desk_and_laptop
    b_id = device_id(b)
    wait_for(lambda: online(a, b_id), what="laptop online at desk")
    typo = a.p2pd("send", SESSION_ID, "--to", "lapotp")
    assert typo.returncode == 3 and "no paired device 'lapotp'" in typo.stderr and "laptop" in typo.stderr
    itself = a.p2pd("send", SESSION_ID, "--to", "desk")
    assert itself.returncode == 4 and "this device" in itself.stderr
    with a.client() as c:
        assert c.get("/transfers").json() == []  # nothing was queued for either

    # a stopped device shows offline (not connecting), and a send to it returns, queued, not failed
    b.stop()
    wait_for(lambda: _device(a, b_id)["state"] == "offline", what="laptop offline at desk")
    time.sleep(2.0)  # a's daemon waits alone in the pair room meanwhile: still offline
    assert _device(a, b_id)["state"] == "offline"
    listed = a.p2pd("devices")
    assert "offline" in listed.stdout and "connecting" not in listed.stdout
    sent = a.p2pd("send", SESSION_ID, "--to", "laptop", timeout=120)
    assert sent.returncode == 0, sent.stderr
    assert "laptop (offline since" in sent.stderr and "stays queued" in sent.stderr, sent.stderr
    tid = sent.stdout.split()[0]
    with a.client() as c:
        assert c.get(f"/transfers/{tid}").json()["state"] in ("queued", "interrupted")
    b.start()  # back: it goes
    with a.client() as c:
        wait_for(lambda: c.get(f"/transfers/{tid}").json()["state"] == "done", timeout=90, what="sent after return")
    with b.client() as c:
        assert len(c.get("/inbox").json()) == 1

    # a device that comes back with another key: refused, and a send fails fast with exit 11 and both fingerprints
    b.stop()
    (b.home / "identity.key").unlink()
    b.start()
    wait_for(lambda: _device(a, b_id)["state"] == "refused", timeout=90, what="laptop refused at desk")
    started = time.monotonic()
    refused = a.p2pd("send", SESSION_ID, "--to", "laptop")
    assert refused.returncode == 11, refused.stderr
    assert "DIFFERENT KEY" in refused.stderr and "pinned" in refused.stderr and "presented" in refused.stderr
    assert time.monotonic() - started < 60
    with a.client() as c:
        assert [t["id"] for t in c.get("/transfers").json()] == [tid]  # nothing new queued


def test_a_claim_over_http_never_started_returns_to_pending(tmp_path: Path) -> None:
    d = Daemon(tmp_path, P2PD_HANDOFF_CLAIM_TIMEOUT="1").start()
    try:
        with d.client() as c:
            h = c.post("/handoffs", json={"summary": "s", "goal": "g", "session_id": SESSION_ID}).json()
            kept = c.post("/handoffs", json={"summary": "s", "goal": "g", "session_id": SESSION_ID}).json()
            assert c.post(f"/handoffs/{h['id']}/claim", json={"claimer": "desk"}).json()["state"] == "claimed"
            assert c.post(f"/handoffs/{kept['id']}/claim").status_code == 200
            assert c.post(f"/handoffs/{kept['id']}/start").json()["state"] == "started"  # started: kept
            back = wait_for(lambda: (r := c.get(f"/handoffs/{h['id']}").json())["state"] == "pending" and r,
                            timeout=30, what="the claim released")
            assert back["claimed_by"] is None and "not started in time" in back["reason"]
            assert c.post(f"/handoffs/{h['id']}/claim", json={"claimer": "laptop"}).json()["claimed_by"] == "laptop"
            time.sleep(2.0)
            assert c.get(f"/handoffs/{kept['id']}").json()["state"] == "started"
            done = c.post(f"/handoffs/{kept['id']}/complete", json={"result": "did it"}).json()
            assert (done["state"], done["result"]) == ("completed", "did it")
    finally:
        d.kill()
