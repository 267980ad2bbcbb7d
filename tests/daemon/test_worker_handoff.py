"""Seed 000 (inverse teleport) end to end: two real daemons paired through a real signaling server, the sender's
and the worker's agents each through a real MCP client session. The receiving daemon does not accept handoffs by
itself (accept_handoffs = false): the offer waits, listed, until its agent claims it; the agent gets the package in
its session (the SessionStart hook), reports started and completed with a result, and the sender sees the result.
Also: targets are checked when a handoff or send is made."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.conftest import SESSION_ID, Daemon, PairMaker, device_id, online, until, wait_for
from tests.daemon.test_mcp import call, call_error, mcp_client

pytestmark = pytest.mark.slow


@pytest.fixture
def desk_and_laptop(paired: PairMaker) -> tuple[Daemon, Daemon]:
    return paired(names=("desk", "laptop"), b_env={"P2PD_ACCEPT_HANDOFFS": "false"})



async def test_a_worker_agent_claims_starts_and_completes_and_the_sender_sees_its_result(
        desk_and_laptop: tuple[Daemon, Daemon], tmp_path: Path) -> None:
    a, b = desk_and_laptop
    b_id = device_id(b)
    wait_for(lambda: online(a, b_id), what="laptop online at desk")
    project = tmp_path / "project"  # the sender's folder; the same path exists on the receiving side here
    project.mkdir()
    async with mcp_client(a.url, a.token) as sender, mcp_client(b.url, b.token) as worker:
        # targets are checked when the handoff is made
        assert (await call_error(sender, "handoff", summary="s", goal="g", target="lapotp",
                                 session_id=SESSION_ID)).count("[not_found] no paired device")
        assert (await call_error(sender, "handoff", summary="s", goal="g", target="desk",
                                 session_id=SESSION_ID)).count("[invalid_input]")  # this device itself
        created = await call(sender, "handoff", summary="Parser split; 3 tests red", goal="make the tests green",
                             notes="run pytest -x", cwd=str(project), session_id=SESSION_ID, target="laptop",
                             files=[{"path": "src/parser.py", "summary": "the new parser"}])
        hid = created["id"]
        assert created["target"] == b_id  # stored by id, given by name

        # offered, listed on the receiving side, and left alone there (accept_handoffs = false)
        async def offered() -> Any:
            return next((o for o in (await call(worker, "list_offered_handoffs"))["offers"] if o["id"] == hid), None)

        offer = await until(offered, what="the offer listed at the laptop")
        assert offer["state"] == "offered" and offer["from_name"] == "desk"
        assert offer["summary"] == "Parser split; 3 tests red"
        listed = b.p2pd("handoffs", "offered")
        assert listed.returncode == 0 and hid in listed.stdout and "desk" in listed.stdout, listed
        with b.client() as c:
            assert [o["id"] for o in c.get("/offers").json()] == [hid]
        await asyncio.sleep(1.0)
        assert (await call(sender, "get_handoff", handoff_id=hid))["state"] == "pending"

        # the worker claims it: the conversation comes, lands in the inbox and is imported
        claimed = await call(worker, "claim_handoff", handoff_id=hid)
        assert claimed["state"] == "claimed"
        assert (await call(sender, "get_handoff", handoff_id=hid))["claimed_by"] == b_id

        async def arrived() -> Any:
            o = await call(worker, "get_offered_handoff", handoff_id=hid)
            return o if o.get("resume_command") else None

        offer = await until(arrived, timeout=90, what="the conversation imported at the laptop")
        assert offer["package"]["goal"] == "make the tests green" and offer["inbox_id"]
        with b.client() as c:
            imported = c.get(f"/inbox/{offer['inbox_id']}").json()["imported"]
        # the resumed session is told the goal, the summary, the notes and how to report
        hook = b.p2pd("hook", "session-start", input=json.dumps({
            "session_id": imported["session_id"], "transcript_path": imported["path"], "cwd": str(project),
            "source": "resume", "hook_event_name": "SessionStart"}))
        assert hook.returncode == 0, hook.stderr
        context = json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]
        for text in ("make the tests green", "Parser split; 3 tests red", "run pytest -x", "src/parser.py",
                     "complete_handoff", hid):
            assert text in context, (text, context)
        # an unrelated session gets no handoff context
        other = b.p2pd("hook", "session-start", input=json.dumps({"session_id": SESSION_ID, "cwd": "/x"}))
        assert "complete_handoff" not in other.stdout

        assert (await call(worker, "start_handoff", handoff_id=hid))["state"] == "started"

        async def sender_state(state: str) -> Any:
            h = await call(sender, "get_handoff", handoff_id=hid)
            return h if h["state"] == state else None

        await until(lambda: sender_state("started"), what="started at the desk")
        done = await call(worker, "complete_handoff", handoff_id=hid, result="3 tests fixed, PR #12 opened")
        assert done["state"] == "completed"
        final = await until(lambda: sender_state("completed"), what="completed at the desk")
        assert final["result"] == "3 tests fixed, PR #12 opened"
        assert "--resume" in (final["output"] or "")
        # a second report is refused: completed is final
        assert (await call_error(worker, "fail_handoff", handoff_id=hid, reason="late")).count("[conflict]")
    shown = a.p2pd("handoffs", "list")
    assert "laptop" in shown.stdout and b_id not in shown.stdout, shown.stdout  # names, not ids


async def test_a_declining_worker_fails_it_with_a_reason(desk_and_laptop: tuple[Daemon, Daemon],
                                                         tmp_path: Path) -> None:
    a, b = desk_and_laptop
    wait_for(lambda: online(a, device_id(b)), what="laptop online at desk")
    async with mcp_client(a.url, a.token) as sender, mcp_client(b.url, b.token) as worker:
        hid = (await call(sender, "handoff", summary="s", goal="g", cwd=str(tmp_path / "gone"),
                          session_id=SESSION_ID, target="laptop"))["id"]

        async def offered() -> Any:
            return [o for o in (await call(worker, "list_offered_handoffs"))["offers"] if o["id"] == hid]

        await until(offered, what="offered")
        claim = b.p2pd("handoffs", "claim", hid)
        assert claim.returncode == 0, claim.stderr
        # the folder does not exist here: received into the inbox, not imported, still the worker's to finish
        got = await until(lambda: _with_inbox(worker, hid), timeout=90, what="received")
        assert got["state"] == "claimed" and not got["resume_command"] and "does not exist" in got["reason"]
        failed = b.p2pd("handoffs", "fail", hid, "--reason", "no such project here")
        assert failed.returncode == 0, failed.stderr
        h = await until(lambda: _state_is(sender, hid, "failed"), what="failed at the desk")
        assert h["reason"] == "no such project here"


async def _with_inbox(worker: Any, hid: str) -> Any:
    o = await call(worker, "get_offered_handoff", handoff_id=hid)
    return o if o.get("inbox_id") else None


async def _state_is(client: Any, hid: str, state: str) -> Any:
    h = await call(client, "get_handoff", handoff_id=hid)
    return h if h["state"] == state else None


async def test_a_handoff_cancelled_by_its_sender_is_closed_on_the_worker_side(
        desk_and_laptop: tuple[Daemon, Daemon], tmp_path: Path) -> None:
    a, b = desk_and_laptop
    wait_for(lambda: online(a, device_id(b)), what="laptop online at desk")
    async with mcp_client(a.url, a.token) as sender, mcp_client(b.url, b.token) as worker:
        hid = (await call(sender, "handoff", summary="s", goal="g", cwd=str(tmp_path), session_id=SESSION_ID,
                          target="laptop"))["id"]

        async def offered() -> Any:
            return [o for o in (await call(worker, "list_offered_handoffs"))["offers"] if o["id"] == hid]

        await until(offered, what="offered")
        await call(worker, "claim_handoff", handoff_id=hid)
        await until(lambda: _with_inbox(worker, hid), timeout=90, what="received")
        cancelled = a.p2pd("handoffs", "cancel", hid)
        assert cancelled.returncode == 0, cancelled.stderr

        async def closed() -> Any:
            o = await call(worker, "get_offered_handoff", handoff_id=hid)
            return o if o["state"] == "cancelled" else None

        await until(closed, what="cancelled at the laptop")
        assert (await call_error(worker, "start_handoff", handoff_id=hid)).count("[conflict]")
        assert (await call(sender, "get_handoff", handoff_id=hid))["state"] == "cancelled"
