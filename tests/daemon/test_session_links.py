"""Seed 003 (links between agent sessions) end to end, through real MCP client sessions against real daemons.

On one machine: two sessions forked with ``delegate`` and run by the real Claude Code (stand-in model API) with the
p2pd hooks installed — each run's Stop hook sends its output to the other session, whose next prompt
(UserPromptSubmit hook) shows it to its model; nothing comes back to the sender; a member severs the link from
inside its session; a session that ends (SessionEnd hook) leaves its links. Across two daemons paired through a
real signaling server: the turn output crosses (redacted by the redacting side, shown escaped), waits while the
other daemon is down, and only the creator closes while either member severs."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.conftest import SESSION_ID, Daemon, device_id, online, until, wait_for
from tests.daemon.sessions_fixtures import claude_daemon, context_of, hook, model_api, paired, parent_transcript
from tests.daemon.test_mcp import call, call_error, mcp_client
from tests.realclients import standin

pytestmark = pytest.mark.slow
__all__ = ["claude_daemon", "model_api", "paired"]  # fixtures



async def _run(client: Any, delegation_id: str, prompt: str) -> dict[str, Any]:
    """One run of the real Claude Code on a delegated session (the daemon's delegate_command), to its end."""
    await call(client, "start_delegation", delegation_id=delegation_id, prompt=prompt)

    async def ended() -> Any:
        s = await call(client, "get_delegation", delegation_id=delegation_id)
        return s if s["state"] in ("exited", "failed") else None

    status = await until(ended, what=f"the run of {delegation_id}")
    assert status["exit_code"] == 0, Path(status["log_path"]).read_text(errors="replace")
    return status


async def _messages(client: Any, session: str) -> list[dict[str, Any]]:
    return list((await call(client, "read_session_messages", session_id=session))["messages"])


async def test_two_linked_claude_code_sessions_on_one_machine(claude_daemon: Daemon, model_api: standin.StandIn,
                                                              tmp_path: Path) -> None:
    d = claude_daemon
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    async with mcp_client(d.url, d.token) as agent:
        one = await call(agent, "delegate", session_id=SESSION_ID, directory=str(tmp_path / "a"))
        two = await call(agent, "delegate", session_id=SESSION_ID, directory=str(tmp_path / "b"))
        a, b = one["session_id"], two["session_id"]
        assert "[invalid_input]" in await call_error(agent, "link_sessions", session_id=a, members=[{"session": a}])
        link = await call(agent, "link_sessions", session_id=a, members=[{"session": b}], name="pair")
        assert link["state"] == "open" and [m["session"] for m in link["members"]] == [a, b]

        await _run(agent, one["id"], "first turn of A")  # A's Stop hook: its output goes to B
        got = await _messages(agent, b)
        assert len(got) == 1 and got[0]["kind"] == "link" and got[0]["from_session"] == a
        assert standin.REPLY in got[0]["text"] and got[0]["ref"] == link["id"]
        assert await _messages(agent, a) == []  # no echo to the sender
        # a headless run ends its session: Claude Code's SessionEnd hook took A out of the link
        after = (await call(agent, "list_session_links", session_id=a))["links"][0]
        assert after["state"] == "ended" and [m["left"] for m in after["members"]] == [True, False]

        await _run(agent, two["id"], "first turn of B")  # B's model is shown A's output
        seen_by_b = [r for r in model_api.model_requests("/v1/messages") if "first turn of B" in json.dumps(r)]
        assert seen_by_b and f"[p2pd session link {link['id']}]" in json.dumps(seen_by_b[-1])
        assert await _messages(agent, a) == []  # A left: B's output went nowhere
        assert len(await _messages(agent, b)) == 1  # and never came back to B

        # a new link, driven by the hooks as Claude Code runs them: each turn reaches the other, never itself
        again = await call(agent, "link_sessions", session_id=a, members=[{"session": b}])
        hook(d, "stop", session_id=b, last_assistant_message="B: tests pass", stop_hook_active=False)
        hook(d, "stop", session_id=a, last_assistant_message="A: merged", stop_hook_active=False)
        assert [m["text"] for m in await _messages(agent, a)] == ["B: tests pass"]
        assert (await _messages(agent, b))[0]["text"] == "A: merged"  # newest first
        assert "A: merged" in context_of(hook(d, "prompt-submit", session_id=b, prompt="next"))
        assert "A: merged" not in context_of(hook(d, "prompt-submit", session_id=b, prompt="again"))  # once

        # B severs the link from inside its session: A's next turn reaches nobody; B cannot close it
        assert "[conflict]" in await call_error(agent, "sever_session_link", link_id=again["id"], session_id=b,
                                                close=True)
        severed = await call(agent, "sever_session_link", link_id=again["id"], session_id=b)
        assert severed["state"] == "ended" and [m["left"] for m in severed["members"]] == [False, True]
        hook(d, "stop", session_id=a, last_assistant_message="A: anyone?")
        assert "A: anyone?" not in [m["text"] for m in await _messages(agent, b)]
        # the creator closes a link for everyone
        made = d.p2pd("session-links", "create", "--session", a, "--with", b, "--name", "cli", "--json")
        assert made.returncode == 0, made.stderr
        third = json.loads(made.stdout)
        closed = await call(agent, "sever_session_link", link_id=third["id"], session_id=a, close=True)
        assert closed["state"] == "closed"
        hook(d, "stop", session_id=a, last_assistant_message="A: closed?")
        assert "A: closed?" not in [m["text"] for m in await _messages(agent, b)]


async def test_a_link_between_sessions_on_two_paired_machines(paired: tuple[Daemon, Daemon]) -> None:
    desk, laptop = paired
    a, b = SESSION_ID, str(uuid.uuid4())
    async with mcp_client(desk.url, desk.token) as at_desk, mcp_client(laptop.url, laptop.token) as at_laptop:
        assert "[not_found]" in await call_error(at_desk, "link_sessions", session_id=a,
                                                 members=[{"session": b, "device": "lapotp"}])
        # a session the laptop does not know is refused there: the desk learns it and B counts as having left
        ghost = await call(at_desk, "link_sessions", session_id=a, members=[{"session": b, "device": "laptop"}])

        async def refused() -> Any:
            view = (await call(at_desk, "list_session_links", session_id=a))["links"]
            return [v for v in view if v["id"] == ghost["id"] and v["state"] == "ended"]

        await until(refused, what="the laptop's refusal of an unknown session")
        assert (await call(at_laptop, "list_session_links"))["links"] == []
        hook(laptop, "session-start", session_id=b, cwd=str(laptop.base))  # now B is a session of the laptop
        link = await call(at_desk, "link_sessions", session_id=a, members=[{"session": b, "device": "laptop"}])
        lid = link["id"]
        assert [m["device_name"] for m in link["members"]] == ["this machine", "laptop"]

        async def at_laptop_links() -> Any:
            return (await call(at_laptop, "list_session_links", session_id=b))["links"]

        seen = await until(at_laptop_links, what="the link known at the laptop")
        assert seen[0]["id"] == lid and seen[0]["members"][0]["device_name"] == "desk"

        # A's turn (read from its transcript by the Stop hook) reaches B at the laptop, not A
        hook(desk, "stop", session_id=a, transcript_path=str(parent_transcript(desk)), stop_hook_active=False)

        async def for_b() -> Any:
            return await _messages(at_laptop, b)

        got = (await until(for_b, what="A's turn output at the laptop"))[0]
        assert got["from_session"] == a and got["kind"] == "link" and got["text"]
        assert await _messages(at_desk, a) == []
        ctx = context_of(hook(laptop, "prompt-submit", session_id=b, prompt="go on"))
        assert f"[p2pd session link {lid}]" in ctx and "on desk" in ctx and got["text"][:40] in ctx

        # B's output crosses back, redacted by the laptop (P2PD_REDACT) and shown escaped at the desk
        secret = "AKIA" + "ABCDEFGHIJKLMNOP"
        hook(laptop, "stop", session_id=b, last_assistant_message=f"done \x1b[31m red; key {secret}")

        async def for_a() -> Any:
            return await _messages(at_desk, a)

        back = (await until(for_a, what="B's turn output at the desk"))[0]
        assert secret not in back["text"] and "[REDACTED:aws-access-key]" in back["text"]
        ctx = context_of(hook(desk, "prompt-submit", session_id=a))
        assert "\\x1b[31m" in ctx and "\x1b" not in ctx
        assert len(await _messages(at_laptop, b)) == 1  # no echo

        # the laptop is down: A's turn waits for it, then arrives
        b_id, a_id = device_id(laptop), device_id(desk)
        laptop.stop()
        hook(desk, "stop", session_id=a, last_assistant_message="while you were away")
        laptop.start()
        wait_for(lambda: online(desk, b_id) and online(laptop, a_id), what="back online")
        async with mcp_client(laptop.url, laptop.token) as again:
            async def arrived() -> Any:
                return [m for m in await _messages(again, b) if m["text"] == "while you were away"]

            await until(arrived, what="the queued turn at the laptop")
            # only the creator closes; a member severs from inside its session
            assert "[conflict]" in await call_error(again, "sever_session_link", link_id=lid, session_id=b,
                                                    close=True)
            with laptop.client() as c:
                assert c.post(f"/session-links/{lid}/close").status_code == 409
            cut = laptop.p2pd("session-links", "sever", lid, "--session", b, "--json")  # from the CLI
            assert cut.returncode == 0 and json.loads(cut.stdout)["state"] == "ended", cut.stderr

        async def ended_at_desk() -> Any:
            views = (await call(at_desk, "list_session_links", session_id=a))["links"]
            return views if views[0]["state"] == "ended" else None

        await until(ended_at_desk, what="the desk sees B left")
        with desk.client() as c:  # A's next turn is for nobody: nothing is queued for the laptop
            r = c.post("/hooks/stop", json={"session_id": a, "last_assistant_message": "anyone?"})
            assert r.status_code == 200 and r.json() == {"delivered": []}
        cli = desk.p2pd("session-links")
        assert cli.returncode == 0 and lid in cli.stdout and "ended" in cli.stdout, cli.stderr
