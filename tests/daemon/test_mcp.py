"""Every MCP tool through a real MCP client session (the SDK's streamable-HTTP client) against a real daemon
process with a real signaling server: the daemon sends a conversation to a code and receives it itself, so the
inbox and import tools work on a conversation that really crossed a WebRTC data channel."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.daemon.conftest import SESSION_CWD, SESSION_ID, Daemon
from tests.signal_process import SignalProcess

TOOLS = {"list_sessions", "export_conversation", "send_conversation", "list_transfers", "get_transfer",
         "list_inbox", "answer_transfer", "import_conversation", "handoff", "get_handoff", "list_offered_handoffs",
         "get_offered_handoff", "claim_handoff", "start_handoff", "complete_handoff", "fail_handoff",
         "delegate", "get_delegation", "list_delegations", "start_delegation", "message_delegation", "link_sessions",
         "list_session_links", "sever_session_link", "message_session", "read_session_messages"}


@asynccontextmanager
async def mcp_client(url: str, token: str | None) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60, read=300)) as http, \
            Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
        yield client


async def call(client: Client, tool: str, **args: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    assert not result.is_error, f"{tool}: {result.content}"
    data = result.structured_content
    assert isinstance(data, dict), result
    return data


async def call_error(client: Client, tool: str, **args: Any) -> str:
    result = await client.call_tool(tool, args)
    assert result.is_error, f"{tool} should have failed: {result.structured_content}"
    return " ".join(getattr(c, "text", "") for c in result.content)


@pytest.fixture
def daemon_with_signal(tmp_path: Path, signaling: SignalProcess) -> Any:
    d = Daemon(tmp_path, signal_url=signaling.url).start()
    try:
        yield d
    finally:
        d.kill()


async def test_mcp_needs_the_token(shared_daemon: Daemon) -> None:
    for token in (None, "wrong"):
        with pytest.raises(BaseException):  # noqa: B017 - the SDK wraps the 401 in an exception group
            async with mcp_client(shared_daemon.url, token) as client:
                await client.list_tools()
    r = httpx.post(f"{shared_daemon.url}/mcp", json={}, trust_env=False)
    assert r.status_code == 401


async def test_every_tool_through_a_real_mcp_session(daemon_with_signal: Daemon, tmp_path: Path) -> None:
    d = daemon_with_signal
    project = tmp_path / "project"
    project.mkdir()
    async with mcp_client(d.url, d.token) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        assert tools == TOOLS

        sessions = (await call(client, "list_sessions"))["sessions"]
        assert [s["session_id"] for s in sessions] == [SESSION_ID]
        assert (await call(client, "list_sessions", platform="codex"))["sessions"] == []

        exported = await call(client, "export_conversation", session=SESSION_ID)
        assert Path(exported["path"]).is_file() and exported["messages"] == sessions[0]["messages"]
        missing = await call_error(client, "export_conversation", session="zzzz")
        assert "[not_found] no session matches 'zzzz'" in missing, missing

        no_device = await call_error(client, "send_conversation", session=SESSION_ID, device="laptop")
        assert "[not_found] no paired device 'laptop'" in no_device and "p2pd pair" in no_device, no_device
        both = await call_error(client, "send_conversation", session=SESSION_ID)
        assert "[usage] pass exactly one" in both, both

        # send to a new code, then let the same daemon receive with that code (HTTP API)
        sent = await call(client, "send_conversation", session=SESSION_ID, code="")
        assert sent["direction"] == "out" and sent["code"], sent
        with d.client() as http:
            r = http.post("/receive", json={"code": sent["code"], "wait": 90}, timeout=120)
            assert r.status_code == 202, r.text
            received = r.json()
        assert received["state"] == "done", received
        done = await call(client, "get_transfer", transfer_id=sent["id"], wait=60)
        assert done["state"] == "done" and done["detail"]["verified_sha256"], done
        assert "[not_found] no transfer tr_nope" in await call_error(client, "get_transfer", transfer_id="tr_nope")

        listed = (await call(client, "list_transfers"))["transfers"]
        assert {sent["id"], received["id"]} <= {t["id"] for t in listed}
        assert [t["id"] for t in (await call(client, "list_transfers", state="done"))["transfers"]] \
            == [received["id"], sent["id"]]

        inbox = (await call(client, "list_inbox"))["inbox"]
        assert len(inbox) == 1 and inbox[0]["id"] == received["detail"]["inbox_id"]
        assert inbox[0]["session_id"] == SESSION_ID and inbox[0]["transfer_id"] == received["id"]
        doc = json.loads(Path(inbox[0]["document_path"]).read_text())
        assert doc["origin"]["sessionId"] == SESSION_ID

        # the conversation's own folder does not exist here: import asks for one
        assert "cwd" in await call_error(client, "import_conversation", inbox_id=inbox[0]["id"])
        imported = await call(client, "import_conversation", inbox_id=inbox[0]["id"], cwd=str(project))
        assert imported["session_id"] in imported["resume_command"] and Path(imported["path"]).is_file()
        assert str(Path(d.env["CLAUDE_CONFIG_DIR"])) in imported["path"]
        codex = await call(client, "import_conversation", inbox_id=inbox[0]["id"], to="codex", cwd=str(project))
        assert "codex" in codex["resume_command"]

        h = await call(client, "handoff", summary="did the parser", goal="write the tests",
                       files=[{"path": "p2pd/x.py", "summary": "parser", "content": "x = 1\n"}], notes="n",
                       cwd=SESSION_CWD, project_path=SESSION_CWD, target="any", session_id=SESSION_ID)
        assert h["state"] == "pending" and h["package"]["files"][0]["content"] == "x = 1\n"
        got = await call(client, "get_handoff", handoff_id=h["id"])
        assert got["id"] == h["id"] and got["state"] == "pending"
        assert "which conversation" in await call_error(client, "handoff", summary="s", goal="g", cwd="/nowhere")
    with d.client() as http:
        stats = http.get("/stats").json()
        assert stats["handoffs"]["pending"] == 1 and stats["transfers"]["done"] == 2 and stats["inbox"] == 1
        assert http.get(f"/inbox/{inbox[0]['id']}").json()["imported"]["to"] == "codex"
