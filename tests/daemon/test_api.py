"""The HTTP API through real HTTP against a real ``p2pd serve`` process: token, CORS, OpenAPI, sessions, export,
handoffs (with concurrent claims), sends without a network, errors."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx

from tests.daemon.conftest import SESSION_CWD, SESSION_ID, Daemon

EXPECTED_PATHS = {
    "/health", "/stats", "/devices", "/links", "/links/{link_id}/close", "/links/{link_id}/leave", "/sessions",
    "/export", "/send", "/receive", "/transfers", "/gc",
    "/transfers/{transfer_id}", "/transfers/{transfer_id}/cancel", "/transfers/{transfer_id}/retry",
    "/transfers/{transfer_id}/accept", "/transfers/{transfer_id}/decline", "/inbox/pending", "/inbox",
    "/inbox/{inbox_id}",
    "/inbox/{inbox_id}/import", "/handoffs", "/handoffs/{handoff_id}", "/handoffs/{handoff_id}/claim",
    "/handoffs/{handoff_id}/cancel", "/handoffs/{handoff_id}/start", "/handoffs/{handoff_id}/complete",
    "/handoffs/{handoff_id}/fail", "/offers", "/offers/{handoff_id}", "/offers/{handoff_id}/claim",
    "/hooks/session-start",
    # agent sessions (seeds 002, 003)
    "/delegations", "/delegations/{delegation_id}", "/delegations/{delegation_id}/start",
    "/delegations/{delegation_id}/message", "/session-links", "/session-links/limits", "/session-links/{link_id}",
    "/session-links/{link_id}/sever", "/session-links/{link_id}/close", "/sessions/{session_id}/messages",
    "/hooks/{event}",
}
PACKAGE = {"summary": "ported the parser", "goal": "finish the tests", "notes": "careful with unicode",
           "files": [{"path": "p2pd/x.py", "summary": "the parser", "content": "print('hi')\n"}],
           "cwd": SESSION_CWD, "project_path": SESSION_CWD}


def _openapi(d: Daemon) -> dict:
    with d.client() as c:
        r = c.get("/openapi.json")
    assert r.status_code == 200
    return r.json()


def test_health_is_open_and_says_nothing(shared_daemon: Daemon) -> None:
    r = httpx.get(f"{shared_daemon.url}/health", trust_env=False)
    assert r.status_code == 200 and r.json() == {"ok": True}


def test_every_path_needs_the_token(shared_daemon: Daemon) -> None:
    spec = _openapi(shared_daemon)
    probes = [(m.upper(), p.replace("{", "x").replace("}", "")) for p, ops in spec["paths"].items() for m in ops
              if p != "/health"]
    probes += [("GET", "/openapi.json"), ("POST", "/mcp"), ("GET", "/mcp"), ("GET", "/docs")]
    with httpx.Client(base_url=shared_daemon.url, trust_env=False) as c:
        for method, path in probes:
            for headers in ({}, {"Authorization": "Bearer wrong-token"}, {"Authorization": shared_daemon.token},
                            {"Authorization": f"Basic {shared_daemon.token}"}):
                r = c.request(method, path, headers=headers, json={})
                assert r.status_code == 401, (method, path, headers, r.text)
                assert r.json()["error"].startswith("unauthorized")
                assert r.headers["www-authenticate"].startswith("Bearer")


def test_openapi_lists_every_path_with_bearer_security(shared_daemon: Daemon) -> None:
    spec = _openapi(shared_daemon)
    assert set(spec["paths"]) == EXPECTED_PATHS
    assert spec["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    assert "security" not in spec["paths"]["/health"]["get"]
    assert spec["paths"]["/handoffs"]["post"]["security"] == [{"bearer": []}]
    # typed bodies: the handoff package's fields are in the schema
    assert "HandoffFile" in spec["components"]["schemas"]


def test_no_cors_headers_for_any_origin(shared_daemon: Daemon) -> None:
    with shared_daemon.client() as c:
        r = c.get("/stats", headers={"Origin": "https://evil.example"})
        assert r.status_code == 200
        assert not any(k.lower().startswith("access-control-") for k in r.headers)
        pre = c.options("/stats", headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "GET"})
        assert not any(k.lower().startswith("access-control-") for k in pre.headers)
    r = httpx.options(f"{shared_daemon.url}/health", headers={"Origin": "https://evil.example",
                                                                "Access-Control-Request-Method": "GET"},
                      trust_env=False)
    assert not any(k.lower().startswith("access-control-") for k in r.headers)


def test_token_file_is_private(shared_daemon: Daemon) -> None:
    assert (shared_daemon.home / "token").stat().st_mode & 0o777 == 0o600
    assert shared_daemon.home.stat().st_mode & 0o777 == 0o700
    info = json.loads((shared_daemon.home / "daemon.json").read_text())
    assert info["url"] == shared_daemon.url and info["pid"] == shared_daemon.process.pid  # type: ignore[union-attr]
    assert str(shared_daemon.home / "token") in "".join(shared_daemon.output)


def test_sessions_and_export(shared_daemon: Daemon) -> None:
    with shared_daemon.client() as c:
        sessions = c.get("/sessions").json()
        assert [s["session_id"] for s in sessions] == [SESSION_ID]
        assert sessions[0]["cwd"] == SESSION_CWD and sessions[0]["messages"] > 0
        assert c.get("/sessions", params={"platform": "nope"}).status_code == 422
        r = c.post("/export", json={"session": SESSION_ID[:8]})
        assert r.status_code == 200, r.text
        out = r.json()
        path = Path(out["path"])
        assert path.is_file() and path.parent == shared_daemon.home / "exports"
        assert out["messages"] == sessions[0]["messages"] and out["size"] == path.stat().st_size
        doc = json.loads(path.read_text())
        assert doc["origin"]["sessionId"] == SESSION_ID
        assert c.post("/export", json={"session": "no-such-session"}).status_code == 404
        assert c.post("/export", json={"session": SESSION_ID, "output": "relative.a2a.json"}).status_code == 400
        assert c.post("/export", json={"session": SESSION_ID, "bogus": 1}).status_code == 422


def test_device_and_link_sends_need_a_paired_device(shared_daemon: Daemon) -> None:
    with shared_daemon.client() as c:
        r = c.post("/send", json={"session": SESSION_ID, "to": {"device": "laptop"}})
        assert r.status_code == 404 and "p2pd pair" in r.json()["error"]
        r = c.post("/send", json={"session": SESSION_ID, "to": {"link": "ln_1"}})
        assert r.status_code == 404 and "no link" in r.json()["error"]
        for to in ({}, {"device": "a", "code": "1-a-b"}, {"device": ""}):
            r = c.post("/send", json={"session": SESSION_ID, "to": to})
            assert r.status_code == 422, to
        r = c.post("/send", json={"session": SESSION_ID, "to": {"code": "not a code"}})
        assert r.status_code == 400 and "pairing code" in r.json()["error"]
        assert c.get("/devices").json() == []


def test_handoff_lifecycle_over_http(shared_daemon: Daemon) -> None:
    with shared_daemon.client() as c:
        r = c.post("/handoffs", json={**PACKAGE, "session_id": SESSION_ID, "target": "any"})
        assert r.status_code == 201, r.text
        h = r.json()
        assert h["state"] == "pending" and h["package"]["goal"] == "finish the tests"
        assert h["source"]["session_id"] == SESSION_ID
        # the package travels inside the conversation document
        from p2pd.conversation.document_io import read_document

        doc = read_document(h["document_path"])
        assert doc.metadata["p2pd_handoff"]["id"] == h["id"]
        assert doc.metadata["p2pd_handoff"]["files"][0]["content"] == "print('hi')\n"
        assert h["id"] in [x["id"] for x in c.get("/handoffs", params={"state": "pending"}).json()]
        assert c.get("/stats").json()["handoffs"]["pending"] >= 1
        won = c.post(f"/handoffs/{h['id']}/claim", json={"claimer": "desk"})
        assert won.status_code == 200 and won.json()["claimed_by"] == "desk" and won.json()["state"] == "claimed"
        again = c.post(f"/handoffs/{h['id']}/claim", json={"claimer": "laptop"})
        assert again.status_code == 409 and "already claimed by desk" in again.json()["error"]
        cancelled = c.post(f"/handoffs/{h['id']}/cancel", json={"reason": "not needed"}).json()
        assert cancelled["state"] == "cancelled" and cancelled["reason"] == "not needed"
        assert c.post(f"/handoffs/{h['id']}/cancel").status_code == 409
        assert c.get("/handoffs/ho_nothing").status_code == 404
        # a handoff for a device that is not paired is refused when it is made (it would wait for ever)
        r = c.post("/handoffs", json={**PACKAGE, "session_id": SESSION_ID, "target": "desk"})
        assert r.status_code == 404 and "no paired device 'desk'" in r.json()["error"], r.text
        # without a session: the newest session of the package's cwd
        guessed = c.post("/handoffs", json=PACKAGE).json()
        assert guessed["source"]["session_id"] == SESSION_ID
        r = c.post("/handoffs", json={**PACKAGE, "cwd": "/nowhere", "project_path": None})
        assert r.status_code == 400 and "which conversation" in r.json()["error"]
        r = c.post("/handoffs", json={**PACKAGE, "files": [{"summary": "no path"}]})
        assert r.status_code == 422


def test_concurrent_http_claims_exactly_one_wins(shared_daemon: Daemon) -> None:
    with shared_daemon.client() as c:
        ids = [c.post("/handoffs", json={**PACKAGE, "session_id": SESSION_ID}).json()["id"] for _ in range(3)]

    async def claim_all(hid: str) -> list[int]:
        async with httpx.AsyncClient(base_url=shared_daemon.url, trust_env=False, timeout=60,
                                     headers={"Authorization": f"Bearer {shared_daemon.token}"}) as ac:
            rs = await asyncio.gather(*(ac.post(f"/handoffs/{hid}/claim", json={"claimer": f"dev{i}"})
                                        for i in range(16)))
            return [r.status_code for r in rs]

    for hid in ids:
        codes = asyncio.run(claim_all(hid))
        assert sorted(codes) == [200] + [409] * 15, codes


def test_hook_endpoint_records_the_session(shared_daemon: Daemon) -> None:
    with shared_daemon.client() as c:
        r = c.post("/hooks/session-start", json={"session_id": SESSION_ID, "cwd": "/elsewhere",
                                                 "transcript_path": None, "hook_event_name": "SessionStart"})
        assert r.status_code == 200 and r.json()["cwd"] == "/elsewhere"
        assert c.post("/hooks/session-start", json={"cwd": "/x"}).status_code == 422
        # the hook's record is how a handoff for that cwd finds its conversation
        h = c.post("/handoffs", json={**PACKAGE, "cwd": "/elsewhere", "project_path": None})
        assert h.status_code == 201 and h.json()["source"]["session_id"] == SESSION_ID


def test_errors_are_json_with_status(shared_daemon: Daemon) -> None:
    with shared_daemon.client() as c:
        assert c.get("/transfers/tr_missing").status_code == 404
        assert c.get("/inbox/in_missing").json()["kind"] == "NotFoundError"
        r = c.post("/transfers/tr_missing/cancel")
        assert r.status_code == 404 and "no transfer" in r.json()["error"]
        r = c.post("/handoffs", content=b"{not json", headers={"content-type": "application/json"})
        assert r.status_code == 422 and r.json()["error"].startswith("invalid request")
        r = c.get("/no/such/path")
        assert r.status_code == 404 and "error" in r.json()
