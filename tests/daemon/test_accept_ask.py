"""``[accept] ask = true`` between two real daemons (``p2pd serve`` processes paired with ``p2pd pair``): a
transfer from the paired device waits in the inbox as pending; ``p2pd inbox accept`` takes it, the MCP tool
``answer_transfer`` declines the next one (the sender's row fails with cause ``declined``); nothing of the declined
one is stored."""

from __future__ import annotations

import json

import pytest

from tests.daemon.conftest import SESSION_ID, Daemon, PairMaker, device_id, online, wait_for
from tests.daemon.test_mcp import call, mcp_client

pytestmark = pytest.mark.slow


@pytest.fixture
def asking(paired: PairMaker) -> tuple[Daemon, Daemon]:
    return paired(b_config="[accept]\nask = true\nmax_size = 100_000_000\n")


def pending(b: Daemon) -> list[dict]:  # type: ignore[type-arg]
    with b.client() as c:
        return c.get("/inbox/pending").json()  # type: ignore[no-any-return]


async def test_a_pending_transfer_is_accepted_with_the_cli_and_declined_through_mcp(asking) -> None:  # type: ignore[no-untyped-def]
    a, b = asking
    b_id = device_id(b)
    wait_for(lambda: online(a, b_id), what="b online at a")
    with a.client() as c:
        first = c.post("/send", json={"session": SESSION_ID, "to": {"device": b_id}}).json()
    waiting = wait_for(lambda: pending(b), what="a pending transfer at b")
    listed = b.p2pd("inbox")
    assert listed.returncode == 0, listed.stderr
    assert "Waiting for your decision" in listed.stderr and waiting[0]["id"] in listed.stdout
    with a.client() as c:
        assert c.get(f"/transfers/{first['id']}").json()["state"] == "running"
    with b.client() as c:
        assert c.get("/inbox").json() == []
    accepted = b.p2pd("inbox", "accept", waiting[0]["id"])
    assert accepted.returncode == 0, accepted.stderr
    with a.client() as c:
        done = wait_for(lambda: (r := c.get(f"/transfers/{first['id']}").json())["state"] in ("done", "failed") and r)
    assert done["state"] == "done", done
    with b.client() as c:
        wait_for(lambda: len(c.get("/inbox").json()) == 1, what="the accepted conversation in b's inbox")
        assert c.post(f"/transfers/{waiting[0]['id']}/accept").status_code == 409  # answered already

    with a.client() as c:  # the same session again: the receiver already has it, so it must ask again
        second = c.post("/send", json={"session": SESSION_ID, "to": {"device": b_id}}).json()
    waiting2 = wait_for(lambda: pending(b), what="the second pending transfer")
    async with mcp_client(b.url, b.token) as client:
        inbox = await call(client, "list_inbox")
        assert [p["id"] for p in inbox["pending"]] == [waiting2[0]["id"]] and len(inbox["inbox"]) == 1
        answered = await call(client, "answer_transfer", transfer_id=waiting2[0]["id"], accept=False)
        assert (answered["state"], answered["cause"]) == ("failed", "declined")
    with a.client() as c:
        row = wait_for(lambda: (r := c.get(f"/transfers/{second['id']}").json())["state"] in ("done", "failed") and r)
    assert (row["state"], row["cause"]) == ("failed", "declined"), row
    with b.client() as c:
        assert len(c.get("/inbox").json()) == 1 and c.get("/inbox/pending").json() == []
    partial = b.home / "partial" / ".p2pd-partial"
    assert not partial.exists() or not any(partial.iterdir())
    shown = json.loads(b.p2pd("transfers", "--json").stdout)
    assert sorted((t["state"], t["cause"]) for t in shown) == [("done", None), ("failed", "declined")]
